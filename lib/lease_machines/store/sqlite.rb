# frozen_string_literal: true

begin
  require "sqlite3"
rescue LoadError
  nil # an application on PostgreSQL alone: Store.new with a path or an SQLite3::Database says the gem is missing
end
require_relative "schema"

module LeaseMachines
  class Store
    # The SQLite side of Store: how to open the database, run a transaction, and read and write the store's tables. It
    # makes no decision (Store and the extension do) and knows no lease rule.
    #
    # Rows are read with prepared statements stepped by hand, which answer Arrays whatever the connection's
    # +results_as_hash+ says, so the application's own connection works with any settings. The store's own
    # statements are prepared once per connection and reset after every use (a reset statement holds no lock).
    class SQLite
      # What this database's driver raises; Store turns it into StoreError.
      ERRORS = (defined?(::SQLite3::Exception) ? [::SQLite3::Exception] : []).freeze

      def self.adapter_name = :sqlite
      def self.errors = ERRORS
      def self.message(error) = error.message
      def self.check_name!(name) = name

      # Whether +database+ is for this adapter: everything that is not PostgreSQL's is (a bad argument is then
      # refused here, with the message that names both).
      def self.accepts?(_database) = true
      # SQLite integers are signed 64-bit: the store refuses to issue tokens above this.
      MAX_INTEGER = 2**63 - 1
      # The schema, for people who manage their own migrations.
      SCHEMA = File.read(File.expand_path("schema.sql", __dir__)).freeze
      # The busy timeout is handed to SQLite in whole milliseconds, as a C int.
      MAX_BUSY_TIMEOUT = (2**31 - 1) / 1000.0
      # How long a database the store opens waits for another connection's transaction, Float seconds.
      DEFAULT_BUSY_TIMEOUT = 5.0

      LEASE_COLUMNS = "owner, token, expires_at, last_issued, observed, revision"
      READ_LEASE = "SELECT #{LEASE_COLUMNS} FROM lease_machines_leases WHERE resource = ?".freeze
      WRITE_LEASE = <<~SQL.freeze
        INSERT INTO lease_machines_leases (resource, #{LEASE_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?)
        ON CONFLICT (resource) DO UPDATE SET owner = excluded.owner, token = excluded.token,
          expires_at = excluded.expires_at, last_issued = excluded.last_issued, observed = excluded.observed,
          revision = excluded.revision
      SQL
      READ_FENCE = "SELECT highest FROM lease_machines_fences WHERE resource = ?"
      WRITE_FENCE = <<~SQL.freeze
        INSERT INTO lease_machines_fences (resource, highest) VALUES (?, ?)
        ON CONFLICT (resource) DO UPDATE SET highest = excluded.highest
      SQL
      READ_SLOTS = "SELECT slot, #{LEASE_COLUMNS} FROM lease_machines_slots WHERE resource = ? ORDER BY slot".freeze
      READ_SLOT = "SELECT #{LEASE_COLUMNS} FROM lease_machines_slots WHERE resource = ? AND slot = ?".freeze
      WRITE_SLOT = <<~SQL.freeze
        INSERT INTO lease_machines_slots (resource, slot, #{LEASE_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?)
        ON CONFLICT (resource, slot) DO UPDATE SET owner = excluded.owner, token = excluded.token,
          expires_at = excluded.expires_at, last_issued = excluded.last_issued, observed = excluded.observed,
          revision = excluded.revision
      SQL
      READ_SLOT_FENCE = "SELECT highest FROM lease_machines_slot_fences WHERE resource = ? AND slot = ?"
      WRITE_SLOT_FENCE = <<~SQL.freeze
        INSERT INTO lease_machines_slot_fences (resource, slot, highest) VALUES (?, ?, ?)
        ON CONFLICT (resource, slot) DO UPDATE SET highest = excluded.highest
      SQL
      COMMIT = "COMMIT"
      # The savepoint that marks a transaction as the store's own.
      OWN = "lease_machines_own"
      private_constant :LEASE_COLUMNS, :READ_LEASE, :WRITE_LEASE, :READ_FENCE, :WRITE_FENCE, :COMMIT, :OWN,
                       :READ_SLOTS, :READ_SLOT, :WRITE_SLOT, :READ_SLOT_FENCE, :WRITE_SLOT_FENCE

      # The connection, and what names it in messages (the database file's path, or ":memory:").
      attr_reader :connection, :name

      # Opens +database+ (a path: String or Pathname) or takes an open SQLite3::Database (the application's own).
      # +busy_timeout+ is Float seconds (0 to about 24 days), or nil: 5 seconds for a database the store opens, and
      # the connection's own setting for one it is given. A given connection's other settings (journal mode,
      # synchronous) are left as they are; a database the store opens runs WAL with synchronous FULL. The schema is
      # created where it is missing (outside a transaction), then checked. Raises TypeError or ArgumentError for bad
      # arguments, SQLite3::Exception when the database cannot be opened or set up, StoreError for tables of another
      # shape or format.
      def initialize(database, busy_timeout:)
        unless defined?(::SQLite3::Database)
          raise LoadError, "the SQLite lease store needs the sqlite3 gem (add it to your Gemfile), " \
                           "for #{self.class.describe(database)}"
        end

        @owned = !(SQLite3::Database === database)
        milliseconds = self.class.busy_timeout_ms(busy_timeout.nil? && @owned ? DEFAULT_BUSY_TIMEOUT : busy_timeout)
        @connection = @owned ? SQLite3::Database.new(self.class.path(database)) : database
        @statements = {}
        @name = @connection.filename.to_s.empty? ? ":memory:" : @connection.filename
        begin
          self.busy_timeout = milliseconds if milliseconds
          if @owned
            @connection.execute("PRAGMA journal_mode = WAL")
            @connection.execute("PRAGMA synchronous = FULL")
          end
          Schema.prepare(self)
          @file = file_identity
        rescue SQLite3::Exception, StoreError
          close if @owned
          raise
        end
      end

      # The path of +database+ (a String or a Pathname). Raises TypeError for
      # anything else (an object is never turned into a file name by its +to_s+), ArgumentError for an empty path.
      def self.path(database)
        path = defined?(Pathname) && Pathname === database ? database.to_path : database
        unless String === path
          raise TypeError, "database must be a path (String or Pathname), an SQLite3::Database, a postgresql:// " \
                           "URL or a PG::Connection, got #{LeaseMachines.shown(database)}"
        end
        raise ArgumentError, "database path is empty" if path.empty?
        raise ArgumentError, "database path contains a NUL byte" if path.include?("\0")

        path
      end

      # +seconds+ (an Integer or Float, 0 to MAX_BUSY_TIMEOUT) in whole milliseconds, rounded to the nearest; nil for
      # nil.
      def self.busy_timeout_ms(seconds)
        return nil if seconds.nil?
        unless Integer === seconds || Float === seconds
          raise TypeError, "busy_timeout must be Float seconds, got #{LeaseMachines.shown(seconds)}"
        end
        unless seconds >= 0 && seconds <= MAX_BUSY_TIMEOUT
          raise ArgumentError, "busy_timeout must be between 0 and #{MAX_BUSY_TIMEOUT} seconds, got #{seconds}"
        end

        (seconds * 1000).round
      end

      # What names +database+ in a message: its path, or the connection's file.
      def self.describe(database)
        return database if String === database
        return database.to_path if defined?(Pathname) && Pathname === database
        if defined?(::SQLite3::Database) && ::SQLite3::Database === database
          return database.filename.to_s.then { _1.empty? ? ":memory:" : _1 }
        end

        LeaseMachines.shown(database)
      rescue SQLite3::Exception
        "a closed SQLite3::Database"
      end

      def close
        @statements.each_value { _1.close unless _1.closed? }
        @statements.clear
        @connection.close
      end

      # Raises StoreError when the database file at the path is no longer the one this connection has open (deleted,
      # or replaced): grants made in an unlinked file would be lost, and the next process would issue their tokens
      # again.
      def check!
        return unless @file

        stat = begin
          File.stat(@name)
        rescue Errno::ENOENT
          nil
        end
        return if stat && stat.dev == @file.first && stat.ino == @file.last

        raise StoreError, "#{@name}: the database file was deleted or replaced while the store had it open; " \
                          "its grants would be lost: open the store again"
      end

      # The rows of a read-only statement, as Arrays whatever the connection's settings.
      def rows(sql, *binds)
        @connection.prepare(sql) do |statement|
          statement.bind_params(*binds)
          [].tap { |rows| while (row = statement.step) do rows << row end }
        end
      end

      def closed? = @connection.closed?

      def in_transaction? = @connection.transaction_active?

      # Opens the store's own transaction with the write lock taken (so that the read sees the newest committed row
      # and no other writer can slip in between the read and the write), marked as the store's, and reads the row
      # of +resource+. Returns [row, nil]: SQLite has no clock of its own (see #lease_row for the row).
      def open_request(resource, clock: false)
        begin_transaction
        [read_row(resource), nil]
      end

      # Writes +row+ (the extension's columns; nil: nothing changed) and commits.
      def close_request(resource, row)
        write_row(resource, row) if row
        step(COMMIT)
      end

      # Opens the store's own transaction with the write lock taken, as #open_request does, and reads every slot row
      # of +resource+'s semaphore. Returns [rows, nil]: rows[i] is slot i's columns, nil for a slot without a row.
      def open_slots(resource, clock: false)
        begin_transaction
        rows = [read_row(resource)]
        each_row(READ_SLOTS, resource) do |slot, *columns|
          rows[slot] = owner_of(columns)
        end
        [rows, nil]
      end

      # Writes +row+ into +slot+ (nil: nothing changed) and commits.
      def close_slots(resource, slot, row)
        write_row(resource, row, slot: slot) if row
        step(COMMIT)
      end

      # Opens the transaction of a fenced write: the store's own (+savepoint+ nil), or a savepoint named
      # +savepoint+ inside the transaction already open. Returns [row, fence mark, nil] of +slot+.
      def open_fence(resource, savepoint:, clock: false, slot: 0)
        savepoint ? @connection.execute("SAVEPOINT #{savepoint}") : begin_transaction
        [read_row(resource, slot), read_fence(resource, slot), nil]
      end

      # Raises the fence mark of +resource+ to +token+ and ends the fenced write's transaction: releases its
      # savepoint, or commits the store's own.
      # The protected +statements+ ([sql, binds] pairs given up front) run first; their rows come back.
      def close_fence(resource, token, savepoint:, statements: [], slot: 0)
        results = statements.map { |sql, binds| rows(sql, *binds) }
        slot.zero? ? step(WRITE_FENCE, resource, token) : step(WRITE_SLOT_FENCE, resource, slot, token)
        savepoint ? @connection.execute("RELEASE #{savepoint}") : step(COMMIT)
        results
      end

      # Whether +error+ (from #close_fence) says the fenced write's transaction was ended inside it: its savepoint is
      # gone (released, or rolled back to an outer one, inside the block).
      def ended_inside?(error) = error.message.include?("no such savepoint")

      # Rolls back the store's own transaction, and only that: a transaction without the store's mark (the
      # application's) is left alone. Returns whether it rolled one back.
      def rollback_own
        return false unless in_transaction?

        begin
          @connection.execute("ROLLBACK TO #{OWN}")
        rescue SQLite3::Exception
          return false # no mark: not the store's transaction
        end
        @connection.execute("ROLLBACK")
        true
      rescue SQLite3::Exception
        false # SQLite already rolled back (a statement with ON CONFLICT ROLLBACK, say); what went wrong goes on
      end

      def rollback_to_savepoint(name)
        @connection.execute("ROLLBACK TO #{name}")
        @connection.execute("RELEASE #{name}")
      rescue SQLite3::Exception
        nil
      end

      # The columns [owner, token, expires_at, last_issued, observed, revision] of the resource's row (of +slot+ of
      # its semaphore), or nil. The owner is stored as its two's complement when above MAX_INTEGER, and comes back as
      # the Integer it was.
      def read_row(resource, slot = 0)
        row = slot.zero? ? step(READ_LEASE, resource) : step(READ_SLOT, resource, slot)
        row && owner_of(row.dup)
      end

      # The stored high-water of the resource's (slot's) fenced writes, or nil without a row.
      def read_fence(resource, slot = 0)
        (slot.zero? ? step(READ_FENCE, resource) : step(READ_SLOT_FENCE, resource, slot))&.first
      end

      private

      # Takes the write lock at once and marks the transaction as the store's with a savepoint, in one call into
      # SQLite, so that no Ruby code (a signal's trap handler) can run between the two.
      def begin_transaction = @connection.execute_batch2("BEGIN IMMEDIATE; SAVEPOINT #{OWN}")

      def write_row(resource, row, slot: 0)
        owner, *rest = row
        owner -= 2**64 if owner && owner > MAX_INTEGER
        slot.zero? ? step(WRITE_LEASE, resource, owner, *rest) : step(WRITE_SLOT, resource, slot, owner, *rest)
      end

      # +columns+ with the owner read back from its two's complement.
      def owner_of(columns)
        columns[0] += 2**64 if Integer === columns[0] && columns[0].negative?
        columns
      end

      def busy_timeout=(milliseconds)
        # A Ruby busy handler sleeps with the GVL released, so that the thread of this process holding the lock (a
        # job writing through ActiveRecord, a renewer) can finish while this one waits; SQLite's own busy timeout
        # would wait holding the GVL and stall them until it ran out.
        if @connection.respond_to?(:busy_handler_timeout=)
          @connection.busy_handler_timeout = milliseconds
        else
          @connection.busy_timeout = milliseconds
        end
      end

      # The device and inode of the database file, nil for an in-memory or temporary database.
      def file_identity
        return nil if @name == ":memory:" || @name.empty?

        stat = File.stat(@name)
        [stat.dev, stat.ino].freeze
      end

      # The statement's first row as an Array (nil when there is none), read without the connection's result
      # settings, with the statement prepared once and reset whatever happens.
      def step(sql, *binds)
        raise SQLite3::MisuseException, "the database is closed" if @connection.closed?

        statement = prepared(sql)
        begin
          statement.bind_params(*binds)
          statement.step
        ensure
          statement.reset!
        end
      end

      # Yields each row of the statement (prepared once, reset whatever happens) as an Array.
      def each_row(sql, *binds)
        raise SQLite3::MisuseException, "the database is closed" if @connection.closed?

        statement = prepared(sql)
        begin
          statement.bind_params(*binds)
          while (row = statement.step)
            yield row
          end
        ensure
          statement.reset!
        end
      end

      def prepared(sql)
        statement = @statements[sql]
        return statement if statement && !statement.closed?

        @statements[sql] = @connection.prepare(sql)
      end
    end
  end
end
