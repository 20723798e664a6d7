# frozen_string_literal: true

require_relative "adapter"

module LeaseMachines
  class Store
    class SQLite < Adapter
      # The lease store's tables on one connection: created where none exist, then checked, so that a table of the
      # same name but another shape (another gem's, a hand-made one, a newer format) is refused when the store opens
      # rather than failing at some later request.
      module Schema
        # The format this version reads and writes (the one row of lease_machines_schema).
        # Format 1 (lease_machines 0.x before the event log) is upgraded on open: SCHEMA creates the event log and
        # raises the format, in one transaction.
        FORMAT = 2
        TABLES = %w[lease_machines_schema lease_machines_leases lease_machines_fences lease_machines_slots
                    lease_machines_slot_fences lease_machines_events].freeze
        # Each column as [name, declared type], as PRAGMA table_info reports it.
        COLUMNS = "SELECT name, type FROM pragma_table_info(?) ORDER BY cid"
        READ_FORMAT = "SELECT format FROM lease_machines_schema WHERE id = 1"

        module_function

        # Creates what is missing (only outside a transaction: inside one, the application's, the schema must already
        # be there), upgrading a format 1 database to format 2 (its event log), then checks every table's columns
        # and the format. Tables of another shape are refused before
        # anything is written. Raises StoreError for a mismatch, SQLite3::Exception when the database cannot be read.
        # With +migrate+ false nothing is written: a database without this format's tables is refused instead.
        def prepare(adapter, migrate: true)
          found = columns(adapter)
          check_columns(adapter, found)
          format = found.key?("lease_machines_schema") ? format_of(adapter) : nil
          if found.size < TABLES.size || format.nil?
            unmigrated!(adapter, format) unless migrate
            if adapter.in_transaction?
              refuse(adapter, "its tables (#{(TABLES - found.keys).join(", ")}) are missing and a transaction is " \
                              "open on the connection: run the schema (LeaseMachines::Store::SCHEMA) or the " \
                              "install generator's migration first")
            end
            adapter.connection.transaction(:immediate) { adapter.connection.execute_batch(SCHEMA) }
            check_columns(adapter, columns(adapter))
            format = format_of(adapter)
          end
          return if format == FORMAT

          refuse(adapter, "its schema is format #{LeaseMachines.shown(format)}; this lease_machines reads format #{FORMAT} " \
                          "only")
        end

        # The columns of each of the store's tables that exist, by table.
        def columns(adapter)
          TABLES.to_h { |table| [table, adapter.rows(COLUMNS, table)] }.reject { |_, found| found.empty? }
        end

        # Refuses a table whose columns (+found+, by table) are not the ones SCHEMA declares.
        def check_columns(adapter, found)
          found.each do |table, columns|
            expected = expected_columns.fetch(table)
            next if columns == expected

            refuse(adapter, "#{table} is not the lease store's table (columns #{describe(columns)}; format " \
                            "#{FORMAT} has #{describe(expected)})")
          end
        end

        def format_of(adapter) = adapter.rows(READ_FORMAT).first&.first

        # Refuses, for a store that may not migrate, a database without the current format's tables.
        def unmigrated!(adapter, format)
          refuse(adapter, "#{format ? "its schema is format #{LeaseMachines.shown(format)}" : "it has no lease store tables"}, " \
                          "and this store may not write to its schema (migrate: false): open it once with a store " \
                          "that may (the default), or run the install generator's migration")
        end

        # The columns SCHEMA declares, read once from an in-memory database that ran it.
        def expected_columns
          @expected_columns ||= begin
            database = SQLite3::Database.new(":memory:")
            database.execute_batch(SCHEMA)
            TABLES.to_h { |table| [table, database.execute(COLUMNS, [table]).freeze] }.freeze
          ensure
            database&.close
          end
        end

        def describe(columns) = columns.map { |name, type| "#{name} #{type}" }.join(", ")

        def refuse(adapter, why)
          raise StoreError, "#{adapter.name} is not a lease store of this version: #{why}"
        end
      end
    end
  end
end
