# frozen_string_literal: true

module LeaseMachines
  module ActiveJob
    # A write through the fence on an ActiveRecord connection (SQLite): opens a transaction on the fence record's
    # connection, or joins the one open there, makes it real (ActiveRecord begins transactions lazily), and hands the
    # rest to Store#fenced on that connection's SQLite3::Database: under a savepoint, the token is checked against
    # the lease store's rows in the same database (the lease live on the store's clock, no newer token issued) and
    # the fence's high-water raised, then the block runs. A refused token raises Fenced and the whole ActiveRecord
    # transaction rolls back (jobs enqueued in it after commit included). The rule is the core's; this only finds
    # the connection, and yields it to the block.
    module FencedWrite
      # Where a raw connection keeps its fence Store: on the connection object itself, so that it lives exactly as
      # long as the connection.
      SLOT = :@lease_machines_fence
      LOCK = Thread::Mutex.new

      module_function

      # Runs the block in a transaction on +record+'s connection, fenced by +token+ on +resource+, the lease checked
      # on +clock+ (the lease store's). Returns the block's value. Sets payload[:committed], whether the write's
      # transaction committed, however the call ends (an after_commit callback may raise after the commit; a write
      # that joined an enclosing transaction commits later, with it: false).
      def run(record, resource:, token:, clock:, payload: {})
        record.with_connection do |connection|
          store = store_for(connection, clock)
          failure = transaction = nil
          begin
            connection.transaction do
              transaction = connection.current_transaction
              connection.materialize_transactions
              store.fenced(resource: resource, token: token) { yield connection }
            rescue StoreError => e
              failure = e
              raise
            end
          rescue ::ActiveRecord::StatementInvalid => e
            # The block ended the transaction itself (COMMIT, ROLLBACK): the fence's StoreError says so, rather than
            # ActiveRecord's failure to close a transaction that is gone.
            raise failure || e
          ensure
            payload[:committed] = transaction&.state&.committed? || false
          end
        end
      end

      # The connection's configured busy timeout in Float seconds, or nil.
      def busy_timeout(connection)
        milliseconds = connection.pool.db_config.configuration_hash[:timeout]
        milliseconds && Integer(milliseconds) / 1000.0
      end

      # The fence's Store on +connection+ (created at its first fenced write, inside an open transaction or not),
      # deciding on +clock+. It changes one setting of the connection, and keeps its value: the busy timeout that
      # database.yml gives (+timeout+, milliseconds) becomes sqlite3's busy_handler_timeout of the same length, as
      # Rails 8 sets it, because ActiveRecord 7.2's C busy timeout waits holding the GVL, and would stall the very
      # thread that holds the lock (another job's, the renewer's) until it runs out. Journal mode and synchronous
      # are left as the application set them.
      def store_for(connection, clock)
        raw = connection.raw_connection
        unless raw.is_a?(SQLite3::Database)
          raise ArgumentError, "fenced writes support SQLite connections only here, got #{connection.adapter_name}"
        end

        LOCK.synchronize do
          store = raw.instance_variable_get(SLOT)
          unless store&.clock.equal?(clock)
            store = Store.new(raw, clock: clock, busy_timeout: busy_timeout(connection))
            raw.instance_variable_set(SLOT, store)
          end
          store
        end
      end
    end
  end
end
