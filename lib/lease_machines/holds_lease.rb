# frozen_string_literal: true

module LeaseMachines
  # The ActiveJob extension: include it in a job class (Rails includes it in ActiveJob::Base) and declare
  #
  #   holds_lease key: ->(account) { account }, ttl: 30.seconds, renew_every: 10.seconds,
  #               on_conflict: :retry, wait: 15.seconds, attempts: 20
  #
  # Each perform then holds the lease of its resource (taken in around_perform, renewed in the background, released
  # when it ends), and the job's body reads it as +lease+. A lease held by another owner raises LeaseBusy from
  # around_perform, which the declaration handles as ActiveJob handles any error: +on_conflict: :retry+ is
  # +retry_on LeaseBusy+ (+wait+, +attempts+ retries, then LeaseBusy raised), +:discard+ is +discard_on LeaseBusy+,
  # +:raise+ lets it through. Job classes gain only +holds_lease+ and +lease+ (and those handlers).
  module HoldsLease
    extend ActiveSupport::Concern

    included do
      unless respond_to?(:around_perform) && respond_to?(:retry_on)
        raise TypeError, "#{HoldsLease.name} is for ActiveJob job classes (with around_perform), not #{inspect}"
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
          retry_on(LeaseBusy, wait: ->(_executions) { declaration.wait }, attempts: declaration.attempts + 1)
        when :discard then discard_on(LeaseBusy)
        end
        around_perform { |job, block| Jobs::Execution.perform(job, declaration.for_job_class(job.class), &block) }
        declaration
      end
    end

    # The lease of the job's current (or last) perform; nil before one was granted.
    def lease = @lease_machines_lease
  end
end
