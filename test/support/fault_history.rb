# frozen_string_literal: true

require "fileutils"
require "json"
require "socket"

# Jepsen-style fault testing for the lease store, with the standard library only: histories of operations recorded
# by many processes (FaultHistory::Recorder), read back and merged (FaultHistory.load), and a checker over them and
# the database's final tables (FaultHistory::Checker). Also what the PostgreSQL store's soak is made of: a worker
# that loops over leases and fenced writes, recording everything (FaultHistory::LeaseWorker), and a TCP forwarder
# (FaultHistory::Link).
#
# A history is a JSON-lines file per process. Each operation is an +invoke+ line written before it starts and an
# outcome line written after it ends, with the same +index+: +ok+ (with its +value+), +fail+ (it certainly did not
# take effect: its +error+ class, +message+ and, for a refused fenced write, its +reason+) or +info+ (the process
# knows the outcome is unknown). An invoke without an outcome (the process was killed) is +info+ as well. Every line
# carries +time+ (CLOCK_MONOTONIC, comparable across the processes of one machine) and +wall+ (CLOCK_REALTIME, the
# clock the PostgreSQL server on the same machine reads). +note+ lines record what is not an operation.
module FaultHistory
  # An operation, as read back: +invoke+ and +outcome+ are its two lines (Hashes, String keys); +type+ is the
  # outcome's ("ok", "fail" or "info", which a missing outcome is too).
  Op = Struct.new(:process, :index, :f, :invoke, :outcome) do
    def type = outcome ? outcome.fetch("type") : "info"
    def ok? = type == "ok"
    def fail? = type == "fail"
    def info? = type == "info"
    def value = outcome&.fetch("value", nil)
    def error = outcome&.fetch("error", nil)
    def [](key) = invoke[key]
    def invoked_at = invoke.fetch("time")
    def completed_at = outcome&.fetch("time")
    def wall = invoke.fetch("wall")
    def to_s = "#{process}##{index} #{f}#{invoke.slice("resource", "token", "seq").values.map { " #{_1}" }.join}"
  end

  # The merged histories: every operation and note, in invoke order (CLOCK_MONOTONIC).
  History = Struct.new(:ops, :notes, :torn_lines)

  def self.monotonic = Process.clock_gettime(Process::CLOCK_MONOTONIC)
  def self.wall = Process.clock_gettime(Process::CLOCK_REALTIME)

  # Reads the histories +paths+ (files, or directories whose *.jsonl files are read). A line that does not parse
  # (torn by a kill; counted) is dropped.
  def self.load(*paths)
    files = paths.flatten.flat_map { File.directory?(_1) ? Dir[File.join(_1, "*.jsonl")].sort : [_1] }
    ops = {}
    notes = []
    torn = 0
    files.each do |file|
      File.foreach(file) do |line|
        entry = begin
          JSON.parse(line)
        rescue JSON::ParserError
          torn += 1
          next
        end
        key = [entry.fetch("process"), entry["index"]]
        case entry.fetch("type")
        when "invoke" then ops[key] = Op.new(key[0], key[1], entry.fetch("f"), entry, nil)
        when "note" then notes << entry
        else (ops[key] || raise(ArgumentError, "#{file}: an outcome without its invoke: #{line}")).outcome = entry
        end
      end
    end
    History.new(ops.values.sort_by { [_1.invoked_at, _1.process, _1.index] }, notes, torn)
  end

  # One process's history file, appended line by line (each line one write, flushed, not fsynced: a killed process
  # loses nothing it wrote, a crashed machine might). Thread-safe.
  class Recorder
    # The fields every line has.
    RESERVED = %i[process time wall].freeze

    attr_reader :path, :process

    def initialize(path, process:)
      FileUtils.mkdir_p(File.dirname(path))
      @path = path
      @process = process
      @file = File.open(path, "a")
      @file.sync = true
      @index = 0
      @lock = Mutex.new
    end

    # Records the start of operation +f+ with its arguments; returns its index, for the outcome.
    def invoke(f, **fields)
      @lock.synchronize do
        @index += 1
        write(type: "invoke", index: @index, f: f, **fields)
        @index
      end
    end

    def ok(index, value = nil) = complete(index, "ok", value: value)

    # The operation certainly did not take effect.
    def fail(index, error:, message: nil, **fields) = complete(index, "fail", error: error, message: message, **fields)

    # Whether the operation took effect is unknown.
    def info(index, error: nil, message: nil) = complete(index, "info", error: error, message: message)

    def note(f, **fields) = @lock.synchronize { write(type: "note", f: f, **fields) }

    # Runs the block as operation +f+: ok with the block's value, fail or info as +classify+ (given the exception)
    # answers (default: fail, with the exception's class and message), the exception then re-raised.
    def operation(f, classify: nil, **fields)
      index = invoke(f, **fields)
      value = yield
      ok(index, value)
      value
    rescue StandardError => e
      kind, extra = classify ? classify.call(e) : [:fail, {}]
      kind == :info ? info(index, error: e.class.name, message: e.message) : fail(index, **failure(e), **extra)
      raise
    end

    def close = @file.close

    private

    def failure(error) = { error: error.class.name, message: error.message }

    def complete(index, type, **fields) = @lock.synchronize { write(type: type, index: index, **fields) }

    def write(entry)
      reserved = entry.keys & RESERVED
      raise ArgumentError, "#{reserved.join(", ")}: the history's own fields" unless reserved.empty?

      @file.write(JSON.generate({ process: @process, **entry, time: FaultHistory.monotonic, wall: FaultHistory.wall }),
                  "\n")
    end
  end

  # Checks the lease store's histories (worker operations, and the nemesis's, process "nemesis") against the
  # database's final tables:
  #
  # - +leases+: resource => { "token", "last_issued" } (lease_machines_leases)
  # - +fences+: resource => highest (lease_machines_fences)
  # - +writes+: [{ "id", "resource", "token", "worker", "seq", "at" }] (the application's table, +at+ the server's
  #   clock_timestamp() at the INSERT)
  #
  # Decisions are operations +acquire+, +reacquire+, +renew+, +release+, +transfer+ (invoke: resource, owner, ttl,
  # token; ok value: status, token, expires_at), fenced writes are +write+ (invoke: resource, owner, token, seq). A
  # worker cut off from the server records a note +stubborn+ (resource, token, expires_at): it goes on writing with
  # that token. The nemesis's operations are +kill+, +restart+ and +cut+/+heal+.
  #
  # For a store on Redis with its fence in PostgreSQL: +floor+ is the token epoch's floor (tokens issued since the
  # server last restarted are above it; the grants below it are not counted against +leases+); a +restart+ with
  # +lossy+ (a server that kept nothing) may have lost live leases, so two leases that overlap across one are
  # counted (+lost+), not a violation, and so are the writes refused to the holders of the leases it lost; and with
  # +locked_leases+ false (a fenced write does not lock the lease, which lives in another database) a write may
  # commit after a newer token's grant, before that token's first write: the fence's order is checked instead.
  #
  # For a store whose database fails over to a standby that lagged (PostgreSQL with asynchronous replication), the
  # writes are in that database too: with +lossy_writes+, a write that returned ok before a lossy +restart+ ended (the
  # standby stopped receiving at its start, or earlier: it lagged) may be missing from the table (counted: +writes
  # lost+), as the grants and the fence marks it came with may be.
  class Checker
    # Seconds of slack for Float arithmetic on the server's epoch clock (one ulp near 2**31 is 2.4e-7).
    EPSILON = 1e-6
    DECISIONS = %w[acquire reacquire renew release transfer].freeze
    GRANTS = %w[acquire reacquire transfer].freeze
    # How long a worker may fail every operation while no fault is on (a store that cannot recover is a bug too),
    # and how long after a fault ends (the server restarted, the host healed) it counts as on.
    STUCK = 1.0
    GRACE = 1.0
    # The errors a worker may see: anything else (an ArgumentError for a token the store issued, ...) is a bug.
    EXPECTED_ERRORS = /\A(LeaseMachines::(StoreError|Fenced)|PG::\w+|Mysql2::Error(::\w+)?)\z/

    Result = Struct.new(:counts, :violations) do
      def summary
        c = counts
        lossy = c[:lossy].positive? ? " (lossy=#{c[:lossy]})" : ""
        lost = c[:lossy].positive? ? "; leases lost=#{c[:lost]}, their writes refused=#{c[:refused_after_loss]}" : ""
        lost += ", writes lost=#{c[:writes_lost]}" if c[:writes_lost].positive?
        "faults: kills=#{c[:kills]} restarts=#{c[:restarts]}#{lossy} cuts=#{c[:cuts]}; decisions=#{c[:decisions]} " \
          "(grants=#{c[:grants]}) fenced writes=#{c[:writes]} (refused=#{c[:refused]}, unknown=#{c[:unknown]}) " \
          "stale writes refused=#{c[:stale_refused]} (by the fence=#{c[:stale_fenced]})#{lost}; " \
          "violations=#{violations.size}"
      end
    end

    def initialize(history, leases:, fences:, writes:, floor: 0, locked_leases: true, lossy_writes: false)
      @history = history
      @leases = leases
      @fences = fences
      @writes = writes.sort_by { _1.fetch("id") }
      @floor = floor
      @locked_leases = locked_leases
      @lossy_writes = lossy_writes
      @writes_lost = 0
      @violations = []
      @lost = []
      @lossy = history.ops.select { _1.process == "nemesis" && _1.f == "restart" && _1["lossy"] }
    end

    def check
      ops = @history.ops
      @decisions = ops.select { DECISIONS.include?(_1.f) }
      @grants = @decisions.select { granted?(_1) }
      @write_ops = ops.select { _1.f == "write" }
      resources = (@grants.map { _1["resource"] } + @writes.map { _1["resource"] } + @leases.keys).uniq.sort
      resources.each do |resource|
        decisions = @decisions.select { _1["resource"] == resource }
        grants = decisions.select { granted?(_1) }
        check_unique_tokens(resource, grants)
        check_stored(resource, grants, decisions)
        check_real_time_order(resource, grants)
        check_exclusive_leases(resource, grants, decisions)
        check_write_order(resource, @writes.select { _1["resource"] == resource })
        check_writes_before_successors(resource, grants) if @locked_leases
      end
      check_write_provenance
      stale = check_stubborn_writes
      check_progress
      check_errors
      Result.new(counts(stale), @violations)
    end

    private

    def violation(message) = @violations << message

    # Whether +op+ is a decision that returned a new token.
    def granted?(op) = op.ok? && %w[granted transferred].include?(op.value["status"])

    # No token is granted twice on a resource.
    def check_unique_tokens(resource, grants)
      grants.group_by { _1.value["token"] }.each do |token, same|
        violation("#{resource}: token #{token} granted #{same.size} times (#{same.join(", ")})") if same.size > 1
      end
    end

    # Every grant returned ok is in the database (at or below its token high-water), and the tokens the database
    # issued are all explained: granted ok, or by a grant whose outcome is unknown. Only the tokens above the floor
    # are counted: the ones issued since the token epoch began.
    def check_stored(resource, grants, decisions)
      last_issued = @leases.dig(resource, "last_issued") || 0
      grants = grants.select { _1.value["token"] > @floor }
      grants.select { _1.value["token"] > last_issued }.each do |op|
        violation("#{resource}: #{op} returned token #{op.value["token"]}, above the stored last_issued #{last_issued}")
      end
      unknown = decisions.count { GRANTS.include?(_1.f) && _1.info? }
      unexplained = [last_issued - @floor, 0].max - grants.map { _1.value["token"] }.uniq.size
      return if unexplained <= unknown

      violation("#{resource}: #{last_issued} tokens issued, #{unexplained} of them by no grant returned ok, with only " \
                "#{unknown} grants of unknown outcome")
    end

    # A grant that returned before another was asked for has the smaller token.
    def check_real_time_order(resource, grants)
      done = grants.sort_by(&:completed_at)
      highest = nil
      at = 0
      grants.sort_by(&:invoked_at).each do |op|
        while at < done.size && done[at].completed_at < op.invoked_at
          highest = done[at] if highest.nil? || done[at].value["token"] > highest.value["token"]
          at += 1
        end
        next if highest.nil? || op.value["token"] > highest.value["token"]

        violation("#{resource}: #{op} got token #{op.value["token"]} after #{highest} had returned token " \
                  "#{highest.value["token"]}")
      end
    end

    # On the server's clock, no lease starts before an earlier token's lease has ended, unless a lossy restart came
    # between the two grants (the earlier lease lost: counted).
    def check_exclusive_leases(resource, grants, decisions)
      ordered = grants.sort_by { _1.value["token"] }
      ordered.each_with_index do |earlier, i|
        finish = lease_end(earlier, decisions)
        ordered[(i + 1)..].each do |later|
          next if start(later) >= finish - EPSILON
          next @lost << earlier if lost?(earlier, later)

          violation("#{resource}: #{later} (token #{later.value["token"]}) started at #{start(later)}, before " \
                    "token #{earlier.value["token"]}'s lease (#{earlier}) ended at #{finish}")
        end
      end
    end

    # Whether a lossy restart was under way at some moment after +earlier+ was asked for and before +later+ returned:
    # it ended after the one and began before the other (a restart that spans a replica cut off, the old primary
    # granting on meanwhile, loses what it granted from the cut on).
    def lost?(earlier, later) = @lossy.any? { across?(_1, earlier.invoked_at, later.completed_at) }

    # Whether the nemesis's +restart+ was under way at some moment between +from+ and +to+.
    def across?(restart, from, to) = restart.invoked_at < to && (restart.completed_at || Float::INFINITY) > from

    # A lower bound of when the grant's lease ended on the server's clock: its latest expiry an ok answer gave, or
    # earlier, if it may have been released or transferred, or superseded by its owner's next grant, then: that
    # grant's instant on the server's clock where it was granted (Store decides on the row as its last commit left
    # it, with an instant carried from the server's last answer, which may be a little before the invocation), else
    # the invocation's (the server decides a request after it was invoked: the invoking process's wall clock, the
    # server's on one machine).
    def lease_end(grant, decisions)
      token = grant.value["token"]
      owner = grant.value["owner"]
      later = decisions.select { _1.wall > grant.wall }
      renewals = later.select { _1["token"] == token && _1.f == "renew" && _1.ok? && _1.value["status"] == "renewed" }
      expiry = [grant, *renewals].map { _1.value["expires_at"] }.max
      ends = later.filter_map do |op|
        if op["token"] == token && %w[release transfer].include?(op.f)
          ended(op) if op.info? || (op.ok? && op.value["status"] != "rejected")
        elsif op["owner"] == owner && GRANTS.include?(op.f)
          ended(op) if op.info? || granted?(op)
        end
      end
      [expiry, *ends].min
    end

    # The server's clock when the grant was decided.
    def start(grant) = grant.value["expires_at"] - grant["ttl"]

    # When +op+ ended a lease on the server's clock, at the latest: its own instant where it was a grant, else when it
    # was invoked.
    def ended(op) = granted?(op) ? [start(op), op.wall].min : op.wall

    # Committed writes (in id order, which is commit order for one resource: they serialize on its row's lock) carry
    # tokens that never decrease, one holder at a time (no token's writes around another's), the fence's high-water
    # their highest token.
    def check_write_order(resource, writes)
      writes.each_cons(2) do |a, b|
        next if b["token"] >= a["token"]

        violation("#{resource}: write #{b["id"]} (token #{b["token"]}) committed after write #{a["id"]} " \
                  "(token #{a["token"]})")
      end
      seen = {}
      writes.chunk_while { _1["token"] == _2["token"] }.each do |run|
        token = run.first["token"]
        if seen[token]
          violation("#{resource}: the writes of token #{token} (ids #{seen[token]}..#{run.last["id"]}) interleave " \
                    "with another token's")
        end
        seen[token] = run.first["id"]
      end
      highest = @fences[resource]
      expected = writes.map { _1["token"] }.max
      return if highest == expected

      violation("#{resource}: the fence's high-water is #{highest.inspect}, the highest written token #{expected.inspect}")
    end

    # No write of a token committed after a grant of a greater one was decided (the server's clock: the row's
    # clock_timestamp() against the grant's instant).
    def check_writes_before_successors(resource, grants)
      starts = grants.map { [_1.value["token"], start(_1), _1] }.sort_by(&:first)
      @writes.each do |row|
        next unless row["resource"] == resource

        later = starts.select { |token, _, _| token > row["token"] }.min_by { _2 } or next
        next if row["at"] <= later[1] + EPSILON

        violation("#{resource}: write #{row["id"]} (token #{row["token"]}, worker #{row["worker"]}) landed at " \
                  "#{row["at"]}, after token #{later[0]} was granted at #{later[1]} (#{later[2]})")
      end
    end

    # Every row is an attempted write of a token its worker was granted; every ok write is a row; a write that
    # failed is not.
    def check_write_provenance
      attempts = @write_ops.to_h { [[_1["owner"], _1["seq"]], _1] }
      granted = @grants.to_h { [[_1["resource"], _1.value["owner"], _1.value["token"]], true] }
      rows = {}
      @writes.each do |row|
        op = attempts[[row["worker"], row["seq"]]]
        rows[[row["worker"], row["seq"]]] = row
        if op.nil? || op["token"] != row["token"] || op["resource"] != row["resource"]
          violation("write #{row["id"]} (#{row.slice("resource", "token", "worker", "seq")}) was never attempted")
        elsif op.fail?
          violation("write #{row["id"]} committed, but #{op} failed: #{op.error}: #{op.outcome["message"]}")
        end
        unless granted[[row["resource"], row["worker"], row["token"]]]
          violation("write #{row["id"]}: token #{row["token"]} was never granted ok to worker #{row["worker"]}")
        end
      end
      @write_ops.select(&:ok?).each do |op|
        next if rows[[op["owner"], op["seq"]]]
        lost = @lossy_writes && @lossy.any? { (_1.completed_at || Float::INFINITY) > op.completed_at }
        next @writes_lost += 1 if lost

        violation("#{op} returned ok but is not in the table")
      end
    end

    # A worker cut off while it held a lease keeps writing with its token: every attempt made after the lease's
    # expiry (on the invoking process's wall clock, the server's on one machine) is refused (or its outcome
    # unknown) and absent from the table (#check_write_provenance). Returns those attempts.
    def check_stubborn_writes
      @history.notes.select { _1["f"] == "stubborn" }.flat_map do |note|
        late = @write_ops.select do |op|
          op.process == note["process"] && op["token"] == note["token"] && op.wall >= note["expires_at"]
        end
        late.each do |op|
          violation("#{op}: a write after its lease expired at #{note["expires_at"]} returned ok") if op.ok?
        end
      end
    end

    # No worker fails every operation for STUCK seconds while no fault is on (a server restart, or its host's cut,
    # and GRACE seconds after; a cut-off worker's writes after its note fail by design).
    def check_progress
      nemesis = @history.ops.select { _1.process == "nemesis" }
      restarts = nemesis.select { _1.f == "restart" }.map { [_1.invoked_at, (_1.completed_at || Float::INFINITY) + GRACE] }
      heals = nemesis.select { _1.f == "heal" && _1.ok? }
      @history.ops.reject { _1.process == "nemesis" }.group_by(&:process).each do |process, ops|
        cuts = nemesis.select { _1.f == "cut" && _1["worker"] == process }.map do |cut|
          heal = heals.find { _1["worker"] == process && _1.invoked_at > cut.invoked_at }
          [cut.invoked_at, (heal&.completed_at || Float::INFINITY) + GRACE]
        end
        stubborn = @history.notes.find { _1["f"] == "stubborn" && _1["process"] == process }&.fetch("time")
        failing = nil
        ops.each do |op|
          break if stubborn && op.invoked_at > stubborn

          if op.ok? || (restarts + cuts).any? { |from, to| op.invoked_at.between?(from, to) }
            failing = nil
            next
          end
          failing ||= op
          next unless op.invoked_at - failing.invoked_at > STUCK

          violation("#{process}: every operation failed from #{failing} to #{op}, " \
                    "#{(op.invoked_at - failing.invoked_at).round(1)} s with no fault on (#{op.error}: " \
                    "#{op.outcome&.fetch("message")})")
          break
        end
      end
    end

    def check_errors
      @history.ops.each do |op|
        next if op.error.nil? || EXPECTED_ERRORS.match?(op.error)

        violation("#{op}: unexpected #{op.error}: #{op.outcome["message"]}")
      end
    end

    # The refused writes of tokens granted before a lossy restart, tried after it.
    def refused_after_loss
      grants = @grants.group_by { [_1["resource"], _1.value["token"]] }.transform_values(&:first) # the earliest
      @write_ops.count do |op|
        next false unless op.fail? && op.error == "LeaseMachines::Fenced"

        grant = grants[[op["resource"], op["token"]]]
        grant && @lossy.any? { across?(_1, grant.invoked_at, op.invoked_at) }
      end
    end

    def counts(stale)
      nemesis = @history.ops.select { _1.process == "nemesis" && _1.ok? }.map(&:f).tally
      {
        kills: nemesis.fetch("kill", 0), restarts: nemesis.fetch("restart", 0), cuts: nemesis.fetch("cut", 0),
        decisions: @decisions.count(&:ok?), grants: @grants.size, writes: @writes.size,
        refused: @write_ops.count { _1.fail? && _1.error == "LeaseMachines::Fenced" },
        unknown: @history.ops.count { _1.info? && _1.process != "nemesis" }, stale_refused: stale.count(&:fail?),
        stale_fenced: stale.count { _1.error == "LeaseMachines::Fenced" }, lossy: @lossy.size, lost: @lost.uniq.size,
        refused_after_loss: refused_after_loss, writes_lost: @writes_lost
      }
    end
  end

  # A worker process of the lease soak: loops over +resources+ on its own Store (+url+; for a store on Redis, its
  # +fence+ is the application's PostgreSQL database), acquiring (or reacquiring) a lease, writing through the fence
  # into the application's table writes(resource, token, worker, seq), renewing, releasing (or transferring, or
  # abandoning it to expire), and records every operation in its history (DIR/PROCESS.jsonl). +owner+ is its owner
  # id (one per process: a restarted worker is a new owner) and the +worker+ column of its writes. It runs until
  # killed, or until its parent (the pid +parent+) is gone.
  #
  # With +control+ (a directory), the worker is the one the nemesis cuts off: once the file +cut-request+ appears
  # there and it holds a lease, it renews it, notes it (+stubborn+), writes +ready+ (JSON: the lease) and waits for
  # +cut+; from then on it tries to write with that token every 0.1 s, forever. While a cut is requested its leases
  # have a TTL of CUT_TTL, so that a loaded machine's pauses do not let each one expire before it is renewed.
  class LeaseWorker
    INSERT = "INSERT INTO writes (resource, token, worker, seq) VALUES ($1, $2, $3, $4) RETURNING id"
    # What a write's table looks like (the id orders its commits, +at+ is the server's clock at the insert).
    TABLE = <<~SQL
      CREATE TABLE writes (
        id bigserial PRIMARY KEY, resource text NOT NULL, token bigint NOT NULL, worker bigint NOT NULL,
        seq bigint NOT NULL, at double precision NOT NULL DEFAULT extract(epoch FROM clock_timestamp())
      )
    SQL
    # The same on MySQL (MariaDB), the fenced block's connection a Mysql2::Client: +at+ is SYSDATE(6), the clock
    # when the statement runs (NOW() is the statement's start), given by the INSERT.
    MYSQL_INSERT = "INSERT INTO writes (resource, token, worker, seq, at) " \
                   "VALUES ('%s', %d, %d, %d, UNIX_TIMESTAMP(SYSDATE(6)))"
    MYSQL_TABLE = <<~SQL
      CREATE TABLE writes (
        id bigint AUTO_INCREMENT PRIMARY KEY, resource varchar(255) NOT NULL, token bigint NOT NULL,
        worker bigint NOT NULL, seq bigint NOT NULL, at double NOT NULL
      ) ENGINE=InnoDB
    SQL
    # The owner a transfer hands the lease to: nobody (no worker's owner id), so it expires.
    NOBODY = 0
    # The TTL (seconds) of the leases a worker takes while a cut is requested of it.
    CUT_TTL = 2.0
    # How a worker's history records an exception: info when the store says a commit's outcome is unknown, else
    # fail (with a refused write's reason).
    CLASSIFY = lambda do |error|
      unknown = error.is_a?(LeaseMachines::StoreError) && error.message.include?("whether it committed is unknown")
      [unknown ? :info : :fail, error.is_a?(LeaseMachines::Fenced) ? { reason: error.reason } : {}]
    end

    # The worker described by JSON in the environment variable +name+ (for a spawned process).
    def self.from_env(name = "FAULT_WORKER")
      new(**JSON.parse(ENV.fetch(name), symbolize_names: true))
    end

    def initialize(url:, process:, owner:, resources:, dir:, seed:, fence: nil, ttl: [0.3, 1.0], control: nil,
                   parent: nil)
      @url = url
      @fence = fence
      @process = process
      @owner = owner
      @resources = resources
      @dir = dir
      @random = Random.new(seed)
      @ttl = Range.new(*ttl)
      @control = control
      @parent = parent
      @held = nil
      @seq = 0
    end

    def run
      require "lease_machines/store"
      @history = Recorder.new(File.join(@dir, "#{@process}.jsonl"), process: @process)
      @store = open_store
      loop do
        exit!(0) if @parent && Process.ppid != @parent # orphaned: the soak is over
        @stubborn ? stubborn_write : step
      end
    end

    private

    # Every event kept (no retention), so that the soak can audit the whole event log at its end.
    def open_store
      LeaseMachines::Store.new(@url, **(@fence ? { fence: @fence } : {}), keep_events: 1_000_000)
    rescue LeaseMachines::StoreError
      sleep 0.1
      retry
    end

    def step
      return take_lease if @held.nil?
      # Asked to be cut off: renewed first, so that the lease's expiry is the one it notes.
      return (go_stubborn if renew) if cut_requested?

      @random.rand(1..3).times { break unless write && @held }
      return if @held.nil?

      choice = @random.rand
      if choice < 0.35 then renew
      elsif choice < 0.6 then release
      elsif choice < 0.65 then transfer
      elsif choice < 0.75 then @held = nil # abandoned: it expires
      end
    end

    def take_lease
      resource = @resources.sample(random: @random)
      kind = @random.rand < 0.25 ? :reacquire : :acquire
      ttl = cut_requested? ? CUT_TTL : @random.rand(@ttl).round(3)
      decision = recorded(kind, resource: resource, ttl: ttl) do
        @store.public_send(kind, resource: resource, owner: @owner, ttl: ttl)
      end
      if decision.is_a?(LeaseMachines::Decision) && decision.granted?
        @held = { resource: resource, token: decision.lease.token, ttl: ttl }
      else
        pause(0.01..0.05)
      end
    end

    def renew
      resource, token, ttl = @held.values_at(:resource, :token, :ttl)
      decision = recorded(:renew, resource: resource, token: token, ttl: ttl) do
        @store.renew(resource: resource, owner: @owner, token: token, ttl: ttl)
      end
      return false unless decision.is_a?(LeaseMachines::Decision)

      @held[:expires_at] = decision.lease.expires_at if decision.renewed?
      @held = nil if decision.rejected?
      decision.renewed?
    end

    def release
      resource, token = @held.values_at(:resource, :token)
      recorded(:release, resource: resource, token: token) do
        @store.release(resource: resource, owner: @owner, token: token)
      end
      @held = nil
    end

    def transfer
      resource, token, ttl = @held.values_at(:resource, :token, :ttl)
      recorded(:transfer, resource: resource, token: token, ttl: ttl, new_owner: NOBODY) do
        @store.transfer(resource: resource, owner: @owner, token: token, new_owner: NOBODY, ttl: ttl)
      end
      @held = nil
    end

    # One fenced write with the held token (its row's id); false when it was refused or failed.
    def write
      resource, token = @held.values_at(:resource, :token)
      seq = @seq += 1
      result = recorded(:write, resource: resource, token: token, seq: seq) do
        @store.fenced(resource: resource, token: token) { |connection| insert(connection, resource, token, seq) }
      end
      @held = nil if result.is_a?(LeaseMachines::Fenced) && !@stubborn
      return false if result.is_a?(Exception)

      pause(0.002..0.02)
      true
    end

    # The write's row inserted on the fenced block's +connection+ (a PG::Connection or a Mysql2::Client): its id.
    def insert(connection, resource, token, seq)
      return Integer(connection.exec_params(INSERT, [resource, token, @owner, seq]).getvalue(0, 0)) \
        if connection.respond_to?(:exec_params)

      connection.query(format(MYSQL_INSERT, connection.escape(resource), token, @owner, seq))
      connection.last_id
    end

    # Runs the block as operation +f+ of this worker, recorded: returns its result (a Decision, a write's id), or
    # the exception that ended it (after a pause, unless the fence refused it). A StoreError saying the commit's
    # outcome is unknown is recorded as info.
    def recorded(f, **fields)
      result = nil
      @history.operation(f.to_s, classify: CLASSIFY, owner: @owner, **fields) do
        result = yield
        shown(result)
      end
      result
    rescue StandardError => e
      pause(0.02..0.1) unless e.is_a?(LeaseMachines::Fenced)
      e
    end

    # What the history records of a result: a Decision's status and lease.
    def shown(result)
      return result unless result.is_a?(LeaseMachines::Decision)

      lease = result.lease
      { status: result.status, reason: result.reason, token: lease&.token, owner: lease&.owner,
        expires_at: lease&.expires_at }
    end

    def pause(range) = sleep(@random.rand(range))

    def cut_requested? = @control && File.exist?(File.join(@control, "cut-request"))

    # Renewed, holding the lease the nemesis will cut it off with: notes it, says so, and waits for the cut.
    def go_stubborn
      lease = @held.slice(:resource, :token, :expires_at)
      @history.note("stubborn", **lease)
      File.write(File.join(@control, "ready.tmp"), JSON.generate(process: @process, owner: @owner, **lease))
      File.rename(File.join(@control, "ready.tmp"), File.join(@control, "ready"))
      sleep 0.01 until File.exist?(File.join(@control, "cut"))
      @stubborn = true
    end

    def stubborn_write
      write
      sleep 0.1
    end
  end

  # A TCP forwarder in a process of its own: it accepts on +listen+ (host, port; port 0 picks one) and forwards each
  # connection to +target+ (host, port), both ways, until either end closes it. For a server that listens where
  # clients cannot reach it (the soak's PostgreSQL on 127.0.0.1, and its workers in network namespaces of their own).
  class Link
    attr_reader :host, :port, :pid

    def initialize(listen:, target:)
      @server = TCPServer.new(*listen)
      @host = listen.first
      @port = @server.addr[1]
      @target = target
    end

    def start
      @pid = fork { serve }
      @server.close
      self
    end

    def stop
      return unless @pid

      Process.kill(:KILL, @pid)
      Process.wait(@pid)
      @pid = nil
    end

    private

    def serve
      parent = Process.ppid
      peers = {}
      loop do
        exit!(0) if Process.ppid != parent # orphaned
        (IO.select([@server, *peers.keys], nil, nil, 1) || [[]])[0].each do |io|
          io.equal?(@server) ? accept(peers) : forward(io, peers)
        end
      end
    end

    def accept(peers)
      client = @server.accept
      upstream = TCPSocket.new(*@target)
      peers[client] = upstream
      peers[upstream] = client
    rescue SystemCallError
      client&.close
    end

    def forward(io, peers)
      other = peers[io] or return # closed with its peer earlier in this round
      other.write(io.read_nonblock(65_536))
    rescue IO::WaitReadable
      nil
    rescue IOError, SystemCallError
      other = peers.delete(io)
      peers.delete(other)
      [io, other].each { _1&.close unless _1&.closed? }
    end
  end
end
