# frozen_string_literal: true

module LeaseMachines
  module Jobs
    # A write through the fence on an ActiveRecord connection (SQLite, PostgreSQL or MySQL): opens a transaction on
    # the fence record's connection, or joins the one open there, makes it real (ActiveRecord begins transactions
    # lazily), and hands the rest to Store#fenced on that connection's own driver connection (SQLite3::Database,
    # PG::Connection, Mysql2::Client): under a savepoint, the token is checked against the lease store's rows in the
    # same database (the lease live on the store's clock, no newer token issued) and the fence's high-water raised,
    # then the block runs (on PostgreSQL and MySQL the lease's row is read under a shared lock: no grant of the
    # resource commits before the application's transaction has). A refused token raises Fenced and the whole
    # ActiveRecord transaction rolls back (jobs enqueued in it after commit included). The rule is the core's; this
    # only finds the connection, and yields it to the block.
    module FenceTransaction
      # The resources whose lease rows an ActiveRecord connection's open transaction holds (PostgreSQL, MySQL:
      # Store#fence_holds is :row, since a fenced write joined it), by connection, weakly: until that transaction
      # ends, no request of the lease store on them (a grant, a renewal, a release) can commit. (Ruby 3.2, without
      # WeakKeyMap: a WeakMap, which may forget sooner; a grant then waits out its busy timeout instead of being
      # refused at once.)
      HELD = defined?(ObjectSpace::WeakKeyMap) ? ObjectSpace::WeakKeyMap.new : ObjectSpace::WeakMap.new
      HELD_LOCK = Thread::Mutex.new

      module_function

      # Runs the block in a transaction on +record+'s connection, fenced by +token+ on +resource+ (in +slot+ of its
      # semaphore), the lease checked on +clock+ (the lease store's; nil: the database server's) against the lease's
      # row in the same database, or in Redis for a lease store on Redis (+redis+, its RedisClient::Config). Returns
      # the block's value. Sets payload[:committed], whether the write's transaction committed, however the call
      # ends (an after_commit callback may raise after the commit; a write that joined an enclosing transaction
      # commits later, with it: false).
      def run(record, resource:, token:, clock:, redis: nil, slot: 0, payload: {})
        record.with_connection do |connection|
          store = Jobs.pool.fence_store(connection, clock, redis)
          failure = transaction = nil
          begin
            result = connection.transaction do
              transaction = connection.current_transaction
              connection.materialize_transactions
              store.fenced(resource: resource, token: token, slot: slot) { yield connection }
            rescue StoreError => e
              failure = e
              raise
            end
            hold(connection, resource) if store.fence_holds == :row && connection.transaction_open?
            result
          rescue ::ActiveRecord::StatementInvalid => e
            # The block ended the transaction itself (COMMIT, ROLLBACK): the fence's StoreError says so, rather than
            # ActiveRecord's failure to close a transaction that is gone.
            raise failure || e
          rescue Fenced
            log_refusal(connection, store, resource, token, slot)
            raise
          ensure
            payload[:committed] = transaction&.state&.committed? || false
          end
        end
      end

      # The refused write's event went into the transaction the refusal rolls back (Fenced raises through it): once
      # that has rolled back, the store logs the refusal again in a transaction of its own, so that the event log
      # (and the dashboard) shows the job's stale write. It is the same check, refused again: a refused token never
      # becomes the live lease's. A transaction that commits despite the refusal (the application rescued Fenced)
      # keeps the event it joined, and nothing more is logged.
      def log_refusal(connection, store, resource, token, slot)
        unless connection.transaction_open?
          return store.fenced(resource: resource, token: token, slot: slot) { nil }
        end

        connection.current_transaction.after_rollback { log_refusal(connection, store, resource, token, slot) }
      rescue Fenced, StoreError
        nil # refused again, and logged; or the store cannot log it now, and the job's own refusal stands
      end

      # Whether +connection+'s open transaction holds +resource+'s lease row (see HELD).
      def holds?(connection, resource)
        (connection.transaction_open? && HELD_LOCK.synchronize { HELD[connection] }&.key?(resource)) || false
      end

      # Runs the block once +connection+ has no transaction open any more: when its outermost transaction commits or
      # rolls back. (ActiveRecord runs the commit callbacks of a savepoint right under a transaction that is not
      # joinable, a transactional test's, when it releases the savepoint: that transaction and its locks live on.)
      def after_transaction(connection, &block)
        again = -> { connection.transaction_open? ? after_transaction(connection, &block) : yield }
        transaction = connection.current_transaction
        transaction.after_commit(&again)
        transaction.after_rollback(&again)
      end

      # +resource+'s lease row is held by +connection+'s open transaction, which the fenced write joined: listed
      # until the transaction ends.
      def hold(connection, resource)
        first = HELD_LOCK.synchronize do
          held = HELD[connection]
          held ? !(held[resource] = true) : (HELD[connection] = { resource => true })
        end
        after_transaction(connection) { HELD_LOCK.synchronize { HELD[connection] = nil } } if first
      end
    end
  end
end
