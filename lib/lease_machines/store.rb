# frozen_string_literal: true

require "lease_machines"
require_relative "store/errors"
require_relative "store/claim"
require_relative "store/event"
require_relative "store/resource_state"
require_relative "store/adapter"
require_relative "store/sqlite"
require_relative "store/postgresql"
require_relative "store/mysql"
require_relative "store/redis"

module LeaseMachines
  # A durable authority over a database, keeping the core's persistence contract, on SQLite (one machine),
  # PostgreSQL or MySQL/MariaDB (many), or Redis. The shape of every request is written here once; the database's own
  # part (opening it, its transactions, reading and writing the store's tables in as few round trips as it can) is an
  # adapter on one contract (Store::Adapter: Store::SQLite, Store::PostgreSQL, Store::MySQL, Store::Redis). The
  # extension makes every decision, in one native call per request.
  #
  # 1. One serialized history per resource: each request is one transaction that locks the resource's row (SQLite:
  #    the database's write lock; PostgreSQL: the row, READ COMMITTED), reads it, decides on it, writes the new row
  #    and commits.
  # 2. Commit before exposing a decision: a decision is returned only after its transaction committed. On any
  #    storage error the transaction rolls back and StoreError is raised: no grant is ever returned uncommitted. On
  #    PostgreSQL, a connection lost while COMMIT was on its way raises StoreError saying the outcome is unknown; the
  #    next request reads what was committed.
  # 3. The fence high-water is persisted atomically with the protected write: #fenced checks it, runs the caller's
  #    block and raises the mark, all in one transaction (the application's own, when one is open on the connection).
  # 4. Only the newest checkpoint is ever restored (the row is the checkpoint), with one clock origin per database:
  #    the Unix epoch, read as Float seconds, from the PostgreSQL server's clock (clock_timestamp(), read in the
  #    request's transaction after the row's lock), or from the machine's wall clock for SQLite. A clock can step
  #    backwards, so the authority runs with the +:clamp+ clock policy: a backwards step is evaluated at the latest
  #    instant any process recorded, and can neither revive nor shorten a lease. Pass +now:+ (or +clock:+) to use
  #    your own clock instead (one origin per database).
  # 5. The fence rows live in the same database and survive restarts; tokens keep rising from the stored high-water.
  # 6. Interrupts cannot split a request: asynchronous exceptions (Timeout, Thread#raise, Thread#kill, a signal's
  #    Interrupt) are deferred from the moment the transaction opens until it has committed or rolled back, and act
  #    once it has; only the block of #fenced runs interruptible, and whatever leaves it rolls its writes back. A
  #    transaction this store opened and could not close (its thread or fiber died inside it) is rolled back by the
  #    store's next request.
  #
  # One Store per process (open it after fork) or per thread. The schema (lib/lease_machines/store/schema.sql,
  # lib/lease_machines/store/postgresql.sql) is created on first use.
  class Store
    include Claim

    # The SQLite schema, for people who manage their own migrations (PostgreSQL's: PostgreSQL::SCHEMA).
    SCHEMA = SQLite::SCHEMA
    # The machine's wall clock as Float seconds since the Unix epoch, shared by every process on the machine.
    WALL_CLOCK = -> { Process.clock_gettime(Process::CLOCK_REALTIME) }
    # Both databases' integers are signed 64-bit: the store refuses to issue tokens above this.
    MAX_TOKEN = SQLite::MAX_INTEGER
    # What an optimistic adapter's close answers (Store::Redis, whose commit is a compare-and-set) when the row changed
    # since its open read it: nothing was written, and the request is decided again on the row as it is now.
    CONFLICT = Object.new.freeze
    private_constant :CONFLICT
    # How many events of each lease (a resource's, or one slot's of its semaphore) the event log keeps by default.
    KEEP_EVENTS = 1000
    # How old, in Float seconds before the newest event, the oldest kept event may be by default (7 days).
    EVENTS_MAX_AGE = 7 * 86_400.0
    # The most events one Store#events call returns.
    MAX_EVENTS_PAGE = 1000

    # What names the database in messages: the SQLite file's path, or the PostgreSQL, MySQL or Redis server and
    # database (never a password).
    def path = @adapter.name

    # Opens the lease store in +database+:
    #
    # - SQLite: a path (String or Pathname; created if needed), or an open SQLite3::Database (your application's
    #   own connection, so that #fenced writes land in your tables, in your transaction when one is open).
    # - PostgreSQL: a +postgres://+ or +postgresql://+ URL, a libpq keyword string (+host=db1 dbname=app user=worker+:
    #   KEYWORD=value pairs, one of them libpq's), or an open PG::Connection (your application's own, for the same
    #   reason). Requires the pg gem. Takes +prepared_statements:+ in +adapter_options+ (true or false; see
    #   Store::PostgreSQL#initialize: by default true on a connection the store opens, false on one it is given).
    # - MySQL or MariaDB: a +mysql2://+ or +mysql://+ URL (query parameters: socket, connect_timeout, ssl_mode, sslca,
    #   sslcert, sslkey, sslverify; another is an ArgumentError), or an open Mysql2::Client (your application's own).
    #   Requires the mysql2 gem; MariaDB 10.6 or newer (see Store::MySQL).
    # - Redis: a +redis://+ or +rediss://+ URL, or an open RedisClient (see Store::Redis, which takes the options
    #   +strict:+, +wait:+, +wait_timeout:+ and +fence:+ in +adapter_options+; the others refuse them). Requires the
    #   redis-client gem.
    #
    # +busy_timeout+ is how long, in Float seconds (0 to about 24 days), a request waits for another transaction's lock
    # before raising StoreError (SQLite's busy timeout; PostgreSQL's lock_timeout, set for the request's transaction
    # only; MySQL's innodb_lock_wait_timeout, whole seconds rounded up, at least 1). nil: 5 seconds for a database the
    # store opens, and the connection's own setting for one it is given (whose other settings are left alone too; a path
    # is opened with WAL and synchronous FULL). +clock+ (anything with +call+, returning Float seconds) is what +now+
    # defaults to; nil: the PostgreSQL, MySQL or Redis server's clock, or WALL_CLOCK for SQLite. It is called inside the
    # request's transaction with interrupts deferred, so it must return promptly and not call the store (that raises
    # StoreError). +clock_policy+ is the authority's (see Authority.new).
    #
    # Every request writes one event to the store's event log, in its own transaction (see #events), which keeps
    # +keep_events+ events per lease (an Integer, 1 to 1,000,000; default KEEP_EVENTS) and none older than
    # +events_max_age+ Float seconds (more than 0; default EVENTS_MAX_AGE, 7 days) before the newest. Each request
    # prunes what falls out, in constant work.
    #
    # The store creates its tables where they are missing, and upgrades a format 1 database (before the event log)
    # to format 2, when opened outside a transaction. With +migrate: false+ it writes nothing to the schema and
    # refuses such a database instead: what tools that only read (the dashboard, +lease_machines audit+) use, so
    # that they never upgrade a database that processes of an earlier version still use.
    #
    # Raises TypeError or ArgumentError for a bad argument, StoreError when the database cannot be reached, opened
    # or set up, or holds tables of another shape or schema format.
    def initialize(database, busy_timeout: nil, clock: nil, clock_policy: :clamp, keep_events: KEEP_EVENTS,
                   events_max_age: EVENTS_MAX_AGE, migrate: true, **adapter_options)
      Authority.new(clock_policy: clock_policy) # refuse a bad policy now, not at the first request
      unless clock.nil? || KERNEL_RESPOND_TO.bind_call(clock, :call)
        raise TypeError, "clock must respond to call, got #{LeaseMachines.shown(clock)}"
      end
      Store.retention!(keep_events, events_max_age)
      raise TypeError, "migrate must be true or false, got #{LeaseMachines.shown(migrate)}" unless [true, false].include?(migrate)

      adapter = [Redis, PostgreSQL, MySQL].find { _1.accepts?(database) } || SQLite
      Store.options!(adapter, adapter_options.keys)
      @clock = clock || (adapter == SQLite ? WALL_CLOCK : nil)
      @clock_policy = clock_policy
      initialize_claim
      begin
        @adapter = adapter.new(database, busy_timeout: busy_timeout, migrate: migrate, **adapter_options)
      rescue *adapter.errors => e
        raise StoreError, "cannot open the lease store at #{adapter.describe(database)}: #{adapter.message(e)}"
      end
      @adapter.retain_events(per_lease: keep_events, max_age: events_max_age.to_f)
      options = { busy_timeout: busy_timeout, clock: clock, clock_policy: clock_policy, keep_events: keep_events,
                  events_max_age: events_max_age, migrate: migrate, **adapter_options }
      @reopen = [database, options].freeze if Store.named?(database) && Store.named?(adapter_options.fetch(:fence, ""))
    end

    # Refuses with ArgumentError the +keywords+ that +adapter+ does not take: "only a Redis store takes strict:" for
    # another adapter's, Ruby's "unknown keyword" for one no adapter takes.
    def self.options!(adapter, keywords)
      foreign = keywords - adapter.options
      return if foreign.empty?

      owners = foreign.group_by { |keyword| [Redis, PostgreSQL].find { _1.options.include?(keyword) } }
      if (unknown = owners[nil])
        raise ArgumentError, "unknown keyword#{"s" if unknown.size > 1}: #{unknown.map(&:inspect).join(", ")}"
      end

      raise ArgumentError, owners.map { |owner, taken|
        "only a #{owner.name.split("::").last} store takes #{taken.map { "#{_1}:" }.join(", ")}"
      }.join("; ")
    end

    # Whether +database+ names a database (a path or URL), rather than being an open connection.
    def self.named?(database) = String === database || (defined?(Pathname) ? Pathname === database : false)

    # Whether #reopen can open this store again: it opened its own connections, from a path or a URL (and its fence
    # too, for a Redis store), rather than being given an open connection.
    def reopenable? = !@reopen.nil?

    # A new Store on the same database with the same options, on connections of its own: what a forked child uses
    # in place of one its parent opened (the way ActiveRecord reconnects after fork). Raises StoreError for a store
    # given an open connection (the application's, whose own reconnection is the application's), and whatever
    # Store.new raises.
    def reopen
      unless @reopen
        raise StoreError, "#{path}: this Store is on a connection the application gave it, which cannot be opened " \
                          "again; give a path or URL, or a factory (-> { LeaseMachines::Store.new(...) })"
      end

      database, options = @reopen
      Store.new(database, **options)
    end

    # What names the store, never a password (the arguments it may be opened again with are not shown).
    def inspect = "#<#{self.class.name} #{path}>"

    # Checks the event log's retention (see Store.new): TypeError or ArgumentError.
    def self.retention!(keep_events, events_max_age)
      raise TypeError, "keep_events must be an Integer, got #{LeaseMachines.shown(keep_events)}" unless Integer === keep_events
      unless keep_events.between?(1, 1_000_000)
        raise ArgumentError, "keep_events must be from 1 to 1000000, got #{keep_events}"
      end
      unless Integer === events_max_age || Float === events_max_age
        raise TypeError, "events_max_age must be Float seconds, got #{LeaseMachines.shown(events_max_age)}"
      end
      return if events_max_age.positive? && events_max_age.finite?

      raise ArgumentError, "events_max_age must be more than 0 seconds and finite, got #{events_max_age}"
    end

    # The clock +now+ defaults to (see Store.new): nil when it is the database server's.
    attr_reader :clock

    # The underlying connection (SQLite3::Database, PG::Connection, Mysql2::Client), for the caller's own tables
    # (inside #fenced, use the block's argument).
    def database = @adapter.connection

    # Which database the store is on: +:sqlite+, +:postgresql+, +:mysql+ or +:redis+.
    def adapter_name = @adapter.class.adapter_name

    # What a fenced write that joined an application's transaction holds in the lease store's database until that
    # transaction ends: +:row+ (PostgreSQL, MySQL: the lease's row, so no grant, renewal or release of that
    # resource commits before it does), +:database+ (SQLite: its one write lock, so no request at all does), or nil
    # (Redis: nothing in Redis).
    def fence_holds = @adapter.class.fence_holds

    # A Store for the fenced writes made on +connection+, an application's open driver connection
    # (SQLite3::Database, PG::Connection or Mysql2::Client: ActiveRecord's raw_connection), deciding on +clock+ (nil:
    # the database server's, as a lease store on it decides). With +redis+ (a RedisClient on the lease store's
    # server: its leases are in Redis), a Store on that client whose fence is +connection+. +busy_timeout+ (Float
    # seconds or nil) is the connection's configured busy timeout, which a Store on SQLite applies as sqlite3's
    # busy_handler_timeout (what Rails 8 does); PostgreSQL and MySQL keep the connection's own lock wait.
    # +prepared_statements+ (true, false or nil) is the connection's own setting (ActiveRecord's), which a Store on
    # PostgreSQL follows; nil: none. Nothing else of the connection changes, and #close of the Store returned would
    # close it: leave that to its owner. Raises ArgumentError for a connection of another kind, and whatever Store.new
    # raises.
    def self.fence_for(connection, clock:, redis: nil, busy_timeout: nil, prepared_statements: nil)
      sqlite = defined?(::SQLite3::Database) && ::SQLite3::Database === connection
      unless sqlite || [PostgreSQL, MySQL].any? { _1.accepts?(connection) } && !named?(connection)
        raise ArgumentError, "fenced writes take an open SQLite3::Database, PG::Connection or Mysql2::Client, " \
                             "got #{LeaseMachines.shown(connection)}"
      end

      options = sqlite ? { busy_timeout: busy_timeout } : {}
      return Store.new(redis, fence: connection, clock: clock, **options) if redis

      options[:prepared_statements] = prepared_statements if PostgreSQL.accepts?(connection)
      Store.new(connection, clock: clock, **options)
    end

    # What a Redis server promises of a committed decision (Store::Redis::Durability, read when the store opened);
    # nil for the SQL stores, which commit durably (SQLite's synchronous FULL, PostgreSQL's synchronous_commit on,
    # MySQL's innodb_flush_log_at_trx_commit=1, which the store relies on: see Store::MySQL).
    def durability = @adapter.durability

    # The RedisClient::Config of a store on Redis, from which a fenced write on another SQL connection (the
    # application's, under ActiveRecord) opens a store of its own on the same server; nil for the SQL stores.
    def redis_config = Redis === @adapter ? @adapter.client.config : nil

    def close = @adapter.close

    # Authority#acquire on +resource+ (a String), durably. +now+ defaults to the store's clock.
    #
    # With +limit:+ (an Integer, 1 to MAX_LIMIT) the resource is a semaphore that up to +limit+ owners hold at once,
    # each in a slot of its own, and a grant's lease is a SlotLease: the slot, and the slot's own token. The core's
    # rules (Semaphore in the lease-machines crate): the lowest free slot below the limit is granted while fewer
    # than +limit+ slots are live; a lowered limit revokes no live slot; an owner holds one slot at most. Slot 0 is
    # the resource's plain lease, and a plain acquire (no +limit:+) is decided as +limit: 1+ is: refused (+:occupied+)
    # while any slot of the resource is live, so that a key taken with +limit: N+ by some and without a limit by
    # others never has more holders than either declared; its lease is a plain Lease, in slot 0. Renew, release and
    # fence a slot's lease with its +slot:+. Raises ArgumentError for a limit out of range.
    def acquire(resource:, owner:, ttl:, now: nil, limit: nil)
      return decide(resource, now, :acquire, [owner, ttl, 1], slots: true, plain: true) if limit.nil?

      decide(resource, now, :acquire, [owner, ttl, limit], slots: true)
    end

    # Authority#reacquire on +resource+, durably: the owner's own live lease is granted again with a new token (its
    # old token fenced); any other owner's is decided as a plain #acquire, refused while any slot of the resource is
    # live (a reacquire never adds a holder beside a semaphore's).
    def reacquire(resource:, owner:, ttl:, now: nil)
      decide(resource, now, :reacquire, [owner, ttl, 1], slots: true, plain: true)
    end

    # Authority#renew on +resource+, durably; with +slot:+ (the SlotLease's), the lease in that slot of the
    # resource's semaphore, answered with a SlotLease. Raises ArgumentError for a slot out of range.
    def renew(resource:, owner:, token:, ttl:, now: nil, slot: nil)
      return decide(resource, now, :renew, [owner, token, ttl]) if slot.nil?

      decide(resource, now, :renew, [slot, owner, token, ttl], slots: true)
    end

    # Authority#release on +resource+, durably; with +slot:+, the lease in that slot of its semaphore. A holder
    # whose slot has moved on (another owner was granted it since) is refused by token: it never frees a
    # successor's slot.
    def release(resource:, owner:, token:, now: nil, slot: nil)
      return decide(resource, now, :release, [owner, token]) if slot.nil?

      decide(resource, now, :release, [slot, owner, token], slots: true)
    end

    # Hands the live lease from +owner+ (with its +token+) to +new_owner+, in one transaction and one decision: a
    # release followed by a grant to +new_owner+ with a new, greater token, so the old token is fenced. Answers
    # +:transferred+ with the new owner's lease (as Table#transfer does), or the first refusal (and then nothing
    # changed but the clock watermark). The new owner and the TTL are checked as #acquire checks them, refused or not.
    def transfer(resource:, owner:, token:, new_owner:, ttl:, now: nil)
      decide(resource, now, :transfer, [owner, token, new_owner, ttl])
    end

    # The resource's committed checkpoint (of +slot+ of its semaphore; an empty one for a resource or slot never
    # asked for).
    def checkpoint(resource:, slot: 0) = stored(resource, slot).first

    # How many accepted changes the resource's row (+slot+'s) has seen.
    def revision(resource:, slot: 0) = stored(resource, slot).last

    # The highest token the resource's (+slot+'s) fenced writes have carried, or nil.
    def fence_highest(resource:, slot: 0)
      name = resource_name(resource)
      slot = slot_number(slot)
      query do
        highest = @adapter.read_fence(name, slot)
        next highest if highest.nil? || (Integer === highest && highest.between?(1, MAX_TOKEN))

        raise StoreError, "corrupt fence row for #{name.inspect} in #{path}: highest #{LeaseMachines.shown(highest)} " \
                          "is not a token"
      end
    end

    # Ends the live lease of +resource+ (of +slot+ of its semaphore) whoever holds it, as its holder's release
    # would: an operator's revocation, logged as a +:revoked+ event. From then on its token is refused by the fence
    # (the lease is no longer held) and the next grant's token is above it. With +token:+ (an Integer) only the
    # lease with that token is ended; nil ends whichever is on record. Nothing is deleted (a resource or slot never
    # asked for gets its row, as with any request). Answers +:released+, or a refusal: +:not_held+ (no lease on
    # record), +:expired+, +:stale_token+ (another token than +token+), and as every request +:clock_regressed+
    # (under the +:reject+ clock policy) and +:revision_space_exhausted+.
    def revoke(resource:, token: nil, slot: 0, now: nil)
      return decide(resource, now, :revoke, [token]) if slot.equal?(0)

      decide(resource, now, :revoke, [slot, token], slots: true)
    end

    # Up to +limit+ events of the log (1 to MAX_EVENTS_PAGE, default 100), oldest first, with ids above +after+ (an
    # Integer; nil for the oldest kept): of +resource+ (every slot of it), or of every resource for nil. A frozen
    # Array of Store::Event. Pages by key: pass the last event's id as the next page's +after:+. An event's id is
    # taken when it is written, in its request's transaction: SQLite's one writer at a time makes that commit order;
    # on PostgreSQL a decision's too, per resource (its row's lock), but a fenced write's event inside an
    # application's transaction that commits later can follow events with greater ids, so that a reader polling by
    # +after:+ may have passed it: re-read a recent window (#latest_events) to catch it. Raises TypeError or
    # ArgumentError for a bad argument.
    def events(resource: nil, after: nil, limit: 100)
      name = nil.equal?(resource) ? nil : resource_name(resource)
      after = page_after(after)
      limit = page_limit(limit, MAX_EVENTS_PAGE)
      query { @adapter.events(name, after, limit) }.map { Event.from_row(_1) }.freeze
    end

    # The newest +limit+ events of the log (1 to MAX_EVENTS_PAGE, default 100), returned oldest first: of
    # +resource+, or of every resource for nil. A frozen Array of Store::Event. Raises TypeError or ArgumentError.
    def latest_events(resource: nil, limit: 100)
      name = nil.equal?(resource) ? nil : resource_name(resource)
      limit = page_limit(limit, MAX_EVENTS_PAGE)
      query { @adapter.latest_events(name, limit) }.map { Event.from_row(_1) }.freeze
    end

    # How many events of each kind the log keeps now: a frozen Hash of Event::KINDS to Integers (0 for none).
    def event_counts
      counts = query { @adapter.event_counts }.to_h { |kind, count| [kind.to_sym, count] }
      Event::KINDS.to_h { |kind| [kind, counts.fetch(kind, 0)] }.freeze
    end

    # The core's audit (LeaseMachines.audit) of the accepted changes the log keeps, each lease's history (a
    # resource's, a semaphore slot's) on its own, as the store keeps one clock watermark per lease: an AuditReport
    # whose findings' +event_index+ is the offending event's id, and whose +resource+ names a slot above 0 as
    # "NAME [slot N]". Raises StoreError for an event row no history can produce.
    def audit
      changes = query { @adapter.changes }
      LeaseMachines.__send__(:_store_audit, path, changes)
    end

    # Up to +limit+ leases (1 to 1000, default 100) in key order ([resource, slot], names in the database's order:
    # SQLite's and MySQL's bytewise, PostgreSQL's collation; a resource's lease, then its semaphore's slots above 0),
    # after the key +after+ (a [resource, slot] pair, such as the last one's ResourceState#key; nil from the first), of
    # resources whose names start with +prefix+ (a String; nil for all). A frozen Array of Store::ResourceState: keyset
    # pages, never an offset. Raises TypeError or ArgumentError for a bad argument.
    def resources(after: nil, limit: 100, prefix: nil)
      limit = page_limit(limit, 1000)
      prefix = nil.equal?(prefix) ? "" : resource_prefix(prefix)
      after_resource, after_slot = lease_key(after)
      found = query { @adapter.leases(prefix, after_resource, after_slot, limit) }
      found.map { |resource, slot, *columns| ResourceState.new(resource, slot, *columns) }.freeze
    end

    # How many leases (resources, and semaphore slots above 0) the store has rows for, of resources whose names
    # start with +prefix+ (nil: all).
    def resource_count(prefix: nil)
      prefix = nil.equal?(prefix) ? "" : resource_prefix(prefix)
      query { @adapter.lease_count(prefix) }
    end

    # The store's clock now, Float seconds: the PostgreSQL, MySQL or Redis server's (unless the store has a +clock:+),
    # or the store's +clock:+ (WALL_CLOCK by default for SQLite).
    def now
      return @clock.call if @clock

      query { @adapter.server_now }
    end

    # Runs the block (given the connection) as a write protected by +token+, in one transaction with the fence
    # check: the block runs only if +token+ is the token of +resource+'s lease, live at +now+ (default: the store's
    # clock, the one its grants were decided on), and at least the highest token written before, which it then
    # becomes. So a holder whose lease went to another grant, was released or expired is refused at once, before any
    # successor has written. When the connection is already inside a transaction (your application's), the check,
    # the block and the mark join it under a savepoint, and commit with it. The check travels with the
    # transaction's first statement and the mark with its last (on PostgreSQL: no round trip of their own). Raises
    # Fenced (nothing written, the block not run; its +reason+ says why), and ArgumentError for a token this store
    # never issued for +resource+ (above its high-water, or for a resource never granted). Whatever leaves the block
    # other than its return (an exception of any class, +throw+, +break+, an interrupt) rolls its writes back and
    # goes on unchanged. Returns the block's value once committed. With +slot:+ (a SlotLease's), the token is checked
    # against that slot of the resource's semaphore, and the slot's own fence mark is raised.
    #
    # Instead of a block, +statements:+ (an Array of [sql, binds] pairs, binds an Array) gives the protected
    # statements up front: they run after the check, with the mark and the commit, and their rows come back (an
    # Array of rows per statement, each row an Array). On PostgreSQL they travel in the transaction's last round
    # trip, so the whole fenced write is two round trips, whatever the number of statements. They must not end the
    # transaction themselves.
    def fenced(resource:, token:, now: nil, statements: nil, slot: 0)
      if statements.nil?
        raise ArgumentError, "fenced needs a block (the write it protects) or statements:" unless block_given?
      elsif block_given?
        raise ArgumentError, "fenced takes a block or statements:, not both"
      else
        statements = Store.statements(statements)
      end

      name = resource_name(resource)
      slot = slot_number(slot)
      critical do
        held = done = false
        savepoint = nil
        begin
          row, highest, at, epoch = guarded do
            recover
            nested = !@claim.nil? # recover let it through: this fiber's own block calls back in
            unless nested
              held = true # before the claim: whatever lands after this reaches the ensure below
              joined = storage { @adapter.in_transaction? }
              take(joined ? :joined : :own)
            end
            savepoint = "lease_machines_#{@depth += 1}" if nested || @claim_kind == :joined
            @deciding = true
            storage { @adapter.open_fence(name, savepoint: savepoint, clock: now.nil? && @clock.nil?, slot: slot) }
          end
          at = instant(now, at)
          verdict = check(name, row, highest, token, at, epoch)
          unless verdict == :admitted
            event = logged!(["write_refused", at, nil, token, nil, nil, verdict.to_s, nil, nil, nil, highest])
            storage { @adapter.refuse_fence(name, savepoint: savepoint, event: event, slot: slot) }
            done = true # the refusal is logged: its transaction committed (or joined the application's)
            raise Fenced.new(resource: name, token: token, highest: row && row[3], reason: verdict)
          end
          @deciding = false
          @in_block = true if held
          result = Thread.handle_interrupt(Object => :immediate) { yield @adapter.connection } unless statements
          @in_block = false if held
          ended_by_block! unless storage { @adapter.in_transaction? }
          begin
            event = ["write_accepted", at, nil, token, nil, nil, nil, nil, nil, nil, token]
            rows = @adapter.close_fence(name, token, savepoint: savepoint, event: event, statements: statements || [],
                                                     slot: slot)
            result = rows if statements
          rescue *@adapter.class.errors => e
            ended_by_block! if @adapter.ended_inside?(e)
            raise storage_error(e)
          end
          done = true
          result
        ensure
          @deciding = false
          @in_block = false if held
          if savepoint
            @adapter.rollback_to_savepoint(savepoint) unless done
            @depth -= 1
          end
          end_claim(committed: done) if held
        end
      end
    end

    # +statements+ checked: an Array of [sql (String), binds (Array)] pairs, frozen. Raises TypeError otherwise.
    def self.statements(statements)
      unless Array === statements && statements.all? { |pair| Array === pair && pair.size == 2 }
        raise TypeError, "statements must be an Array of [sql, binds] pairs, got #{LeaseMachines.shown(statements)}"
      end

      statements.map do |sql, binds|
        raise TypeError, "a statement's sql must be a String, got #{LeaseMachines.shown(sql)}" unless String === sql
        raise TypeError, "a statement's binds must be an Array, got #{LeaseMachines.shown(binds)}" unless Array === binds

        [sql, binds].freeze
      end.freeze
    end

    KERNEL_RESPOND_TO = Kernel.instance_method(:respond_to?)
    private_constant :KERNEL_RESPOND_TO

    private

    # The one shape of every decision: claim, open the store's transaction with the row locked and read (and the
    # database's clock, where it is the store's), decide in one native call, write back what it says and commit.
    # With +slots+, the request is a semaphore's: every slot row of the resource is locked and read, the decision
    # names the slot it was made in, and a lease it carries is answered as a SlotLease (unless +plain+: a plain
    # acquire's, always slot 0's).
    def decide(resource, now, kind, args, slots: false, plain: false)
      name = resource_name(resource)
      clock = now.nil? && @clock.nil?
      critical do
        held = committed = false
        decision = slot = nil
        begin
          row, at, epoch = guarded do
            recover
            if storage { @adapter.in_transaction? }
              raise StoreError, "#{path}: a decision cannot commit inside an open transaction; commit it first"
            end

            held = true # before the claim: whatever lands after this reaches the ensure below
            take(:own)
            @deciding = true
            storage { open_rows(name, slots, clock) }
          end
          loop do
            answer = if slots
                       LeaseMachines.__send__(:_store_decide_slots, path, name, kind, args, instant(now, at),
                                              @clock_policy, row, epoch)
                     else
                       LeaseMachines.__send__(:_store_decide, path, name, row, kind, args, instant(now, at),
                                              @clock_policy, epoch)
                     end
            if answer.first == :next_epoch # the token would open the next epoch: nothing is written
              closed = storage { next_epoch(name, answer[1], answer[2]) }
            else
              if slots
                decision, slot, write, event, issued = answer
              else
                decision, write, event, issued = answer
              end
              fits!(write) if write
              logged!(event)
              closed = storage { close_rows(name, slots, slot, write, event, issued) }
            end
            break unless closed.equal?(CONFLICT)

            row, at, epoch = storage { open_rows(name, slots, clock) } # decided again on the row as it is now
          end
          committed = true
          slots && !plain ? in_slot(decision, slot) : decision
        ensure
          end_claim(committed: committed) if held
        end
      end
    end

    # A decision's open: [the resource's row (every slot row, with +slots+), the database's clock reading if +clock+,
    # the token epoch the store decides in (nil: a store without epochs)].
    def open_rows(name, slots, clock)
      slots ? @adapter.open_slots(name, clock: clock) : @adapter.open_request(name, clock: clock)
    end

    # A decision whose token would be the floor of token epoch +opened+ (the token after an epoch's last): the adapter
    # moves to that epoch (CONFLICT: decided again in it), or StoreError when its floor does not fit the database.
    def next_epoch(name, opened, floor)
      fit!("token", floor)
      @adapter.next_epoch(name, opened)
    end

    # A decision's close: +write+ (nil: nothing changed) and +event+ committed, with the token the decision +issued+
    # (nil: none), for an adapter whose commit checks the token epoch.
    def close_rows(name, slots, slot, write, event, issued)
      return @adapter.close_slots(name, slot, write, event, issued) if slots

      @adapter.close_request(name, write, event, issued)
    end

    # The request's instant: the caller's +now+, else the database's clock reading +at+, else the store's clock.
    def instant(now, at)
      return now unless now.nil?

      at.nil? ? @clock.call : at
    end

    # Checks +token+ by the core's rule for a fence beside the lease record (the row raised into the token +epoch+ the
    # adapter read, nil for none), in one native call: +:admitted+ or the refusal's reason. Raises ArgumentError (a
    # token never issued) or StoreError (a row or mark no history can produce).
    def check(name, row, highest, token, now, epoch)
      LeaseMachines.__send__(:_store_check_write, path, name, row, highest, token, now, epoch)
    end

    # [checkpoint, revision] of the resource's (+slot+'s) committed row.
    def stored(resource, slot)
      name = resource_name(resource)
      slot = slot_number(slot)
      query { LeaseMachines.__send__(:_store_checkpoint, path, name, @adapter.read_row(name, slot)) }
    end

    # +decision+ with its lease (if any) as the SlotLease of +slot+.
    def in_slot(decision, slot)
      lease = decision.lease or return decision

      decision.with(lease: SlotLease.new(slot: slot, owner: lease.owner, token: lease.token,
                                         expires_at: lease.expires_at))
    end

    # +slot+ checked natively, as a semaphore request checks it: an Integer from 0 to MAX_LIMIT - 1 (TypeError,
    # ArgumentError otherwise). Slot 0, the plain lease's (every request without slot:), costs no native call.
    def slot_number(slot) = slot.equal?(0) ? 0 : LeaseMachines.__send__(:_slot, slot)

    # A read outside any request: refused while another live fiber is inside one of this store's requests (it would
    # see that request's uncommitted rows on the shared connection), and made under the guard, so that no other
    # thread's request starts in the middle of it.
    def query(&)
      critical do
        guarded do
          recover
          storage(&)
        end
      end
    end

    # +resource+ as the UTF-8 String the database stores, checked by the extension as every Table command checks it
    # (see "The rules of input"): TypeError or ArgumentError otherwise.
    # A name the store cannot keep (one with a NUL byte, on PostgreSQL or on Redis with a PostgreSQL fence) is an
    # ArgumentError too, the same on every store (the adapter's check_name!).
    def resource_name(resource) = @adapter.check_name!(LeaseMachines.__send__(:_resource_name, resource))

    # A page's +after:+ event id: nil (from the oldest, 0) or an Integer from 0.
    def page_after(after)
      return 0 if nil.equal?(after)
      raise TypeError, "after must be an event id (Integer), got #{LeaseMachines.shown(after)}" unless Integer === after
      raise ArgumentError, "after must be 0 or more, got #{after}" if after.negative?

      [after, MAX_TOKEN].min
    end

    # A page's +limit:+, an Integer from 1 to +max+.
    def page_limit(limit, max)
      raise TypeError, "limit must be an Integer, got #{LeaseMachines.shown(limit)}" unless Integer === limit
      raise ArgumentError, "limit must be from 1 to #{max}, got #{limit}" unless limit.between?(1, max)

      limit
    end

    # A lease key [resource, slot] to page after, as [name, slot] (["", -1] for nil: before every key).
    def lease_key(key)
      return ["", -1] if nil.equal?(key)
      unless Array === key && key.size == 2
        raise TypeError, "after must be a [resource, slot] key, got #{LeaseMachines.shown(key)}"
      end

      [resource_name(key[0]), slot_number(key[1])]
    end

    # A name prefix: a UTF-8 String ("" matches every name), checked as the database holds names.
    def resource_prefix(prefix)
      raise TypeError, "prefix must be a String, got #{LeaseMachines.shown(prefix)}" unless String === prefix
      return "" if prefix.empty?

      resource_name(prefix)
    end

    # +event+ as the log keeps it: a token someone presented above what the databases' integers hold (never issued)
    # is logged as nil, so that the refusal is still logged and answered rather than a StoreError.
    def logged!(event)
      event[3] = nil if Integer === event[3] && event[3] > MAX_TOKEN
      event
    end

    # Refuses a row the database's signed 64-bit integers cannot hold (a token or revision above MAX_TOKEN).
    def fits!(write)
      fit!("token", write[1])
      fit!("token", write[3])
      fit!("revision", write[5])
    end

    # Refuses +value+ (a +what+, or nil) above MAX_TOKEN.
    def fit!(what, value)
      return if value.nil? || value <= MAX_TOKEN

      raise StoreError, "#{what} #{value} does not fit the database's signed 64-bit integers (max #{MAX_TOKEN})"
    end

    # Runs one of the store's own storage operations; the database driver's errors become StoreError (with the
    # original as cause).
    def storage
      yield
    rescue *@adapter.class.errors => e
      raise storage_error(e)
    end

    def storage_error(error) = StoreError.new("lease store #{path}: #{@adapter.class.message(error)}")
  end
end
