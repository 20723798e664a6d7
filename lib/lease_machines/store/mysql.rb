# frozen_string_literal: true

module LeaseMachines
  class Store
    # The MySQL and MariaDB side of Store, through the mysql2 gem: how to reach the server, run a request's transaction
    # in at most two round trips (several statements per round trip), and read and write the store's InnoDB tables.
    # It makes no decision (the extension does) and knows no lease rule.
    #
    # The lease's row, which every decision and fence check depends on, is read with a locking read, which sees the
    # newest committed row whatever the transaction's isolation (MySQL's REPEATABLE READ would otherwise answer an
    # application's transaction from the snapshot of its first read): a decision locks it FOR UPDATE, a fenced write
    # LOCK IN SHARE MODE (no grant of the resource commits before the write has). The fence mark and the token epoch
    # are plain reads: a mark is never above the live lease's token, which the locked row holds, and an epoch read
    # from an older snapshot names an older history, which moves a fence check to the next epoch (refusing more, never
    # less), as PostgreSQL reads both. The store's own transactions run READ COMMITTED. The server's clock
    # (UTC_TIMESTAMP(6), microseconds) is read in a statement after the locks. Lock waits are bounded by
    # innodb_lock_wait_timeout, whole seconds (the busy timeout rounded up, at least 1). On a connection the store
    # opens these are the session's settings; on an application's connection the lock wait is set on the request's
    # locking statement only (SET STATEMENT), and isolation for the store's own transaction only, so that no session
    # state is left behind. Names and numbers are written as literals the store
    # formats itself (a name as its bytes in hex, a Float as the shortest text that reads back as the same double): a
    # name is never SQL.
    #
    # Round trips: a statement that may wait for a lock is always the first of its round trip. mysql2 waits for a
    # round trip's first result with Ruby's GVL released, but reads the results of the statements after it
    # (Mysql2::Client#next_result) holding the GVL: a lock wait there would stop every thread of the process, the
    # one that holds the lock among them (a job's fenced write, beside its renewer), until innodb_lock_wait_timeout.
    # So a decision is three round trips (the transaction opened; the resource's rows locked and read, with the
    # clock and the token epoch; the write, the event and COMMIT), and a fenced write two, or three when it opens a
    # transaction of its own on an application's connection.
    class MySQL < Adapter
      # The schema, for people who manage their own migrations: statements, each ending with ";" at a line's end.
      SCHEMA = File.read(File.expand_path("mysql.sql", __dir__)).freeze
      # How long a request on a connection the store opens waits for another transaction's lock, Float seconds.
      DEFAULT_BUSY_TIMEOUT = 5.0
      # How long the server may take to answer beyond the request's lock wait, seconds (mysql2's read timeout).
      ANSWER_MARGIN = 30
      # How long, in seconds, MariaDB lets a transaction of a connection the store opened sit idle before it ends the
      # session (idle_transaction_timeout): a process frozen between a decision's two round trips (SIGSTOP, a paused
      # VM, a GC pause of seconds) would otherwise hold the resource's row lock, and every other process's request
      # on it would wait for it to wake. The decision then fails with StoreError (nothing was committed) and the store
      # reconnects at its next request. A fenced write, whose block may take its time, turns it off for its
      # transaction. MySQL has no such setting: there a frozen process holds the lock until it wakes.
      IDLE_IN_DECISION = 2
      URL = %r{\Amysql2?://}i
      # The URL's query parameters the store takes, and the mysql2 option each one is.
      PARAMETERS = { "socket" => :socket, "connect_timeout" => :connect_timeout, "ssl_mode" => :ssl_mode,
                     "sslmode" => :ssl_mode, "sslca" => :sslca, "sslcert" => :sslcert, "sslkey" => :sslkey,
                     "sslverify" => :sslverify }.freeze
      FORMAT = 2
      # Each table's columns as [name, type], as information_schema's DATA_TYPE reports them.
      COLUMNS = {
        "lease_machines_schema" => [%w[id int], %w[format int]],
        "lease_machines_leases" => [%w[resource varbinary], %w[owner bigint], %w[token bigint], %w[expires_at double],
                                    %w[last_issued bigint], %w[observed double], %w[revision bigint]],
        "lease_machines_history" => [%w[id int], %w[epoch bigint], %w[history varchar]],
        "lease_machines_fences" => [%w[resource varbinary], %w[highest bigint]],
        "lease_machines_slots" => [%w[resource varbinary], %w[slot int], %w[owner bigint], %w[token bigint],
                                   %w[expires_at double], %w[last_issued bigint], %w[observed double],
                                   %w[revision bigint]],
        "lease_machines_slot_fences" => [%w[resource varbinary], %w[slot int], %w[highest bigint]],
        "lease_machines_events" => [%w[id bigint], %w[resource varbinary], %w[slot int], %w[seq bigint],
                                    %w[kind varchar], %w[at double], %w[owner bigint], %w[token bigint],
                                    %w[expires_at double], %w[revision bigint], %w[reason varchar],
                                    %w[replaced_owner bigint], %w[replaced_token bigint],
                                    %w[replaced_expires_at double], %w[highest bigint]]
      }.freeze
      READ_COLUMNS = "SELECT TABLE_NAME, COLUMN_NAME, DATA_TYPE FROM information_schema.COLUMNS " \
                     "WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME IN (%s) ORDER BY TABLE_NAME, ORDINAL_POSITION"
      # Serializes two processes creating the schema at once (a named lock, released at once).
      CREATE_LOCK = "SELECT GET_LOCK('lease_machines_schema', 60)"
      CREATE_UNLOCK = "SELECT RELEASE_LOCK('lease_machines_schema')"
      LEASE_COLUMNS = "owner, token, expires_at, last_issued, observed, revision"
      # The server's clock, Integer microseconds since the Unix epoch (UTC_TIMESTAMP is independent of time_zone).
      CLOCK = "SELECT TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', UTC_TIMESTAMP(6))"
      ENSURE_ROW = "INSERT INTO lease_machines_leases (resource) VALUES (%s) " \
                   "ON DUPLICATE KEY UPDATE resource = resource"
      LOCK_ROW = "SELECT #{LEASE_COLUMNS} FROM lease_machines_leases WHERE resource = %s FOR UPDATE".freeze
      LOCK_SLOTS = "SELECT slot, #{LEASE_COLUMNS} FROM lease_machines_slots WHERE resource = %s ORDER BY slot " \
                   "FOR UPDATE".freeze
      SHARE_ROW = "SELECT #{LEASE_COLUMNS} FROM lease_machines_leases WHERE resource = %s LOCK IN SHARE MODE".freeze
      SHARE_SLOT = "SELECT #{LEASE_COLUMNS} FROM lease_machines_slots WHERE resource = %s AND slot = %d " \
                   "LOCK IN SHARE MODE".freeze
      READ_ROW = "SELECT #{LEASE_COLUMNS} FROM lease_machines_leases WHERE resource = %s".freeze
      READ_SLOT = "SELECT #{LEASE_COLUMNS} FROM lease_machines_slots WHERE resource = %s AND slot = %d".freeze
      READ_FENCE = "SELECT highest FROM lease_machines_fences WHERE resource = %s"
      READ_SLOT_FENCE = "SELECT highest FROM lease_machines_slot_fences WHERE resource = %s AND slot = %d"
      WRITE_ROW = "UPDATE lease_machines_leases SET owner = %s, token = %s, expires_at = %s, last_issued = %s, " \
                  "observed = %s, revision = %s WHERE resource = %s"
      WRITE_SLOT = "INSERT INTO lease_machines_slots (resource, slot, #{LEASE_COLUMNS}) " \
                   "VALUES (%7$s, %8$d, %1$s, %2$s, %3$s, %4$s, %5$s, %6$s) ON DUPLICATE KEY UPDATE " \
                   "owner = VALUES(owner), token = VALUES(token), expires_at = VALUES(expires_at), " \
                   "last_issued = VALUES(last_issued), observed = VALUES(observed), revision = VALUES(revision)".freeze
      WRITE_FENCE = "INSERT INTO lease_machines_fences (resource, highest) VALUES (%s, %d) " \
                    "ON DUPLICATE KEY UPDATE highest = VALUES(highest)"
      WRITE_SLOT_FENCE = "INSERT INTO lease_machines_slot_fences (resource, slot, highest) VALUES (%s, %d, %d) " \
                         "ON DUPLICATE KEY UPDATE highest = VALUES(highest)"
      # The token epoch in force and the history it was taken in: a plain read, which waits for no lock (see the class
      # comment). The server's own name for its history is read once per connection (#history).
      EPOCH_READ = "SELECT epoch, history FROM lease_machines_history WHERE id = 1"
      WRITE_HISTORY = "INSERT INTO lease_machines_history (id, epoch, history) VALUES (1, %d, %s) " \
                      "ON DUPLICATE KEY UPDATE epoch = GREATEST(epoch, VALUES(epoch)), history = VALUES(history)"
      EVENT_COLUMNS = "kind, at, owner, token, expires_at, revision, reason, replaced_owner, replaced_token, " \
                      "replaced_expires_at, highest"
      # What a decision reads to log its event and prune in constant work, without a lock (READ COMMITTED: the newest
      # committed rows; its lease's events cannot change while it holds the lease's row): each slot's newest event
      # number of the resource (the index's last entries), and the log's two oldest events (the primary key's first).
      LAST_SEQS = "SELECT slot, MAX(seq) FROM lease_machines_events WHERE resource = %s GROUP BY slot"
      LAST_SEQ_0 = "SELECT 0, MAX(seq) FROM lease_machines_events WHERE resource = %s AND slot = 0"
      OLDEST = "SELECT id, at FROM lease_machines_events ORDER BY id LIMIT 2"
      # Then, with its event: the lease's events that fall out of its newest keep_events (one; more when the fenced
      # writes since logged some, which prune nothing), as a range of the lease's index, and those of the two oldest
      # older than max_age, by primary key. Plain ranges and keys, so that each locks only the rows it deletes.
      PRUNE_LEASE = "DELETE FROM lease_machines_events WHERE resource = %s AND slot = %d AND seq <= %d"
      PRUNE_IDS = "DELETE FROM lease_machines_events WHERE id IN (%s)"
      READ_EVENTS = "SELECT id, resource, slot, #{EVENT_COLUMNS} FROM lease_machines_events WHERE id > %d " \
                    "ORDER BY id LIMIT %d".freeze
      READ_RESOURCE_EVENTS = "SELECT id, resource, slot, #{EVENT_COLUMNS} FROM lease_machines_events " \
                             "WHERE resource = %s AND id > %d ORDER BY id LIMIT %d".freeze
      READ_LATEST_EVENTS = "SELECT * FROM (SELECT id, resource, slot, #{EVENT_COLUMNS} FROM lease_machines_events " \
                           "ORDER BY id DESC LIMIT %d) newest ORDER BY id".freeze
      READ_LATEST_RESOURCE_EVENTS = "SELECT * FROM (SELECT id, resource, slot, #{EVENT_COLUMNS} FROM " \
                                    "lease_machines_events WHERE resource = %s ORDER BY id DESC LIMIT %d) newest " \
                                    "ORDER BY id".freeze
      READ_CHANGES = "SELECT id, resource, slot, kind, at, owner, token, expires_at, revision, replaced_owner, " \
                     "replaced_token, replaced_expires_at FROM lease_machines_events " \
                     "WHERE kind IN (#{Event::CHANGES_SQL}) ORDER BY id".freeze
      COUNT_EVENTS = "SELECT kind, COUNT(*) FROM lease_machines_events GROUP BY kind ORDER BY kind"
      LEASE_PAGE_COLUMNS = "owner, token, expires_at, last_issued, observed, revision, highest"
      # Keyset pages through the primary keys, bytewise (VARBINARY), from the later of the prefix and the key.
      READ_LEASES = "SELECT resource, 0, #{LEASE_PAGE_COLUMNS} FROM lease_machines_leases LEFT JOIN " \
                    "lease_machines_fences USING (resource) WHERE resource >= %1$s AND resource > %2$s " \
                    "ORDER BY resource LIMIT %4$d".freeze
      READ_SLOT_LEASES = "SELECT resource, slot, #{LEASE_PAGE_COLUMNS} FROM lease_machines_slots LEFT JOIN " \
                         "lease_machines_slot_fences USING (resource, slot) WHERE resource >= %1$s AND " \
                         "(resource, slot) > (%2$s, %3$d) ORDER BY resource, slot LIMIT %4$d".freeze
      COUNT_LEASES = "SELECT (SELECT COUNT(*) FROM lease_machines_leases WHERE %1$s) + " \
                     "(SELECT COUNT(*) FROM lease_machines_slots WHERE %1$s)"
      # The savepoint that marks a transaction on an application's connection as the store's.
      OWN = "lease_machines_own"
      # The lease's newest event number, read without a lock (a fenced write's event takes the next; two fenced writes
      # of one lease may number alike, as on PostgreSQL).
      LAST_SEQ = "SELECT COALESCE(MAX(seq), 0) FROM lease_machines_events WHERE resource = %s AND slot = %d"
      # A fenced write's event, numbered by LAST_SEQ's reading: a plain INSERT, which takes no lock on the log's other
      # rows or gaps (whatever the application's isolation), so that no request waits on an application's
      # transaction for its own event.
      WRITE_EVENT = "INSERT INTO lease_machines_events (resource, slot, seq, #{EVENT_COLUMNS}) " \
                    "VALUES (%s, %d, %d, %s)".freeze
      private_constant :PARAMETERS, :COLUMNS, :READ_COLUMNS, :CREATE_LOCK, :CREATE_UNLOCK, :LEASE_COLUMNS, :CLOCK,
                       :ENSURE_ROW, :LOCK_ROW, :LOCK_SLOTS, :SHARE_ROW, :SHARE_SLOT,
                       :READ_ROW, :READ_SLOT, :READ_FENCE, :READ_SLOT_FENCE, :WRITE_ROW, :WRITE_SLOT, :WRITE_FENCE,
                       :WRITE_SLOT_FENCE, :EPOCH_READ, :WRITE_HISTORY, :EVENT_COLUMNS, :LAST_SEQS, :LAST_SEQ_0, :OLDEST,
                       :PRUNE_LEASE,
                       :PRUNE_IDS, :READ_EVENTS, :READ_RESOURCE_EVENTS, :READ_LATEST_EVENTS,
                       :READ_LATEST_RESOURCE_EVENTS, :READ_CHANGES, :COUNT_EVENTS, :LEASE_PAGE_COLUMNS, :READ_LEASES,
                       :READ_SLOT_LEASES, :COUNT_LEASES, :OWN, :LAST_SEQ, :WRITE_EVENT
      # How each query's rows come back, whatever the connection's own query options say.
      QUERY_OPTIONS = { as: :array, cast: true, cast_booleans: false, symbolize_keys: false, cache_rows: false,
                        stream: false }.freeze

      def self.adapter_name = :mysql

      # What a fenced write joined to an application's transaction holds until it ends: the lease's row.
      def self.fence_holds = :row

      # What this database's driver raises; Store turns it into StoreError.
      def self.errors = defined?(::Mysql2::Error) ? [::Mysql2::Error] : []

      # Whether +database+ is a MySQL URL (mysql2://, mysql://) or an open Mysql2::Client.
      def self.accepts?(database)
        return URL.match?(database) if String === database

        defined?(::Mysql2::Client) ? ::Mysql2::Client === database : false
      end

      # What names +database+ in a message: the server, port, user and database, never a password.
      def self.describe(database)
        unless String === database
          options = database.query_options
          return "mysql2://#{options[:username]}@#{options[:host] || "localhost"}:#{options[:port] || 3306}/" \
                 "#{options[:database]}"
        end

        uri = URI.parse(database)
        uri.password = nil
        uri.query = nil
        uri.to_s
      rescue URI::Error
        "a MySQL server (an unreadable URL)"
      end

      # The mysql2 options of a mysql2:// (or mysql://) URL: user, password, host (a name or address; none: the
      # default socket), port, database, and the query parameters PARAMETERS lists. Raises ArgumentError for
      # anything else (never showing the password).
      def self.options_of(url)
        uri = URI.parse(url)
        options = { host: uri.host, port: uri.port, username: uri.user && decoded(uri.user),
                    password: uri.password && decoded(uri.password), database: uri.path.to_s.delete_prefix("/") }
        options[:database] = nil if options[:database].empty?
        options[:database] &&= decoded(options[:database])
        URI.decode_www_form(uri.query || "").each do |key, value|
          option = PARAMETERS[key] or
            raise ArgumentError, "#{describe(url)}: the URL parameter #{key.inspect} is not one the MySQL store " \
                                 "takes (#{PARAMETERS.keys.join(", ")})"
          options[option] = option == :connect_timeout ? Integer(value, 10) : value
        end
        options.compact
      rescue URI::Error
        raise ArgumentError, "#{describe(url)}: not a URL the MySQL store can read"
      end

      # +text+ percent-decoded.
      def self.decoded(text) = URI.decode_www_form_component(text)

      # Connects to +database+ (a mysql2:// or mysql:// URL) or takes an open Mysql2::Client (the application's own,
      # whose settings are left as they are). +busy_timeout+ is Float seconds (0 to about 24 days) or nil: 5 seconds
      # for a connection the store opens, the connection's own innodb_lock_wait_timeout for one it is given. The
      # schema is created where it is missing (outside a transaction), then checked. Raises LoadError when the
      # mysql2 gem is missing, TypeError or ArgumentError for bad arguments, Mysql2::Error when the server cannot be
      # reached or set up, StoreError for tables of another shape or format.
      def initialize(database, busy_timeout:, migrate: true)
        require "mysql2"
        require "uri"
        @owned = String === database
        seconds = busy_timeout.nil? && @owned ? DEFAULT_BUSY_TIMEOUT : busy_timeout
        # Whole seconds, as InnoDB takes them: the busy timeout rounded up, at least 1 (checked as SQLite checks it).
        @wait = seconds && [(SQLite.busy_timeout_ms(seconds) / 1000.0).ceil, 1].max
        @name = self.class.describe(database)
        @options = self.class.options_of(database) if @owned # for a reconnect; never shown
        @connection = @owned ? connect : database
        @known_rows = {}
        @transaction = false # on a connection the store opened: whether one of its transactions is open
        begin
          prepare_schema(migrate)
          history
        rescue ::Mysql2::Error, StoreError
          close if @owned
          raise
        end
      end

      def close
        @closed = true
        @broken = false
        @connection.closed? || @connection.close
      end

      # Closed by #close, or, an application's connection, by the application. A connection the store opened that
      # mysql2 closed after losing it is not: the next request opens a new one (#check!).
      def closed? = @closed || (!@owned && @connection.closed?)

      # Raises StoreError when the connection was lost; one the store opened is opened anew first.
      def check!
        return unless @broken || (@owned && @connection.closed?)
        raise StoreError, "#{@name}: the connection to the server is broken" unless @owned

        begin
          @connection.close unless @connection.closed?
          @connection = connect
          @history = nil # the new connection may reach another server (a promoted replica): its history is read again
          @broken = false
          @transaction = false
        rescue ::Mysql2::Error => e
          raise StoreError, "#{@name}: cannot reconnect: #{self.class.message(e)}"
        end
      end

      # Whether a transaction is open on the connection, the application's too (a BEGIN sent on Store#database). A
      # connection the store opened tracks its transaction state (session_track_transaction_info): the last answer
      # says it when it changed, and costs nothing; else (and on an application's connection) the server is asked,
      # one round trip.
      def in_transaction?
        state = @connection.session_track(::Mysql2::Client::SESSION_TRACK_TRANSACTION_STATE)&.last if @owned
        return !state.start_with?("_") if state

        rows("SELECT @@in_transaction").first.first == 1
      end

      # +name+, which VARBINARY keeps whatever its bytes (the core's 1,024-byte bound fits the column).
      def check_name!(name) = name

      # Two round trips: the store's own transaction opened (READ COMMITTED); then the resource's row made to exist
      # (unless a committed request of this store has seen it) and locked FOR UPDATE, read, with the token epoch and
      # the server's clock when +clock+. Returns [row, now or nil, epoch].
      def open_request(resource, clock: false)
        literal, statements = opening_request(resource)
        statements << format(LOCK_ROW, literal) << format(LAST_SEQ_0, literal) << OLDEST << EPOCH_READ
        statements << CLOCK if clock
        results = batch(statements)
        at = clock ? -5 : -4
        row = locked_row(resource, results[at])
        logged(results[at + 1], results[at + 2])
        [row, clock ? microseconds(results.last) : nil, epoch_of(results[at + 3])]
      end

      # Two round trips, as #open_request, for a semaphore: slot 0's row made to exist and locked, then every other
      # slot row of the resource (which no other request can hold then: a fenced write in a slot holds slot 0's row
      # too). Returns [rows, now or nil, epoch], rows[i] slot i's columns (nil: no row).
      def open_slots(resource, clock: false)
        literal, statements = opening_request(resource)
        statements << format(LOCK_ROW, literal) << format(LOCK_SLOTS, literal) << format(LAST_SEQS, literal) << OLDEST
        statements << EPOCH_READ
        statements << CLOCK if clock
        results = batch(statements)
        at = clock ? -6 : -5
        rows = [locked_row(resource, results[at])]
        results[at + 1].each { |slot, *columns| rows[slot] = columns_of(columns) }
        logged(results[at + 2], results[at + 3])
        [rows, clock ? microseconds(results.last) : nil, epoch_of(results[at + 4])]
      end

      # One round trip: +row+ written into +slot+ (nil: nothing changed; slot 0 is the resource's own row), the event
      # logged and the log pruned, and COMMIT. A
      # decision that +issued+ a token in a history other than the token epoch's records the epoch it was decided in
      # with the history, in the same transaction. A connection lost on the way raises StoreError saying that
      # whether the transaction committed is unknown.
      def close_slots(resource, slot, row, event, issued = nil)
        literal, known = ended_request(resource)

        statements = []
        statements << format(WRITE_HISTORY, @new_epoch, @history_literal) if issued && @new_epoch
        statements << (slot.zero? ? write_row(literal, row) : write_slot(literal, slot, row)) if row
        statements.concat(log_event(literal, slot, event))
        finish(statements << "COMMIT")
        @transaction = false
        learn(resource) unless known
      end

      def close_request(resource, row, event, issued = nil) = close_slots(resource, 0, row, event, issued)

      # One round trip: a decision whose token would open token epoch +opened+ writes nothing but that epoch,
      # recorded in the server's history, and commits. Returns CONFLICT: the request is decided again, in that epoch.
      def next_epoch(resource, opened)
        ended_request(resource)

        epoch = [opened, @new_epoch || 0].max
        finish([format(WRITE_HISTORY, epoch, @history_literal), "COMMIT"])
        @transaction = false
        CONFLICT
      end

      # One round trip (two when it opens the store's own transaction first): the resource's row locked LOCK IN SHARE
      # MODE and read (a locking read: the newest committed, whatever the application's isolation; in a slot, slot
      # 0's row too, as every request on the resource locks it first), the fenced write's savepoint set inside the
      # transaction (the application's, +savepoint+, or the store's own), its fence mark and its lease's last event
      # number read, the token epoch, and the server's clock when +clock+. Returns [row, mark, now or nil, epoch]. The
      # mark needs no lock: it is never above the live lease's token, which the locked row holds.
      def open_fence(resource, savepoint:, clock: false, slot: 0)
        literal = hex(resource)
        batch(own_opening) unless savepoint
        statements = [bounded(format(SHARE_ROW, literal)), "SAVEPOINT #{savepoint || OWN}"]
        statements << "SET SESSION idle_transaction_timeout = 0" if (@fence_idle = !savepoint && @owned && @idle)
        statements << format(SHARE_SLOT, literal, slot) unless slot.zero?
        statements << (slot.zero? ? format(READ_FENCE, literal) : format(READ_SLOT_FENCE, literal, slot))
        statements << format(LAST_SEQ, literal, slot) << EPOCH_READ
        statements << CLOCK if clock
        results = batch(statements)
        at = clock ? -4 : -3
        row = (slot.zero? ? results.first : results[at - 1]).first
        mark = results[at].first
        @last_seq = results[at + 1].first.first
        [row && columns_of(row), mark&.first, clock ? microseconds(results.last) : nil, epoch_of(results[at + 2])]
      end

      # One round trip: the fence mark of +resource+ raised to +token+, the event logged, and the fenced write's
      # transaction ended: its savepoint released, or the store's own committed. The protected +statements+ ([sql,
      # binds] pairs given up front) run first, each prepared, executed and closed; their rows come back. A block's
      # write is checked first: its savepoint must still be there (a block that ended the transaction is caught
      # before anything is written outside it).
      def close_fence(resource, token, savepoint:, event:, statements: [], slot: 0)
        results = statements.map { |sql, binds| prepared(sql, binds) }
        literal = hex(resource)
        mark = slot.zero? ? format(WRITE_FENCE, literal, token) : format(WRITE_SLOT_FENCE, literal, slot, token)
        finish([*still_open(savepoint), mark, fenced_event(literal, slot, event), *fence_end(savepoint)])
        @transaction = false unless savepoint
        results
      end

      # One round trip: a refused fenced write's +event+ logged and its transaction ended as #close_fence ends it.
      def refuse_fence(resource, savepoint:, event:, slot: 0)
        finish([fenced_event(hex(resource), slot, event), *fence_end(savepoint)])
        @transaction = false unless savepoint
      end

      # Up to +limit+ events after id +after+ (of +resource+, or every resource's for nil), oldest first, as the
      # other adapters read them.
      def events(resource, after, limit)
        sql = if resource.nil?
                format(READ_EVENTS, after, limit)
              else
                format(READ_RESOURCE_EVENTS, hex(resource), after, limit)
              end
        event_rows(rows(sql))
      end

      # The newest +limit+ events (of +resource+, or every resource's for nil), oldest first.
      def latest_events(resource, limit)
        sql = if resource.nil?
                format(READ_LATEST_EVENTS, limit)
              else
                format(READ_LATEST_RESOURCE_EVENTS, hex(resource), limit)
              end
        event_rows(rows(sql))
      end

      # The accepted changes of the whole log, oldest first, as the extension's store audit reads them.
      def changes = unsigned_changes(rows(READ_CHANGES).each { |change| change[1] = text(change[1]) })

      # How many events of each kind the log keeps, as [kind, count] rows.
      def event_counts = rows(COUNT_EVENTS)

      # Up to +limit+ leases of resources named +prefix+..., after the key [+after_resource+, +after_slot+], in key
      # order (bytewise: VARBINARY), as Store::SQLite#leases reads them: two keyset reads in one round trip, merged.
      def leases(prefix, after_resource, after_slot, limit)
        from = hex([prefix, after_resource].max)
        after = hex(after_resource)
        found = batch([format(READ_LEASES, from, after, after_slot, limit),
                       format(READ_SLOT_LEASES, from, after, after_slot, limit)]).flatten(1)
        found.each { |lease| lease[0] = text(lease[0]) }
        found.sort_by! { |lease| [lease[0].b, lease[1]] }
        found.first(limit).take_while { |lease| lease[0].start_with?(prefix) }.each do |lease|
          lease[2] = unsigned(lease[2])
        end
      end

      # How many leases are named +prefix+... ("" for all): a range of the primary keys, bytewise.
      def lease_count(prefix)
        return rows(format(COUNT_LEASES, "TRUE")).first.first if prefix.empty?

        stop = prefix_end(prefix.b)
        range = "resource >= #{hex(prefix)}#{" AND resource < #{hex(stop)}" if stop}"
        rows(format(COUNT_LEASES, range)).first.first
      end

      # The server's clock, Float seconds since the Unix epoch.
      def server_now = microseconds(rows(CLOCK))

      # Whether +error+ (from #close_fence) says the fenced write's transaction was ended inside it: its savepoint is
      # gone.
      def ended_inside?(error) = error.message.include?("SAVEPOINT") && error.message.include?("does not exist")

      # Rolls back the store's own transaction, and only that: on an application's connection, a transaction without
      # the store's savepoint is left alone. Returns whether it rolled one back.
      def rollback_own
        settle
        if @owned
          # Whatever is open on a connection the store opened is the store's (a round trip that failed half-way
          # leaves it open): ROLLBACK, which changes nothing when none is.
          was = @transaction
          @connection.query("ROLLBACK")
          @fence_idle = true # whatever its close got to: the idle limit is set again
          idle_again.each { @connection.query(_1) } if @idle
          @transaction = false
          return was
        end
        begin
          @connection.query("ROLLBACK TO SAVEPOINT #{OWN}")
        rescue ::Mysql2::Error
          return false # no mark: not the store's transaction
        end
        @connection.query("ROLLBACK")
        true
      rescue ::Mysql2::Error
        false
      end

      def rollback_to_savepoint(name)
        settle
        @connection.query("ROLLBACK TO SAVEPOINT #{name}")
        @connection.query("RELEASE SAVEPOINT #{name}")
      rescue ::Mysql2::Error
        nil
      end

      # The columns [owner, token, expires_at, last_issued, observed, revision] of the resource's committed row, or
      # nil. One round trip.
      def read_row(resource, slot = 0)
        sql = slot.zero? ? format(READ_ROW, hex(resource)) : format(READ_SLOT, hex(resource), slot)
        row = rows(sql).first
        row && columns_of(row)
      end

      # The stored high-water of the resource's (+slot+'s) fenced writes, or nil without a row. One round trip.
      def read_fence(resource, slot = 0)
        sql = slot.zero? ? format(READ_FENCE, hex(resource)) : format(READ_SLOT_FENCE, hex(resource), slot)
        rows(sql).first&.first
      end

      private

      # A new connection, with the session settings every request of the store relies on: utf8mb4, several
      # statements per round trip, READ COMMITTED, the lock wait, and a read timeout beyond it. A failure's message
      # never carries the password.
      def connect
        client = ::Mysql2::Client.new(**@options, encoding: "utf8mb4", flags: ::Mysql2::Client::MULTI_STATEMENTS,
                                                  read_timeout: @wait + ANSWER_MARGIN, write_timeout: ANSWER_MARGIN,
                                                  reconnect: false)
        client.query("SET SESSION TRANSACTION ISOLATION LEVEL READ COMMITTED")
        client.query("SET SESSION innodb_lock_wait_timeout = #{@wait}, " \
                     "SESSION sql_mode = CONCAT(@@sql_mode, ',STRICT_ALL_TABLES')")
        client.query("SET SESSION session_track_transaction_info = STATE")
        @idle = client.query("SELECT VERSION()", as: :array).first.first.include?("MariaDB")
        client.query("SET SESSION idle_transaction_timeout = #{IDLE_IN_DECISION}") if @idle
        client
      rescue ::Mysql2::Error => e
        message = self.class.message(e)
        message = message.gsub(@options[:password], "[password]") if @options[:password] && !@options[:password].empty?
        raise e.class, message, cause: nil
      end

      # Runs +statements+ (SQL Strings) in one round trip: the connection takes several statements at once when it
      # was opened with MULTI_STATEMENTS (one the store opens always is); an application's connection without it
      # (ActiveRecord's mysql2 adapter does not set it) is switched to several statements for the round trip and
      # back (two small round trips more, as ActiveRecord's own batches do), or, for three statements or fewer, sent
      # them one by one. Returns each statement's rows (an Array of Arrays; [] for a statement without a result set).
      # The first failed statement's error is raised (the server runs none after it).
      def batch(statements)
        settle
        return several(statements) if multi?
        return statements.map { |sql| rows(sql) } if statements.size <= 3

        @connection.set_server_option(::Mysql2::Client::OPTION_MULTI_STATEMENTS_ON)
        begin
          several(statements)
        ensure
          begin
            @connection.set_server_option(::Mysql2::Client::OPTION_MULTI_STATEMENTS_OFF) unless @connection.closed?
          rescue ::Mysql2::Error
            nil # the connection is lost: the error that ended the round trip says so
          end
        end
      rescue ::Mysql2::Error => e
        lost!(e)
        raise
      end

      # +statements+ as one query, and every result read.
      def several(statements)
        results = []
        result = @connection.query(statements.join(";\n"), **QUERY_OPTIONS)
        results << (result ? result.to_a : [])
        while @connection.next_result
          result = @connection.store_result
          results << (result ? result.to_a : [])
        end
        return results if results.size == statements.size

        raise ::Mysql2::Error, "the server sent #{results.size} results for #{statements.size} statements"
      end

      # The rows of one statement (one round trip).
      def rows(sql)
        settle
        result = @connection.query(sql, **QUERY_OPTIONS)
        result ? result.to_a : []
      rescue ::Mysql2::Error => e
        lost!(e)
        raise
      end

      # The rows of a protected statement, run as a prepared statement with its +binds+ and closed (nothing stays in
      # the session).
      def prepared(sql, binds)
        statement = @connection.prepare(sql)
        begin
          result = statement.execute(*binds, as: :array, cast: true)
          result ? result.to_a : []
        ensure
          statement.close
        end
      rescue ::Mysql2::Error => e
        lost!(e)
        raise
      end

      # Whether the connection takes several statements per query: one the store opened always does; an
      # application's when it was opened with MULTI_STATEMENTS (mysql2 keeps its +flags:+ option as given: an
      # Integer, an Array or a String of flag names).
      def multi?
        return true if @owned

        flags = @connection.query_options[:flags]
        case flags
        when Integer then flags.anybits?(::Mysql2::Client::MULTI_STATEMENTS)
        when Array, String
          Array(flags.is_a?(String) ? flags.split : flags).map(&:to_s).include?("MULTI_STATEMENTS")
        else false
        end
      end

      # The last round trip of a transaction (with its COMMIT or RELEASE): a connection lost on the way leaves the
      # outcome unknown.
      def finish(statements)
        batch(statements)
      rescue ::Mysql2::Error => e
        raise unless @broken

        raise StoreError, "#{@name}: the connection was lost while the transaction's end was on its way " \
                          "(#{self.class.message(e)}): whether it committed is unknown; the next request reads " \
                          "what the server kept"
      end

      # A lost connection (the server gone, a read timeout) is remembered: the next request opens one again (a
      # connection the store opened) or raises StoreError.
      def lost!(error)
        @broken = true if ::Mysql2::Error::ConnectionError === error || ::Mysql2::Error::TimeoutError === error ||
                          [2006, 2013, 2055].include?(error.error_number) || @connection.closed?
      end

      # Results left on the connection by a request cut short (an interrupt between a round trip's statements) are
      # dropped, so that the next query is answered.
      def settle
        @connection.abandon_results! if @connection.more_results?
      rescue ::Mysql2::Error
        nil
      end

      # A request's first round trip, the store's transaction opened (#own_opening); then its second's first
      # statements: the resource's row made to exist unless a committed request of this store has seen it (the one
      # that may wait for the row's lock, first). Returns [the name's literal, statements]; the request is remembered
      # for its close.
      def opening_request(resource)
        known = @known_rows.key?(resource)
        literal = hex(resource)
        @request = [resource, literal, known]
        batch(own_opening)
        [literal, known ? [] : [bounded(format(ENSURE_ROW, literal))]]
      end

      # The statements that open the store's own transaction, none of which waits for a lock: on a connection it
      # opened, START TRANSACTION (its session runs READ COMMITTED with the lock wait); on an application's, READ
      # COMMITTED for this transaction only, and the savepoint that marks it as the store's.
      def own_opening
        @transaction = true if @owned
        return ["START TRANSACTION"] if @owned

        ["SET TRANSACTION ISOLATION LEVEL READ COMMITTED", "START TRANSACTION", "SAVEPOINT #{OWN}"]
      end

      # +sql+, the request's first statement that may wait for a lock, with the store's lock wait for that statement
      # only on an application's connection given a busy timeout (MariaDB's SET STATEMENT, MySQL's SET_VAR hint): the
      # connection's own setting is never changed. The statements after it wait as the connection's setting says.
      def bounded(sql)
        return sql if @owned || @wait.nil?
        return "SET STATEMENT innodb_lock_wait_timeout = #{@wait} FOR #{sql}" if @mariadb

        sql.sub(/\A(SELECT|INSERT)/, "\\1 /*+ SET_VAR(innodb_lock_wait_timeout = #{@wait}) */")
      end

      # The idle limit a fenced write on a connection the store opened turned off, set again.
      def idle_again
        return [] unless @fence_idle

        @fence_idle = false
        ["SET SESSION idle_transaction_timeout = #{IDLE_IN_DECISION}"]
      end

      # A block's write checked before anything of the fence's close: the savepoint (the store's own transaction's
      # mark, or the fenced write's) must still be there.
      def still_open(savepoint)
        name = savepoint || OWN
        ["RELEASE SAVEPOINT #{name}", "SAVEPOINT #{name}"]
      end

      # How a fenced write's transaction ends: its savepoint released, or the store's own committed.
      def fence_end(savepoint)
        return [*idle_again, "COMMIT"] unless savepoint # COMMIT last: its answer says the transaction ended

        ["RELEASE SAVEPOINT #{savepoint}"]
      end

      # The statement that logs a fenced write's +event+ (accepted or refused), numbered after the lease's event
      # #open_fence read.
      def fenced_event(literal, slot, event)
        format(WRITE_EVENT, literal, slot, @last_seq + 1, event_values(event))
      end

      # The statements that log +event+ (the extension's columns, with a fenced write's mark appended) of the lease
      # +slot+ of the resource whose literal is +literal+, and prune.
      def log_event(literal, slot, event)
        seq = @last_seqs.fetch(slot, 0) + 1
        statements = [format(WRITE_EVENT, literal, slot, seq, event_values(event))]
        statements << format(PRUNE_LEASE, literal, slot, seq - @keep_events) if seq > @keep_events
        old = @oldest.filter_map { |id, at| id if at < event[1] - @events_max_age }
        statements << format(PRUNE_IDS, old.join(", ")) unless old.empty?
        statements
      end

      # What a decision's open read for its event (LAST_SEQS, OLDEST), kept for its close.
      def logged(seqs, oldest)
        @last_seqs = seqs.to_h.compact
        @oldest = oldest
      end

      # An event's columns (the extension's, with a fenced write's mark appended) as SQL literals.
      def event_values(event)
        kind, at, owner, token, expires_at, revision, reason, replaced_owner, replaced_token, replaced_expires_at,
          highest = event
        [kind, at, signed(owner), token, expires_at, revision, reason, signed(replaced_owner), replaced_token,
         replaced_expires_at, highest].map { literal(_1) }.join(", ")
      end

      def write_row(literal, row) = format(WRITE_ROW, *columns_literals(row), literal)
      def write_slot(literal, slot, row) = format(WRITE_SLOT, *columns_literals(row), literal, slot)

      def columns_literals(row)
        owner, *rest = row
        [signed(owner), *rest].map { literal(_1) }
      end

      # +value+ as an SQL literal: NULL, an Integer, a Float exactly (a DOUBLE literal of Ruby's shortest text, which
      # the server reads back to the same double), a String of the extension's (a kind, a reason) in quotes.
      def literal(value)
        case value
        when nil then "NULL"
        when Integer then value.to_s
        when Float
          raise TypeError, "the extension wrote #{value} into a row; MySQL's DOUBLE cannot hold it" unless value.finite?

          text = value.to_s
          text.include?("e") ? text : "#{text}e0"
        when String then "'#{@connection.escape(value)}'"
        else raise TypeError, "the extension wrote #{LeaseMachines.shown(value)} into a row"
        end
      end

      # A name's bytes as a hexadecimal literal: exact whatever the connection's character set.
      def hex(name) = "X'#{name.unpack1("H*")}'"

      # A VARBINARY name read back as the UTF-8 String it was written from.
      def text(bytes) = bytes.dup.force_encoding(Encoding::UTF_8)

      def microseconds(result) = Integer(result.first.first) / 1_000_000.0

      # A row's columns with the owner read back from its two's complement.
      def columns_of(columns) = unsigned_at(columns, 0)

      def event_rows(found)
        found.each { |event| event[1] = text(event[1]) }
        unsigned_events(found)
      end

      # The least byte string above every one that starts with +prefix+ (bytes), or nil when there is none.
      def prefix_end(prefix)
        bytes = prefix.bytes
        bytes.pop while bytes.last == 0xFF
        return nil if bytes.empty?

        bytes[-1] += 1
        bytes.pack("C*")
      end

      # The resource's locked row from +rows+; StoreError when it is gone (deleted while the request waited for its
      # lock, or since this store's last request on it: the next request makes it exist again).
      def locked_row(resource, rows)
        row = rows.first or
          begin
            @known_rows.delete(resource)
            raise StoreError, "#{@name}: the row of #{resource.inspect} was deleted while the request waited for " \
                              "its lock (or since this store's last request on it); nothing was decided"
          end
        columns_of(row)
      end


      # The server's name for its history, read once per connection (a reconnect may reach another server): MySQL's
      # server_uuid, MariaDB's server_id (MariaDB has no server_uuid).
      def history
        thread = @connection.thread_id
        return @history.last if @history&.first == thread

        version = rows("SELECT VERSION()").first.first
        @mariadb = version.include?("MariaDB")
        name = if @mariadb
                 "mariadb:#{rows("SELECT @@server_id").first.first}"
               else
                 "mysql:#{rows("SELECT @@server_uuid").first.first}"
               end
        @history = [thread, name]
        name
      end

      # The token epoch a request decides (or a fenced write is checked) in, from EPOCH_READ's +rows+: the recorded
      # epoch when it was taken in this server's history; else the one a first grant here takes, one above the
      # recorded one (the core's TokenEpoch.after; MySQL has no timeline, so generation 0), kept in @new_epoch for
      # that grant's commit. No row: epoch 0, recorded with the first grant, as a database that never failed over
      # issues 1, 2, 3, ...
      def epoch_of(rows)
        epoch, recorded = rows.first
        now = history
        @history_literal = "'#{@connection.escape(now)}'"
        @new_epoch = nil
        return epoch if epoch && recorded == now

        taken = LeaseMachines.__send__(:_token_epoch_after, epoch, 0)
        if taken << LeaseMachines::TOKEN_EPOCH_BITS > MAX_INTEGER
          raise StoreError, "#{@name}: token epoch #{taken} would issue tokens past MySQL's BIGINT"
        end
        @new_epoch = taken
      end

      # The tables' columns Adapter#prepare_schema expects.
      def table_columns = COLUMNS

      def read_format = rows("SELECT format FROM lease_machines_schema WHERE id = 1").first&.first

      # The schema's statements, one process at a time (DDL commits by itself: each statement is its own).
      def create_schema
        rows(CREATE_LOCK)
        begin
          self.class.statements(SCHEMA).each { |sql| rows(sql) }
        ensure
          rows(CREATE_UNLOCK)
        end
      end

      # The statements of a schema file: each ends with ";" at the end of its line; comments dropped.
      def self.statements(schema)
        schema.lines.reject { _1.start_with?("--") }.join.split(/;\s*$/).map(&:strip).reject(&:empty?)
      end

      def read_columns
        tables = COLUMNS.keys.map { "'#{_1}'" }.join(", ")
        found = Hash.new { |hash, table| hash[table] = [] }
        rows(format(READ_COLUMNS, tables)).each { |table, column, type| found[table] << [column, type.downcase] }
        found.to_h
      end
    end
  end
end
