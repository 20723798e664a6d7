# frozen_string_literal: true

require "sqlite3"
require "lease_machines"

module LeaseMachines
  # A storage operation failed (the database is locked past the busy timeout, read-only, corrupt, ...). The
  # transaction was rolled back: nothing was decided, nothing was written. The SQLite error is the +cause+.
  class StoreError < Error; end

  # A fenced write carried a token older than the highest one its resource has seen. The write's transaction was
  # rolled back, the block never ran.
  class Fenced < Error
    attr_reader :resource, :token, :highest

    def initialize(resource:, token:, highest:)
      @resource = resource
      @token = token
      @highest = highest
      reason = highest ? "is older than the newest seen (#{highest})" : "is never issued"
      super("#{resource}: token #{token} #{reason}; the write was refused")
    end
  end

  # A durable authority over a SQLite database file, keeping the core's persistence contract:
  #
  # 1. One serialized history per resource: each request is one `BEGIN IMMEDIATE` transaction that reads the
  #    resource's row, restores the authority from it, decides, writes the new checkpoint and commits.
  # 2. Commit before exposing a decision: a decision is returned only after its transaction committed. On any
  #    storage error the transaction rolls back and StoreError is raised: no grant is ever returned uncommitted.
  # 3. The fence high-water is persisted atomically with the protected write: #fenced checks and raises it, then runs
  #    the caller's block, all in one transaction.
  # 4. Only the newest checkpoint is ever restored (the row is the checkpoint), with one clock origin: the Unix epoch
  #    of the machine's wall clock, read as Float seconds. A wall clock can step backwards, so the authority runs with
  #    the +:clamp+ clock policy: a backwards step is evaluated at the latest instant any process recorded, and can
  #    neither revive nor shorten a lease. Pass +now:+ to use your own clock instead (one origin per database).
  # 5. The fence rows live in the same database and survive restarts; tokens keep rising from the stored high-water.
  #
  # One Store per process (open it after fork) or per thread; every process on the machine may open the same file.
  # The schema (lib/lease_machines/store/schema.sql) is created on first use.
  class Store
    # The schema, for people who manage their own migrations.
    SCHEMA = File.read(File.expand_path("store/schema.sql", __dir__)).freeze
    # The machine's wall clock as Float seconds since the Unix epoch, shared by every process on the machine.
    WALL_CLOCK = -> { Process.clock_gettime(Process::CLOCK_REALTIME) }
    # SQLite integers are signed 64-bit: the store refuses to issue tokens above this.
    MAX_TOKEN = 2**63 - 1

    COLUMNS = "owner, token, expires_at, last_issued, observed, revision"
    private_constant :COLUMNS

    # The database file's path.
    attr_reader :path

    # Opens (creating if needed) the database at +database+, a path, or uses an open SQLite3::Database (your
    # application's own connection, so that #fenced writes land in your tables). +busy_timeout+ is how long, in Float
    # seconds, a request waits for another process's transaction before raising StoreError; +clock+ returns Float
    # seconds; +clock_policy+ is the authority's (see Authority.new). Raises StoreError when the database cannot be
    # opened or set up.
    def initialize(database, busy_timeout: 5.0, clock: WALL_CLOCK, clock_policy: :clamp)
      Authority.new(clock_policy: clock_policy) # refuse a bad policy now, not at the first request
      @clock = clock
      @clock_policy = clock_policy
      owned = !database.is_a?(SQLite3::Database)
      @db = owned ? SQLite3::Database.new(database.to_s) : database
      @path = @db.filename || database.to_s
      begin
        @db.busy_timeout = (Float(busy_timeout) * 1000).round
        @db.execute("PRAGMA journal_mode = WAL")
        @db.execute("PRAGMA synchronous = FULL")
        @db.execute_batch(SCHEMA)
      rescue SQLite3::Exception
        @db.close if owned
        raise
      end
    rescue SQLite3::Exception => e
      raise StoreError, "cannot open the lease store at #{database}: #{e.message}"
    end

    # The underlying SQLite3::Database, for the caller's own tables (inside #fenced, use the block's argument).
    def database = @db

    def close = @db.close

    # Authority#acquire on +resource+ (a String), durably. +now+ defaults to the store's clock.
    def acquire(resource:, owner:, ttl:, now: nil)
      decide(resource, now) { |authority, at| authority.acquire(owner: owner, now: at, ttl: ttl) }
    end

    # Authority#reacquire on +resource+, durably.
    def reacquire(resource:, owner:, ttl:, now: nil)
      decide(resource, now) { |authority, at| authority.reacquire(owner: owner, now: at, ttl: ttl) }
    end

    # Authority#renew on +resource+, durably.
    def renew(resource:, owner:, token:, ttl:, now: nil)
      decide(resource, now) { |authority, at| authority.renew(owner: owner, token: token, now: at, ttl: ttl) }
    end

    # Authority#release on +resource+, durably.
    def release(resource:, owner:, token:, now: nil)
      decide(resource, now) { |authority, at| authority.release(owner: owner, token: token, now: at) }
    end

    # Hands the live lease from +owner+ (with its +token+) to +to+, in one transaction: a release followed by a grant
    # to +to+ with a new, greater token, so the old token is fenced. Returns the grant, or the first refusal (and
    # then nothing changed but the clock watermark).
    def transfer(resource:, owner:, token:, to:, ttl:, now: nil)
      decide(resource, now) do |authority, at|
        released = authority.release(owner: owner, token: token, now: at)
        released.released? ? authority.acquire(owner: to, now: at, ttl: ttl) : released
      end
    end

    # The resource's committed checkpoint (an empty one for a resource never asked for).
    def checkpoint(resource:)
      storage { read(resource).first }
    end

    # How many accepted changes the resource's row has seen.
    def revision(resource:)
      storage { read(resource).last }
    end

    # The highest token the resource's fenced writes have carried, or nil.
    def fence_highest(resource:)
      storage { @db.get_first_value("SELECT highest FROM lease_machines_fences WHERE resource = ?", [resource]) }
    end

    # Runs the block (given the SQLite3::Database) as a write protected by +token+, in one transaction with the fence
    # check: the block runs only if +token+ is at least the highest token +resource+ has seen, which it then becomes.
    # Raises Fenced (nothing written, the block not run) for an older token, and ArgumentError for a token above the
    # resource's high-water in this store (never issued). Whatever leaves the block other than its return (an
    # exception of any class, +throw+, +break+) rolls its writes back and goes on unchanged. Returns the block's
    # value once committed.
    def fenced(resource:, token:)
      transaction do
        highest = storage { @db.get_first_value("SELECT highest FROM lease_machines_fences WHERE resource = ?", [resource]) }
        fence = Fence.new(highest: highest)
        raise Fenced.new(resource: resource, token: token, highest: highest) unless fence.accept(token)

        issued = storage { read(resource).first.last_issued }
        if issued && token > issued
          raise ArgumentError, "#{resource}: token #{token} was never issued (the last one was #{issued})"
        end

        check_token_range!(fence.highest)
        storage do
          @db.execute(<<~SQL, [resource, fence.highest])
            INSERT INTO lease_machines_fences (resource, highest) VALUES (?, ?)
            ON CONFLICT (resource) DO UPDATE SET highest = excluded.highest
          SQL
        end
        yield @db
      end
    end

    private

    def decide(resource, now)
      transaction do
        before, revision = storage { read(resource) }
        authority = Authority.restore(before, clock_policy: @clock_policy)
        decision = yield authority, now || @clock.call
        after = authority.checkpoint
        if decision.accepted?
          storage { write(resource, after, revision + 1) }
        elsif after.observed != before.observed || revision.zero?
          # A refusal changes no lease, but the clock watermark it observed stands.
          kept = Checkpoint.new(last_issued: before.last_issued, lease: before.lease, observed: after.observed)
          storage { write(resource, kept, revision) }
        end
        decision
      end
    end

    # Runs the block in one BEGIN IMMEDIATE transaction, committed when the block returns and rolled back when
    # anything else leaves it (an exception of any class, throw, break) or the commit itself fails.
    def transaction
      storage { @db.execute("BEGIN IMMEDIATE") }
      committed = false
      begin
        result = yield
        storage { @db.execute("COMMIT") }
        committed = true
        result
      ensure
        rollback unless committed
      end
    end

    def rollback
      @db.execute("ROLLBACK") if @db.transaction_active?
    rescue SQLite3::Exception
      nil # SQLite already rolled back (a statement with ON CONFLICT ROLLBACK, say); what went wrong goes on
    end

    # [checkpoint, revision] of the resource's row; an empty checkpoint and revision 0 when there is none.
    def read(resource)
      row = @db.get_first_row("SELECT #{COLUMNS} FROM lease_machines_leases WHERE resource = ?", [resource])
      return [Checkpoint.new(last_issued: nil, lease: nil, observed: 0.0), 0] unless row

      owner, token, expires_at, last_issued, observed, revision = row
      lease = token && Lease.new(owner: owner.negative? ? owner + 2**64 : owner, token: token, expires_at: expires_at)
      [Checkpoint.new(last_issued: last_issued, lease: lease, observed: observed), revision]
    rescue ArgumentError, TypeError, RangeError, NoMethodError => e
      raise StoreError, "corrupt lease row for #{resource.inspect} in #{@path}: #{e.message}"
    end

    def write(resource, checkpoint, revision)
      lease = checkpoint.lease
      check_token_range!(checkpoint.last_issued)
      owner = lease && (lease.owner >= 2**63 ? lease.owner - 2**64 : lease.owner)
      @db.execute(<<~SQL, [resource, owner, lease&.token, lease&.expires_at, checkpoint.last_issued, checkpoint.observed, revision])
        INSERT INTO lease_machines_leases (resource, #{COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?)
        ON CONFLICT (resource) DO UPDATE SET owner = excluded.owner, token = excluded.token,
          expires_at = excluded.expires_at, last_issued = excluded.last_issued, observed = excluded.observed,
          revision = excluded.revision
      SQL
    end

    def check_token_range!(token)
      return if token.nil? || token <= MAX_TOKEN

      raise StoreError, "token #{token} does not fit SQLite's signed 64-bit integers (max #{MAX_TOKEN})"
    end

    # Runs one of the store's own storage operations; SQLite's errors become StoreError (with the original as cause).
    def storage
      yield
    rescue SQLite3::Exception => e
      raise StoreError, "lease store #{@path}: #{e.message}"
    end
  end
end
