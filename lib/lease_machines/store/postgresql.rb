# frozen_string_literal: true

require_relative "postgresql/requests"
require_relative "postgresql/fence"
require_relative "postgresql/codec"
require_relative "postgresql/events"
require_relative "postgresql/token_epochs"
require_relative "postgresql/schema"
require_relative "postgresql/transport"
require_relative "postgresql/known_rows"

module LeaseMachines
  class Store
    # The PostgreSQL side of Store: how to reach the server, run a request's transaction in at most two round trips
    # (libpq's pipeline mode), and read and write the store's tables. It makes no decision (the extension does) and
    # knows no lease rule.
    #
    # A decision on a row this store's own last commit left (a renewal, a release, the next acquire of a job's own
    # lease; up to KNOWN resources) is one round trip: the row is not read first, the instant is the server's clock
    # as the store last read it carried forward by this process's monotonic clock, and the commit
    # (lease_machines_commit_known, a compare-and-set in the schema) writes only if the row is still that one, the
    # carried instant no later than the server's clock and at most CARRIED_WITHIN before it. Otherwise it writes
    # nothing and answers the row as it is now, with the server's clock, and the decision is made again on that
    # answer (two round trips, as with a read); a second refusal has the next attempt read under the row's lock. A
    # resource others decided on since this store's last commit is read under its lock (two round trips) until it is
    # quiet again, so that contention never costs more round trips than reading every time.
    #
    # Every request runs READ COMMITTED with the resource's row locked (FOR UPDATE for a decision, FOR SHARE for a
    # fenced write), its lock waits bounded by lock_timeout (set for the transaction only), and its clock read with
    # clock_timestamp() after the lock. Its statements are named prepared statements on a connection it opens
    # (prepared_statements: true, the default there: each parsed and planned once per session, prepared in the round
    # trip that first needs it; a round trip in pipeline mode). With prepared_statements: false (for a pooler in
    # transaction mode that does not keep them, and by default on an application's connection) a decision's round
    # trips are simple queries of several statements each, with the resource's name as a literal that libpq quotes
    # (PQescapeLiteral, in the connection's encoding) and numbers the store formats itself. Either way its doubles
    # come back as their 8 bytes (float8send, in hex) or in binary, exact whatever the connection's
    # extra_float_digits, and a name is never SQL. It keeps no other session state: no advisory lock, no session
    # SET. PostgreSQL 12 or newer. A fenced write, whose protected statements carry the caller's binds, travels in
    # pipeline mode.
    class PostgreSQL < Adapter
      # The schema, for people who manage their own migrations.
      SCHEMA = File.read(File.expand_path("postgresql.sql", __dir__)).freeze
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
      # Format 1 (before the event log) is upgraded on open: SCHEMA creates the event log and raises the format.
      FORMAT = 2
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
      private_constant :URL, :KEYWORDS, :PAIR, :KEYWORD_STRING, :NAMING, :SECRETS, :LEASE_PAGE_COLUMNS, :READ_LEASES,
                       :COUNT_LEASES
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

      def self.adapter_name = :postgresql

      # Store.new's +prepared_statements:+ (see #initialize).
      def self.options = %i[prepared_statements]

      # What a fenced write joined to an application's transaction holds until it ends: the lease's row (FOR SHARE).
      def self.fence_holds = :row

      # What this database's driver raises; Store turns it into StoreError.
      def self.errors = defined?(::PG::Error) ? [::PG::Error] : []

      # Whether +database+ is a PostgreSQL URL, libpq keyword string or connection.
      def self.accepts?(database)
        return URL.match?(database) || !keyword_pairs(database).nil? if String === database

        defined?(::PG::Connection) ? ::PG::Connection === database : false
      end

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

      # Connects to +database+ (a postgresql:// URL or a libpq keyword string) or takes an open PG::Connection (the
      # application's own, whose settings are left as they are). +busy_timeout+ is Float seconds (0 to about 24 days)
      # or nil: 5 seconds for a connection the store opens, the connection's own lock_timeout for one it is given. The
      # schema is created where it is missing (outside a transaction), then checked. Raises LoadError when the pg gem
      # is missing, TypeError or ArgumentError for bad arguments, PG::Error when the server cannot be reached or set
      # up, StoreError for tables of another shape or format.
      #
      # +prepared_statements+: whether the store's statements run as named prepared statements (each parsed and
      # planned once per session, prepared in the round trip that first needs it), or as statements parsed and
      # planned every time (false: for a pooler in transaction mode that does not keep a session's prepared
      # statements, as PgBouncer before 1.21; ActiveRecord's setting of the same name). nil: true on a connection the
      # store opens, false on an application's connection (whose own setting the Rails jobs pass).
      def initialize(database, busy_timeout:, migrate: true, prepared_statements: nil)
        unless [nil, true, false].include?(prepared_statements)
          raise TypeError, "prepared_statements must be true, false or nil, got " \
                           "#{LeaseMachines.shown(prepared_statements)}"
        end

        require "pg"
        require "uri"
        require "digest"
        @owned = String === database
        @prepared = prepared_statements.nil? ? @owned : prepared_statements
        # The names of the store's prepared statements, by SQL; on an application's connection, with a prefix of this
        # store's own (two stores on one connection never prepare one name twice).
        @statement_names = {}
        @statement_prefix = @owned ? "" : "#{object_id.to_s(36)}_"
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
        # The rows this store knows without reading them (KnownRows), and the rows its last commits left.
        @known = {}
        @committed = {}
        @opening = decision_opening
        begin
          prepare_schema(migrate)
          @commit_known = prepare_commit_known(migrate)
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
          forget_known
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

        raise ArgumentError, "resource #{LeaseMachines.shown(name)} contains a NUL byte, which PostgreSQL's text " \
                             "cannot hold"
      end

      # One round trip (#round_trip): BEGIN, the transaction's settings, the resource's row made to exist
      # (unless a committed request of this store has seen it) and locked FOR UPDATE, read, with the server's clock
      # when +clock+, and the token epoch (#epoch_of). Returns [row, now or nil, epoch]. No round trip for a row this
      # store knows (#open_known): its close commits in one.
      def open_request(resource, clock: false)
        known = open_known(resource, clock, slots: false) { _1 }
        return known if known

        statements = opening_request(resource)
        statements << [clock ? LOCK_ROW_CLOCK : LOCK_ROW, [resource]] << [EPOCH_READ, []]
        system = system_identifier
        results = round_trip(statements)
        row = locked_row(resource, results[-2])
        now = clock_read(bytes_float(raw(results[-2]).getvalue(0, 6))) if clock
        epoch = epoch_of(results.last.values.first, system)
        @request.push(nil, nil, false, Known.new(row, epoch, @new_epoch ? nil : @history, nil))
        [row, now, epoch]
      end

      # One round trip (#round_trip), as #open_request's, for a semaphore: slot 0's row made to exist and locked,
      # then every other slot row of the resource, then the server's clock when +clock+. Returns [rows, now or nil],
      # rows[i] slot i's columns (nil for a slot without a row). No round trip for a resource this store knows to
      # have no slot rows (#open_known).
      def open_slots(resource, clock: false)
        known = open_known(resource, clock, slots: true) { [_1] }
        return known if known

        statements = opening_request(resource)
        statements << [LOCK_ROW, [resource]] << [LOCK_SLOTS, [resource]]
        statements << [CLOCK_AFTER, []] if clock
        statements << [EPOCH_READ, []]
        system = system_identifier
        results = round_trip(statements)
        slots_at = clock ? -3 : -2
        rows = [locked_row(resource, results[slots_at - 1])]
        raw(results[slots_at]).values.each { |slot, *columns| rows[Integer(slot, 10)] = text_columns(columns) }
        now = clock_read(bytes_float(raw(results[-2]).getvalue(0, 0))) if clock
        epoch = epoch_of(results.last.values.first, system)
        @request.push(nil, nil, true, Known.new(rows.first, epoch, @new_epoch ? nil : @history, rows.size == 1))
        [rows, now, epoch]
      end

      # One round trip (#round_trip): +row+ written into +slot+ (nil: nothing changed; slot 0 is the resource's
      # own row) and COMMIT. The row is known to exist from then on, and only then (a request that rolled back may
      # have made it exist in its own transaction only). A connection lost on the way raises StoreError saying that
      # whether the transaction committed is unknown.
      #
      # A decision that +issued+ a token in a history of the server other than the token epoch's records the epoch it
      # was decided in (#epoch_of) with the history, in the same transaction.
      #
      # A decision on a row this store knew without reading it is committed by #close_known instead.
      def close_slots(resource, slot, row, event, issued = nil)
        request = ended_request(resource)
        return close_known(resource, request, slot, row, event, issued) if request[2]

        _, known, _, _, _, read = request
        statements = []
        statements << [WRITE_HISTORY, [@new_epoch, @history]] if issued && @new_epoch
        statements << (slot.zero? ? write_row(resource, row) : write_slot(resource, slot, row)) if row
        statements << log_event(resource, slot, event)
        finish { round_trip(statements << "COMMIT") }
        learn(resource) unless known
        remember_read(resource, read, slot, row, issued)
      end

      def close_request(resource, row, event, issued = nil) = close_slots(resource, 0, row, event, issued)

      # One round trip: a decision whose token would open token epoch +opened+ (the token after its epoch's last, the
      # core's answer) writes nothing but that epoch, recorded in the server's history as it is now (no lower than
      # the one a first grant in a new history takes), and commits. Returns CONFLICT: the request is decided again,
      # in that epoch.
      def next_epoch(resource, opened)
        return CONFLICT if ended_request(resource)[2] # decided on a known row: the next request reads

        epoch = [opened, @new_epoch || 0].max
        finish { round_trip([[WRITE_HISTORY, [epoch, @history]], "COMMIT"]) }
        CONFLICT
      end

      # One round trip: the fenced write's transaction opened (BEGIN, or the savepoint +savepoint+ inside the open
      # transaction, keeping the lock timeout it replaces), the resource's row locked FOR SHARE (no grant can commit
      # until the write has) and read, its fence mark read, and the server's clock when +clock+.
      # Returns [row, mark, now or nil, the token epoch (#epoch_of)]: the core checks the token on the row raised into
      # it, so that a holder from before a failover is refused as stale.
      def open_fence(resource, savepoint:, clock: false, slot: 0)
        opening = if savepoint
                    [["SAVEPOINT #{savepoint}"], own(OLD_LOCK_TIMEOUT), own(SET_TIMEOUT, [@lock_timeout])]
                  else
                    opening(@lock_timeout)
                  end
        reads = if slot.zero?
                  [own(SHARE_ROW, [resource], BINARY), own(READ_FENCE, [resource], BINARY)]
                else
                  [own(SHARE_SLOT, [resource, slot], BINARY), own(READ_SLOT_FENCE, [resource, slot], BINARY)]
                end
        statements = opening + reads + [own(TRANSACTION, [], BINARY), own(EPOCH_READ)]
        statements << own(CLOCK, [], BINARY) if clock
        system = system_identifier
        undo = savepoint ? "ROLLBACK TO SAVEPOINT #{savepoint}; RELEASE SAVEPOINT #{savepoint}" : "ROLLBACK"
        results = opened_again(undo) { pipeline(statements) }
        @kept_timeouts[savepoint] = results[1].getvalue(0, 0) if savepoint
        at = opening.size
        @fence_transactions[savepoint || :own] = integer(raw(results[at + 2]).getvalue(0, 0))
        now = clock_read(float(raw(results[at + 4]).getvalue(0, 0))) if clock
        [row_of(results[at]), mark_of(results[at + 1]), now, epoch_of(results[at + 3].values.first, system)]
      end

      # One round trip: the fence mark of +resource+ raised to +token+, and the fenced write's transaction ended:
      # its savepoint released (the lock timeout it replaced restored), or the store's own committed.
      # The protected +statements+ ([sql, binds] pairs given up front) run first, in the same round trip; their rows
      # come back.
      def close_fence(resource, token, savepoint:, event:, statements: [], slot: 0)
        mark = slot.zero? ? own(WRITE_FENCE, [resource, token]) : own(WRITE_SLOT_FENCE, [resource, slot, token])
        ending = [own(SAME_TRANSACTION, [@fence_transactions.delete(savepoint || :own)]), mark,
                  own(*log_event(resource, slot, event))]
        finish(statements + ending + fence_end(savepoint)).first(statements.size).map(&:values)
      end

      # One round trip: a refused fenced write's +event+ logged and its transaction ended as #close_fence ends it:
      # the store's own commits with the event alone; inside the application's, the event joins it (and is gone if
      # that rolls back).
      def refuse_fence(resource, savepoint:, event:, slot: 0)
        @fence_transactions.delete(savepoint || :own)
        finish([own(*log_event(resource, slot, event))] + fence_end(savepoint))
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
    end
  end
end
