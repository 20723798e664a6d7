# frozen_string_literal: true

# Loaded by require "lease_machines/jobs".
module LeaseMachines
  # The ActiveJob extension: include it in a job class (Rails includes it in ActiveJob::Base) and declare
  #
  #   holds_lease key: ->(account) { account }, ttl: 30.seconds, renew_every: 10.seconds,
  #               on_conflict: :retry, wait: 15.seconds, attempts: 20
  #
  # Each perform then holds the lease of its resource (taken in around_perform, renewed in the background, released
  # when it ends), and the job's body reads it as +lease+. A lease held by another owner raises LeaseBusy from
  # around_perform, which the declaration handles as ActiveJob handles any error: +on_conflict: :retry+ is
  # +retry_on+ of it (+wait+, +attempts+ retries, then LeaseBusy raised), +:discard+ is +discard_on+,
  # +:raise+ lets it through. Job classes gain only +holds_lease+ and +lease+ (and those handlers).
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
        case declaration.on_conflict
        when :retry
          # A proc: retry_on truncates a number of seconds to whole ones, and this wait is exact.
          retry_on(Jobs::Conflict, wait: ->(_executions) { declaration.wait }, attempts: declaration.attempts + 1)
        when :discard then discard_on(Jobs::Conflict)
        end
        Jobs::Declarations.handle(self, rescue_handlers.last.last) unless declaration.on_conflict == :raise
        around_perform { |job, block| Jobs::Execution.perform(job, declaration.for_job_class(job.class), &block) }
        declaration
      end
    end

    # The lease of the job's current (or last) perform; nil before one was granted.
    def lease = @lease_machines_lease

    # This perform's own conflict goes to the handler holds_lease declared (retry_on, discard_on) before any handler
    # of the class's own: one declared after it, or in a subclass, for a broader class (StandardError) would win.
    def rescue_with_handler(exception)
      rescuer = Jobs::Conflict === exception && exception.job.equal?(self) && Jobs::Declarations.handler(self.class)
      return super unless rescuer

      rescuer.arity.zero? ? instance_exec(&rescuer) : instance_exec(exception, &rescuer)
      exception
    end
  end
end
