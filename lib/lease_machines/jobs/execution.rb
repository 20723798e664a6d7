# frozen_string_literal: true

require "securerandom"

module LeaseMachines
  module Jobs
    # One perform of a job that holds a lease (its around_perform): acquire the lease of the job's resource, run the
    # job while the renewer keeps the lease, stop renewing and release it (with owner and token) when the job ends
    # however it ends. A lease held by another owner is a conflict: a conflict event, then LeaseBusy, which the job
    # class's retry_on or discard_on (see HoldsLease) handles. A lease lost while the job ran is the job's to see
    # (JobLease#check!, JobLease#fenced raise Lost or Refused); one the job lets out is handled the same way: a loss
    # event, then the job class's on_lost handler.
    module Execution
      # Owners are random per perform, in the store's signed 64-bit range: two performs never share one.
      MAX_OWNER = Store::MAX_TOKEN
      # Where ActiveJob's retry_on counts the job's LeaseBusy retries (exception_executions, which survives
      # retry_job's serialization): under the list of the errors it was declared for, as a String.
      CONFLICTS = [Conflict].to_s
      # Where the gem's earlier versions counted them (a job enqueued by one is retried on with its count).
      LEGACY_CONFLICTS = "lease_machines.conflicts"
      # Where retry_on counts the job's retries after its lease was lost (on_lost: :retry), the same way.
      LOSSES = [Lost, Refused].to_s

      module_function

      # Asynchronous exceptions (Timeout, Thread#raise, Thread#kill) are deferred from before the grant until the
      # lease is in the hands of the ensure that releases it, and again while it is released: one landing while the
      # grant commits acts once the job is running, and the lease is still released. Only the job's own work runs
      # interruptible. Everything after the grant runs inside that ensure: whatever raises before the job's body (a
      # JobLease that cannot be built, a clock's bad reading, an acquire subscriber, the renewer's thread not
      # starting) releases the lease too, and is raised.
      def perform(job, declaration)
        configuration = Jobs.configuration
        resource = ResourceKey.resource_name(declaration.group, declaration.key.call(*job.arguments))
        owner = SecureRandom.random_number(MAX_OWNER) + 1
        Thread.handle_interrupt(Object => :never) do
          sent = configuration.clock.call
          store_clock = redis = nil
          decision = Jobs.pool.with do |store|
            refuse_own_transaction(store, configuration, resource)
            store_clock = store.clock
            redis = store.redis_config
            if declaration.limit
              store.acquire(resource: resource, owner: owner, ttl: declaration.ttl, limit: declaration.limit)
            else
              store.acquire(resource: resource, owner: owner, ttl: declaration.ttl)
            end
          end
          conflict(job, declaration, resource, owner, decision) unless decision.granted?

          lease = nil
          begin
            lease = JobLease.new(job: job, resource: resource, lease: decision.lease, sent_at: sent,
                                 cadence: declaration.cadence, clock: configuration.clock, store_clock: store_clock,
                                 redis: redis)
            job.instance_variable_set(:@lease_machines_lease, lease)
            lease.instrument(:acquire, ttl: declaration.ttl, expires_at: lease.expires_at)
            Jobs.renewer.register(lease)
            fenced_progress = declaration.progress == :fenced && Progress.restore(job, lease)
            Thread.handle_interrupt(Object => :immediate) { yield }
          rescue Conflict => e
            # Another job's conflict, out of this one's body: a plain LeaseBusy (without the Conflict as its cause,
            # which ActiveJob's handlers would look through), never retried as this job's own.
            raise LeaseBusy.new(resource: e.resource, attempts: e.attempts), cause: nil
          rescue Loss => e
            # Another job's lost lease, out of this one's body (performed inline in it), is raised on as a plain
            # LeaseLost or Fenced, never handled as this job's own; this job's own is raised as it is.
            raise if e.job.equal?(job)

            raise e.plain, cause: nil
          ensure
            begin
              Progress.settle(job, lease) if fenced_progress
            ensure
              finish(job, resource, decision.lease, lease, configuration)
            end
          end
        end
      end

      # Emits the conflict event and raises LeaseBusy, which the job class handles as its declaration said (see
      # HoldsLease): retried with retry_on until +attempts+ retries were spent, discarded with discard_on, or raised.
      def conflict(job, declaration, resource, owner, decision)
        unless decision.reason == :occupied
          raise Error, "#{resource}: the lease store refused the grant (#{decision.reason}); the job did not run"
        end

        executions = job.exception_executions
        legacy = executions.delete(LEGACY_CONFLICTS)
        executions[CONFLICTS] = [legacy, executions[CONFLICTS] || 0].max if legacy
        conflicts = executions[CONFLICTS] || 0
        action = declaration.on_conflict
        action = :raise if action == :retry && conflicts >= declaration.attempts
        Instrumentation.instrument(:conflict, job: job, resource: resource, owner: owner, token: nil, action: action,
                                              reason: decision.reason, conflicts: conflicts,
                                              attempts: declaration.attempts)
        raise Conflict.new(job: job, resource: resource, attempts: conflicts)
      end

      # Emits the loss event of +job+'s own lost lease (+error+, a Lost or Refused), with the action its class's
      # on_lost takes: :retry until +lost_attempts+ retries were spent (counted by retry_on, as conflicts are), then
      # :raise; :discard; :raise. Or +action+ (:resume: a continuable job stopped at a checkpoint).
      def loss(job, error, action: nil)
        declaration = Declarations.declaration(job.class)
        losses = job.exception_executions[LOSSES] || 0
        action ||= declaration.on_lost
        action = :raise if action == :retry && losses >= declaration.lost_attempts
        Instrumentation.instrument(:loss, job: job, resource: error.resource, owner: job.lease&.owner,
                                          token: error.token, slot: job.lease&.slot, action: action,
                                          reason: error.reason, error: error, losses: losses,
                                          attempts: declaration.lost_attempts)
      end

      # A grant that would wait for a lock only this thread can free, refused at once (saying what to do) instead of
      # a StoreError after the busy timeout. SQLite has one writer: while this thread's own ActiveRecord connection
      # to the lease store's database has a transaction open (perform_now inside a transaction, an :inline
      # perform_later, a job inside another job's fenced write, a transactional test), no grant can commit.
      # PostgreSQL and MySQL lock rows: the grant runs on the store's own connection beside the open transaction, and
      # waits only when that transaction holds +resource+'s row (an earlier job's fenced write joined it).
      def refuse_own_transaction(store, configuration, resource)
        record = configuration.fence_record_in_use
        connection = record && active_connection(record)
        # Begun on the database: ActiveRecord begins a transaction lazily, at its first statement.
        return unless connection&.transaction_open? && connection.current_transaction.materialized?
        case store.fence_holds
        when :row
          refuse_held_row(resource) if FenceTransaction.holds?(connection, resource)
          return
        when nil then return
        end
        return unless connection.adapter_name.match?(/sqlite/i)
        return unless same_file?(connection.pool.db_config.database, store.path)

        raise StoreError, "#{store.path}: this thread has a transaction open on the lease store's SQLite " \
                          "database, which holds its only write lock, so no lease can be granted before it " \
                          "commits: perform the job after the transaction (perform_later with " \
                          "enqueue_after_transaction_commit), keep the lease store in another database file, or " \
                          "turn transactional tests off for jobs that hold leases"
      end

      def refuse_held_row(resource)
        raise StoreError, "#{resource}: this thread has a transaction open that holds the lease's row " \
                          "(an earlier job's fenced write joined it; that lease is released when the transaction " \
                          "ends), so no lease of it can be granted before it commits: perform the job after the " \
                          "transaction (perform_later with enqueue_after_transaction_commit), or turn " \
                          "transactional tests off for jobs that hold leases"
      end

      # The connection ActiveRecord has leased to this thread for +record+, without leasing one (nil: none).
      def active_connection(record)
        record.connection_pool.active_connection?
      rescue ::ActiveRecord::ConnectionNotEstablished
        nil
      end

      def same_file?(one, other) = String === one && !one.empty? && File.identical?(one, other)

      # The perform is over, however it ended: its +lease+ (nil when the JobLease was never built) is :lost for every
      # reader and no longer renewed, and the lease the store +granted+ is released, even when the first two raised.
      def finish(job, resource, granted, lease, configuration)
        if lease
          lease.finish
          Jobs.renewer.unregister(lease)
        end
      ensure
        release(job, resource, granted, lease, configuration)
      end

      # Gives back the lease the store +granted+ (a Lease, or a semaphore's SlotLease) with its owner and token, as the
      # store answered them (the job's JobLease may never have been built): a stale release is refused by the
      # authority and can never free a successor's lease. A failed release is reported, never raised over the job's
      # own outcome: the lease then runs out after its TTL. The release event is emitted once the store is free again,
      # so that a subscriber may perform the next job. A lease whose row an open transaction holds (the job ran inside
      # it, and a fenced write joined it: PostgreSQL) is released once that transaction has ended: a release now
      # would wait for it, on this very thread.
      def release(job, resource, granted, lease, configuration)
        request = { resource: resource, owner: granted.owner, token: granted.token }
        request[:slot] = granted.slot if granted.respond_to?(:slot)
        held = { job: job, slot: nil, **request }
        begin
          if lease && (connection = lease.holding_connection)
            return FenceTransaction.after_transaction(connection) do
              release(job, resource, granted, lease, configuration)
            end
          end

          decision = Jobs.pool.with { _1.release(**request) }
          Instrumentation.instrument(:release, **held, status: decision.status, reason: decision.reason)
        rescue StandardError => e
          configuration.report(e, { during: "release", resource: resource, token: granted.token })
          Instrumentation.instrument(:thread_error, **held, error: e)
        end
      end
    end
  end
end
