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

      # Whether +store+'s connection is inside a transaction (the adapter's own answer, the same on every store).
      def in_transaction?(store = self.store) = store.instance_variable_get(:@adapter).in_transaction?

      # The tokens in the tests' table +report+ (token bigint), in the order written.
      def reported(store = self.store) = sql(store.database, "SELECT token FROM report").flatten.map { Integer(_1) }

      # Runs +statement+ (with ?-placeholders, #placeholders' form on the store's database) with +binds+ on +conn+,
      # an application's connection (a fenced block's): its rows as Arrays. The including store's module defines it.
      def sql(conn, statement, binds = []) = raise(NotImplementedError, "#{self.class} does not define #sql")

      # +statement+ with its ?-placeholders as the store's driver takes them (a fenced write's statements:).
      def placeholders(statement) = statement

      # SQL on an SQLite connection: a SQLite store's, or a Redis store's SQLite fence.
      module SQLiteStatements
        def sql(conn, statement, binds = []) = conn.execute(statement, binds)
      end

      # The rules on a fresh SQLite file (a class includes its rules module, then this).
      module OnSQLite
        include SQLiteStatements

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

        def sql(conn, statement, binds = []) = conn.exec_params(placeholders(statement), binds).values

        def placeholders(statement)
          n = 0
          statement.gsub("?") { "$#{n += 1}" }
        end
      end

      # The rules on a fresh database of the suite's MariaDB server.
      module OnMySQL
        def setup
          super
          @database = fresh_mysql_database_url
        end

        def database = @database

        def sql(conn, statement, binds = [])
          return conn.query(statement, as: :array).to_a if binds.empty?

          prepared = conn.prepare(statement)
          prepared.execute(*binds, as: :array).to_a
        ensure
          prepared&.close
        end
      end
    end
  end
end
