# frozen_string_literal: true

module LeaseMachines
  module ActiveJob
    # A write through the fence on an ActiveRecord connection (SQLite): opens a transaction on the fence record's
    # connection, or joins the one open there, makes it real (ActiveRecord begins transactions lazily), and hands the
    # rest to the store's own Store#fenced on that connection's SQLite3::Database: under a savepoint, the fence's
    # high-water is raised as the first statement, then the block runs. A stale token raises Fenced and the whole
    # ActiveRecord transaction rolls back (jobs enqueued in it after commit included). The rule is the store's; this
    # only finds the connection, and yields it to the block.
    module FencedWrite
      # One Store per raw connection, opened outside any transaction (it sets the connection up: SQLite refuses some
      # of its PRAGMAs inside one).
      STORES = ObjectSpace::WeakMap.new
      LOCK = Thread::Mutex.new

      module_function

      def run(record, resource:, token:)
        record.with_connection do |connection|
          store = prepare(connection)
          connection.transaction do
            connection.materialize_transactions
            store.fenced(resource: resource, token: token) { yield connection }
          end
        end
      end

      # The fence's Store on +connection+, opened now when there is none yet. Call it before the job opens its own
      # transactions (the job's around_perform does).
      def prepare(connection)
        raw = connection.raw_connection
        unless raw.is_a?(SQLite3::Database)
          raise ArgumentError, "fenced writes support SQLite connections only here, got #{connection.adapter_name}"
        end

        LOCK.synchronize do
          STORES[raw] ||= begin
            if raw.transaction_active?
              raise StoreError, "the first fenced write on this connection runs inside an open transaction; " \
                                "open the fence first (LeaseMachines::ActiveJob::FencedWrite.prepare(connection))"
            end
            Store.new(raw)
          end
        end
      end
    end
  end
end
