# frozen_string_literal: true

module LeaseMachines
  module ActiveJob
    # A write through the fence on an ActiveRecord connection (SQLite or PostgreSQL): opens a transaction on the
    # fence record's connection, or joins the one open there, makes it real (ActiveRecord begins transactions
    # lazily), and hands the rest to Store#fenced on that connection's own driver connection (SQLite3::Database,
    # PG::Connection): under a savepoint, the token is checked against the lease store's rows in the same database
    # (the lease live on the store's clock, no newer token issued) and the fence's high-water raised, then the block
    # runs (on PostgreSQL the lease's row is read FOR SHARE: no grant of the resource commits before the application's
    # transaction has). A refused token raises Fenced and the whole ActiveRecord transaction rolls back (jobs enqueued
    # in it after commit included). The rule is the core's; this only finds the connection, and yields it to the
    # block.
    module FencedWrite
      # Where a raw connection keeps its fence Store: on the connection object itself, so that it lives exactly as
      # long as the connection.
      SLOT = :@lease_machines_fence
      # Where an ActiveRecord connection on PostgreSQL lists the resources whose lease rows its open transaction
      # holds (FOR SHARE, since a fenced write joined it): until that transaction ends, no request of the lease store
      # on them (a grant, a renewal, a release) can commit.
      HELD = :@lease_machines_held
      LOCK = Thread::Mutex.new

      module_function

      # Runs the block in a transaction on +record+'s connection, fenced by +token+ on +resource+, the lease checked
      # on +clock+ (the lease store's; nil: the PostgreSQL server's). Returns the block's value. Sets
      # payload[:committed], whether the write's transaction committed, however the call ends (an after_commit
      # callback may raise after the commit; a write that joined an enclosing transaction commits later, with it:
      # false).
      def run(record, resource:, token:, clock:, payload: {})
        record.with_connection do |connection|
          store = store_for(connection, clock)
          failure = transaction = nil
          begin
            result = connection.transaction do
              transaction = connection.current_transaction
              connection.materialize_transactions
              store.fenced(resource: resource, token: token) { yield connection }
            rescue StoreError => e
              failure = e
              raise
            end
            hold(connection, resource) if store.adapter_name == :postgresql && connection.transaction_open?
            result
          rescue ::ActiveRecord::StatementInvalid => e
            # The block ended the transaction itself (COMMIT, ROLLBACK): the fence's StoreError says so, rather than
            # ActiveRecord's failure to close a transaction that is gone.
            raise failure || e
          ensure
            payload[:committed] = transaction&.state&.committed? || false
          end
        end
      end

      # Whether +connection+'s open transaction holds +resource+'s lease row (see HELD).
      def holds?(connection, resource)
        (connection.transaction_open? && connection.instance_variable_get(HELD)&.key?(resource)) || false
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
        held = connection.instance_variable_get(HELD)
        return held[resource] = true if held

        connection.instance_variable_set(HELD, { resource => true })
        after_transaction(connection) { connection.instance_variable_set(HELD, nil) }
      end

      # The connection's configured busy timeout in Float seconds, or nil.
      def busy_timeout(connection)
        milliseconds = connection.pool.db_config.configuration_hash[:timeout]
        milliseconds && Integer(milliseconds) / 1000.0
      end

      # The fence's Store on +connection+ (created at its first fenced write, inside an open transaction or not),
      # deciding on +clock+ (nil: the PostgreSQL server's clock, as the lease store's own). On PostgreSQL it changes
      # nothing of the connection: its lock_timeout is the application's. On SQLite it changes one setting, and keeps
      # its value: the busy timeout that database.yml gives (+timeout+, milliseconds) becomes sqlite3's
      # busy_handler_timeout of the same length, as Rails 8 sets it, because ActiveRecord 7.2's C busy timeout waits
      # holding the GVL, and would stall the very thread that holds the lock (another job's, the renewer's) until it
      # runs out. Journal mode and synchronous are left as the application set them.
      def store_for(connection, clock)
        raw = connection.raw_connection
        options = if defined?(::SQLite3::Database) && ::SQLite3::Database === raw
                    { busy_timeout: busy_timeout(connection) }
                  elsif defined?(::PG::Connection) && ::PG::Connection === raw
                    {}
                  else
                    raise ArgumentError, "fenced writes support SQLite and PostgreSQL connections, got " \
                                         "#{connection.adapter_name}"
                  end

        LOCK.synchronize do
          store = raw.instance_variable_get(SLOT)
          unless store && store.clock.equal?(clock) # a clock may be nil: the PostgreSQL server's
            store = Store.new(raw, clock: clock, **options)
            raw.instance_variable_set(SLOT, store)
          end
          store
        end
      end
    end
  end
end
