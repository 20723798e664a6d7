# frozen_string_literal: true

# The fenced write's statements on the PostgreSQL store: its row locked FOR SHARE, its mark read and raised, its
# transaction checked at its end and ended (a savepoint's lock timeout restored); the committed row's and mark's
# reads (#read_row, #read_fence).

module LeaseMachines
  class Store
    class PostgreSQL < Adapter
      # The transaction a fenced write runs in, read at its start and checked at its end (before the mark), so that
      # statements that ended it (COMMIT, ROLLBACK) are caught rather than leaving the mark outside the fence.
      TRANSACTION = "SELECT txid_current()"
      SAME_TRANSACTION = "SELECT CASE WHEN txid_current() = $1::bigint THEN 1 ELSE " \
                         "('lease_machines: the fenced write''s transaction was ended inside it (now ' || " \
                         "txid_current() || ')')::int END"
      ENDED = "the fenced write's transaction was ended inside it"
      SHARE_ROW = "SELECT #{LEASE_COLUMNS} FROM lease_machines_leases WHERE resource = $1 FOR SHARE".freeze
      READ_ROW = "SELECT #{LEASE_COLUMNS} FROM lease_machines_leases WHERE resource = $1".freeze
      READ_FENCE = "SELECT highest FROM lease_machines_fences WHERE resource = $1"
      SHARE_SLOT = "SELECT #{LEASE_COLUMNS} FROM lease_machines_slots WHERE resource = $1 AND slot = $2 " \
                   "FOR SHARE".freeze
      READ_SLOT = "SELECT #{LEASE_COLUMNS} FROM lease_machines_slots WHERE resource = $1 AND slot = $2".freeze
      READ_SLOT_FENCE = "SELECT highest FROM lease_machines_slot_fences WHERE resource = $1 AND slot = $2"
      WRITE_SLOT_FENCE = <<~SQL.freeze
        INSERT INTO lease_machines_slot_fences (resource, slot, highest) VALUES ($1, $2, $3)
        ON CONFLICT (resource, slot) DO UPDATE SET highest = excluded.highest
      SQL
      WRITE_FENCE = <<~SQL.freeze
        INSERT INTO lease_machines_fences (resource, highest) VALUES ($1, $2)
        ON CONFLICT (resource) DO UPDATE SET highest = excluded.highest
      SQL
      OLD_LOCK_TIMEOUT = "SELECT current_setting('lock_timeout')"
      RESTORE_LOCK_TIMEOUT = "SELECT set_config('lock_timeout', $1, true)"
      private_constant :TRANSACTION, :SAME_TRANSACTION, :ENDED, :SHARE_ROW, :READ_ROW, :READ_FENCE, :SHARE_SLOT,
                       :READ_SLOT, :READ_SLOT_FENCE, :WRITE_SLOT_FENCE, :WRITE_FENCE, :OLD_LOCK_TIMEOUT,
                       :RESTORE_LOCK_TIMEOUT

      private

      # How a fenced write's transaction ends: its savepoint released (the lock timeout it replaced restored), or
      # the store's own committed.
      def fence_end(savepoint)
        return [["COMMIT"]] unless savepoint

        [own(RESTORE_LOCK_TIMEOUT, [@kept_timeouts.delete(savepoint)]), ["RELEASE SAVEPOINT #{savepoint}"]]
      end
    end
  end
end
