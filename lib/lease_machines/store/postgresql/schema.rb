# frozen_string_literal: true

# The schema of the PostgreSQL store: its tables created where missing (one process at a time), then checked
# (every table's columns, and the format).

module LeaseMachines
  class Store
    class PostgreSQL
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

      # Creates what is missing (only outside a transaction), then checks every table's columns and the format.
      # With +migrate+ false nothing is written: a database without this format's tables is refused instead.
      def prepare_schema(migrate)
        found = read_columns
        check_columns(found)
        format = found.key?("lease_machines_schema") ? read_format : nil
        # Tables without their format row (loaded from a schema dump, which keeps no rows) are taken over: the
        # schema's statements add what is missing.
        if found.size < COLUMNS.size || format.nil?
          missing = COLUMNS.keys - found.keys
          unless migrate
            what = format ? "its tables (#{missing.join(", ")}) are missing" : "it has no lease store tables"
            refuse("#{what}, and this store " \
                   "may not write to its schema (migrate: false): open it once with a store that may (the " \
                   "default), or run the install generator's migration")
          end
          if in_transaction?
            what = missing.empty? ? "its format row is missing" : "its tables (#{missing.join(", ")}) are missing"
            refuse("#{what} and a transaction is open on the connection: run the schema " \
                   "(LeaseMachines::Store::PostgreSQL::SCHEMA) or the install generator's migration first")
          end
          create_schema
          check_columns(read_columns)
          format = read_format
        end
        return if format == FORMAT

        refuse("its schema is format #{LeaseMachines.shown(format)}; this lease_machines reads format #{FORMAT} only")
      end

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

      def check_columns(found)
        found.each do |table, columns|
          expected = COLUMNS.fetch(table)
          next if columns == expected

          refuse("#{table} is not the lease store's table (columns #{describe_columns(columns)}; format #{FORMAT} " \
                 "has #{describe_columns(expected)})")
        end
      end

      def describe_columns(columns) = columns.map { |name, type| "#{name} #{type}" }.join(", ")

      def refuse(why)
        raise StoreError, "#{@name} is not a lease store of this version: #{why}"
      end
    end
  end
end
