# frozen_string_literal: true

require "lease_machines"
require "weakref"
require_relative "store/sqlite"

module LeaseMachines
  # A storage operation failed (the database is locked past the busy timeout, read-only, corrupt, in a transaction
  # the store may not commit, ...). The transaction was rolled back: nothing was decided, nothing was written. The
  # database driver's error, when there is one, is the +cause+.
  class StoreError < Error; end

  # A fenced write was refused: its token is not the one of the resource's live lease. +reason+ says why:
  # +:stale_token+ (a newer token was issued: the lease went to another grant), +:not_held+ (the lease was released)
  # or +:expired+ (it ran out, on the store's clock, and was not renewed). +highest+ is the newest token issued for
  # the resource (nil when none was). The write's transaction was rolled back, the block never ran.
  class Fenced < Error
    attr_reader :resource, :token, :highest, :reason

    def initialize(resource:, token:, highest:, reason: :stale_token)
      @resource = resource
      @token = token
      @highest = highest
      @reason = reason
      super("#{resource}: token #{token} #{why}; the write was refused")
    end

    private

    def why
      return "is never issued" if token.zero?

      case reason
      when :not_held then "belongs to a lease that was released"
      when :expired then "belongs to a lease that expired"
      else "is older than the newest issued (#{highest})"
      end
    end
  end

  # A durable authority over a database, keeping the core's persistence contract. The shape of every request is
  # written here once; the database's own part (opening it, its transactions, reading and writing the two tables)
  # is an adapter (Store::SQLite). The extension makes every decision.
  #
  # 1. One serialized history per resource: each request is one transaction that takes the write lock, reads the
  #    resource's row, restores the authority from it, decides, writes the new checkpoint and commits.
  # 2. Commit before exposing a decision: a decision is returned only after its transaction committed. On any
  #    storage error the transaction rolls back and StoreError is raised: no grant is ever returned uncommitted.
  # 3. The fence high-water is persisted atomically with the protected write: #fenced checks and raises it, then runs
  #    the caller's block, all in one transaction (the application's own, when one is open on the connection).
  # 4. Only the newest checkpoint is ever restored (the row is the checkpoint), with one clock origin: the Unix epoch
  #    of the machine's wall clock, read as Float seconds. A wall clock can step backwards, so the authority runs with
  #    the +:clamp+ clock policy: a backwards step is evaluated at the latest instant any process recorded, and can
  #    neither revive nor shorten a lease. Pass +now:+ to use your own clock instead (one origin per database).
  # 5. The fence rows live in the same database and survive restarts; tokens keep rising from the stored high-water.
  # 6. Interrupts cannot split a request: asynchronous exceptions (Timeout, Thread#raise, Thread#kill, a signal's
  #    Interrupt) are deferred from the moment the transaction opens until it has committed or rolled back, and act
  #    once it has; only the block of #fenced runs interruptible, and whatever leaves it rolls its writes back. A
  #    transaction this store opened and could not close (its thread or fiber died inside it) is rolled back by the
  #    store's next request.
  #
  # One Store per process (open it after fork) or per thread; every process on the machine may open the same file.
  # The schema (lib/lease_machines/store/schema.sql) is created on first use.
  class Store
    # The schema, for people who manage their own migrations.
    SCHEMA = SQLite::SCHEMA
    # The machine's wall clock as Float seconds since the Unix epoch, shared by every process on the machine.
    WALL_CLOCK = -> { Process.clock_gettime(Process::CLOCK_REALTIME) }
    # The database's integers are signed 64-bit: the store refuses to issue tokens above this.
    MAX_TOKEN = SQLite::MAX_INTEGER

    # What names the database in messages: the database file's path.
    def path = @adapter.name

    # Opens (creating if needed) the database at +database+, a path (String or Pathname), or uses an open
    # SQLite3::Database (your application's own connection, so that #fenced writes land in your tables, in your
    # transaction when one is open). +busy_timeout+ is how long, in Float seconds (0 to about 24 days), a request
    # waits for another process's transaction before raising StoreError (nil: 5 seconds for a path, and the
    # connection's own setting for an SQLite3::Database, whose journal mode and synchronous setting are left alone as
    # well; a path is opened with WAL and synchronous FULL); +clock+ (anything with +call+) returns Float
    # seconds, and is called inside the request's transaction with interrupts deferred, so it must return promptly
    # and not call the store (that raises StoreError); +clock_policy+ is the authority's (see Authority.new). Raises
    # TypeError or ArgumentError for a bad argument, StoreError when the database cannot be opened or set up, or
    # holds tables of another shape or schema format (see lib/lease_machines/store/schema.sql).
    def initialize(database, busy_timeout: nil, clock: WALL_CLOCK, clock_policy: :clamp)
      Authority.new(clock_policy: clock_policy) # refuse a bad policy now, not at the first request
      unless KERNEL_RESPOND_TO.bind_call(clock, :call)
        raise TypeError, "clock must respond to call, got #{Store.shown(clock)}"
      end

      @clock = clock
      @clock_policy = clock_policy
      # The claim: the fiber inside a request of this store (a WeakRef, so that a fiber abandoned inside the block of
      # #fenced can be collected and its transaction rolled back; nil between requests), and whether the request
      # runs in the store's own transaction (:own) or the application's (:joined); whether it is running the block of
      # #fenced, or deciding (its clock may call back in); and how many fenced savepoints are open. Read and written
      # with interrupts deferred, the claim under the guard.
      @claim = @claim_kind = nil
      @in_block = @deciding = false
      @depth = 0
      # Makes checking and taking the claim one step between threads.
      @guard = Thread::Mutex.new
      begin
        @adapter = SQLite.new(database, busy_timeout: busy_timeout)
      rescue *SQLite::ERRORS => e
        raise StoreError, "cannot open the lease store at #{SQLite.describe(database)}: #{e.message}"
      end
    end

    # The clock the store decides on (see Store.new).
    attr_reader :clock

    # The underlying SQLite3::Database, for the caller's own tables (inside #fenced, use the block's argument).
    def database = @adapter.connection

    def close = @adapter.close

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

    # Hands the live lease from +owner+ (with its +token+) to +new_owner+, in one transaction: a release followed by
    # a grant to +new_owner+ with a new, greater token, so the old token is fenced. Answers +:transferred+ with the
    # new owner's lease (as Table#transfer does), or the first refusal (and then nothing changed but the clock
    # watermark). The new owner and the TTL are checked as #acquire checks them, refused or not.
    def transfer(resource:, owner:, token:, new_owner:, ttl:, now: nil)
      decide(resource, now) do |authority, at|
        Authority.new(clock_policy: @clock_policy).acquire(owner: new_owner, now: at, ttl: ttl) # the arguments' checks
        released = authority.release(owner: owner, token: token, now: at)
        next released unless released.released?

        granted = authority.acquire(owner: new_owner, now: at, ttl: ttl)
        granted.granted? ? Decision.new(status: :transferred, lease: granted.lease, reason: nil) : granted
      end
    end

    # The resource's committed checkpoint (an empty one for a resource never asked for).
    def checkpoint(resource:)
      name = resource_name(resource)
      query { read(name).first }
    end

    # How many accepted changes the resource's row has seen.
    def revision(resource:)
      name = resource_name(resource)
      query { read(name).last }
    end

    # The highest token the resource's fenced writes have carried, or nil.
    def fence_highest(resource:)
      name = resource_name(resource)
      query { read_fence(name) }
    end

    # Runs the block (given the SQLite3::Database) as a write protected by +token+, in one transaction with the fence
    # check: the block runs only if +token+ is the token of +resource+'s lease, live at +now+ (default: the store's
    # clock, the one its grants were decided on), and at least the highest token written before, which it then
    # becomes. So a holder whose lease went to another grant, was released or expired is refused at once, before any
    # successor has written. When the connection is already inside a transaction (your application's), the check,
    # the mark and the block join it under a savepoint, and commit with it. Raises Fenced (nothing written, the block
    # not run; its +reason+ says why), and ArgumentError for a token this store never issued for +resource+ (above
    # its high-water, or for a resource never granted). Whatever leaves the block other than its return (an
    # exception of any class, +throw+, +break+, an interrupt) rolls its writes back and goes on unchanged. Returns
    # the block's value once committed.
    def fenced(resource:, token:, now: nil)
      raise ArgumentError, "fenced needs a block: the write it protects" unless block_given?

      name = resource_name(resource)
      critical do
        held = done = false
        savepoint = nil
        begin
          guarded do
            recover
            nested = !@claim.nil? # recover let it through: this fiber's own block calls back in
            unless nested
              held = true # before the claim: whatever lands after this reaches the ensure below
              joined = storage { @adapter.in_transaction? }
              take(joined ? :joined : :own)
            end
            if nested || @claim_kind == :joined
              savepoint = "lease_machines_#{@depth += 1}"
              storage { @adapter.savepoint(savepoint) }
            end
          end
          @deciding = true
          check_write(name, token, now)
          @deciding = false
          @in_block = true if held
          result = Thread.handle_interrupt(Object => :immediate) { yield @adapter.connection }
          @in_block = false if held
          if savepoint
            ended_by_block! unless storage { @adapter.in_transaction? }
            begin
              @adapter.release_savepoint(savepoint)
            rescue *SQLite::ERRORS
              ended_by_block! # the savepoint is gone: released, or rolled back to an outer one, inside the block
            end
          else
            ended_by_block! unless storage { @adapter.in_transaction? }
            storage { @adapter.commit }
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

    # +value+ as messages show it: the extension's bounded inspect, safe for a BasicObject or a raising #inspect.
    def self.shown(value) = LeaseMachines.__send__(:_shown, value)

    KERNEL_RESPOND_TO = Kernel.instance_method(:respond_to?)
    private_constant :KERNEL_RESPOND_TO

    private

    # Runs the block with every asynchronous exception deferred until it has returned or raised.
    def critical(&) = Thread.handle_interrupt(Object => :never, &)

    def decide(resource, now)
      name = resource_name(resource)
      critical do
        held = committed = false
        begin
          guarded do
            recover
            if storage { @adapter.in_transaction? }
              raise StoreError, "#{path}: a decision cannot commit inside an open transaction; commit it first"
            end

            held = true # before the claim: whatever lands after this reaches the ensure below
            take(:own)
          end
          @deciding = true
          before, revision = storage { read(name) }
          authority = Authority.restore(before, clock_policy: @clock_policy)
          decision = yield authority, now.nil? ? @clock.call : now
          after = authority.checkpoint
          if decision.accepted?
            storage { write(name, after, revision + 1) }
          elsif after.observed != before.observed || revision.zero?
            # A refusal changes no lease, but the clock watermark it observed stands.
            kept = Checkpoint.new(last_issued: before.last_issued, lease: before.lease, observed: after.observed)
            storage { write(name, kept, revision) }
          end
          storage { @adapter.commit }
          committed = true
          decision
        ensure
          end_claim(committed: committed) if held
        end
      end
    end

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

    # Runs the block holding the guard, which makes checking and taking the claim one step between threads.
    def guarded(&)
      @guard.synchronize(&)
    rescue ThreadError => e
      raise StoreError, "#{path}: the store cannot be used from here (#{e.message}; a signal's trap handler?)"
    end

    # Claims the store for the current fiber: +:own+ opens the store's own transaction (BEGIN, marked as the
    # store's), +:joined+ runs inside the application's. The claim is made before BEGIN, so that an exception landing
    # right after it (a signal's trap handler, which Thread.handle_interrupt does not defer) leaves a claim the next
    # request clears, rolling back only a transaction marked as the store's. Called with the guard held.
    def take(kind)
      @claim = WeakRef.new(Fiber.current)
      @claim_kind = kind
      storage { @adapter.begin_transaction } if kind == :own
    end

    # Ends the claim: rolls back the store's own transaction unless it +committed+, and forgets the request's state.
    def end_claim(committed:)
      @deciding = @in_block = false
      @adapter.rollback_own if @claim_kind == :own && !committed
      @claim = @claim_kind = nil
    end

    def ended_by_block!
      raise StoreError, "#{path}: the block of fenced ended the store's transaction (a COMMIT, ROLLBACK or RELEASE " \
                        "in it); its writes may have been made outside the fence"
    end

    # Clears a claim its fiber can no longer end (the fiber died inside a request, or an exception landed where no
    # ensure could run), rolling back the store's own transaction if that is what is open (never the
    # application's). Raises StoreError while another live fiber is inside a request, or when this fiber's request
    # calls back in while deciding (from its clock). Lets this fiber's own fenced block call back in. Called with the
    # guard held.
    def recover
      raise StoreError, "#{path}: the store is closed" if @adapter.closed?

      @adapter.check_file!
      claim = @claim
      return if claim.nil?

      fiber = begin
        claim.__getobj__
      rescue WeakRef::RefError
        nil
      end
      if fiber.equal?(Fiber.current)
        return if @in_block
        if @deciding
          raise StoreError, "#{path}: the store was called from inside one of its own requests (by its clock?)"
        end
      elsif fiber&.alive?
        raise StoreError, "#{path}: another thread or fiber is inside a request of this store; " \
                          "open one Store per thread"
      end

      end_claim(committed: false)
      @depth = 0
    end

    # Checks +token+ by the core's rule for a fence beside the lease record (Checkpoint#_check_write), at +now+ or
    # the store's clock, then raises the mark. Raises Fenced, ArgumentError (a token never issued) or StoreError (a
    # fence row no history can produce).
    def check_write(name, token, now)
      highest = storage { read_fence(name) }
      checkpoint = storage { read(name).first }
      case (verdict = checkpoint.__send__(:_check_write, highest, token, now.nil? ? @clock.call : now))
      when :admitted then storage { @adapter.write_fence(name, token) }
      when :inconsistent_mark
        raise StoreError, "corrupt fence row for #{name.inspect} in #{path}: highest #{highest} was never issued"
      when :never_issued
        issued = checkpoint.last_issued
        raise ArgumentError, "#{name}: token #{token} was never issued " \
                             "(#{issued ? "the last one was #{issued}" : "no lease was ever granted on it"})"
      else raise Fenced.new(resource: name, token: token, highest: checkpoint.last_issued, reason: verdict)
      end
    end

    # +resource+ as the UTF-8 String the database stores, checked by the extension as every Table command checks it
    # (see "The rules of input"): TypeError or ArgumentError otherwise.
    def resource_name(resource) = LeaseMachines.__send__(:_resource_name, resource)

    # [checkpoint, revision] of the resource's row; an empty checkpoint and revision 0 when there is none. A row no
    # history can produce raises StoreError.
    def read(name)
      row = @adapter.lease_row(name)
      return [Checkpoint.new(last_issued: nil, lease: nil, observed: 0.0), 0] unless row

      owner, token, expires_at, last_issued, observed, revision = row
      unless Integer === revision && !revision.negative?
        corrupt!(name, "revision #{Store.shown(revision)} is not a count")
      end
      if Integer === last_issued && last_issued > revision
        corrupt!(name, "#{last_issued} tokens issued in #{revision} changes") # each grant is a change
      end
      lease = token && Lease.new(owner: owner, token: token, expires_at: expires_at)
      [Checkpoint.new(last_issued: last_issued, lease: lease, observed: observed), revision]
    rescue ArgumentError, TypeError, RangeError, NoMethodError, FloatDomainError => e
      corrupt!(name, e.message)
    end

    # The stored fence mark of +name+, nil without one. A mark no history can produce raises StoreError.
    def read_fence(name)
      highest = @adapter.fence_highest(name)
      return highest if highest.nil? || (highest.is_a?(Integer) && highest.between?(1, MAX_TOKEN))

      raise StoreError, "corrupt fence row for #{name.inspect} in #{path}: highest #{Store.shown(highest)} " \
                        "is not a token"
    end

    def corrupt!(name, what)
      raise StoreError, "corrupt lease row for #{name.inspect} in #{path}: #{what}"
    end

    def write(name, checkpoint, revision)
      lease = checkpoint.lease
      check_token_range!(checkpoint.last_issued)
      if revision > MAX_TOKEN
        raise StoreError, "revision #{revision} does not fit the database's signed 64-bit integers (max #{MAX_TOKEN})"
      end
      @adapter.write_lease(name, lease&.owner, lease&.token, lease&.expires_at, checkpoint.last_issued,
                           checkpoint.observed, revision)
    end

    def check_token_range!(token)
      return if token.nil? || token <= MAX_TOKEN

      raise StoreError, "token #{token} does not fit the database's signed 64-bit integers (max #{MAX_TOKEN})"
    end

    # Runs one of the store's own storage operations; the database driver's errors become StoreError (with the
    # original as cause).
    def storage
      yield
    rescue *SQLite::ERRORS => e
      raise StoreError, "lease store #{path}: #{e.message}"
    end
  end
end
