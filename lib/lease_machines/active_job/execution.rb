# frozen_string_literal: true

require "securerandom"

module LeaseMachines
  module ActiveJob
    # One perform of a job that holds a lease (its around_perform): acquire the lease of the job's resource, run the
    # job while the renewer keeps the lease, stop renewing and release it (with owner and token) when the job ends
    # however it ends. A lease held by another owner is a conflict: retried later with retry_job (at most +attempts+
    # times, then LeaseBusy), discarded with a conflict event, or raised as LeaseBusy.
    module Execution
      # Owners are random per perform, in the store's signed 64-bit range: two performs never share one.
      MAX_OWNER = Store::MAX_TOKEN
      # The job's count of conflicts, kept in exception_executions so that it survives retry_job's serialization.
      CONFLICTS = "lease_machines.conflicts"

      module_function

      def perform(job, declaration)
        configuration = ActiveJob.configuration
        resource = ResourceKey.resource_name(declaration.group, declaration.key.call(*job.arguments))
        owner = SecureRandom.random_number(MAX_OWNER) + 1
        sent = configuration.clock.call
        decision = ActiveJob.pool.with do |store|
          store.acquire(resource: resource, owner: owner, ttl: declaration.ttl)
        end
        return conflict(job, declaration, resource, owner, decision) unless decision.granted?

        # Everything after the grant runs inside the begin whose ensure releases the lease: a raise there (a subscriber
        # of +acquire+, say) would otherwise leave the key blocked for the whole TTL.
        lease = JobLease.new(job: job, resource: resource, lease: decision.lease, sent_at: sent,
                             cadence: declaration.cadence, clock: configuration.clock)
        begin
          job.instance_variable_set(:@lease_machines_lease, lease)
          lease.instrument(:acquire, ttl: declaration.ttl, expires_at: lease.expires_at)
          ActiveJob.renewer.register(lease)
          prepare_fence(configuration)
          yield
        ensure
          ActiveJob.renewer.unregister(lease)
          lease.finish
          release(lease, configuration)
        end
      end

      def conflict(job, declaration, resource, owner, decision)
        unless decision.reason == :occupied
          raise Error, "#{resource}: the lease store refused the grant (#{decision.reason}); the job did not run"
        end

        conflicts = job.exception_executions[CONFLICTS] || 0
        action = declaration.on_conflict
        action = :raise if action == :retry && conflicts >= declaration.attempts
        Instrumentation.instrument(:conflict, job: job, resource: resource, owner: owner, token: nil, action: action,
                                              reason: decision.reason, conflicts: conflicts,
                                              attempts: declaration.attempts)
        case action
        when :retry
          job.exception_executions[CONFLICTS] = conflicts + 1
          job.retry_job(wait: declaration.wait)
        when :raise then raise LeaseBusy.new(resource: resource, attempts: conflicts)
        end
        nil
      end

      # The fence's store on the job's connection, opened before the job's own transactions (when ActiveRecord is
      # connected: jobs without a database have nothing to fence). The connection is leased to the job's thread, so
      # that the job's own transactions, and the fenced writes that join them, run on the connection prepared here
      # rather than on another one of the pool (ActiveRecord or Rails' executor returns it when the job is done).
      def prepare_fence(configuration)
        record = configuration.fence_record || (defined?(::ActiveRecord::Base) && ::ActiveRecord::Base)
        return unless record

        begin
          record.connection_pool
        rescue ::ActiveRecord::ConnectionNotEstablished
          return
        end
        connection = record.lease_connection
        FencedWrite.prepare(connection) unless connection.transaction_open?
      end

      # A failed release is reported, never raised over the job's own outcome: the lease then runs out after its TTL.
      def release(lease, configuration)
        ActiveJob.pool.with { lease.release(_1) }
      rescue StandardError => e
        configuration.report(e, { during: "release", resource: lease.resource, token: lease.token })
        lease.instrument(:thread_error, error: e)
      end
    end
  end
end
