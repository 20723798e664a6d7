# frozen_string_literal: true

# The token epochs of the PostgreSQL store: the server's history (its system identifier and timeline), the epoch
# recorded in lease_machines_history, and the epoch a request decides in.

module LeaseMachines
  class Store
    class PostgreSQL < Adapter
      # The token epoch in force and the history it was taken in (nil, nil without a row), and the timeline of the WAL
      # the server writes now (the first 8 hex digits of its file's name: the timeline a promotion moved to). Read in
      # every decision's first round trip and with every fenced write's check; the system identifier, which costs a
      # read of pg_control, is read once per connection (SYSTEM).
      EPOCH_READ = "SELECT h.epoch, h.history, ('x' || substr(pg_walfile_name(pg_current_wal_lsn()), 1, 8))::bit(32)" \
                   "::bigint FROM (SELECT 1) one LEFT JOIN lease_machines_history h ON h.id = 1"
      SYSTEM = "SELECT system_identifier::text FROM pg_control_system()"
      # The epoch taken in a new history, in the decision's own transaction, with its first grant: never lower than
      # one a concurrent first grant of the same history took.
      WRITE_HISTORY = "INSERT INTO lease_machines_history (id, epoch, history) VALUES (1, $1, $2) " \
                              "ON CONFLICT (id) DO UPDATE SET epoch = GREATEST(lease_machines_history.epoch, " \
                              "excluded.epoch), history = excluded.history"
      private_constant :EPOCH_READ, :SYSTEM, :WRITE_HISTORY

      private

      # The server's system identifier (pg_control_system()), read once per backend: a connection reset, or a new one,
      # may reach another server.
      def system_identifier
        pid = @connection.backend_pid
        return @system.last if @system&.first == pid

        @system = [pid, @connection.exec(SYSTEM).getvalue(0, 0)]
        @system.last
      end

      # The token epoch a request decides (or a fenced write is checked) in, from EPOCH_READ's row (+values+) and the
      # server's +system+ identifier: the recorded epoch when it was taken in the server's history as it is now
      # ("SYSTEM/TIMELINE"); else the epoch a first grant in this history takes, one above the recorded one and at
      # least its timeline's first (the core's TokenEpoch.after, the timeline less one as its generation: an epoch
      # taken after a promotion is above one its old primary took after its own promotion but never replicated),
      # kept in @new_epoch for that grant's commit. No row and timeline 1: epoch 0, as a database that never
      # failed over issues 1, 2, 3, ...
      def epoch_of(values, system)
        epoch, history, timeline = values
        now = "#{system}/#{format("%08X", Integer(timeline))}"
        @history = now
        @new_epoch = nil
        return Integer(epoch) if epoch && history == now

        taken = LeaseMachines.__send__(:_token_epoch_after, epoch && Integer(epoch), Integer(timeline) - 1)
        if taken << LeaseMachines::TOKEN_EPOCH_BITS > MAX_INTEGER
          raise StoreError, "#{@name}: token epoch #{taken} (timeline #{Integer(timeline)}) would issue tokens past " \
                            "PostgreSQL's bigint; the store's token epochs cover timelines up to 8192"
        end
        @new_epoch = taken
      end
    end
  end
end
