# frozen_string_literal: true

# A request's statements on the PostgreSQL store: the store's own transaction opened (and marked as the store's on
# an application's connection), a decision's row made to exist, locked and read with the server's clock in one round
# trip, and written back: each statement with $1, $2, ... parameters, prepared or written as literals (#round_trip).

module LeaseMachines
  class Store
    class PostgreSQL < Adapter
      LEASE_COLUMNS = "owner, token, expires_at, last_issued, observed, revision"
      # The store's own transaction; on an application's connection marked as the store's twice, for #rollback_own:
      # a savepoint (which an aborted transaction can still roll back to) and a setting (which a live one can read),
      # both gone with it.
      BEGIN_OWN = "BEGIN ISOLATION LEVEL READ COMMITTED"
      OWN = "lease_machines_own"
      MARK_OWN = "SAVEPOINT #{OWN}".freeze
      # The request's lock timeout ('' keeps the connection's), for this transaction only.
      SET_TIMEOUT = "SELECT set_config('lock_timeout', coalesce(nullif($1, ''), current_setting('lock_timeout')), true)"
      # The store's own transactions commit durably whatever the role's or database's synchronous_commit: a grant
      # acknowledged and then lost in a crash would be issued again.
      SET_DURABLE = "#{SET_TIMEOUT}, set_config('synchronous_commit', 'on', true)".freeze
      # The same, marking the transaction as the store's on an application's connection.
      SET_OWN = "#{SET_DURABLE}, set_config('lease_machines.own', 'own', true)".freeze
      ENSURE_ROW = "INSERT INTO lease_machines_leases (resource) VALUES ($1) ON CONFLICT (resource) DO NOTHING"
      # The server's clock, read after the row's lock: statements of one pipeline run in order.
      CLOCK = "SELECT extract(epoch FROM clock_timestamp())::float8"
      # The same for a decision, each double as its 8 bytes in hex (whatever bytea_output says), in one statement:
      # the row is locked inside a materialized CTE, whose rows reach the outer SELECT only once locked, so the clock
      # in the outer list is read after the lock (and not at all without a row). MATERIALIZED needs PostgreSQL 12 or
      # newer (the store's minimum).
      LOCK_ROW_TEMPLATE = "WITH locked AS MATERIALIZED (SELECT #{LEASE_COLUMNS} FROM lease_machines_leases " \
                          "WHERE resource = $1 FOR UPDATE) SELECT owner, token, encode(float8send(expires_at), " \
                          "'hex'), last_issued, encode(float8send(observed), 'hex'), revision%s FROM locked"
      CLOCK_AFTER = "SELECT encode(float8send(extract(epoch FROM clock_timestamp())::float8), 'hex')"
      LOCK_ROW = format(LOCK_ROW_TEMPLATE, "").freeze
      LOCK_ROW_CLOCK = format(LOCK_ROW_TEMPLATE, CLOCK_AFTER.sub("SELECT ", ", ")).freeze
      # A semaphore's slots above 0, locked (after slot 0's row, which every request on the resource locks first)
      # and read, doubles as bytes; then the server's clock (CLOCK_AFTER), read after every lock.
      LOCK_SLOTS = "SELECT slot, owner, token, encode(float8send(expires_at), 'hex'), last_issued, " \
                   "encode(float8send(observed), 'hex'), revision FROM lease_machines_slots " \
                   "WHERE resource = $1 ORDER BY slot FOR UPDATE"
      WRITE_SLOT = "INSERT INTO lease_machines_slots (resource, slot, #{LEASE_COLUMNS}) " \
                   "VALUES ($7, $8, $1, $2, $3, $4, $5, $6) ON CONFLICT (resource, slot) " \
                   "DO UPDATE SET owner = excluded.owner, token = excluded.token, " \
                   "expires_at = excluded.expires_at, last_issued = excluded.last_issued, " \
                   "observed = excluded.observed, revision = excluded.revision".freeze
      WRITE_ROW = "UPDATE lease_machines_leases SET owner = $1, token = $2, expires_at = $3, " \
                  "last_issued = $4, observed = $5, revision = $6 WHERE resource = $7"
      OWN_MARK = "SELECT current_setting('lease_machines.own', true)"
      private_constant :LEASE_COLUMNS, :BEGIN_OWN, :OWN, :MARK_OWN, :SET_TIMEOUT, :SET_DURABLE, :SET_OWN, :ENSURE_ROW,
                       :CLOCK, :LOCK_ROW_TEMPLATE, :CLOCK_AFTER, :LOCK_ROW, :LOCK_ROW_CLOCK, :LOCK_SLOTS, :WRITE_SLOT,
                       :WRITE_ROW, :OWN_MARK

      private

      # A request's first statements: the transaction's opening, and the resource's row made to exist unless a
      # committed request of this store has seen it. The request is remembered for its close (the resource, and
      # whether to learn the row).
      def opening_request(resource)
        known = @known_rows.key?(resource)
        @request = [resource, resource, known]
        statements = [*@opening]
        statements << [ENSURE_ROW, [resource]] unless known
        statements
      end

      # The resource's locked row from +result+; StoreError when it is gone (deleted while the request waited for its
      # lock, or since this store's last request on it: the next request makes it exist again).
      def locked_row(resource, result) = text_row_of(result) || row_gone!(resource)

      def row_gone!(resource)
        @known_rows.delete(resource)
        raise StoreError, "#{@name}: the row of #{resource.inspect} was deleted while the request waited for its " \
                          "lock (or since this store's last request on it); nothing was decided"
      end

      # The statements that open the store's own transaction: BEGIN and its settings; on an application's
      # connection, marked as the store's too (a savepoint and a setting, for #rollback_own). A connection the store
      # opened needs no mark: every transaction on it is the store's.
      def opening(lock_timeout)
        return [[BEGIN_OWN], own(SET_DURABLE, [lock_timeout])] if @owned

        [[BEGIN_OWN], [MARK_OWN], own(SET_OWN, [lock_timeout])]
      end

      # The statements that open a decision's transaction, its round trip's first part: the same settings as
      # #opening, as utility statements (which PostgreSQL runs without planning). The lock timeout is the store's
      # own Integer milliseconds, never the caller's text.
      def decision_opening
        statements = [BEGIN_OWN]
        statements << MARK_OWN unless @owned
        statements << "SET LOCAL lock_timeout = '#{@lock_timeout}'" unless @lock_timeout.empty?
        statements << "SET LOCAL synchronous_commit = on"
        # Only on a connection the store opened: the server ends the session, which an application's connection
        # would then have lost under it.
        statements << "SET LOCAL idle_in_transaction_session_timeout = '#{IDLE_IN_DECISION}'" if @owned
        statements << "SET LOCAL lease_machines.own = 'own'" unless @owned
        statements.freeze
      end

      # The UPDATE of +resource+'s row to +row+ (owners as signed bigints).
      def write_row(resource, row) = [WRITE_ROW, [*columns_of(row), resource]]

      # The upsert of +slot+'s row (above 0) of +resource+, as #write_row writes a row.
      def write_slot(resource, slot, row) = [WRITE_SLOT, [*columns_of(row), resource, Integer(slot)]]
    end
  end
end
