# frozen_string_literal: true

require "digest"
require "securerandom"

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
    # the decisions were made on. The script compares and copies Strings; it knows no rule.
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
    #   last_issued, observed, revision (absent when nil: a vacant lease), and +stamp+.
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
      # A row's columns, in the order they cross to the extension.
      COLUMNS = %w[owner token expires_at last_issued observed revision].freeze
      FLOAT_COLUMNS = %w[expires_at observed].freeze
      EVENT_FIELDS = %w[kind at owner token expires_at revision reason replaced_owner replaced_token
                        replaced_expires_at].freeze
      EVENT_INTEGERS = %w[slot owner token revision replaced_owner replaced_token highest].freeze
      EVENT_FLOATS = %w[at expires_at replaced_expires_at].freeze
      # The tiers of #durability, weakest first.
      TIERS = %i[memory aof_no aof_everysec aof_always].freeze
      # What each tier promises, for #durability's promise.
      TIER_PROMISES = {
        memory: "no AOF: a restart loses every grant since the last snapshot",
        aof_no: "appendfsync no: a crash of Redis loses nothing it answered, a crash of the machine what the OS " \
                "had not written yet (up to about 30 s)",
        aof_everysec: "appendfsync everysec: a crash of the machine can lose the last second or two of grants",
        aof_always: "appendfsync always: every decision is on disk before it is answered"
      }.freeze
      # How long a request retries its compare-and-set on a resource that keeps changing, Float seconds.
      DEFAULT_BUSY_TIMEOUT = 5.0
      # How long WAIT waits for the replicas of +wait:+, Float seconds.
      DEFAULT_WAIT_TIMEOUT = 1.0
      # A client the store opens gives up on a round trip after this long, Float seconds (connect, read, write).
      ANSWER_TIMEOUT = 5.0
      # How many names one read of the index takes.
      BATCH = 500
      # The classid of the advisory lock a fence on PostgreSQL takes per resource (with hashtext(resource)).
      FENCE_LOCK = 731_120_172
      # How long before the commit's TIME a decision's instant carried from an earlier reading of it may be, Integer
      # microseconds (as the commit script takes it): longer, and the commit answers the resource as it is now.
      CARRIED_CLOCK_US = "2000"
      # How many resources a store remembers as its last commit of each left them (see #open_request).
      KNOWN = 1024
      # A stamp this store writes (16 hex digits, random: a server that lost its rows never repeats one), or an
      # earlier version's decimal one.
      STAMP = /\A(?:\h{16}|\d+)\z/

      # Lua: the server's history as the token epoch names it, "RUN_ID:MASTER_REPLID" (nil when INFO names either not):
      # run_id changes with every start of the server process, master_replid with every promotion (REPLICAOF NO ONE,
      # a failover) and every time the server takes another primary's data. Neither comes back, so a server that can
      # have lost data since the epoch was set (restarted, failed over, failed back) names another history.
      HISTORY = <<~LUA
        local function history()
          local run_id = string.match(redis.call('INFO', 'server'), 'run_id:(%w+)')
          local replid = string.match(redis.call('INFO', 'replication'), 'master_replid:(%w+)')
          if run_id and replid then return run_id .. ':' .. replid end
        end
      LUA
      # Applies a decision made on the rows read, if the resource's stamp (KEYS[1]'s) is still ARGV[1], if the
      # decision's instant ARGV[7] (Integer microseconds of the server's clock; "": the caller's clock, not checked) is
      # no later than TIME and at most ARGV[8] microseconds before it, and, for a decision that issues a token
      # (ARGV[6] not empty), if the token epoch KEYS[6] is still ARGV[6] ("-": none): the row's fields ARGV[9] deleted
      # from KEYS[2] and its pairs ARGV[10] set there, the stamp set to ARGV[2] (also for a refusal), the event's
      # pairs ARGV[11] added to the stream KEYS[3] as the next id of KEYS[4] (ARGV[9] to ARGV[11] are words
      # separated by spaces: names, numbers, kinds and reasons, never a space in one), keeping its newest ARGV[4] and
      # deleting its two oldest if their at is below ARGV[5], and the name ARGV[3] in the index KEYS[5]. Answers {the
      # event's id, TIME};
      # when a check failed, {"moved", the stamp, the row of KEYS[1] (COLUMNS), the epoch, TIME}, the resource as it
      # is now, to be decided again; {"epoch"} when the epoch read is still there but was set in another history of
      # the server (HISTORY: another process, or since a promotion). Nothing is written but for the first answer.
      # Every key's type is read before the first write, so a foreign key fails the script before it wrote anything.
      COMMIT = <<~LUA
        #{HISTORY}
        local stamp = redis.call('HGET', KEYS[1], 'stamp') or ''
        local time = redis.call('TIME')
        local moved = stamp ~= ARGV[1]
        if not moved and ARGV[7] ~= '' then
          local now = tonumber(time[1]) * 1000000 + tonumber(time[2])
          local at = tonumber(ARGV[7])
          moved = at > now or at < now - tonumber(ARGV[8])
        end
        if not moved and ARGV[6] ~= '' then
          local epoch = redis.call('HMGET', KEYS[6], 'epoch', 'history')
          if (epoch[1] or '-') ~= ARGV[6] then
            moved = true
          elseif epoch[2] == false or epoch[2] ~= history() then
            return {'epoch'}
          end
        end
        if moved then
          local row = redis.call('HMGET', KEYS[1], #{COLUMNS.map { "'#{_1}'" }.join(", ")})
          return {'moved', stamp, #{Array.new(COLUMNS.size) { "row[#{_1 + 1}]" }.join(", ")},
                  redis.call('HGET', KEYS[6], 'epoch'), time[1], time[2]}
        end
        redis.call('HLEN', KEYS[2])
        redis.call('XLEN', KEYS[3])
        redis.call('ZCARD', KEYS[5])
        local id = redis.call('INCR', KEYS[4])
        local function words(text)
          local list = {}
          for word in string.gmatch(text, '%S+') do list[#list + 1] = word end
          return list
        end
        local deletes, sets = words(ARGV[9]), words(ARGV[10])
        if #deletes > 0 then redis.call('HDEL', KEYS[2], unpack(deletes)) end
        if #sets > 0 then redis.call('HSET', KEYS[2], unpack(sets)) end
        redis.call('HSET', KEYS[1], 'stamp', ARGV[2])
        redis.call('XADD', KEYS[3], 'MAXLEN', ARGV[4], string.format('%d-0', id), unpack(words(ARGV[11])))
        local cutoff = tonumber(ARGV[5])
        for _, entry in ipairs(redis.call('XRANGE', KEYS[3], '-', '+', 'COUNT', 2)) do
          local fields = entry[2]
          for i = 1, #fields, 2 do
            if fields[i] == 'at' then
              local at_entry = tonumber(fields[i + 1])
              if at_entry and at_entry < cutoff then redis.call('XDEL', KEYS[3], entry[1]) end
              break
            end
          end
        end
        redis.call('ZADD', KEYS[5], 0, ARGV[3])
        return {id, time[1], time[2]}
      LUA
      # Reads the fields ARGV of the hash KEYS[1] with the token epoch KEYS[2] and TIME, at one instant: {the values,
      # the epoch (false: none), 1 if it was set in the server's history as it is now (HISTORY) else 0, TIME}.
      FENCE_READ = <<~LUA
        #{HISTORY}
        local epoch = redis.call('HMGET', KEYS[2], 'epoch', 'history')
        local time = redis.call('TIME')
        local values = redis.call('HMGET', KEYS[1], unpack(ARGV))
        values[#values + 1] = epoch[1]
        values[#values + 1] = (epoch[2] and epoch[2] == history()) and 1 or 0
        values[#values + 1] = time[1]
        values[#values + 1] = time[2]
        return values
      LUA
      # Sets the token epoch KEYS[1] to ARGV[1] in the server's history (HISTORY) as it is now, unless it is already as
      # high; answers {"history"} when INFO names no run_id or master_replid.
      SET_EPOCH = <<~LUA
        #{HISTORY}
        local now = history()
        if not now then return {'history'} end
        if tonumber(redis.call('HGET', KEYS[1], 'epoch') or '-1') >= tonumber(ARGV[1]) then return 0 end
        redis.call('HSET', KEYS[1], 'epoch', ARGV[1], 'history', now)
        redis.call('HDEL', KEYS[1], 'run_id')
        return 1
      LUA
      private_constant :URL, :PREFIX, :INDEX, :EVENT_IDS, :COLUMNS, :FLOAT_COLUMNS, :EVENT_FIELDS, :EVENT_INTEGERS,
                       :EVENT_FLOATS, :BATCH, :FENCE_LOCK, :HISTORY, :COMMIT, :FENCE_READ, :TIER_PROMISES, :EPOCH,
                       :SET_EPOCH,
                       :CARRIED_CLOCK_US, :KNOWN, :STAMP

      # What the server promises of a committed decision, read when the store opened: +tier+ (one of TIERS),
      # +replicas+ (how many were connected), +wait+ (how many each commit waits for; 0: none) and +promise+, the
      # tier and the replication in one line.
      Durability = Data.define(:tier, :replicas, :wait, :promise)

      def self.adapter_name = :redis

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
                event_words(slot, event)]
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

      # The store's own state is never shown (the client's configuration holds the password).
      def inspect = "#<#{self.class.name} #{@name}>"

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

      # A client to +url+, refused before it connects when the URL cannot be read (whose message would quote it).
      def connect(url)
        require "uri"
        URI.parse(url)
        RedisClient.config(url: url, connect_timeout: ANSWER_TIMEOUT, read_timeout: ANSWER_TIMEOUT,
                           write_timeout: ANSWER_TIMEOUT).new_client
      rescue URI::Error, ArgumentError
        raise ArgumentError, "database is not a readable redis:// URL (#{self.class.describe(url)})", cause: nil
      end

      # Durability, and the refusals: a policy that evicts, a replica, a tier below +strict+, too few replicas.
      def inspect_server(strict)
        *settings, replication = @client.pipelined do |pipeline|
          %w[maxmemory-policy appendonly appendfsync save].each { pipeline.call("CONFIG", "GET", _1) } # one each: 6.2
          pipeline.call("INFO", "replication")
        end
        config = settings.flat_map { pairs(_1) }.to_h
        policy = config["maxmemory-policy"]
        unless policy == "noeviction"
          refuse("its maxmemory-policy is #{policy}: Redis may evict a lease's row, and its tokens would be issued " \
                 "again; set maxmemory-policy noeviction")
        end
        role = replication[/^role:(\w+)/, 1]
        refuse("it is a replica (role:#{role}), which takes no writes; connect to the primary") unless role == "master"
        replicas = replication[/^connected_slaves:(\d+)/, 1].to_i
        tier = tier_of(config)
        if strict && TIERS.index(tier) < TIERS.index(strict)
          refuse("it promises #{tier.inspect} (#{TIER_PROMISES.fetch(tier)}), below strict: #{strict.inspect}")
        end
        refuse("wait: #{@wait}, but #{replicas} replicas are connected") if @wait > replicas
        Durability.new(tier: tier, replicas: replicas, wait: @wait, promise: promise(tier, config, replicas))
      end

      def tier_of(config)
        return :memory unless config["appendonly"] == "yes"

        { "always" => :aof_always, "everysec" => :aof_everysec }.fetch(config["appendfsync"], :aof_no)
      end

      def promise(tier, config, replicas)
        text = TIER_PROMISES.fetch(tier)
        snapshots = !config["save"].to_s.empty?
        text = text.sub("since the last snapshot", "(no snapshots either)") if tier == :memory && !snapshots
        if @wait.positive?
          "#{text}; each commit reached #{@wait} of its #{replicas} replicas (WAIT) before it was answered"
        elsif replicas.positive?
          "#{text}; a failover to one of its #{replicas} replicas can lose what it had not received (no wait:)"
        else
          text
        end
      end

      def refuse(why) = raise(StoreError, "#{@name} cannot keep leases: #{why}")

      # The SQL adapter of the fence's database, its store tables (and the token epochs' table) created where missing.
      def open_fence_database(fence, busy_timeout, migrate)
        adapter = PostgreSQL.accepts?(fence) ? PostgreSQL : SQLite
        opened = adapter.new(fence, busy_timeout: busy_timeout, migrate: migrate)
        begin
          create_epochs(opened.connection, PostgreSQL === opened) if migrate
        rescue *adapter.errors
          opened.close
          raise
        end
        opened
      rescue *adapter.errors => e
        raise StoreError, "#{@name}: cannot open the fence at #{adapter.describe(fence)}: #{adapter.message(e)}"
      end

      # The token epochs' table created in the fence's database where it is missing. On PostgreSQL only then, in a
      # transaction of its own (PostgreSQL.create_tables), unless the connection is in the application's transaction
      # (a fence on an ActiveRecord connection): then the table is created in it.
      def create_epochs(connection, postgresql)
        return connection.execute(EPOCHS_SCHEMA) unless postgresql
        return if connection.exec("SELECT to_regclass('lease_machines_token_epochs')").getvalue(0, 0)
        return connection.exec(EPOCHS_SCHEMA) unless connection.transaction_status == ::PG::PQTRANS_IDLE

        PostgreSQL.create_tables(connection, EPOCHS_SCHEMA)
      end

      # The fence's mark read again once the resource's advisory lock is held (PostgreSQL): two fenced writes of a
      # resource are one after the other, so a stale token is refused by the mark a newer one left.
      def locked_mark(resource, slot)
        @fence.connection.exec_params("SELECT pg_advisory_xact_lock($1, hashtext($2))", [FENCE_LOCK, resource])
        @fence.read_fence(resource, slot)
      end

      # One round trip (MULTI ... EXEC): [the token epoch (a String; nil when there is none), the +fields+ of the hash
      # keys[0], every field of keys[1] when given], read at one instant with the server's TIME (kept: #clock_read).
      def read(keys, fields)
        replies = fetch(transaction: true) do |transaction|
          transaction.call("HMGET", keys[0], *fields)
          transaction.call("HGETALL", keys[1]) if keys[1]
          transaction.call("HGET", EPOCH, "epoch")
          transaction.call("TIME")
        end
        clock_read(*replies.pop)
        [replies.pop, *replies]
      end

      # The resource as this store's last commit of it left it, or as its last refused commit found it: [row (nil:
      # none), stamp, epoch, the server's TIME they were read at (Integer microseconds; nil: written by this store,
      # not read), true when it is known to have no slot rows], taken (the request's commit leaves the next). Nil when
      # this store does not know it.
      def remembered(resource) = @known.delete(resource)

      # Keeps +row+, +stamp+ and +epoch+ as the resource's state, for the next request's open, with the +time+ they
      # were read at (a refused commit's answer; nil: this store's own commit). The oldest known resource is forgotten
      # beyond KNOWN.
      def remember(resource, row, stamp, epoch, time = nil, no_slots: nil)
        @known[resource] = [row, stamp.nil? || stamp.empty? ? nil : stamp, epoch, time, no_slots].freeze
        @known.shift if @known.size > KNOWN
      end

      # A reading of the server's TIME ([seconds, microseconds], Strings) taken now, for #carried_clock.
      def clock_read(seconds, microseconds)
        @clock = [Integer(seconds, 10) * 1_000_000 + Integer(microseconds, 10),
                  Process.clock_gettime(Process::CLOCK_MONOTONIC, :microsecond)]
      end

      # The last reading of the server's clock (#clock_read), Float seconds since the Unix epoch.
      def clock_seconds = @clock.first / 1_000_000.0

      # The server's clock now, as Integer microseconds: its last reading, plus how long this process's monotonic clock
      # says has passed since. Never later than the server's clock but by the two clocks' drift (which the commit's
      # check refuses); earlier by at most a reply's way back, until the commit's check.
      def carried_clock
        server, local = @clock
        server + (Process.clock_gettime(Process::CLOCK_MONOTONIC, :microsecond) - local)
      end

      # The resource as this store remembers it (#remembered's +known+), opened without a round trip: the block makes
      # the rows of slot 0's +row+. Its clock is a refused commit's TIME, else the carried one (#carried_clock).
      def opened_known(resource, known, clock)
        row, stamp, epoch, time, no_slots = known
        carried = carried_clock if clock && time.nil?
        number = request(resource, stamp, epoch, row, carried, fresh: !time.nil?, no_slots: no_slots)
        [yield(row), clock ? (time || carried) / 1_000_000.0 : nil, number]
      end

      # The request's read kept for its close (the resource, its stamp, the epoch, the instant +at+ carried from the
      # last clock reading (Integer microseconds; nil: read, or not the server's), slot 0's +row+, whether +epoch+ was
      # read by this request, whether the resource is known to have no slot rows). Returns the epoch as an Integer
      # (nil: none).
      def request(resource, stamp, epoch, row, at = nil, fresh: true, no_slots: nil)
        unless stamp.nil? || STAMP.match?(stamp)
          raise StoreError, "corrupt lease row for #{resource.inspect} in #{@name}: stamp #{stamp.inspect}"
        end

        number = epoch_number(epoch)
        @request = [resource, stamp, epoch, at, row, fresh, no_slots]
        number
      end

      # The token epoch as Redis keeps it (a decimal String; nil: none) as an Integer, or StoreError.
      def epoch_number(epoch)
        epoch.nil? ? nil : Integer(epoch, 10)
      rescue ArgumentError
        raise StoreError, "corrupt token epoch in #{@name}: #{epoch.inspect}"
      end

      # Whether the fence's database has committed an epoch above +epoch+ (Redis's): Redis then keeps an epoch of
      # another history than the newest (a copy of its data restored, or a server that missed the last move), and the
      # next one is taken. Read once per epoch this store meets, not per commit.
      def behind_fence?(epoch)
        return false if @confirmed_epoch == epoch

        behind = (fence_epoch || -1) > epoch_number(epoch)
        @confirmed_epoch = epoch unless behind
        behind
      end

      # The token epoch a fenced write is checked in: Redis's +epoch+ when it was set in the server's history as it is
      # now (+same_history+) and no other was committed since; else the one after every epoch committed, whose floor is
      # above every token ever issued (each is issued in an epoch committed in the fence's database first), so that a
      # holder from before a loss is refused as stale before the next grant moves the epoch. A holder whose row
      # survived holds on: the core raises a row's high-water, never its lease.
      def checked_epoch(epoch, same_history)
        return epoch_number(epoch) if same_history && !behind_fence?(epoch)

        [fence_epoch || -1, epoch_number(epoch) || -1].max + 1
      end

      # The epoch the fence's database last committed, or nil.
      def fence_epoch
        sql = "SELECT epoch FROM lease_machines_token_epochs WHERE id = 1"
        connection = @fence.connection
        value = PostgreSQL === @fence ? connection.exec(sql).values.dig(0, 0) : connection.execute(sql).dig(0, 0)
        value&.then { Integer(_1) }
      end

      # The token epoch is missing, was set in another history of the server (HISTORY: Redis restarted, failed over
      # or failed back since), is below the fence database's, or has no room for the next token: the next epoch,
      # above every epoch the fence's database or the server knows, is committed in the fence's database first (never
      # inside a transaction there: Store decides nothing inside one), then set in Redis in the server's history as
      # it is then. Every token issued after it is above every token issued before it, whatever Redis lost. Returns
      # CONFLICT: the request is decided again.
      def advance_epoch(resource, seen, at_least: 0)
        epoch = next_epoch_committed([seen ? epoch_number(seen) : -1, at_least - 1].max)
        reply = fetch("EVAL", SET_EPOCH, 1, EPOCH, epoch.to_s)
        raise StoreError, "#{@name}: INFO names no run_id or master_replid, which token epochs need" if Array === reply

        conflict(resource)
      end

      # The next epoch, committed in the fence's database: 0 for the first (none there, none in Redis: +seen+ -1), else
      # one above the higher of the database's and +seen+ (Redis's).
      def next_epoch_committed(seen)
        first = seen + 1
        if PostgreSQL === @fence
          sql = "INSERT INTO lease_machines_token_epochs (id, epoch) VALUES (1, $1) ON CONFLICT (id) DO UPDATE SET " \
                "epoch = GREATEST(lease_machines_token_epochs.epoch + 1, EXCLUDED.epoch) RETURNING epoch"
          Integer(@fence.connection.exec_params(sql, [first]).getvalue(0, 0), 10)
        else
          sql = "INSERT INTO lease_machines_token_epochs (id, epoch) VALUES (1, ?) ON CONFLICT (id) DO UPDATE SET " \
                "epoch = max(lease_machines_token_epochs.epoch + 1, excluded.epoch) RETURNING epoch"
          @fence.connection.execute(sql, [first]).first.first
        end
      end

      # A round trip that writes nothing: +command+, or the block's pipeline (MULTI ... EXEC with +transaction+). Made
      # once more, on a new connection, when the connection broke (the socket of a server restarted since the last
      # request is dead, and only the next command finds out); never a COMMIT, whose first attempt may have
      # committed. A timeout is not made again.
      def fetch(*command, transaction: false, &pipeline)
        attempt = 0
        begin
          if pipeline
            transaction ? @client.multi(&pipeline) : @client.pipelined(&pipeline)
          else
            @client.call(*command)
          end
        rescue ::RedisClient::ConnectionError => e
          raise if ::RedisClient::TimeoutError === e || (attempt += 1) > 1

          retry
        end
      end

      # COMMIT (and WAIT), in one round trip. Returns [the script's answer, the replicas WAIT counted (nil: no
      # +wait:+; -1: not known)].
      #
      # A connection that broke on the way (not a timeout) is tried once more, on a new one: the socket of a server
      # restarted since this store's last command is dead, and only a command finds out. Every commit moves the
      # resource's stamp (ARGV[1]) to a new one of its own (ARGV[2]), random, so a second attempt cannot apply the
      # decision twice: it applies it where the first did not (the stamp is still the one read), finds the first's
      # stamp (it committed: the answer is the first's, whichever layer sent it again, this one or a client's own
      # reconnect_attempts), or finds the resource moved on (the server lost it, or another commit followed the
      # first), and the request is decided again on the resource as it is now. Raises StoreError, the outcome
      # unknown, on a timeout (the first attempt may still be applied) and when the second attempt fails too, for
      # whatever reason (a failover's read-only replica, a server still loading).
      def commit(keys, args)
        attempt = 0
        begin
          replies = commit_once(keys, args)
        rescue ::RedisClient::ConnectionError, ::RedisClient::CommandError => e
          raise unknown_commit(e) if attempt.positive?
          raise if ::RedisClient::CommandError === e || ::RedisClient::ReadOnlyError === e ||
                   ::RedisClient::MasterDownError === e
          raise unknown_commit(e) if ::RedisClient::TimeoutError === e

          attempt += 1
          retry
        end
        reply = replies.first
        return replies unless reply.first == "moved" && reply[1] == args[1]

        # The first attempt committed: its answer (the event's id not known, 0), with this answer's clock; a WAIT on
        # this connection may not cover the first attempt's write, so replication is not known.
        [[0, *reply.last(2)], @wait.positive? ? -1 : nil]
      end

      def commit_once(keys, args)
        replies = commit_round_trip("EVALSHA", @commit_sha, keys, args)
        if ::RedisClient::CommandError === replies.first && replies.first.message.start_with?("NOSCRIPT")
          replies = commit_round_trip("EVAL", COMMIT, keys, args)
        end
        replies.each { raise _1 if Exception === _1 }
        replies
      end

      def unknown_commit(error)
        StoreError.new("#{@name}: the connection failed while the commit was on its way " \
                       "(#{self.class.message(error)}): whether it committed is unknown; the next request reads " \
                       "what the server kept")
      end

      # [the script's answer (a CommandError returned, not raised), WAIT's answer when +wait:+]: a pipeline only with
      # WAIT.
      def commit_round_trip(command, script, keys, args)
        return [script_answer([command, script, keys.size, *keys, *args])] unless @wait.positive?

        @client.pipelined(exception: false) do |pipeline|
          pipeline.call(command, script, keys.size, *keys, *args)
          pipeline.blocking_call(@wait_ms / 1000.0 + ANSWER_TIMEOUT, "WAIT", @wait, @wait_ms)
        end
      end

      def script_answer(command)
        @client.call_v(command)
      rescue ::RedisClient::CommandError => e
        e
      end

      # The request found the resource changed since its read: CONFLICT, after a pause that grows with the
      # conflicts (jittered, at most 20 ms), or StoreError once +busy_timeout+ has run out.
      def conflict(resource)
        now = Process.clock_gettime(Process::CLOCK_MONOTONIC)
        unless @deadline
          @deadline = now + @busy_timeout
          @conflicts = 0
        end
        @conflicts += 1
        if now > @deadline
          @deadline = nil
          raise StoreError, "#{@name}: #{resource.inspect} kept changing under the request (#{@conflicts} attempts " \
                            "in #{@busy_timeout} s, busy_timeout): nothing was decided"
        end
        sleep(rand * [0.0005 * 2**[@conflicts, 6].min, 0.02].min) if @conflicts > 1
        CONFLICT
      end

      # [the names to delete, the names and values to set] of +row+ in +slot+'s fields, each as words separated by
      # spaces (both empty for nil).
      def row_words(slot, row)
        return ["", ""] if row.nil?

        prefix = slot.zero? ? "" : "#{slot}:"
        deletes = +""
        sets = +""
        COLUMNS.each_with_index do |column, i|
          value = row[i]
          value.nil? ? deletes << " " << prefix << column : sets << " " << prefix << column << " " << word(value)
        end
        [deletes, sets]
      end

      # The event's fields and values (nil ones left out), with its slot, as words separated by spaces.
      def event_words(slot, event)
        words = +"slot #{slot}"
        EVENT_FIELDS.each_with_index do |field, i|
          value = event[i]
          words << " " << field << " " << word(value) unless value.nil?
        end
        words
      end

      # A column or event field as a word of #row_words or #event_words: #text, and never with white space in it
      # (Lua's %s: what the script splits on).
      def word(value)
        return text(value) unless String === value && value.match?(/[ \t\n\v\f\r]/)

        raise TypeError, "the extension wrote #{LeaseMachines.shown(value)} into a row"
      end

      # A column as Redis stores it: Integers in decimal, Floats as Ruby writes them (which read back exactly).
      def text(value)
        case value
        when Integer, Float then value.to_s
        when String then value
        else raise TypeError, "the extension wrote #{LeaseMachines.shown(value)} into a row"
        end
      end

      # A row's six stored fields as the extension reads them: nil for a row that has none; a field that does not
      # read as its type is passed on as it is, for the extension to refuse (StoreError).
      def row_of(values)
        return nil if values.all?(&:nil?)

        COLUMNS.zip(values).map do |column, value|
          next value if value.nil?

          read = FLOAT_COLUMNS.include?(column) ? Float(value, exception: false) : Integer(value, 10, exception: false)
          read.nil? ? value : read
        end
      end

      # The slot rows above 0 from a slots hash's fields ("SLOT:column"), as rows[slot - 1].
      def slot_rows(fields)
        columns = Hash.new { |hash, slot| hash[slot] = Array.new(COLUMNS.size) }
        pairs(fields).each do |field, value|
          slot, column = field.split(":", 2)
          index = COLUMNS.index(column)
          slot = Integer(slot, 10, exception: false)
          raise StoreError, "corrupt slots hash in #{@name}: field #{field.inspect}" unless index && slot&.positive?

          columns[slot][index] = value
        end
        rows = Array.new(columns.keys.max.to_i)
        columns.each { |slot, values| rows[slot - 1] = row_of(values) }
        rows
      end

      # [[name, rows]] of +names+ (rows[i]: slot i's, nil where there is none), one pipelined round trip.
      def rows_of(names)
        replies = fetch do |pipeline|
          names.each do |name|
            pipeline.call("HMGET", self.class.key(name, "lease"), *COLUMNS)
            pipeline.call("HGETALL", self.class.key(name, "slots"))
          end
        end
        names.each_with_index.map { |name, i| [name, [row_of(replies[2 * i]), *slot_rows(replies[2 * i + 1])]] }
      end

      # Yields the names of the sorted set +key+ from +min+ to +max+ (ZRANGEBYLEX bounds), BATCH at a time.
      def each_names(key, min, max)
        loop do
          names = fetch("ZRANGEBYLEX", key, min, max, "LIMIT", 0, BATCH)
          break if names.empty?

          yield names
          break if names.size < BATCH

          min = "(#{names.last}"
        end
      end

      # The ZRANGEBYLEX bound after every name that starts with +prefix+ ("+" when none is).
      def prefix_stop(prefix)
        stop = prefix.empty? ? nil : SQLite.prefix_end(prefix)
        stop ? "(#{stop}" : "+"
      end

      # Every event of every resource's stream, oldest first.
      def every_event
        streams(->(name) { ["XRANGE", self.class.key(name, "events"), "-", "+"] }, &:itself).sort_by!(&:first)
      end

      # The events that +range+ (the command for a name) reads from every resource's stream, pipelined BATCH
      # resources at a time; the block trims what was found after each batch.
      def streams(range)
        found = []
        each_names(INDEX, "-", "+") do |names|
          replies = fetch { |pipeline| names.each { pipeline.call(*range.call(_1)) } }
          names.zip(replies) { |name, reply| found.concat(entries(name, reply)) }
          found = yield(found)
        end
        found
      end

      # A stream's entries as event rows: [id, resource, slot, kind, at, owner, token, expires_at, revision, reason,
      # replaced_owner, replaced_token, replaced_expires_at, highest].
      def entries(resource, reply)
        reply.map do |id, fields|
          event = pairs(fields).to_h do |field, value|
            number = if EVENT_INTEGERS.include?(field)
                       Integer(value, 10, exception: false)
                     elsif EVENT_FLOATS.include?(field)
                       Float(value, exception: false)
                     else
                       value
                     end
            [field, number.nil? ? value : number]
          end
          [Integer(id.split("-").first, 10), resource, event.fetch("slot", 0),
           *EVENT_FIELDS.map { event[_1] }, nil]
        end
      end

      # A hash's reply as [field, value] pairs: RESP3 answers a Hash, RESP2 (and a script) a flat Array.
      def pairs(reply)
        return [] if reply.nil?

        Hash === reply ? reply.to_a : reply.each_slice(2).to_a
      end
    end
  end
end
