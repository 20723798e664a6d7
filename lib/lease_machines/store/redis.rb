# frozen_string_literal: true

require "digest"
require "securerandom"
require_relative "redis/codec"
require_relative "redis/clock"
require_relative "redis/token_epochs"
require_relative "redis/commit"
require_relative "redis/known_resources"
require_relative "redis/fence"
require_relative "redis/durability"
require_relative "redis/transport"
require_relative "redis/index"
require_relative "redis/streams"

module LeaseMachines
  class Store
    # The Redis side of Store (Store.new("redis://host:port/db"), or an open RedisClient; the redis-client gem, loaded
    # on first use). It makes no decision and knows no lease rule: a request reads the resource's hash, Store makes
    # the one native call every store makes, and this writes back what it says. Redis 6.2 or newer.
    #
    # == Commit: compare-and-set by script
    #
    # A decision is a read and a COMMIT, and no connection state. The read (MULTI, HMGET of the row with the
    # resource's +stamp+ and HGETALL of its slots for a semaphore, TIME, EXEC: the rows and the server's clock at one
    # instant) is one round trip; COMMIT is a script that applies the decision only if the +stamp+ is still the one
    # read: the row, the event and the index written together, or nothing. Every commit, a refusal's too, sets the
    # stamp to a new random one (16 hex digits), so a stamp never comes back, even on a server that lost its rows.
    # When the stamp moved, nothing was written, and the script answers the resource as it is now (its row, stamp
    # and token epoch, and TIME): close answers Store's CONFLICT, and Store decides again on that answer, until
    # +busy_timeout+ runs out (then StoreError). A refusal is checked the same way, so the event log is in the order
    # the decisions were made on; and a change whose commit found the resource moved claims it for CLAIM_US (50 ms),
    # during which other stores' refusals are answered as moved, so that the refusals of workers retrying without a
    # pause cannot starve the holder's renewal or release (commit.rb). The script compares and copies Strings; it
    # knows no rule.
    #
    # The read is skipped where this store knows the resource as its own last commit of it left it (or as a refused
    # commit's answer found it; up to KNOWN resources): then a decision is one round trip, its COMMIT. Its row is
    # that one, which the stamp checks. Its instant is the server's TIME as this store last read it (in any answer),
    # carried forward by this process's monotonic clock: an estimate of the server's clock, which the script checks
    # against its own TIME. No later, and at most CARRIED_CLOCK_US (2 ms) before it, or the commit is refused, and
    # the request is decided again on the answer (row, stamp, epoch and TIME read at one instant, as a read reads
    # them; that instant is not checked again). So each decision on a row comes after the last, at most 2 ms before
    # its commit: usually earlier than the call by about the last answer's way back (tens of microseconds on one
    # machine), as a read's instant is earlier than its commit. Where a round trip takes longer than 2 ms (another
    # zone, a busy host), the check refuses the carried instant and a decision is two round trips, as with a read.
    # A semaphore's request always reads (every slot row).
    #
    # Anything other than a Store that writes a resource's hashes must give the +stamp+ a new value (or delete it),
    # or a store that remembers the resource decides on the row as it left it, not on that write.
    # Why not WATCH / MULTI / EXEC: WATCH is the connection's state, which a reconnect (or a pooled client's next
    # checkout) silently drops, after which EXEC would write over a newer row; and the event's id, taken from a
    # counter, is only known inside a script.
    #
    # == Keys
    #
    # Every key of a resource carries the whole name as its hash tag, with "%", "{" and "}" written as %25, %7B and
    # %7D (any other byte, ":" included, as it is), so the tag Redis Cluster hashes is always the whole name:
    #
    # - +lease_machines:{NAME}:lease+: a hash, the resource's row (slot 0) as the fields owner, token, expires_at,
    #   last_issued, observed, revision (absent when nil: a vacant lease), +stamp+, and a change's claim (+claim+,
    #   +claimant+) while it is decided again.
    # - +lease_machines:{NAME}:slots+: a hash, the rows of its semaphore's slots above 0 as fields "SLOT:column".
    # - +lease_machines:{NAME}:events+: a stream, its event log; each entry's id is "ID-0", ID the event's (Integer)
    #   id from the counter below, with the event's columns as fields (nil ones left out).
    # - +lease_machines:resources+: a sorted set of every resource's name (score 0), for #leases' pages (bytewise
    #   order, as SQLite's) and for reading the whole log.
    # - +lease_machines:event_ids+: the event ids' counter.
    #
    # No key has a TTL: a row's last_issued is the token counter, and it must never go. The last two keys are global,
    # so they share no hash slot with a resource's: on Redis Cluster the COMMIT script would be refused (CROSSSLOT).
    # Cluster support needs ids per resource (events of every resource merged by [at, resource, id]) and the index
    # written by a ZADD of its own before the commit (then an index entry may name a resource without a row, which
    # #leases already skips); it is not done.
    #
    # == Durability
    #
    # What the server promises is read once on connect (CONFIG GET, INFO replication) as #durability: a tier,
    # +:memory+ (no AOF: a restart loses every grant since the last snapshot; without a fence, tokens are issued
    # again),
    # +:aof_no+, +:aof_everysec+ or +:aof_always+ (appendfsync always: on disk before it is answered), and the
    # replicas. A maxmemory-policy other than noeviction is refused (an evicted row would lose its holder),
    # and so is a replica. +strict:+ refuses a tier below the one named; +wait:+ N follows every commit with WAIT N in
    # its round trip, and raises StoreError when fewer replicas acknowledged it within +wait_timeout+ (the decision
    # committed on the primary then, and may be lost in a failover).
    #
    # == The event log
    #
    # One event per decision, in the decision's COMMIT; each resource's stream keeps exactly its newest +keep_events+
    # events (MAXLEN =, not ~; all its slots' together: per resource, where SQL keeps them per lease), and each COMMIT
    # deletes its stream's
    # two oldest events when older than +events_max_age+ before its own (per resource, where SQL prunes the whole
    # log's two oldest). #events of every resource, #changes (the audit) and #event_counts read every resource's
    # stream: their cost grows with the store, as SQL's scans do. Fenced writes log their events in the fence's
    # database, with the write (see below).
    #
    # == The fence
    #
    # Redis keeps no fence: +fence:+ names the application's SQL database (an SQLite path or SQLite3::Database, a
    # postgresql:// URL or PG::Connection), whose store tables (the SQL adapters' own) keep each resource's mark and
    # the fenced writes' events. A fenced write opens the SQL transaction (on PostgreSQL, with a transaction-scoped
    # advisory lock per resource, since no SQL row of the lease is there to lock), reads the mark, then reads the
    # lease's row from Redis, and the core checks the token against both as for every store.
    #
    # == Token epochs: what a Redis that lost its rows can no longer do
    #
    # A Redis that lost rows (a restart without persistence, a crash of :aof_everysec, a failover to a replica that
    # lagged, a failback that replaced the primary's data with the replica's) would count its tokens again from what
    # it kept, and issue a token that a holder from before the loss still carries: both would pass the fence. With a
    # fence, every token is issued under a token epoch E, above E * 2**EPOCH_BITS (the core's TokenEpoch): the
    # +lease_machines:token_epoch+ hash holds E and the server's history it was set in (HISTORY: the run_id of the
    # server process and its master_replid, which a restart, a promotion or a failback changes and which never come
    # back), and the fence's database (table +lease_machines_token_epochs+, EPOCHS_SCHEMA) the highest E ever set.
    # The COMMIT of a decision that issues a token checks the history: in another one, or with no epoch at all, or
    # with the fence database's epoch above Redis's (read once per epoch a store meets), nothing is written, the
    # next epoch is committed in the fence's database and set in Redis, and the request is decided again above its
    # floor. So every token issued after a loss is above every token issued before it; a holder from before is
    # refused as stale (Fenced, reason :stale_token), never admitted beside the new one. Renewals and releases
    # check nothing more. Each restart, failover or failback raises the tokens by up to 2**EPOCH_BITS once, whether
    # it lost anything or not. A store opened without +fence:+ on the same server issues tokens above the epoch's
    # floor but never advances it: every process of an application whose writes are fenced opens its store with the
    # fence. Without +fence:+, #open_fence raises NotImplementedError, and the tokens are only as durable as
    # #durability's tier.
    class Redis < Adapter
      URL = %r{\Arediss?://}i
      PREFIX = "lease_machines"
      INDEX = "#{PREFIX}:resources".freeze
      EVENT_IDS = "#{PREFIX}:event_ids".freeze
      # The hash of the token epoch in force (fields epoch, and history: the server's history it was set in, HISTORY).
      EPOCH = "#{PREFIX}:token_epoch".freeze
      # Tokens issued under epoch E are above E * 2**EPOCH_BITS and below (E + 1) * 2**EPOCH_BITS (the core's
      # TokenEpoch).
      EPOCH_BITS = LeaseMachines::TOKEN_EPOCH_BITS
      # The fence database's table of the last token epoch: one row, durable before Redis is told of it.
      EPOCHS_SCHEMA = "CREATE TABLE IF NOT EXISTS lease_machines_token_epochs " \
                      "(id INTEGER PRIMARY KEY CHECK (id = 1), epoch BIGINT NOT NULL CHECK (epoch >= 0))"
      # The tiers of #durability, weakest first.
      TIERS = %i[memory aof_no aof_everysec aof_always].freeze
      # How long a request retries its compare-and-set on a resource that keeps changing, Float seconds.
      DEFAULT_BUSY_TIMEOUT = 5.0
      # How long WAIT waits for the replicas of +wait:+, Float seconds.
      DEFAULT_WAIT_TIMEOUT = 1.0
      # A client the store opens gives up on a round trip after this long, Float seconds (connect, read, write).
      ANSWER_TIMEOUT = 5.0
      private_constant :URL, :PREFIX, :INDEX, :EVENT_IDS, :EPOCH

      # What the server promises of a committed decision, read when the store opened: +tier+ (one of TIERS),
      # +replicas+ (how many were connected), +wait+ (how many each commit waits for; 0: none) and +promise+, the
      # tier and the replication in one line.
      Durability = Data.define(:tier, :replicas, :wait, :promise)

      def self.adapter_name = :redis

      # Store.new's +strict:+, +wait:+, +wait_timeout:+ and +fence:+ (see #initialize).
      def self.options = %i[strict wait wait_timeout fence]

      # What a fenced write joined to an application's transaction holds until it ends: nothing in Redis.
      def self.fence_holds = nil

      # What this store's drivers raise (Redis's, and the fence's SQL driver's); Store turns it into StoreError.
      def self.errors = [*(defined?(::RedisClient::Error) ? [::RedisClient::Error] : []), *SQLite.errors,
                         *PostgreSQL.errors]

      # The driver's message on one line; redis-client names the server without its password.
      def self.message(error)
        return PostgreSQL.message(error) if defined?(::PG::Error) && ::PG::Error === error

        error.message.strip.gsub(/\s*\n\s*/, "; ")
      end

      # Whether +database+ is a Redis URL or an open RedisClient (or RedisClient::Pooled).
      def self.accepts?(database)
        return URL.match?(database) if String === database

        defined?(::RedisClient) ? [::RedisClient, ::RedisClient::Pooled].any? { _1 === database } : false
      end

      # What names +database+ in a message: scheme, host, port and database, never the user or password.
      def self.describe(database)
        return database.config.server_url unless String === database

        require "uri"
        uri = URI.parse(database)
        db = uri.path.to_s.delete_prefix("/")
        "#{uri.scheme}://#{uri.host}:#{uri.port || 6379}#{db.empty? || db == "0" ? "" : "/#{db}"}"
      rescue URI::Error
        "a Redis server (an unreadable URL)"
      end

      # Loads the redis-client gem, or raises LoadError saying to add it.
      def self.load_client(feature = "redis-client", database = nil)
        require feature
      rescue LoadError
        raise LoadError, "the Redis lease store needs the redis-client gem (add it to your Gemfile)" \
                         "#{database.nil? ? "" : ", for #{describe(database)}"}"
      end

      # +name+ as it stands in keys, inside the braces of its hash tag: "%", "{" and "}" percent-encoded.
      def self.tag(name) = name.gsub(/[%{}]/) { format("%%%02X", _1.ord) }

      # The key of the resource named +name+'s +part+ (lease, slots, events).
      def self.key(name, part) = "#{PREFIX}:{#{tag(name)}}:#{part}"

      # The RedisClient, or the fence's SQL connection when there is one (the application's tables are there: the
      # block of Store#fenced gets it).
      def connection = @fence ? @fence.connection : @client

      # The RedisClient.
      attr_reader :client

      # What names the store in messages: the server (never a password), and the fence's database.
      attr_reader :name

      # What the server promised when the store opened (Durability).
      attr_reader :durability

      # Connects to +database+ (a redis:// or rediss:// URL) or takes an open RedisClient, reads what the server
      # promises (#durability) and refuses a server whose maxmemory-policy is not noeviction, a replica, a tier below
      # +strict+ (one of TIERS, nil: any) and fewer connected replicas than +wait+ (an Integer, 0 or nil: none;
      # +wait_timeout+ Float seconds). +busy_timeout+ is how long a request retries a compare-and-set that found the
      # resource changed (Float seconds, nil: 5). +fence+: the SQL database of Store#fenced (see the class), whose
      # tables are created or upgraded unless +migrate+ is false (Redis itself has no schema). Raises
      # LoadError without the redis-client gem, TypeError or ArgumentError for a bad argument, RedisClient::Error
      # when the server cannot be reached, StoreError for a server refused or a fence that cannot be opened.
      def initialize(database, busy_timeout:, migrate: true, strict: nil, wait: nil, wait_timeout: DEFAULT_WAIT_TIMEOUT,
                     fence: nil)
        self.class.load_client("redis-client", database)
        options!(strict, wait, wait_timeout, fence)
        @busy_timeout = busy_timeout.nil? ? DEFAULT_BUSY_TIMEOUT : SQLite.busy_timeout_ms(busy_timeout) / 1000.0
        @wait = wait || 0
        @wait_ms = [(wait_timeout * 1000).round, 1].max
        @client = String === database ? connect(database) : database
        @name = self.class.describe(database)
        begin
          @durability = inspect_server(strict)
          @fence = open_fence_database(fence, busy_timeout, migrate) if fence
        rescue StandardError
          @client.close if String === database
          raise
        end
        @name = "#{@name} (its fence: #{@fence.name})" if @fence
        @commit_sha = Digest::SHA1.hexdigest(COMMIT)
        @known = {}
        @clock = nil
        @claim_us = CLAIM_US # how long this store's claims hold off others' refusals (a test lengthens it)
        @closed = false
      end

      def close
        @closed = true
        @client.close
        @fence&.close
      end

      def closed? = @closed

      # The fence's connection is checked (a PostgreSQL one the store opened is reconnected); Redis's client
      # reconnects on its own at the next command.
      def check! = @fence&.check!

      # Whether the fence's connection is inside a transaction (Redis has none between requests).
      def in_transaction? = @fence ? @fence.in_transaction? : false

      # +name+, or the fence's ArgumentError for a name its database cannot hold (PostgreSQL: a NUL byte), which no
      # fenced write could then keep. Redis keys hold any bytes: without a fence, every name the extension admits.
      def check_name!(name) = @fence ? @fence.check_name!(name) : name

      # How much of each resource's stream is kept: +per_lease+ events (of the resource, all its slots together),
      # none older than +max_age+ Float seconds before the newest; the fence's log keeps the same.
      def retain_events(per_lease:, max_age:)
        @keep_events = per_lease
        @events_max_age = max_age
        @fence&.retain_events(per_lease: per_lease, max_age: max_age)
      end

      # The resource's row and the server's clock. Returns [row, now or nil, the token epoch (an Integer; nil: none
      # set)]; the stamp is kept for the commit. The core decides on the row raised into the epoch
      # (LeaseMachines::Store's native call), so that it issues the epoch's tokens.
      #
      # No round trip when this store knows the resource: as a refused commit's answer found it (the row, stamp,
      # epoch and TIME the script read at one instant, as #read reads them), or as its own last commit left it. Then
      # the row is that one, checked by the commit's stamp; the clock is the answer's TIME, or else the server's TIME
      # as this store last read it carried forward by this process's monotonic clock, which the commit checks against
      # TIME (no later, at most CARRIED_CLOCK_US before). One round trip (#read) otherwise.
      def open_request(resource, clock: false)
        known = remembered(resource)
        return opened_known(resource, known, clock) { _1 } if known && (!clock || @clock)

        epoch, values = read([self.class.key(resource, "lease")], [*COLUMNS, "stamp"])
        row = row_of(values.first(COLUMNS.size))
        number = request(resource, values.last, epoch, row)
        [row, clock ? clock_seconds : nil, number]
      end

      # As #open_request, for a semaphore (and a plain acquire, which is decided as one with limit 1): rows[i] is slot
      # i's columns (nil: no row). No round trip where this store knows the resource has no slot rows (a read of its
      # slots found none, and the stamp, which moves with any slot's write, checks that at the commit); one otherwise.
      def open_slots(resource, clock: false)
        known = remembered(resource)
        return opened_known(resource, known, clock) { [_1] } if known&.last && (!clock || @clock)

        keys = [self.class.key(resource, "lease"), self.class.key(resource, "slots")]
        epoch, values, slots = read(keys, [*COLUMNS, "stamp"])
        rows = [row_of(values.first(COLUMNS.size)), *slot_rows(slots)]
        [rows, clock ? clock_seconds : nil, request(resource, values.last, epoch, rows.first, no_slots: rows.size == 1)]
      end

      def close_request(resource, row, event, issued = nil) = close_slots(resource, 0, row, event, issued)

      # One round trip (COMMIT, and WAIT when +wait:+): +row+ written into +slot+ (nil: nothing changed) with the
      # request's +event+, if the resource is still as #open_slots or #open_request found it (and a carried instant
      # still near the server's clock); CONFLICT otherwise (nothing written; the answer's resource remembered for
      # the next open). A connection lost on the way is tried once more (#commit); a timeout raises StoreError saying
      # whether it committed is unknown; a WAIT that fewer replicas acknowledged raises StoreError saying it
      # committed on the primary.
      #
      # With a fence, a decision that +issued+ a token (nil: none) commits only under the token epoch it read, set in
      # the history of the server it commits on (HISTORY); when the epoch is missing, was set in another history
      # (Redis restarted, failed over or failed back since), or is below the fence database's, the epoch is advanced
      # first (#advance_epoch) and the request answers CONFLICT, to be decided again above the new epoch's floor. An
      # epoch this store remembered from its own commit is read first: the request answers CONFLICT, and the next
      # open reads.
      def close_slots(resource, slot, row, event, issued = nil)
        opened, stamp, epoch, at, read, fresh, no_slots = @request
        @request = nil
        raise StoreError, "#{@name}: a request's end without its start (#{resource.inspect})" unless opened == resource

        issues = @fence && !issued.nil?
        if issues && (epoch.nil? || behind_fence?(epoch))
          return fresh ? advance_epoch(resource, epoch) : conflict(resource) # an epoch remembered: read it first
        end

        next_stamp = SecureRandom.hex(8)
        lease = self.class.key(resource, "lease")
        keys = [lease, slot.zero? ? lease : self.class.key(resource, "slots"), self.class.key(resource, "events"),
                EVENT_IDS, INDEX, EPOCH]
        args = [stamp.to_s, next_stamp, resource, @keep_events.to_s, text(event[1] - @events_max_age),
                issues ? epoch || "-" : "", at.to_s, CARRIED_CLOCK_US, *row_words(slot, row),
                event_words(slot, event), event[0] == "refused" ? "" : "1", @claim_us, claimant]
        reply, acknowledged = commit(keys, args)
        return advance_epoch(resource, epoch) if reply.first == "epoch"

        clock_read(reply[-2], reply[-1]) if reply.size > 2
        unless Integer === reply.first # moved: decided again on the resource as the reply has it
          remember(resource, row_of(reply[2, COLUMNS.size]), reply[1], reply[-3], @clock.first) if slot.zero?
          return conflict(resource)
        end

        remember(resource, row || read, next_stamp, epoch, no_slots: no_slots) if slot.zero?
        @deadline = nil
        return if acknowledged.nil? || acknowledged >= @wait

        replicas = if acknowledged.negative?
                     "its replicas' acknowledgement is not known (the connection broke before WAIT's answer)"
                   else
                     "only #{acknowledged} of #{@wait} replicas acknowledged it within #{@wait_ms} ms (WAIT)"
                   end
        raise StoreError, "#{@name}: the decision on #{resource.inspect} committed on the primary, but #{replicas}: " \
                          "a failover now could lose it and issue its tokens again; the next request decides on " \
                          "what the primary kept"
      end

      # A decision whose token would open token epoch +opened+ (the core's answer: the token after an epoch's last):
      # with a fence, that epoch or a later one (#advance_epoch), and CONFLICT to decide again in it; StoreError without
      # one (only a store with the fence moves the epoch).
      def next_epoch(resource, opened)
        request, _stamp, epoch, _at, _read, fresh = @request
        @request = nil
        raise StoreError, "#{@name}: a request's end without its start (#{resource.inspect})" unless request == resource
        unless @fence
          raise StoreError, "#{@name}: #{resource.inspect}'s next token opens token epoch #{opened}; a store opened " \
                            "with its fence moves to it"
        end

        fresh ? advance_epoch(resource, epoch, at_least: opened) : conflict(resource)
      end

      # The fenced write's transaction opened in the fence's database (its mark read, under the resource's lock on
      # PostgreSQL), then the lease's row of +slot+ read from Redis with the server's clock and the token epoch.
      # Returns [row, mark, now or nil, epoch (nil: none)]: the core checks the token on the row raised into the
      # epoch, so that a holder from before a loss is refused as stale. Raises NotImplementedError without a fence.
      def open_fence(resource, savepoint:, clock: false, slot: 0)
        unless @fence
          raise NotImplementedError, "#{@name}: fenced needs a fence in your SQL database, where the protected " \
                                     "writes are: Store.new(url, fence: an SQLite path or SQLite3::Database, a " \
                                     "postgresql:// URL or a PG::Connection); Redis keeps no fence"
        end

        _, highest, = @fence.open_fence(resource, savepoint: savepoint, clock: false, slot: slot)
        highest = locked_mark(resource, slot) if PostgreSQL === @fence
        key, fields = slot.zero? ? ["lease", COLUMNS] : ["slots", COLUMNS.map { "#{slot}:#{_1}" }]
        *values, epoch, same_history, seconds, microseconds =
          fetch("EVAL", FENCE_READ, 2, self.class.key(resource, key), EPOCH, *fields)
        clock_read(seconds, microseconds)
        [row_of(values), highest, clock ? clock_seconds : nil, checked_epoch(epoch, same_history == 1)]
      end

      def close_fence(resource, token, savepoint:, event:, statements: [], slot: 0)
        @fence.close_fence(resource, token, savepoint: savepoint, event: event, statements: statements, slot: slot)
      end

      def refuse_fence(resource, savepoint:, event:, slot: 0)
        @fence.refuse_fence(resource, savepoint: savepoint, event: event, slot: slot)
      end

      def ended_inside?(error) = @fence ? @fence.ended_inside?(error) : false

      # This store's id in a claim (commit.rb): random, and another in a forked child, whose claims are its own.
      def claimant
        return @claimant if @claimant_pid == Process.pid

        @claimant_pid = Process.pid
        @claimant = SecureRandom.hex(8)
      end

      # A request that failed (busy_timeout, a lost connection, an interrupt) also forgets what refused commits'
      # answers left (a row with the TIME it was read at, kept for the request's next try): a later request decides
      # on a fresh read, never at an old instant that its commit would not check.
      def rollback_own
        @request = @deadline = nil
        @known.delete_if { |_, known| known[3] }
        @fence ? @fence.rollback_own : false
      end

      def rollback_to_savepoint(name) = @fence&.rollback_to_savepoint(name)

      # The columns of the resource's row (of +slot+ of its semaphore), or nil. One round trip.
      def read_row(resource, slot = 0)
        return row_of(fetch("HMGET", self.class.key(resource, "lease"), *COLUMNS)) if slot.zero?

        row_of(fetch("HMGET", self.class.key(resource, "slots"), *COLUMNS.map { "#{slot}:#{_1}" }))
      end

      # The fence's mark of the resource (+slot+), or nil (also without a fence).
      def read_fence(resource, slot = 0) = @fence&.read_fence(resource, slot)

      # Up to +limit+ events after id +after+ (of +resource+, or of every resource for nil), oldest first, as the SQL
      # adapters' rows. Every resource's: one XRANGE per resource, pipelined.
      def events(resource, after, limit)
        range = ->(name) { ["XRANGE", self.class.key(name, "events"), "#{after + 1}-0", "+", "COUNT", limit] }
        return entries(resource, fetch(*range.call(resource))) if resource

        streams(range) { |found| found.sort_by!(&:first).first(limit) }
      end

      # The newest +limit+ events (of +resource+, or of every resource for nil), oldest first, as #events reads them:
      # XREVRANGE, one per resource (pipelined) for nil.
      def latest_events(resource, limit)
        range = ->(name) { ["XREVRANGE", self.class.key(name, "events"), "+", "-", "COUNT", limit] }
        return entries(resource, fetch(*range.call(resource))).reverse if resource

        streams(range) { |found| found.sort_by! { -_1.first }.first(limit) }.reverse
      end

      # The accepted changes of every resource's stream, oldest first, as the extension's store audit reads them.
      def changes
        kinds = Event::CHANGES.map(&:to_s)
        every_event.select { kinds.include?(_1[3]) }.map do |id, resource, slot, kind, at, owner, token, expires_at,
                                                             revision, _reason, *replaced, _highest|
          [id, resource, slot, kind, at, owner, token, expires_at, revision, *replaced]
        end
      end

      # How many events of each kind the streams keep, as [kind, count] rows.
      def event_counts = every_event.map { _1[3] }.tally.sort

      # Up to +limit+ leases of resources named +prefix+..., after the key [+after_resource+, +after_slot+], in key
      # order (bytewise, as the index orders names), each as [resource, slot, owner, token, expires_at, last_issued,
      # observed, revision, highest]: the index read from the later of the prefix and the key's resource, and each
      # name's rows, until the page is full.
      def leases(prefix, after_resource, after_slot, limit)
        from = [prefix, after_resource].max
        found = []
        each_names(INDEX, from.empty? ? "-" : "[#{from}", prefix_stop(prefix)) do |names|
          rows_of(names).each do |name, rows|
            rows.each_with_index do |row, slot|
              next if row.nil? || ([name, slot] <=> [after_resource, after_slot]) <= 0

              found << [name, slot, *row, read_fence(name, slot)]
              return found if found.size == limit
            end
          end
        end
        found
      end

      # How many leases (rows) the resources named +prefix+... have: every such name's rows read.
      def lease_count(prefix)
        count = 0
        each_names(INDEX, prefix.empty? ? "-" : "[#{prefix}", prefix_stop(prefix)) do |names|
          rows_of(names).each { |_, rows| count += rows.count { !_1.nil? } }
        end
        count
      end

      # The server's clock (TIME), Float seconds since the Unix epoch.
      def server_now = clock_read(*fetch("TIME")) && clock_seconds

      private

      def options!(strict, wait, wait_timeout, fence)
        unless strict.nil? || TIERS.include?(strict)
          raise ArgumentError, "strict must be one of #{TIERS.map(&:inspect).join(", ")} or nil, " \
                               "got #{LeaseMachines.shown(strict)}"
        end
        unless wait.nil? || Integer === wait
          raise TypeError, "wait must be an Integer, got #{LeaseMachines.shown(wait)}"
        end
        raise ArgumentError, "wait must be 0 or more replicas, got #{wait}" if wait&.negative?
        unless Integer === wait_timeout || Float === wait_timeout
          raise TypeError, "wait_timeout must be Float seconds, got #{LeaseMachines.shown(wait_timeout)}"
        end
        unless wait_timeout.positive? && wait_timeout <= SQLite::MAX_BUSY_TIMEOUT
          raise ArgumentError, "wait_timeout must be more than 0 and at most #{SQLite::MAX_BUSY_TIMEOUT} seconds, " \
                               "got #{wait_timeout}"
        end
        return unless Redis.accepts?(fence)

        raise ArgumentError, "fence must be an SQL database (the application's), not Redis"
      end
    end
  end
end
