# frozen_string_literal: true

module LeaseMachines
  class Store
    # The PostgreSQL side of Store: how to reach the server, run a request's transaction in at most two round trips
    # (libpq's pipeline mode), and read and write the store's tables. It makes no decision (the extension does) and
    # knows no lease rule.
    #
    # Every request runs READ COMMITTED with the resource's row locked (FOR UPDATE for a decision, FOR SHARE for a
    # fenced write), its lock waits bounded by lock_timeout (set for the transaction only), and its clock read with
    # clock_timestamp() after the lock. It keeps no session state: no advisory lock, no session SET, no named
    # prepared statement, so a pooler in transaction mode (PgBouncer) is safe. A decision's two round trips are
    # simple queries of several statements each (one message, one parse, the cheapest way PostgreSQL runs a short
    # transaction), with the resource's name as a literal that libpq quotes (PQescapeLiteral, in the connection's
    # encoding) and numbers the store formats itself; its doubles come back as their 8 bytes (float8send, in hex),
    # exact whatever the connection's extra_float_digits. PostgreSQL 12 or newer. A fenced write, whose protected statements carry the caller's
    # binds, travels as unnamed parameterized queries in pipeline mode. Either way a name is never SQL.
    class PostgreSQL < Adapter
      # The schema, for people who manage their own migrations.
      SCHEMA = File.read(File.expand_path("postgresql.sql", __dir__)).freeze
      # PostgreSQL bigints are signed 64-bit.
      MAX_INTEGER = 2**63 - 1
      # The longest lock_timeout PostgreSQL takes, in milliseconds (a C int), as seconds.
      MAX_BUSY_TIMEOUT = (2**31 - 1) / 1000.0
      # How long a request on a connection the store opens waits for another transaction's lock, Float seconds.
      DEFAULT_BUSY_TIMEOUT = 5.0
      URL = %r{\Apostgres(?:ql)?://}i
      # libpq's connection keywords. A String of KEYWORD=value pairs (separated by white space) that names one of them
      # is a libpq keyword string ("host=db1 dbname=app user=worker password=..."), which the store takes as a URL.
      KEYWORDS = %w[host hostaddr port dbname user password passfile require_auth channel_binding connect_timeout
                    client_encoding options application_name fallback_application_name keepalives keepalives_idle
                    keepalives_interval keepalives_count tcp_user_timeout replication gssencmode gssdelegation sslmode
                    sslnegotiation sslcompression sslcert sslkey sslpassword sslcertmode sslrootcert sslcrl sslcrldir
                    sslsni requirepeer ssl_min_protocol_version ssl_max_protocol_version krbsrvname gsslib service
                    target_session_attrs load_balance_hosts].freeze
      # One pair of a keyword string: the keyword, and its value as written, bare (up to white space) or in single
      # quotes, a backslash escaping the next character either way (libpq's reading).
      PAIR = /\s*([a-z_]+)\s*=\s*('(?:[^'\\]|\\.)*'|(?:[^\s'\\]|\\.)(?:[^\s\\]|\\.)*|)/m
      KEYWORD_STRING = /\A(?:#{PAIR})+\s*\z/m
      # The keywords that name the server (what #describe shows of a keyword string), and those that hold a password.
      NAMING = %w[host hostaddr port dbname user service].freeze
      SECRETS = %w[password sslpassword].freeze
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
      # Format 1 (before the event log) is upgraded on open: SCHEMA creates the event log and raises the format.
      FORMAT = 2
      READ_COLUMNS = <<~SQL.freeze
        SELECT table_name::text, column_name::text, data_type::text FROM information_schema.columns
        WHERE table_schema = current_schema() AND table_name = ANY ($1::text[]) ORDER BY table_name, ordinal_position
      SQL
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
      # The transaction a fenced write runs in, read at its start and checked at its end (before the mark), so that
      # statements that ended it (COMMIT, ROLLBACK) are caught rather than leaving the mark outside the fence.
      TRANSACTION = "SELECT txid_current()"
      SAME_TRANSACTION = "SELECT CASE WHEN txid_current() = $1::bigint THEN 1 ELSE " \
                         "('lease_machines: the fenced write''s transaction was ended inside it (now ' || " \
                         "txid_current() || ')')::int END"
      ENDED = "the fenced write's transaction was ended inside it"
      ENSURE_ROW = "INSERT INTO lease_machines_leases (resource) VALUES ($1) ON CONFLICT (resource) DO NOTHING"
      SHARE_ROW = "SELECT #{LEASE_COLUMNS} FROM lease_machines_leases WHERE resource = $1 FOR SHARE".freeze
      READ_ROW = "SELECT #{LEASE_COLUMNS} FROM lease_machines_leases WHERE resource = $1".freeze
      READ_FENCE = "SELECT highest FROM lease_machines_fences WHERE resource = $1"
      # The server's clock, read after the row's lock: statements of one pipeline run in order.
      CLOCK = "SELECT extract(epoch FROM clock_timestamp())::float8"
      # The same for a decision's simple query, each double as its 8 bytes in hex (whatever bytea_output says), in
      # one statement: the row is locked inside a materialized CTE, whose rows reach the outer SELECT only once
      # locked, so the clock in the outer list is read after the lock (and not at all without a row). MATERIALIZED
      # needs PostgreSQL 12 or newer (the store's minimum).
      LOCK_ROW_BYTES = "WITH locked AS MATERIALIZED (SELECT #{LEASE_COLUMNS} FROM lease_machines_leases " \
                       "WHERE resource = %s FOR UPDATE) SELECT owner, token, encode(float8send(expires_at), 'hex'), " \
                       "last_issued, encode(float8send(observed), 'hex'), revision%s FROM locked".freeze
      CLOCK_BYTES = ", encode(float8send(extract(epoch FROM clock_timestamp())::float8), 'hex')"
      # A semaphore's slots above 0, locked (after slot 0's row, which every request on the resource locks first)
      # and read, doubles as bytes; then the server's clock, read after every lock.
      LOCK_SLOTS_BYTES = "SELECT slot, owner, token, encode(float8send(expires_at), 'hex'), last_issued, " \
                         "encode(float8send(observed), 'hex'), revision FROM lease_machines_slots " \
                         "WHERE resource = %s ORDER BY slot FOR UPDATE".freeze
      CLOCK_AFTER = "SELECT encode(float8send(extract(epoch FROM clock_timestamp())::float8), 'hex')"
      WRITE_SLOT_LITERAL = "INSERT INTO lease_machines_slots (resource, slot, #{LEASE_COLUMNS}) " \
                           "VALUES (%7$s, %8$s, %1$s, %2$s, %3$s, %4$s, %5$s, %6$s) ON CONFLICT (resource, slot) " \
                           "DO UPDATE SET owner = excluded.owner, token = excluded.token, " \
                           "expires_at = excluded.expires_at, last_issued = excluded.last_issued, " \
                           "observed = excluded.observed, revision = excluded.revision".freeze
      SHARE_SLOT = "SELECT #{LEASE_COLUMNS} FROM lease_machines_slots WHERE resource = $1 AND slot = $2 " \
                   "FOR SHARE".freeze
      READ_SLOT = "SELECT #{LEASE_COLUMNS} FROM lease_machines_slots WHERE resource = $1 AND slot = $2".freeze
      READ_SLOT_FENCE = "SELECT highest FROM lease_machines_slot_fences WHERE resource = $1 AND slot = $2"
      WRITE_SLOT_FENCE = <<~SQL.freeze
        INSERT INTO lease_machines_slot_fences (resource, slot, highest) VALUES ($1, $2, $3)
        ON CONFLICT (resource, slot) DO UPDATE SET highest = excluded.highest
      SQL
      WRITE_ROW_LITERAL = "UPDATE lease_machines_leases SET owner = %s, token = %s, expires_at = %s, " \
                          "last_issued = %s, observed = %s, revision = %s WHERE resource = %s"
      WRITE_FENCE = <<~SQL.freeze
        INSERT INTO lease_machines_fences (resource, highest) VALUES ($1, $2)
        ON CONFLICT (resource) DO UPDATE SET highest = excluded.highest
      SQL
      EVENT_COLUMNS = "kind, at, owner, token, expires_at, revision, reason, replaced_owner, replaced_token, " \
                      "replaced_expires_at, highest"
      # One event logged and the log pruned, by the schema's function (lease_machines_log_event): one statement.
      LOG_EVENT_LITERAL = "SELECT lease_machines_log_event(%1$s, %2$s, %3$s, %4$s, %5$s, %6$s, %7$s, %8$s, %9$s, " \
                          "%10$s, %11$s, %12$s, %13$s, %14$s, %15$s)"
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
      LEASE_PAGE_COLUMNS = "owner, token, expires_at, last_issued, observed, revision, highest"
      # A keyset page in the database's own order of text (its collation's, which the primary keys' indexes follow):
      # both tables' pages merged by the server, so the order is the one the next page's key is compared in. The
      # prefix is a filter (starts_with), which holds whatever the collation.
      READ_LEASES = <<~SQL.freeze
        SELECT * FROM (
          (SELECT resource, 0 AS slot, #{LEASE_PAGE_COLUMNS} FROM lease_machines_leases LEFT JOIN lease_machines_fences
           USING (resource) WHERE starts_with(resource, $1) AND resource > $2 ORDER BY resource LIMIT $4)
          UNION ALL
          (SELECT resource, slot, #{LEASE_PAGE_COLUMNS} FROM lease_machines_slots LEFT JOIN lease_machines_slot_fences
           USING (resource, slot) WHERE starts_with(resource, $1) AND (resource, slot) > ($2, $3::integer)
           ORDER BY resource, slot LIMIT $4)
        ) page ORDER BY resource, slot LIMIT $4
      SQL
      COUNT_LEASES = <<~SQL
        SELECT (SELECT count(*) FROM lease_machines_leases WHERE starts_with(resource, $1)) +
               (SELECT count(*) FROM lease_machines_slots WHERE starts_with(resource, $1))
      SQL
      OLD_LOCK_TIMEOUT = "SELECT current_setting('lock_timeout')"
      RESTORE_LOCK_TIMEOUT = "SELECT set_config('lock_timeout', $1, true)"
      OWN_MARK = "SELECT current_setting('lease_machines.own', true)"
      # The token epoch in force and the history it was taken in (nil, nil without a row), and the timeline of the WAL
      # the server writes now (the first 8 hex digits of its file's name: the timeline a promotion moved to). Read in
      # every decision's first round trip and with every fenced write's check; the system identifier, which costs a
      # read of pg_control, is read once per connection (SYSTEM).
      EPOCH_READ = "SELECT h.epoch, h.history, ('x' || substr(pg_walfile_name(pg_current_wal_lsn()), 1, 8))::bit(32)" \
                   "::bigint FROM (SELECT 1) one LEFT JOIN lease_machines_history h ON h.id = 1"
      SYSTEM = "SELECT system_identifier::text FROM pg_control_system()"
      # The epoch taken in a new history, in the decision's own transaction, with its first grant: never lower than
      # one a concurrent first grant of the same history took.
      WRITE_HISTORY_LITERAL = "INSERT INTO lease_machines_history (id, epoch, history) VALUES (1, %s, %s) " \
                              "ON CONFLICT (id) DO UPDATE SET epoch = GREATEST(lease_machines_history.epoch, " \
                              "excluded.epoch), history = excluded.history"
      # Serializes two processes creating the schema at once (a transaction-scoped lock: no session state).
      CREATE_LOCK = "SELECT pg_advisory_xact_lock(7311201726481923)"
      private_constant :URL, :KEYWORDS, :PAIR, :KEYWORD_STRING, :NAMING, :SECRETS, :COLUMNS, :READ_COLUMNS,
                       :LEASE_COLUMNS, :BEGIN_OWN, :OWN, :MARK_OWN, :SET_TIMEOUT, :SET_DURABLE, :SET_OWN, :ENSURE_ROW,
                       :LOCK_ROW_BYTES, :CLOCK_BYTES, :WRITE_ROW_LITERAL,
                       :SHARE_ROW, :READ_ROW, :READ_FENCE, :CLOCK, :WRITE_FENCE, :OLD_LOCK_TIMEOUT,
                       :RESTORE_LOCK_TIMEOUT, :OWN_MARK, :CREATE_LOCK, :TRANSACTION, :SAME_TRANSACTION, :ENDED,
                       :LOCK_SLOTS_BYTES, :CLOCK_AFTER, :WRITE_SLOT_LITERAL, :SHARE_SLOT, :READ_SLOT, :READ_SLOT_FENCE,
                       :WRITE_SLOT_FENCE, :EVENT_COLUMNS, :LOG_EVENT_LITERAL, :READ_EVENTS, :READ_RESOURCE_EVENTS,
                       :READ_CHANGES, :COUNT_EVENTS, :LEASE_PAGE_COLUMNS, :READ_LEASES, :READ_LATEST_EVENTS,
                       :READ_LATEST_RESOURCE_EVENTS,
                       :COUNT_LEASES, :EPOCH_READ, :SYSTEM, :WRITE_HISTORY_LITERAL
      # How long the server lets a decision's transaction sit idle between its two round trips before it ends the
      # session: a process frozen there (SIGSTOP, a VM paused, a GC pause of seconds) would otherwise hold the
      # resource's row lock, and every other process's request on it would wait for it to wake. The decision then
      # fails with StoreError (nothing was committed) and the store reconnects at its next request. A decision
      # runs no application code between the two round trips, so only a stalled process meets this limit; a fenced
      # write, whose block may take its time, does not set it, and neither does a decision on an application's own
      # PG::Connection (whose session the application keeps).
      IDLE_IN_DECISION = "2s"
      # Rows, marks and clock readings are read in binary, exact whatever the connection's extra_float_digits.
      BINARY = 1
      # How long the server may take to answer a round trip beyond the request's lock wait, seconds: then the
      # connection is closed and the request raises StoreError (a server that stopped answering cannot hold a
      # request, whose interrupts are deferred, forever).
      ANSWER_MARGIN = 30.0
      # How many resources' rows a store remembers as existing (a decision on one skips the INSERT that makes it
      # exist); past that, it forgets them all and learns again.
      KNOWN_ROWS = 4096

      def self.adapter_name = :postgresql

      # What a fenced write joined to an application's transaction holds until it ends: the lease's row (FOR SHARE).
      def self.fence_holds = :row

      # What this database's driver raises; Store turns it into StoreError.
      def self.errors = defined?(::PG::Error) ? [::PG::Error] : []

      # Whether +database+ is a PostgreSQL URL, libpq keyword string or connection.
      def self.accepts?(database)
        return URL.match?(database) || !keyword_pairs(database).nil? if String === database

        defined?(::PG::Connection) ? ::PG::Connection === database : false
      end

      # The driver's message, on one line.
      def self.message(error) = error.message.strip.gsub(/\s*\n\s*/, "; ")

      # What names +database+ in a message: the server, port, user and database, never a password (a keyword
      # string's naming pairs, as written).
      def self.describe(database)
        return database.then { |c| "postgresql://#{c.user}@#{c.host}:#{c.port}/#{c.db}" } unless String === database
        if (pairs = keyword_pairs(database))
          named = pairs.filter_map { |keyword, written| "#{keyword}=#{written}" if NAMING.include?(keyword) }
          return named.empty? ? "a PostgreSQL server (libpq's defaults)" : named.join(" ")
        end

        uri = URI.parse(database)
        uri.password = nil
        uri.query = nil
        uri.to_s
      rescue URI::Error, ::PG::Error
        String === database ? "a PostgreSQL server (an unreadable URL)" : "a PostgreSQL server (#{database.class})"
      end

      # Every form a password can take in +database+ (a URL's userinfo, password= and sslpassword= parameters; a
      # keyword string's password and sslpassword; each as written and as read), longest first, for masking.
      def self.passwords(database)
        pairs = keyword_pairs(database)
        forms = if pairs
                  pairs.filter_map { |keyword, written, value| [written, value] if SECRETS.include?(keyword) }
                else
                  userinfo = database[%r{\A[^:/]+://[^/@:]*:([^@/]*)@}, 1]
                  [userinfo, *database.scan(/[?&](?:ssl)?password=([^&]*)/).flatten].compact.map { [_1, decoded(_1)] }
                end
        forms.flatten.reject(&:empty?).uniq.sort_by { -_1.size }
      end

      # The [keyword, value as written, value] pairs of +text+ when it is a libpq keyword string, else nil.
      def self.keyword_pairs(text)
        return nil unless KEYWORD_STRING.match?(text)

        pairs = text.scan(PAIR).map do |keyword, written|
          [keyword, written, (written.start_with?("'") ? written[1...-1] : written).gsub(/\\(.)/m, "\\1")]
        end
        pairs if pairs.any? { |keyword, _| KEYWORDS.include?(keyword) }
      end

      # +text+ percent-decoded; as written when it is not valid percent-encoding.
      def self.decoded(text)
        URI.decode_www_form_component(text)
      rescue ArgumentError
        text
      end

      # The connection, and what names it in messages.
      attr_reader :connection, :name

      # Connects to +database+ (a postgresql:// URL or a libpq keyword string) or takes an open PG::Connection (the
      # application's own, whose settings are left as they are). +busy_timeout+ is Float seconds (0 to about 24 days)
      # or nil: 5 seconds for a connection the store opens, the connection's own lock_timeout for one it is given. The
      # schema is created where it is missing (outside a transaction), then checked. Raises LoadError when the pg gem
      # is missing, TypeError or ArgumentError for bad arguments, PG::Error when the server cannot be reached or set
      # up, StoreError for tables of another shape or format.
      def initialize(database, busy_timeout:, migrate: true)
        require "pg"
        require "uri"
        @owned = String === database
        seconds = busy_timeout.nil? && @owned ? DEFAULT_BUSY_TIMEOUT : busy_timeout
        # PostgreSQL reads a lock_timeout of 0 as no limit: the shortest wait it knows is 1 ms.
        @lock_timeout = seconds.nil? ? "" : "#{[SQLite.busy_timeout_ms(seconds), 1].max}ms"
        @answer_within = (seconds || 0) + ANSWER_MARGIN
        @name = self.class.describe(database)
        @connection = @owned ? connect(database) : database
        @url = database if @owned # for a new connection, when a reconnect failed (see #check!); never shown
        # The transaction of each open fenced write (by savepoint, :own for the store's), checked at its end.
        @fence_transactions = {}
        # The lock timeout each open fenced savepoint replaced, restored when it is released.
        @kept_timeouts = {}
        # The resources whose rows this store has read (the store never deletes one).
        @known_rows = {}
        @opening = decision_opening
        begin
          prepare_schema(migrate)
          system_identifier # read now, not in the first request's round trips
        rescue ::PG::Error, StoreError
          close if @owned
          raise
        end
      end

      def close
        @reset_failed = false
        @connection.finished? || @connection.close
      end

      # Closed, by #close or by the application: not by a reconnect that failed.
      def closed? = @connection.finished? && !@reset_failed

      # Raises StoreError when the connection is broken; one the store opened is first reconnected, so that a
      # request after a lost connection reads the truth from the server. A failed reconnect finishes the connection
      # (pg's #reset does): the next request opens a new one.
      def check!
        return if !@reset_failed && @connection.status == ::PG::CONNECTION_OK

        raise StoreError, "#{@name}: the connection to the server is broken" unless @owned

        begin
          if @reset_failed
            @connection = connect(@url)
          else
            @connection.reset
          end
          @reset_failed = false
        rescue ::PG::Error => e
          @reset_failed = @connection.finished?
          raise StoreError, "#{@name}: cannot reconnect: #{self.class.message(e)}"
        end
      end

      def in_transaction? = @connection.transaction_status != ::PG::PQTRANS_IDLE

      # +name+, or ArgumentError for a name PostgreSQL's text cannot hold (one with a NUL byte).
      def check_name!(name)
        return name unless name.include?("\0")

        raise ArgumentError, "resource #{LeaseMachines.shown(name)} contains a NUL byte, which PostgreSQL's text cannot hold"
      end

      # One round trip (a simple query): BEGIN, the transaction's settings, the resource's row made to exist
      # (unless a committed request of this store has seen it) and locked FOR UPDATE, read, with the server's clock
      # when +clock+, and the token epoch (#epoch_of). Returns [row, now or nil, epoch].
      def open_request(resource, clock: false)
        name, statements = opening_request(resource)
        statements << format(LOCK_ROW_BYTES, name, clock ? CLOCK_BYTES : "") << EPOCH_READ
        system = system_identifier
        results = simple(statements)
        row = locked_row(resource, results[-2])
        [row, clock ? bytes_float(raw(results[-2]).getvalue(0, 6)) : nil, epoch_of(results.last, system)]
      end

      # One round trip (a simple query), as #open_request's, for a semaphore: slot 0's row made to exist and locked,
      # then every other slot row of the resource, then the server's clock when +clock+. Returns [rows, now or nil],
      # rows[i] slot i's columns (nil for a slot without a row).
      def open_slots(resource, clock: false)
        name, statements = opening_request(resource)
        statements << format(LOCK_ROW_BYTES, name, "") << format(LOCK_SLOTS_BYTES, name)
        statements << CLOCK_AFTER if clock
        statements << EPOCH_READ
        system = system_identifier
        results = simple(statements)
        slots_at = clock ? -3 : -2
        rows = [locked_row(resource, results[slots_at - 1])]
        raw(results[slots_at]).values.each { |slot, *columns| rows[Integer(slot, 10)] = text_columns(columns) }
        [rows, clock ? bytes_float(raw(results[-2]).getvalue(0, 0)) : nil, epoch_of(results.last, system)]
      end

      # One round trip (a simple query): +row+ written into +slot+ (nil: nothing changed; slot 0 is the resource's
      # own row) and COMMIT. The row is known to exist from then on, and only then (a request that rolled back may
      # have made it exist in its own transaction only). A connection lost on the way raises StoreError saying that
      # whether the transaction committed is unknown.
      #
      # A decision that +issued+ a token in a history of the server other than the token epoch's records the epoch it
      # was decided in (#epoch_of) with the history, in the same transaction.
      def close_slots(resource, slot, row, event, issued = nil)
        opened, name, known = @request
        @request = nil
        raise StoreError, "#{@name}: a request's end without its start (#{resource.inspect})" unless opened == resource

        statements = []
        statements << format(WRITE_HISTORY_LITERAL, @new_epoch.to_s, @history_literal) if issued && @new_epoch
        statements << (slot.zero? ? write_literal(name, row) : write_slot_literal(name, slot, row)) if row
        statements << event_literal(name, slot, event)
        finish { simple(statements << "COMMIT") }
        learn(resource) unless known
      end

      def close_request(resource, row, event, issued = nil) = close_slots(resource, 0, row, event, issued)

      # One round trip: a decision whose token would open token epoch +opened+ (the token after its epoch's last, the
      # core's answer) writes nothing but that epoch, recorded in the server's history as it is now (no lower than
      # the one a first grant in a new history takes), and commits. Returns CONFLICT: the request is decided again,
      # in that epoch.
      def next_epoch(resource, opened)
        request, = @request
        @request = nil
        raise StoreError, "#{@name}: a request's end without its start (#{resource.inspect})" unless request == resource

        epoch = [opened, @new_epoch || 0].max
        finish { simple([format(WRITE_HISTORY_LITERAL, epoch.to_s, @history_literal), "COMMIT"]) }
        CONFLICT
      end

      # One round trip: the fenced write's transaction opened (BEGIN, or the savepoint +savepoint+ inside the open
      # transaction, keeping the lock timeout it replaces), the resource's row locked FOR SHARE (no grant can commit
      # until the write has) and read, its fence mark read, and the server's clock when +clock+.
      # Returns [row, mark, now or nil, the token epoch (#epoch_of)]: the core checks the token on the row raised into
      # it, so that a holder from before a failover is refused as stale.
      def open_fence(resource, savepoint:, clock: false, slot: 0)
        opening = if savepoint
                    [["SAVEPOINT #{savepoint}"], [OLD_LOCK_TIMEOUT], [SET_TIMEOUT, [@lock_timeout]]]
                  else
                    opening(@lock_timeout)
                  end
        reads = if slot.zero?
                  [[SHARE_ROW, [resource], BINARY], [READ_FENCE, [resource], BINARY]]
                else
                  [[SHARE_SLOT, [resource, slot], BINARY], [READ_SLOT_FENCE, [resource, slot], BINARY]]
                end
        statements = opening + reads + [[TRANSACTION, [], BINARY], [EPOCH_READ]]
        statements << [CLOCK, [], BINARY] if clock
        system = system_identifier
        results = pipeline(statements)
        @kept_timeouts[savepoint] = results[1].getvalue(0, 0) if savepoint
        at = opening.size
        @fence_transactions[savepoint || :own] = integer(raw(results[at + 2]).getvalue(0, 0))
        [row_of(results[at]), mark_of(results[at + 1]), clock ? float(raw(results[at + 4]).getvalue(0, 0)) : nil,
         epoch_of(results[at + 3], system)]
      end

      # One round trip: the fence mark of +resource+ raised to +token+, and the fenced write's transaction ended:
      # its savepoint released (the lock timeout it replaced restored), or the store's own committed.
      # The protected +statements+ ([sql, binds] pairs given up front) run first, in the same round trip; their rows
      # come back.
      def close_fence(resource, token, savepoint:, event:, statements: [], slot: 0)
        mark = slot.zero? ? [WRITE_FENCE, [resource, token]] : [WRITE_SLOT_FENCE, [resource, slot, token]]
        ending = [[SAME_TRANSACTION, [@fence_transactions.delete(savepoint || :own)]], mark,
                  [event_literal(@connection.escape_literal(resource), slot, event)]]
        finish(statements + ending + fence_end(savepoint)).first(statements.size).map(&:values)
      end

      # One round trip: a refused fenced write's +event+ logged and its transaction ended as #close_fence ends it:
      # the store's own commits with the event alone; inside the application's, the event joins it (and is gone if
      # that rolls back).
      def refuse_fence(resource, savepoint:, event:, slot: 0)
        @fence_transactions.delete(savepoint || :own)
        finish([[event_literal(@connection.escape_literal(resource), slot, event)]] + fence_end(savepoint))
      end

      # How much of the event log is kept: +per_lease+ events of each lease (Integer), none older than +max_age+
      # Float seconds before the newest event's +at+.
      def retain_events(per_lease:, max_age:)
        @keep_events = Integer(per_lease)
        @events_max_age = Float(max_age)
      end

      # Up to +limit+ events after id +after+ (of +resource+, or every resource's for nil), oldest first, each as
      # [id, resource, slot, kind, at, owner, token, expires_at, revision, reason, replaced_owner, replaced_token,
      # replaced_expires_at, highest]. One round trip.
      def events(resource, after, limit)
        found = if resource.nil?
                  binary_rows(READ_EVENTS, [after, limit])
                else
                  binary_rows(READ_RESOURCE_EVENTS, [resource, after, limit])
                end
        found.each { |event| event[5], event[10] = unsigned(event[5]), unsigned(event[10]) }
      end

      # The newest +limit+ events (of +resource+, or every resource's for nil), oldest first, as #events reads them.
      def latest_events(resource, limit)
        found = if resource.nil?
                  binary_rows(READ_LATEST_EVENTS, [limit])
                else
                  binary_rows(READ_LATEST_RESOURCE_EVENTS, [resource, limit])
                end
        found.each { |event| event[5], event[10] = unsigned(event[5]), unsigned(event[10]) }
      end

      # The accepted changes of the whole log, oldest first, as the extension's store audit reads them.
      def changes
        binary_rows(READ_CHANGES, []).each { |change| change[5], change[9] = unsigned(change[5]), unsigned(change[9]) }
      end

      # How many events of each kind the log keeps, as [kind, count] rows.
      def event_counts = binary_rows(COUNT_EVENTS, [])

      # Up to +limit+ leases of resources named +prefix+..., after the key [+after_resource+, +after_slot+], in key
      # order (see Store::SQLite#leases): one statement (READ_LEASES). A key's slot 0 is its resource's lease, so
      # the leases table's page starts after the key's resource whatever its slot (names are never empty).
      def leases(prefix, after_resource, after_slot, limit)
        binary_rows(READ_LEASES, [prefix, after_resource, after_slot, limit]).each do |lease|
          lease[2] = unsigned(lease[2])
        end
      end

      # How many leases are named +prefix+... ("" for all).
      def lease_count(prefix) = binary_rows(COUNT_LEASES, [prefix]).first.first

      # The server's clock, Float seconds since the Unix epoch.
      def server_now = binary_rows(CLOCK, []).first.first

      # Whether +error+ (from #close_fence) says the fenced write's transaction was ended inside it: its savepoint is
      # gone, or the transaction is another.
      def ended_inside?(error)
        message = error.message
        message.include?(ENDED) || (message.include?("savepoint") && message.include?("does not exist"))
      end

      # Rolls back the store's own transaction, and only that: a transaction without the store's mark (the
      # application's) is left alone; a connection with results still on their way (a request cut short) has them
      # discarded first. Returns whether it rolled one back.
      def rollback_own
        settle
        case @connection.transaction_status
        when ::PG::PQTRANS_INTRANS
          # A connection the store opened is used by nobody else: whatever transaction is open on it is the store's,
          # even one whose BEGIN went out without the mark after it (a trap handler raising between the two).
          return false unless @owned || @connection.exec(OWN_MARK).getvalue(0, 0) == "own"
        when ::PG::PQTRANS_INERROR
          # An aborted transaction answers nothing but ROLLBACK (TO SAVEPOINT): only the store's has its savepoint.
          @connection.exec("ROLLBACK TO SAVEPOINT #{OWN}") unless @owned
        else
          return false
        end
        @connection.exec("ROLLBACK")
        true
      rescue ::PG::Error
        false
      end

      def rollback_to_savepoint(name)
        @kept_timeouts.delete(name)
        @fence_transactions.delete(name)
        settle
        @connection.exec("ROLLBACK TO SAVEPOINT #{name}")
        @connection.exec("RELEASE SAVEPOINT #{name}")
      rescue ::PG::Error
        nil
      end

      # The columns [owner, token, expires_at, last_issued, observed, revision] of the resource's committed row, or
      # nil. One round trip.
      def read_row(resource, slot = 0)
        return row_of(@connection.exec_params(READ_ROW, [resource], BINARY)) if slot.zero?

        row_of(@connection.exec_params(READ_SLOT, [resource, slot], BINARY))
      end

      # The stored high-water of the resource's (+slot+'s) fenced writes, or nil without a row. One round trip.
      def read_fence(resource, slot = 0)
        return mark_of(@connection.exec_params(READ_FENCE, [resource], BINARY)) if slot.zero?

        mark_of(@connection.exec_params(READ_SLOT_FENCE, [resource, slot], BINARY))
      end

      # The store's own state is never shown (the URL it reconnects with may carry a password).
      def inspect = "#<#{self.class.name} #{@name}>"

      private

      # How a fenced write's transaction ends: its savepoint released (the lock timeout it replaced restored), or
      # the store's own committed.
      def fence_end(savepoint)
        return [["COMMIT"]] unless savepoint

        [[RESTORE_LOCK_TIMEOUT, [@kept_timeouts.delete(savepoint)]], ["RELEASE SAVEPOINT #{savepoint}"]]
      end

      # The statement that logs +event+ (the extension's columns, with a fenced write's mark appended) of the lease
      # +slot+ of the resource whose quoted name is +name+, and prunes (LOG_EVENT_LITERAL).
      def event_literal(name, slot, event)
        kind, at, owner, token, expires_at, revision, reason, replaced_owner, replaced_token, replaced_expires_at,
          highest = event
        values = [kind, at, signed(owner), token, expires_at, revision, reason, signed(replaced_owner), replaced_token,
                  replaced_expires_at, highest].map { literal(_1) }
        format(LOG_EVENT_LITERAL, name, Integer(slot).to_s, *values, @keep_events.to_s, literal(@events_max_age))
      end

      # +value+ as an SQL literal: NULL, an Integer, a Float exactly (float8's input reads Ruby's shortest form back
      # to the same double), a String quoted by the connection.
      def literal(value)
        case value
        when nil then "NULL"
        when Integer then value.to_s
        when Float then "'#{value}'::float8"
        when String then @connection.escape_literal(value)
        else raise TypeError, "the extension wrote #{LeaseMachines.shown(value)} into an event"
        end
      end

      # An owner (0 to 2**64-1) as the signed bigint the tables store, and back.
      def signed(owner) = owner && owner > MAX_INTEGER ? owner - 2**64 : owner
      def unsigned(owner) = Integer === owner && owner.negative? ? owner + 2**64 : owner

      # The rows of a read-only statement, in binary and decoded by column type (bigint, integer, double precision,
      # text): exact whatever the connection's settings. One round trip.
      def binary_rows(sql, params)
        result = raw(@connection.exec_params(sql, params, BINARY))
        types = Array.new(result.nfields) { result.ftype(_1) }
        result.values.map do |row|
          row.each_with_index.map { |value, index| value && decode(types[index], value) }
        end
      end

      def decode(type, bytes)
        case type
        when 20 then integer(bytes) # bigint
        when 23 then bytes.unpack1("l>") # integer
        when 701 then float(bytes) # double precision
        when 25 then bytes.force_encoding(Encoding::UTF_8) # text
        else raise StoreError, "#{@name}: a column of type #{type} in the lease store's tables"
        end
      end

      # A request's first statements: the transaction's opening, and the resource's row made to exist unless a
      # committed request of this store has seen it. Returns [the quoted name, statements]; the request is remembered
      # for its close (the quoted name, and whether to learn the row).
      def opening_request(resource)
        known = @known_rows.key?(resource)
        name = @connection.escape_literal(resource)
        @request = [resource, name, known]
        statements = [*@opening]
        statements << ENSURE_ROW.sub("$1") { name } unless known
        [name, statements]
      end

      # The resource's locked row from +result+; StoreError when it is gone (deleted while the request waited for its
      # lock, or since this store's last request on it: the next request makes it exist again).
      def locked_row(resource, result)
        text_row_of(result) or
          begin
            @known_rows.delete(resource)
            raise StoreError, "#{@name}: the row of #{resource.inspect} was deleted while the request waited for " \
                              "its lock (or since this store's last request on it); nothing was decided"
          end
      end

      # The statements that open the store's own transaction: BEGIN and its settings; on an application's
      # connection, marked as the store's too (a savepoint and a setting, for #rollback_own). A connection the store
      # opened needs no mark: every transaction on it is the store's.
      def opening(lock_timeout)
        return [[BEGIN_OWN], [SET_DURABLE, [lock_timeout]]] if @owned

        [[BEGIN_OWN], [MARK_OWN], [SET_OWN, [lock_timeout]]]
      end

      # The statements that open a decision's transaction, its simple query's first part: the same settings as
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

      # The server's system identifier (pg_control_system()), read once per backend: a connection reset, or a new one,
      # may reach another server.
      def system_identifier
        pid = @connection.backend_pid
        return @system.last if @system&.first == pid

        @system = [pid, @connection.exec(SYSTEM).getvalue(0, 0)]
        @system.last
      end

      # The token epoch a request decides (or a fenced write is checked) in, from EPOCH_READ's +result+ and the
      # server's +system+ identifier: the recorded epoch when it was taken in the server's history as it is now
      # ("SYSTEM/TIMELINE"); else the epoch a first grant in this history takes, one above the recorded one and at
      # least its timeline's first (the core's TokenEpoch.after, the timeline less one as its generation: an epoch
      # taken after a promotion is above one its old primary took after its own promotion but never replicated),
      # kept in @new_epoch for that grant's commit. No row and timeline 1: epoch 0, as a database that never
      # failed over issues 1, 2, 3, ...
      def epoch_of(result, system)
        epoch, history, timeline = result.values.first
        now = "#{system}/#{format("%08X", Integer(timeline))}"
        @history_literal = @connection.escape_literal(now)
        @new_epoch = nil
        return Integer(epoch) if epoch && history == now

        taken = LeaseMachines.__send__(:_token_epoch_after, epoch && Integer(epoch), Integer(timeline) - 1)
        if taken << LeaseMachines::TOKEN_EPOCH_BITS > MAX_INTEGER
          raise StoreError, "#{@name}: token epoch #{taken} (timeline #{Integer(timeline)}) would issue tokens past " \
                            "PostgreSQL's bigint; the store's token epochs cover timelines up to 8192"
        end
        @new_epoch = taken
      end

      def learn(resource)
        @known_rows.clear if @known_rows.size >= KNOWN_ROWS
        @known_rows[resource] = true
      end

      # A new connection to +url+; a failure's message never carries the password.
      def connect(url)
        ::PG.connect(url)
      rescue ::PG::Error => e
        message = self.class.passwords(url).reduce(self.class.message(e)) { |text, pw| text.gsub(pw, "[password]") }
        raise ::PG::ConnectionBad, message, cause: nil # the driver's own error may quote the password
      end

      # Runs +statements+ ([sql, params] each) in one round trip, in pipeline mode, and returns their results.
      # The first failed statement's error is raised (the ones after it were skipped by the server).
      def pipeline(statements)
        settle unless @connection.pipeline_status == ::PG::PQ_PIPELINE_OFF
        @connection.enter_pipeline_mode
        begin
          statements.each { |sql, params, format| @connection.send_query_params(sql, params || [], format || 0) }
          @connection.pipeline_sync
          deadline = Process.clock_gettime(Process::CLOCK_MONOTONIC) + @answer_within
          results = statements.map do
            result = answer(deadline) or raise ::PG::ConnectionBad, "the server sent no result: #{lost}"
            answer(deadline) # nil: the end of this statement's results
            result
          end
          answer(deadline) # the sync point
          results.each { |result| result.check unless result.result_status == ::PG::PGRES_PIPELINE_ABORTED }
          results
        ensure
          leave_pipeline
        end
      end

      # Runs +statements+ (SQL Strings) in one round trip, as one simple query, and returns their results. The first
      # failed statement's error is raised (the server skipped the ones after it).
      def simple(statements)
        settle unless @connection.pipeline_status == ::PG::PQ_PIPELINE_OFF
        @connection.send_query(statements.join("; "))
        deadline = Process.clock_gettime(Process::CLOCK_MONOTONIC) + @answer_within
        results = []
        while (result = answer(deadline))
          results << result
        end
        results.each(&:check)
        unless results.size == statements.size
          raise ::PG::ConnectionBad,
                "the server sent #{results.size} results for #{statements.size} statements: #{lost}"
        end

        results
      end

      # Runs the last round trip of a transaction (the block: #pipeline or #simple, with COMMIT or RELEASE at its
      # end): a connection lost on the way leaves the outcome unknown.
      def finish(statements = nil)
        block_given? ? yield : pipeline(statements)
      rescue ::PG::Error => e
        raise if @connection.status == ::PG::CONNECTION_OK && !(::PG::ConnectionBad === e || ::PG::UnableToSend === e)

        raise StoreError, "#{@name}: the connection was lost while the transaction's end was on its way " \
                          "(#{self.class.message(e)}): whether it committed is unknown; the next request reads " \
                          "what the server kept"
      end

      # The next result, waited for until +deadline+ (monotonic seconds): a server that stopped answering has the
      # connection closed (a connection the store opened is opened anew by the next request) and raises
      # PG::ConnectionBad.
      def answer(deadline)
        while @connection.is_busy
          remaining = deadline - Process.clock_gettime(Process::CLOCK_MONOTONIC)
          if remaining <= 0 || @connection.socket_io.wait_readable(remaining).nil?
            @connection.close
            @reset_failed = @owned # the next request connects again
            raise ::PG::ConnectionBad, "no answer from the server within #{@answer_within.round(1)} s; the " \
                                       "connection was closed"
          end
          @connection.consume_input
        end
        @connection.get_result
      end

      # What libpq says of a connection that stopped answering.
      def lost
        message = @connection.error_message.to_s.strip
        message.empty? ? "the connection was lost" : message.gsub(/\s*\n\s*/, "; ")
      end

      def leave_pipeline
        return if @connection.pipeline_status == ::PG::PQ_PIPELINE_OFF || pipeline_ended?

        settle # cut short: results still on their way
      rescue ::PG::Error
        nil
      end

      # Brings the connection back to rest after a request cut short (a signal's trap handler raising mid-pipeline, a
      # thread killed inside the block's query): a pipeline is synced and every result read until libpq lets it end
      # (an interrupted pipeline may have sent statements without their sync point, whose results the server holds
      # back until one comes); results of a query still on their way are read and dropped.
      def settle
        return unless @connection.status == ::PG::CONNECTION_OK

        unless @connection.pipeline_status == ::PG::PQ_PIPELINE_OFF
          @connection.pipeline_sync
          loop do
            result = @connection.get_result
            raise ::PG::ConnectionBad, lost if result.nil? && @connection.status != ::PG::CONNECTION_OK
            next unless result&.result_status == ::PG::PGRES_PIPELINE_SYNC

            break if pipeline_ended?
          end
        end
        # A query of the block's still running is waited for, not cancelled: a cancel request can arrive late and
        # cancel the next statement instead, which may be the store's own.
        @connection.discard_results if @connection.transaction_status == ::PG::PQTRANS_ACTIVE
      end

      # Ends pipeline mode; false while results are still pending (a later sync point's).
      def pipeline_ended?
        @connection.exit_pipeline_mode
        true
      rescue ::PG::Error
        false
      end

      # The row's columns from a binary result (NaN and infinities come through, for the extension to refuse).
      def row_of(result)
        return nil if result.ntuples.zero?

        owner, token, expires_at, last_issued, observed, revision = raw(result).values.first
        owner = owner && integer(owner)
        owner += 2**64 if owner&.negative?
        [owner, token && integer(token), expires_at && float(expires_at), last_issued && integer(last_issued),
         float(observed), integer(revision)]
      end

      def mark_of(result) = result.ntuples.zero? ? nil : integer(raw(result).getvalue(0, 0))

      # The row's columns from a decision's text result, its doubles as float8send's bytes.
      def text_row_of(result)
        return nil if result.ntuples.zero?

        text_columns(raw(result).values.first)
      end

      # A row's columns from their text (doubles as float8send's bytes).
      def text_columns(columns)
        owner, token, expires_at, last_issued, observed, revision = columns
        owner = owner && Integer(owner, 10)
        owner += 2**64 if owner&.negative?
        [owner, token && Integer(token, 10), expires_at && bytes_float(expires_at),
         last_issued && Integer(last_issued, 10), bytes_float(observed), Integer(revision, 10)]
      end

      # A double from its 8 bytes in hex (16 digits).
      def bytes_float(hex) = [hex].pack("H*").unpack1("G")

      # The UPDATE of the row named +name+ (quoted by libpq) to +row+ as SQL: integers written by Integer#to_s,
      # doubles by Float#to_s (the shortest text that reads back as the same double, quoted: Infinity and NaN too),
      # nil as NULL.
      def write_literal(name, row) = format(WRITE_ROW_LITERAL, *literals(row), name)

      # The row's columns as SQL literals.
      def literals(row)
        columns_of(row).map do |value|
          case value
          when nil then "NULL"
          when Integer then value.to_s
          when Float then "'#{value}'::float8"
          else raise TypeError, "the extension wrote #{LeaseMachines.shown(value)} into a row"
          end
        end
      end

      # The upsert of +slot+'s row (above 0) of the resource named +name+, as #write_literal writes a row.
      def write_slot_literal(name, slot, row) = format(WRITE_SLOT_LITERAL, *literals(row), name, Integer(slot).to_s)

      # +result+ read as the bytes the server sent, whatever type map the connection has (an application's
      # PG::BasicTypeMapForResults would decode them).
      def raw(result)
        result.type_map = (@all_strings ||= ::PG::TypeMapAllStrings.new)
        result
      end

      # A binary bigint and a binary double precision.
      def integer(bytes) = bytes.unpack1("q>")
      def float(bytes) = bytes.unpack1("G")

      def columns_of(row)
        owner, *rest = row
        [signed(owner), *rest]
      end

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
