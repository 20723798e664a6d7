# frozen_string_literal: true

# The schema of the PostgreSQL store: its tables created where missing (one process at a time), then checked
# (every table's columns, and the format).

module LeaseMachines
  class Store
    class PostgreSQL < Adapter
      # Each table's columns as [name, type], as information_schema reports them.
      COLUMNS = {
        "lease_machines_schema" => [%w[id integer], %w[format integer]],
        "lease_machines_leases" => [%w[resource text], %w[owner bigint], %w[token bigint],
                                    ["expires_at", "double precision"], %w[last_issued bigint],
                                    ["observed", "double precision"], %w[revision bigint]],
        "lease_machines_fences" => [%w[resource text], %w[highest bigint]],
        "lease_machines_history" => [%w[id integer], %w[epoch bigint], %w[history text]],
        "lease_machines_slots" => [%w[resource text], %w[slot integer], %w[owner bigint], %w[token bigint],
                                   ["expires_at", "double precision"], %w[last_issued bigint],
                                   ["observed", "double precision"], %w[revision bigint]],
        "lease_machines_slot_fences" => [%w[resource text], %w[slot integer], %w[highest bigint]],
        "lease_machines_events" => [%w[id bigint], %w[resource text], %w[slot integer], %w[seq bigint], %w[kind text],
                                    ["at", "double precision"], %w[owner bigint], %w[token bigint],
                                    ["expires_at", "double precision"], %w[revision bigint], %w[reason text],
                                    %w[replaced_owner bigint], %w[replaced_token bigint],
                                    ["replaced_expires_at", "double precision"], %w[highest bigint]]
      }.freeze
      READ_COLUMNS = <<~SQL.freeze
        SELECT table_name::text, column_name::text, data_type::text FROM information_schema.columns
        WHERE table_schema = current_schema() AND table_name = ANY ($1::text[]) ORDER BY table_name, ordinal_position
      SQL
      # Serializes two processes creating the schema at once (a transaction-scoped lock: no session state).
      CREATE_LOCK = "SELECT pg_advisory_xact_lock(7311201726481923)"
      private_constant :COLUMNS, :READ_COLUMNS, :CREATE_LOCK

      private

      # The tables' columns Adapter#prepare_schema expects.
      def table_columns = COLUMNS

      def read_format
        format = @connection.exec("SELECT format FROM lease_machines_schema WHERE id = 1").values.dig(0, 0)
        format && Integer(format)
      end

      def create_schema = self.class.create_tables(@connection, SCHEMA)

      # Runs +sql+ (CREATE TABLE IF NOT EXISTS ...) on +connection+ in a transaction of its own, one process at a time,
      # without "already exists, skipping" notices.
      def self.create_tables(connection, sql)
        connection.transaction do
          connection.exec("SET LOCAL client_min_messages = warning")
          connection.exec(CREATE_LOCK)
          connection.exec(sql)
        end
      end

      def read_columns
        found = Hash.new { |hash, table| hash[table] = [] }
        @connection.exec_params(READ_COLUMNS, [::PG::TextEncoder::Array.new.encode(COLUMNS.keys)]).each_row do |t, c, d|
          found[t] << [c, d]
        end
        found.to_h
      end
    end
  end
end
