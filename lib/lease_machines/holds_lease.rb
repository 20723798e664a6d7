# frozen_string_literal: true

# Loaded by require "lease_machines/jobs".
module LeaseMachines
  # The ActiveJob extension: include it in a job class (Rails includes it in ActiveJob::Base) and declare
  #
  #   holds_lease key: ->(account) { account }, ttl: 30.seconds, renew_every: 10.seconds,
  #               on_conflict: :retry, wait: 15.seconds, attempts: 20,
  #               on_lost: :retry, lost_wait: 1.minute, lost_attempts: 3
  #
  # Each perform then holds the lease of its resource (taken in around_perform, renewed in the background, released
  # when it ends), and the job's body reads it as +lease+. A lease held by another owner raises LeaseBusy from
  # around_perform, which the declaration handles as ActiveJob handles any error: +on_conflict: :retry+ is
  # +retry_on+ of it (+wait+, +attempts+ retries, then LeaseBusy raised), +:discard+ is +discard_on+,
  # +:raise+ lets it through. A lease lost while the job ran, whose LeaseLost (+lease.check!+, +lease.fenced+) or
  # Fenced (+lease.fenced+) the job let out of its body, is handled the same way by +on_lost:+: +:retry+ (the
  # default) enqueues the job again after +lost_wait+, to run under a new lease, for +lost_attempts+ retries, then
  # raises that exception; +:discard+ discards the job; +:raise+ lets it through. Job classes gain only
  # +holds_lease+ and +lease+ (and those handlers).
  #
  # A continuable job (ActiveJob::Continuable, Rails 8.1) stops at its next checkpoint once its lease is not held,
  # and Continuable resumes it from its cursor under a new lease; +progress: :fenced+ keeps its progress where only
  # the fence writes it (see Jobs::Progress, and <tt>lease.fenced(step, to:)</tt>).
  module HoldsLease
    extend ActiveSupport::Concern

    included do
      unless respond_to?(:around_perform) && respond_to?(:retry_on)
        raise TypeError, "#{HoldsLease.name} is for ActiveJob job classes (with around_perform and retry_on), not " \
                         "#{inspect}"
      end
    end

    class_methods do
      # Declares that each perform holds a lease on the resource +key+ names (a proc of the job's arguments), taken in
      # around_perform and renewed while the job runs. See Jobs::Declaration for the options, and for the group a
      # subclass takes its leases in. Raises ArgumentError when the class (or an ancestor) declared one already.
      def holds_lease(**options)
        if Jobs::Declarations.declared?(self)
          raise ArgumentError, "holds_lease: #{name || inspect} already holds a lease (declared once per job class)"
        end

        declaration = Jobs::Declaration.new(self, **options)
        Jobs::Declarations.declare(self, declaration)
        Jobs::Declarations.handle(self, :conflict, declaration.on_conflict, [Jobs::Conflict], declaration.wait,
                                  declaration.attempts)
        Jobs::Declarations.handle(self, :lost, declaration.on_lost, [Jobs::Lost, Jobs::Refused], declaration.lost_wait,
                                  declaration.lost_attempts)
        around_perform { |job, block| Jobs::Execution.perform(job, declaration.for_job_class(job.class), &block) }
        declaration
      end
    end

    # The lease of the job's current (or last) perform; nil before one was granted.
    def lease = @lease_machines_lease

    # This perform's own conflict, and its own lost lease (after the loss event), go to the handler holds_lease
    # declared (retry_on, discard_on) before any handler of the class's own: one declared after it, or in a subclass,
    # for a broader class (StandardError) would win.
    def rescue_with_handler(exception)
      kind = case exception
             when Jobs::Conflict then :conflict
             when Jobs::Loss then :lost
             end
      return super unless kind && exception.job.equal?(self)

      Jobs::Execution.loss(self, exception) if kind == :lost
      rescuer = Jobs::Declarations.handler(self.class, kind)
      return super unless rescuer

      rescuer.arity.zero? ? instance_exec(&rescuer) : instance_exec(exception, &rescuer)
      exception
    end
  end
end
