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
    class SQLite < Adapter
      # What this database's driver raises; Store turns it into StoreError.
      ERRORS = (defined?(::SQLite3::Exception) ? [::SQLite3::Exception] : []).freeze

      def self.adapter_name = :sqlite

      # What a fenced write joined to an application's transaction holds until it ends: the one write lock.
      def self.fence_holds = :database

      def self.errors = ERRORS
      def self.message(error) = error.message

      # Whether +database+ is for this adapter: everything that is not PostgreSQL's is (a bad argument is then
      # refused here, with the message that names both).
      def self.accepts?(_database) = true
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
      EVENT_COLUMNS = "kind, at, owner, token, expires_at, revision, reason, replaced_owner, replaced_token, " \
                      "replaced_expires_at, highest"
      # The lease's next event, numbered after its newest (seq), in one statement; RETENTION's trigger prunes.
      LOG_EVENT = <<~SQL.freeze
        INSERT INTO lease_machines_events (resource, slot, seq, #{EVENT_COLUMNS})
        SELECT ?1, ?2, coalesce(max(seq), 0) + 1, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13
        FROM lease_machines_events WHERE resource = ?1 AND slot = ?2
      SQL
      # Retention, in constant work per event, by a trigger of this connection's own (TEMP: it and the settings it
      # reads live and die with the connection, and are nothing the database file keeps), so that logging an event
      # is one statement: the lease's event that falls out of its newest keep_events (found by the lease's index),
      # and of the log's two oldest events those more than max_age seconds before the new one (which also takes, in
      # time, what a lowered keep_events left).
      RETENTION = <<~SQL.freeze
        CREATE TEMP TABLE IF NOT EXISTS lease_machines_retention (
          id          INTEGER PRIMARY KEY CHECK (id = 1),
          keep_events INTEGER NOT NULL,
          max_age     REAL    NOT NULL
        );
        CREATE TEMP TRIGGER IF NOT EXISTS lease_machines_prune_events AFTER INSERT ON main.lease_machines_events
        BEGIN
          DELETE FROM lease_machines_events WHERE id IN (
            SELECT id FROM lease_machines_events WHERE resource = NEW.resource AND slot = NEW.slot
            AND seq = NEW.seq - (SELECT keep_events FROM temp.lease_machines_retention)
            UNION ALL
            SELECT id FROM (SELECT id, at FROM lease_machines_events ORDER BY id LIMIT 2)
            WHERE at < NEW.at - (SELECT max_age FROM temp.lease_machines_retention));
        END;
      SQL
      SET_RETENTION = "INSERT INTO temp.lease_machines_retention (id, keep_events, max_age) VALUES (1, ?, ?) " \
                      "ON CONFLICT (id) DO UPDATE SET keep_events = excluded.keep_events, max_age = excluded.max_age"
      READ_EVENTS = "SELECT id, resource, slot, #{EVENT_COLUMNS} FROM lease_machines_events WHERE id > ? " \
                    "ORDER BY id LIMIT ?"
      READ_RESOURCE_EVENTS = "SELECT id, resource, slot, #{EVENT_COLUMNS} FROM lease_machines_events " \
                             "WHERE resource = ? AND id > ? ORDER BY id LIMIT ?"
      READ_LATEST_EVENTS = "SELECT * FROM (SELECT id, resource, slot, #{EVENT_COLUMNS} FROM lease_machines_events " \
                           "ORDER BY id DESC LIMIT ?) ORDER BY id"
      READ_LATEST_RESOURCE_EVENTS = "SELECT * FROM (SELECT id, resource, slot, #{EVENT_COLUMNS} FROM " \
                                    "lease_machines_events WHERE resource = ? ORDER BY id DESC LIMIT ?) ORDER BY id"
      READ_CHANGES = "SELECT id, resource, slot, kind, at, owner, token, expires_at, revision, replaced_owner, " \
                     "replaced_token, replaced_expires_at FROM lease_machines_events " \
                     "WHERE kind IN (#{Event::CHANGES_SQL}) ORDER BY id".freeze
      COUNT_EVENTS = "SELECT kind, count(*) FROM lease_machines_events GROUP BY kind ORDER BY kind"
      LEASE_PAGE_COLUMNS = "owner, token, expires_at, last_issued, observed, revision, highest"
      READ_LEASES = <<~SQL.freeze
        SELECT resource, 0, #{LEASE_PAGE_COLUMNS} FROM lease_machines_leases LEFT JOIN lease_machines_fences
        USING (resource) WHERE resource >= ?1 AND (resource, 0) > (?2, ?3) ORDER BY resource LIMIT ?4
      SQL
      READ_SLOT_LEASES = <<~SQL.freeze
        SELECT resource, slot, #{LEASE_PAGE_COLUMNS} FROM lease_machines_slots LEFT JOIN lease_machines_slot_fences
        USING (resource, slot) WHERE resource >= ?1 AND (resource, slot) > (?2, ?3) ORDER BY resource, slot LIMIT ?4
      SQL
      COUNT_LEASES = "SELECT (SELECT count(*) FROM lease_machines_leases) + (SELECT count(*) FROM lease_machines_slots)"
      # The names from ?1 up to ?2 (excluded): a range of the primary keys' indexes.
      COUNT_NAMED = <<~SQL
        SELECT (SELECT count(*) FROM lease_machines_leases WHERE resource >= ?1 AND resource < ?2) +
               (SELECT count(*) FROM lease_machines_slots WHERE resource >= ?1 AND resource < ?2)
      SQL
      # The names from ?1 on (a prefix of U+10FFFF characters alone has no successor to stop at).
      COUNT_FROM = <<~SQL
        SELECT (SELECT count(*) FROM lease_machines_leases WHERE resource >= ?1) +
               (SELECT count(*) FROM lease_machines_slots WHERE resource >= ?1)
      SQL
      COMMIT = "COMMIT"
      # The savepoint that marks a transaction as the store's own.
      OWN = "lease_machines_own"
      private_constant :LEASE_COLUMNS, :READ_LEASE, :WRITE_LEASE, :READ_FENCE, :WRITE_FENCE, :COMMIT, :OWN,
                       :EVENT_COLUMNS, :LOG_EVENT, :RETENTION, :SET_RETENTION, :READ_EVENTS, :READ_RESOURCE_EVENTS,
                       :READ_LATEST_EVENTS, :READ_LATEST_RESOURCE_EVENTS,
                       :READ_CHANGES, :COUNT_EVENTS, :LEASE_PAGE_COLUMNS, :READ_LEASES, :READ_SLOT_LEASES, :COUNT_LEASES,
                       :COUNT_NAMED, :COUNT_FROM,
                       :READ_SLOTS, :READ_SLOT, :WRITE_SLOT, :READ_SLOT_FENCE, :WRITE_SLOT_FENCE

      # Opens +database+ (a path: String or Pathname) or takes an open SQLite3::Database (the application's own).
      # +busy_timeout+ is Float seconds (0 to about 24 days), or nil: 5 seconds for a database the store opens, and
      # the connection's own setting for one it is given. A given connection's other settings (journal mode,
      # synchronous) are left as they are; a database the store opens runs WAL with synchronous FULL. The schema is
      # created where it is missing (outside a transaction), then checked. Raises TypeError or ArgumentError for bad
      # arguments, SQLite3::Exception when the database cannot be opened or set up, StoreError for tables of another
      # shape or format.
      def initialize(database, busy_timeout:, migrate: true)
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
          Schema.prepare(self, migrate: migrate)
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

      # +name+: SQLite's text keeps any bytes (its strings are bound and read with their length, a NUL byte included).
      def check_name!(name) = name

      # Opens the store's own transaction with the write lock taken (so that the read sees the newest committed row
      # and no other writer can slip in between the read and the write), marked as the store's, and reads the row
      # of +resource+. Returns [row, nil]: SQLite has no clock of its own (see #lease_row for the row).
      def open_request(resource, clock: false)
        begin_transaction
        [read_row(resource), nil]
      end

      # Writes +row+ (the extension's columns; nil: nothing changed) and the request's +event+ (the extension's
      # columns, see #log_event), and commits. +issued+ (the token the decision issued) is for an adapter with token
      # epochs; SQLite keeps no epoch.
      def close_request(resource, row, event, _issued = nil)
        write_row(resource, row) if row
        log_event(resource, 0, event)
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

      # Writes +row+ into +slot+ (nil: nothing changed) and the request's +event+ in that slot, and commits.
      def close_slots(resource, slot, row, event, _issued = nil)
        write_row(resource, row, slot: slot) if row
        log_event(resource, slot, event)
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
      def close_fence(resource, token, savepoint:, event:, statements: [], slot: 0)
        results = statements.map { |sql, binds| rows(sql, *binds) }
        slot.zero? ? step(WRITE_FENCE, resource, token) : step(WRITE_SLOT_FENCE, resource, slot, token)
        log_event(resource, slot, event)
        end_fence(savepoint)
        results
      end

      # Logs a refused fenced write's +event+ and ends its transaction as #close_fence does: the store's own
      # commits with the event alone; inside the application's, the event joins it (and is gone if it rolls back).
      def refuse_fence(resource, savepoint:, event:, slot: 0)
        log_event(resource, slot, event)
        end_fence(savepoint)
      end

      # How much of the event log is kept: +per_lease+ events of each lease (Integer), none older than +max_age+
      # Float seconds before the newest event's +at+.
      def retain_events(per_lease:, max_age:)
        @connection.execute_batch(RETENTION)
        step(SET_RETENTION, per_lease, max_age)
      end

      # Up to +limit+ events after id +after+ (of +resource+, or every resource's for nil), oldest first, each as
      # [id, resource, slot, kind, at, owner, token, expires_at, revision, reason, replaced_owner, replaced_token,
      # replaced_expires_at, highest].
      def events(resource, after, limit)
        found = resource.nil? ? rows(READ_EVENTS, after, limit) : rows(READ_RESOURCE_EVENTS, resource, after, limit)
        event_rows(found)
      end

      # The newest +limit+ events (of +resource+, or every resource's for nil), oldest first, as #events reads them.
      def latest_events(resource, limit)
        event_rows(resource.nil? ? rows(READ_LATEST_EVENTS, limit) : rows(READ_LATEST_RESOURCE_EVENTS, resource, limit))
      end

      def event_rows(found) = unsigned_events(found)

      # The accepted changes of the whole log, oldest first, as the extension's store audit reads them.
      def changes = unsigned_changes(rows(READ_CHANGES))

      # How many events of each kind the log keeps, as [kind, count] rows.
      def event_counts = rows(COUNT_EVENTS)

      # Up to +limit+ leases (a resource's row as slot 0, its semaphore's slot rows above) of resources named
      # +prefix+..., after the key [+after_resource+, +after_slot+], in key order, each as [resource, slot, owner,
      # token, expires_at, last_issued, observed, revision, highest]. Two keyset reads through the primary keys from
      # the later of the prefix and the key, merged; SQLite orders text bytewise, as Ruby does, so the names with the
      # prefix are one run from it.
      def leases(prefix, after_resource, after_slot, limit)
        from = [prefix, after_resource].max
        found = rows(READ_LEASES, from, after_resource, after_slot, limit) +
                rows(READ_SLOT_LEASES, from, after_resource, after_slot, limit)
        found.sort_by! { |lease| [lease[0], lease[1]] }
        found.first(limit).take_while { |lease| lease[0].start_with?(prefix) }.map { |lease| owner_of_lease(lease) }
      end

      # How many leases are named +prefix+... ("" for all): a range of names, bytewise (UTF-8 keeps the characters'
      # order), from the prefix up to ::prefix_end.
      def lease_count(prefix)
        return rows(COUNT_LEASES).first.first if prefix.empty?

        stop = self.class.prefix_end(prefix)
        stop ? rows(COUNT_NAMED, prefix, stop).first.first : rows(COUNT_FROM, prefix).first.first
      end

      # The least String above every name that starts with +prefix+: the prefix with its last character that has a
      # successor moved to it (U+10FFFF has none; surrogates are not characters), or nil when none has.
      def self.prefix_end(prefix)
        chars = prefix.chars
        while (last = chars.pop)
          code = last.ord == 0xD7FF ? 0xE000 : last.ord + 1
          return chars.join + code.chr(Encoding::UTF_8) if code <= 0x10FFFF
        end
        nil
      end

      # SQLite has no clock of its own: the machine's wall clock (Store::WALL_CLOCK), which Store uses for it anyway.
      def server_now = Store::WALL_CLOCK.call

      # SQLite keeps no token epochs (one machine: no failover), so the core never asks for the next one.
      def next_epoch(resource, _opened)
        raise StoreError, "#{@name}: SQLite keeps no token epochs (#{resource.inspect})"
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

      # Writes one event: +event+ is [kind, at, owner, token, expires_at, revision, reason, replaced_owner,
      # replaced_token, replaced_expires_at] (the extension's) with the fenced write's mark appended, or nil; then
      # the connection's trigger prunes, in constant work (see RETENTION).
      def log_event(resource, slot, event)
        kind, at, owner, token, expires_at, revision, reason, replaced_owner, replaced_token, replaced_expires_at,
          highest = event
        step(LOG_EVENT, resource, slot, kind, at, signed(owner), token, expires_at, revision, reason,
             signed(replaced_owner), replaced_token, replaced_expires_at, highest)
      end

      def end_fence(savepoint) = savepoint ? @connection.execute("RELEASE #{savepoint}") : step(COMMIT)

      # Takes the write lock at once and marks the transaction as the store's with a savepoint, in one call into
      # SQLite, so that no Ruby code (a signal's trap handler) can run between the two.
      def begin_transaction = @connection.execute_batch2("BEGIN IMMEDIATE; SAVEPOINT #{OWN}")

      def write_row(resource, row, slot: 0)
        owner, *rest = row
        owner = signed(owner)
        slot.zero? ? step(WRITE_LEASE, resource, owner, *rest) : step(WRITE_SLOT, resource, slot, owner, *rest)
      end

      # A listed lease with its owner read back from its two's complement.
      def owner_of_lease(lease) = unsigned_at(lease, 2)

      # +columns+ with the owner read back from its two's complement.
      def owner_of(columns) = unsigned_at(columns, 0)

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
