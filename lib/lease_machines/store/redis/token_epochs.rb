# frozen_string_literal: true

# The token epochs of the Redis store: the server's history (HISTORY, history.lua), the epoch set in Redis
# (set_epoch.lua) after the fence's database committed it (lease_machines_token_epochs), and the epoch a decision
# or a fenced write is checked in.

module LeaseMachines
  class Store
    class Redis < Adapter
      # Lua: the server's history as the token epoch names it, "RUN_ID:MASTER_REPLID" (nil when INFO names either not):
      # run_id changes with every start of the server process, master_replid with every promotion (REPLICAOF NO ONE,
      # a failover) and every time the server takes another primary's data. Neither comes back, so a server that can
      # have lost data since the epoch was set (restarted, failed over, failed back) names another history.
      HISTORY = File.read(File.expand_path("history.lua", __dir__)).freeze
      # Sets the token epoch KEYS[1] to ARGV[1] in the server's history (HISTORY) as it is now, unless it is already as
      # high; answers {"history"} when INFO names no run_id or master_replid.
      SET_EPOCH = "#{HISTORY}\n#{File.read(File.expand_path("set_epoch.lua", __dir__))}"
      private_constant :HISTORY, :SET_EPOCH

      private

      # The token epochs' table created in the fence's database where it is missing. On PostgreSQL only then, in a
      # transaction of its own (PostgreSQL.create_tables), unless the connection is in the application's transaction
      # (a fence on an ActiveRecord connection): then the table is created in it.
      def create_epochs(connection, postgresql)
        return connection.execute(EPOCHS_SCHEMA) unless postgresql
        return if connection.exec("SELECT to_regclass('lease_machines_token_epochs')").getvalue(0, 0)
        return connection.exec(EPOCHS_SCHEMA) unless connection.transaction_status == ::PG::PQTRANS_IDLE

        PostgreSQL.create_tables(connection, EPOCHS_SCHEMA)
      end

      # The token epoch as Redis keeps it (a decimal String; nil: none) as an Integer, or StoreError.
      def epoch_number(epoch)
        epoch.nil? ? nil : Integer(epoch, 10)
      rescue ArgumentError
        raise StoreError, "corrupt token epoch in #{@name}: #{epoch.inspect}"
      end

      # Whether the fence's database has committed an epoch above +epoch+ (Redis's): Redis then keeps an epoch of
      # another history than the newest (a copy of its data restored, or a server that missed the last move), and the
      # next one is taken. Read once per epoch this store meets, not per commit.
      def behind_fence?(epoch)
        return false if @confirmed_epoch == epoch

        behind = (fence_epoch || -1) > epoch_number(epoch)
        @confirmed_epoch = epoch unless behind
        behind
      end

      # The token epoch a fenced write is checked in: Redis's +epoch+ when it was set in the server's history as it is
      # now (+same_history+) and no other was committed since; else the one after every epoch committed, whose floor is
      # above every token ever issued (each is issued in an epoch committed in the fence's database first), so that a
      # holder from before a loss is refused as stale before the next grant moves the epoch. A holder whose row
      # survived holds on: the core raises a row's high-water, never its lease.
      def checked_epoch(epoch, same_history)
        return epoch_number(epoch) if same_history && !behind_fence?(epoch)

        [fence_epoch || -1, epoch_number(epoch) || -1].max + 1
      end

      # The epoch the fence's database last committed, or nil.
      def fence_epoch
        sql = "SELECT epoch FROM lease_machines_token_epochs WHERE id = 1"
        connection = @fence.connection
        value = PostgreSQL === @fence ? connection.exec(sql).values.dig(0, 0) : connection.execute(sql).dig(0, 0)
        value&.then { Integer(_1) }
      end

      # The token epoch is missing, was set in another history of the server (HISTORY: Redis restarted, failed over
      # or failed back since), is below the fence database's, or has no room for the next token: the next epoch,
      # above every epoch the fence's database or the server knows, is committed in the fence's database first (never
      # inside a transaction there: Store decides nothing inside one), then set in Redis in the server's history as
      # it is then. Every token issued after it is above every token issued before it, whatever Redis lost. Returns
      # CONFLICT: the request is decided again.
      def advance_epoch(resource, seen, at_least: 0)
        epoch = next_epoch_committed([seen ? epoch_number(seen) : -1, at_least - 1].max)
        reply = fetch("EVAL", SET_EPOCH, 1, EPOCH, epoch.to_s)
        raise StoreError, "#{@name}: INFO names no run_id or master_replid, which token epochs need" if Array === reply

        conflict(resource)
      end

      # The next epoch, committed in the fence's database: 0 for the first (none there, none in Redis: +seen+ -1), else
      # one above the higher of the database's and +seen+ (Redis's).
      def next_epoch_committed(seen)
        first = seen + 1
        if PostgreSQL === @fence
          sql = "INSERT INTO lease_machines_token_epochs (id, epoch) VALUES (1, $1) ON CONFLICT (id) DO UPDATE SET " \
                "epoch = GREATEST(lease_machines_token_epochs.epoch + 1, EXCLUDED.epoch) RETURNING epoch"
          Integer(@fence.connection.exec_params(sql, [first]).getvalue(0, 0), 10)
        else
          sql = "INSERT INTO lease_machines_token_epochs (id, epoch) VALUES (1, ?) ON CONFLICT (id) DO UPDATE SET " \
                "epoch = max(lease_machines_token_epochs.epoch + 1, excluded.epoch) RETURNING epoch"
          @fence.connection.execute(sql, [first]).first.first
        end
      end
    end
  end
end
