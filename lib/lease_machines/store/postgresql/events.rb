# frozen_string_literal: true

# The event log of the PostgreSQL store: one event logged (and the log pruned) in a request's transaction, and the
# statements that read it back.

module LeaseMachines
  class Store
    class PostgreSQL < Adapter
      EVENT_COLUMNS = "kind, at, owner, token, expires_at, revision, reason, replaced_owner, replaced_token, " \
                      "replaced_expires_at, highest"
      # One event logged and the log pruned, by the schema's function (lease_machines_log_event): one statement.
      LOG_EVENT = "SELECT lease_machines_log_event(#{(1..15).map { "$#{_1}" }.join(", ")})".freeze
      READ_EVENTS = "SELECT id, resource, slot, #{EVENT_COLUMNS} FROM lease_machines_events WHERE id > $1 " \
                    "ORDER BY id LIMIT $2"
      READ_RESOURCE_EVENTS = "SELECT id, resource, slot, #{EVENT_COLUMNS} FROM lease_machines_events " \
                             "WHERE resource = $1 AND id > $2 ORDER BY id LIMIT $3"
      READ_LATEST_EVENTS = "SELECT * FROM (SELECT id, resource, slot, #{EVENT_COLUMNS} FROM lease_machines_events " \
                           "ORDER BY id DESC LIMIT $1) newest ORDER BY id"
      READ_LATEST_RESOURCE_EVENTS = "SELECT * FROM (SELECT id, resource, slot, #{EVENT_COLUMNS} FROM " \
                                    "lease_machines_events WHERE resource = $1 ORDER BY id DESC LIMIT $2) newest " \
                                    "ORDER BY id"
      READ_CHANGES = "SELECT id, resource, slot, kind, at, owner, token, expires_at, revision, replaced_owner, " \
                     "replaced_token, replaced_expires_at FROM lease_machines_events " \
                     "WHERE kind IN (#{Event::CHANGES_SQL}) ORDER BY id".freeze
      COUNT_EVENTS = "SELECT kind, count(*) FROM lease_machines_events GROUP BY kind ORDER BY kind"
      private_constant :EVENT_COLUMNS, :LOG_EVENT, :READ_EVENTS, :READ_RESOURCE_EVENTS, :READ_LATEST_EVENTS,
                       :READ_LATEST_RESOURCE_EVENTS, :READ_CHANGES, :COUNT_EVENTS

      private

      # The statement that logs +event+ (the extension's columns, with a fenced write's mark appended) of the lease
      # +slot+ of +resource+, and prunes (LOG_EVENT): [sql, params].
      def log_event(resource, slot, event)
        kind, at, owner, token, expires_at, revision, reason, replaced_owner, replaced_token, replaced_expires_at,
          highest = event
        [LOG_EVENT, [resource, Integer(slot), kind, at, signed(owner), token, expires_at, revision, reason,
                     signed(replaced_owner), replaced_token, replaced_expires_at, highest, @keep_events,
                     @events_max_age]]
      end

      # +value+ as an SQL literal: NULL, a boolean, an Integer, a Float exactly (float8's input reads Ruby's shortest
      # form back to the same double), a String quoted by the connection.
      def literal(value)
        case value
        when nil then "NULL"
        when true, false then value.to_s
        when Integer then value.to_s
        when Float then "'#{value}'::float8"
        when String then @connection.escape_literal(value)
        else raise TypeError, "the extension wrote #{LeaseMachines.shown(value)} into a statement"
        end
      end
    end
  end
end
