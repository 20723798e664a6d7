# frozen_string_literal: true

module LeaseMachines
  module TestSupport
    # What a test module run on every store shares: the including class says where its database is (#database: a
    # SQLite path, a PostgreSQL or MySQL URL; OnSQLite, OnPostgreSQL and OnMySQL give a fresh one); #open_store opens
    # a Store on it, closed after the test; #store is the test's first.
    module StoreRules
      def teardown
        (@stores || []).each(&:close)
        super
      end

      def store = @store ||= open_store

      def open_store(**options) = LeaseMachines::Store.new(database, **options).tap { (@stores ||= []) << _1 }

      # The rules on a fresh SQLite file (a class includes its rules module, then this).
      module OnSQLite
        def setup
          super
          requires_sqlite3!
          @database = File.join(scratch_dir("lease-store"), "leases.sqlite3")
        end

        def database = @database
      end

      # The rules on a fresh schema of the suite's PostgreSQL cluster.
      module OnPostgreSQL
        def setup
          super
          @database = fresh_postgres_schema_url
        end

        def database = @database
      end

      # The rules on a fresh database of the suite's MariaDB server.
      module OnMySQL
        def setup
          super
          @database = fresh_mysql_database_url
        end

        def database = @database
      end
    end
  end
end
