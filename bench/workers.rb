# frozen_string_literal: true

# Many worker processes deciding at once: decisions per second and each decision's latency (p50, p99, the longest) of
# the lease store against the one-statement locks of bench/stores.rb, from 1, 4, 16 and 64 processes, each on a
# resource of its own ("distinct") and all on one resource ("one"):
#
#   bin/rake bench:workers   # or: bin/ruby bench/workers.rb
#   STORES=postgresql BENCH_WORKERS=1,4 BENCH_WORKERS_SECONDS=1 bin/rake bench:workers   # a short run of some rows
#
# - SQLite: LeaseMachines::Store and the one-statement SQLite upsert (bench/stores_locks.rb's SQLiteUpsertLock) on
#   one file each (WAL, synchronous FULL): one writer at a time, the others waiting in the same busy handler with
#   the same busy timeout (BUSY_TIMEOUT);
# - PostgreSQL over its Unix socket and over TCP 127.0.0.1 (a throwaway PostgresCluster under tmp/, fsync on,
#   max_connections raised for 64 workers and more): the store, the one-statement upsert in ShedLock's style
#   (PostgreSQLUpsertLock) and with_advisory_lock (ActiveRecord; tried once, timeout_seconds: 0, so that a busy lock
#   is refused as the others' are rather than slept on and tried again);
# - Redis (a throwaway redis-server that keeps nothing): the store against SET NX PX + compare-and-delete
#   (RedisLock).
#
# How: for each count of workers, the parent forks the workers once the server is up; each opens its own
# connection (or store) after the fork, says it is ready on its pipe, and waits on a shared gate (a pipe's read end)
# that the parent closes once all are ready, so that they start together. Each then runs lock cycles (acquire, then
# release: two decisions) as fast as it can for BENCH_WORKERS_WARMUP seconds (default 0.5, not counted), then for
# BENCH_WORKERS_SECONDS (default 5), timing each decision with the monotonic clock. On one resource, an acquire that
# is refused (the lease is another worker's) is a decision and an attempt, not a cycle: the tables give decisions
# and lock cycles (granted and released) per second. Each worker sends back its counts, its CPU time and up to
# SAMPLE of its latencies (a uniform sample) through its pipe (Marshal); the parent adds the rates and takes the
# quantiles over all workers' samples, each latency weighing as many decisions as it stands for. The store and the
# locks it is compared with run in turn at each count, so that they share the machine's moments.
#
# Beside the figures: the workers' CPU time as a share of the machine's (all cores), how long tasks waited for a CPU
# (PSI), and on PostgreSQL the WAL flushes per decision (pg_stat_wal: below 1, commits share a flush). 64 processes
# on a machine of few cores are oversubscribed on purpose: that is where a lock's cost per decision on the client
# and the server shows. Target (printed, never asserted): on PostgreSQL at 16 and 64 workers on distinct resources,
# the store's lock cycles per second at least TARGET times the upsert's. with_advisory_lock has none: it writes
# nothing. The last things printed are the Markdown tables and where each lock stops scaling; the chart goes to
# docs/performance-workers.svg (BENCH_WORKERS_SVG: elsewhere).

require "fileutils"
require_relative "support"
require_relative "stores"
require "lease_machines/store"

module Bench
  module Workers
    COUNTS = ENV.fetch("BENCH_WORKERS", "1,4,16,64").split(",").map { Integer(_1.strip) }.sort.uniq
    SECONDS = Float(ENV.fetch("BENCH_WORKERS_SECONDS", "5"))
    WARMUP = Float(ENV.fetch("BENCH_WORKERS_WARMUP", "0.5"))
    SELECTED = Bench.selected_stores(%i[sqlite postgresql redis])
    SVG_PATH = ENV.fetch("BENCH_WORKERS_SVG", File.expand_path("../docs/performance-workers.svg", __dir__))
    MODES = %i[distinct one].freeze
    # The most latencies a worker sends back.
    SAMPLE = 20_000
    # Seconds a decision waits for another's lock (SQLite's busy timeout, PostgreSQL's lock_timeout in the store).
    BUSY_TIMEOUT = 5.0
    TARGET = 0.8
    TARGET_COUNTS = [16, 64].freeze
    # Room for 64 workers and more on one server (PostgresCluster's default is 100).
    MAX_CONNECTIONS = 200

    def self.now = Process.clock_gettime(Process::CLOCK_MONOTONIC)

    # A lock cycle timed decision by decision, for a lock with #acquire and #release on the worker's resource: each
    # decision's seconds go into +latencies+; answers whether the lease was granted (and then released).
    module Timed
      def timed_cycle(latencies)
        started = Workers.now
        granted = acquire
        acquired = Workers.now
        latencies << (acquired - started)
        return false unless granted

        released = release
        latencies << (Workers.now - acquired)
        raise "#{self.class}: the holder's release was refused" unless released

        true
      end
    end

    # One of bench/stores.rb's locks on the worker's resource, as the worker's owner ("bench-N": the same value in
    # each lock's own column or key).
    module WorkerOwner
      def initialize(target, resource:, owner:)
        super(target, resource: resource)
        @owner = "bench-#{owner}"
      end
    end

    # LeaseMachines::Store as a worker uses it: its own store (its own connection), its own owner.
    class StoreWorkerLock
      include Timed

      def initialize(database, resource:, owner:, **options)
        @store = LeaseMachines::Store.new(database, **options)
        @resource = resource
        @owner = owner
      end

      def acquire
        decision = @store.acquire(resource: @resource, owner: @owner, ttl: Stores::TTL)
        @token = decision.lease.token if decision.granted?
        decision.granted?
      end

      def release = @store.release(resource: @resource, owner: @owner, token: @token).released?
      def close = @store.close
    end

    # bench/stores.rb's SQLite upsert, its statements on the worker's resource and owner.
    class SQLiteUpsertWorkerLock < Stores::SQLiteUpsertLock
      include Timed

      def initialize(path, resource:, owner:)
        super(path, resource: resource, busy_timeout: BUSY_TIMEOUT)
        @owner = owner
      end

      def acquire
        @acquire.execute(@resource, @owner, LeaseMachines::Store::WALL_CLOCK.call, Stores::TTL)
        @db.changes == 1
      end

      def release
        @release.execute(@resource, @owner)
        @db.changes == 1
      end
    end

    # bench/stores.rb's PostgreSQL upsert (ShedLock's SQL), on the worker's resource and owner. Its connection keeps
    # bench/stores.rb's count of round trips (a Ruby call around each, well under a microsecond), as the Redis one's.
    class PostgreSQLUpsertWorkerLock < Stores::PostgreSQLUpsertLock
      include Timed
      include WorkerOwner

      def acquire = @connection.exec_params(ACQUIRE, [@resource, @ttl, @owner]).cmd_tuples == 1
      def release = @connection.exec_params(RELEASE, [@resource, @owner]).cmd_tuples == 1
    end

    # bench/stores.rb's SET NX PX + compare-and-delete, on the worker's resource and owner.
    class RedisWorkerLock < Stores::RedisLock
      include Timed
      include WorkerOwner

      def acquire = @client.call("SET", @resource, @owner, "NX", "PX", @ttl) == "OK"
      def release = @client.call("EVAL", RELEASE, 1, @resource, @owner) == 1
    end

    # bench/stores.rb's with_advisory_lock, tried once: its two decisions (pg_try_advisory_lock, pg_advisory_unlock)
    # timed from the call to the block and from the block to the return.
    class AdvisoryWorkerLock < Stores::AdvisoryLock
      def timed_cycle(latencies)
        started = Workers.now
        acquired = nil
        @model.with_advisory_lock(@resource, timeout_seconds: 0) { acquired = Workers.now }
        finished = Workers.now
        latencies << ((acquired || finished) - started)
        return false unless acquired

        latencies << (finished - acquired)
        true
      end
    end

    # PostgresCluster with room for every worker's connection (a later line of postgresql.conf wins).
    class Cluster < PostgresCluster
      private

      def settings(listen) = "#{super}max_connections = #{MAX_CONNECTIONS}\n"
    end

    # The locks timed together (each [name, kind, a proc of the resource and the owner that opens it in a worker]),
    # and how they are reached; +wal+ is the URL whose server's WAL flushes are counted (nil: none).
    Group = Data.define(:database, :over, :locks, :wal) do
      def title = over ? "#{database}, #{over}" : database
    end

    # One run's figures: rates per second (over all workers), latencies in seconds, shares of the machine.
    Row = Data.define(:group, :name, :kind, :workers, :mode, :decisions, :cycles, :p50, :p99, :max, :errors,
                      :error, :cpu, :pressure, :flushes)

    class Run < Bench::ServerRun
      def initialize = super("workers")

      def call
        FileUtils.mkdir_p(@dir)
        header
        puts "workers:   #{COUNTS.join(", ")} processes (BENCH_WORKERS), each #{WARMUP} s unmeasured " \
             "(BENCH_WORKERS_WARMUP), then #{SECONDS} s (BENCH_WORKERS_SECONDS); on distinct resources and on one"
        servers
        @notes.each { puts _1 }
        groups.each { measure(_1) }
        puts
        puts Table.new(@rows, @skipped)
        write_svg
      ensure
        close_all
      end

      private

      # Bench.header's lines but benchmark-ips' timing, which this benchmark does not use.
      def header
        puts "# many worker processes at once: the lease store against other locks (bench/workers.rb)"
        puts "ruby:      #{RUBY_DESCRIPTION}"
        puts "YJIT:      #{Bench.yjit? ? "on" : "off"}"
        puts "machine:   #{Bench.machine}"
        extension = $LOADED_FEATURES.grep(/lease_machines_native/).first
        puts "extension: #{extension} (built #{File.mtime(extension).utc.strftime("%F %T")} UTC)"
        puts "load:      #{Bench.load_average} (load average over 1, 5, 15 minutes before timing; keep the machine " \
             "quiet)"
      end

      def servers
        @cluster = available("the PostgreSQL rows") { postgres } if SELECTED.include?(:postgresql)
        if SELECTED.include?(:redis)
          @redis = available("the Redis rows") do
            require "redis-client"
            Stores::RedisServer.new(File.join(@dir, "redis")).start.tap { |redis| @closing << -> { redis.stop } }
          end
        end
        if SELECTED.include?(:sqlite)
          @notes << "sqlite:    SQLite #{SQLite3::SQLITE_VERSION}, a file per lock in #{relative(@dir)}/, busy " \
                    "timeout #{BUSY_TIMEOUT} s for both"
        end
        if @redis
          @notes << "redis:     Redis #{@redis.version} on 127.0.0.1:#{@redis.port}, --save \"\" --appendonly no"
        end
        @skipped.each { |what, why| @notes << "skipped:   #{what}: #{why}" }
      end

      def available(what)
        yield
      rescue Stores::Unavailable, PostgresCluster::Error, LoadError => e
        @skipped << [what, e.message]
        nil
      end

      def postgres
        reason = PostgresCluster.unavailable_reason
        raise Stores::Unavailable, reason if reason

        cluster = Cluster.new.start(dir: File.join(@dir, "postgres"))
        @closing << -> { cluster.destroy }
        settings = PG.connect(cluster.socket_url) do |admin|
          %w[server_version fsync synchronous_commit max_connections].map { admin.exec("SHOW #{_1}").getvalue(0, 0) }
        end
        @notes << "postgres:  PostgreSQL #{settings[0]} in #{relative(cluster.dir)}, fsync #{settings[1]}, " \
                  "synchronous_commit #{settings[2]}, max_connections #{settings[3]}"
        require "active_record"
        require "with_advisory_lock"
        cluster
      end

      def groups
        list = []
        list << sqlite_group if SELECTED.include?(:sqlite)
        if @cluster
          list << postgresql_group("Unix socket", @cluster.socket_url)
          list << postgresql_group("TCP 127.0.0.1", @cluster.url)
        end
        list << redis_group if @redis
        list
      end

      def sqlite_group
        store = File.join(@dir, "store.sqlite3")
        upsert = File.join(@dir, "upsert.sqlite3")
        # The files and their tables made before the workers open them together.
        LeaseMachines::Store.new(store).close
        Stores::SQLiteUpsertLock.new(upsert, resource: "setup").close
        Group.new("SQLite", nil, [
                    ["`LeaseMachines::Store`", :store, lambda { |resource, owner|
                      StoreWorkerLock.new(store, resource: resource, owner: owner, busy_timeout: BUSY_TIMEOUT)
                    }],
                    ["one-statement upsert", :upsert, lambda { |resource, owner|
                      SQLiteUpsertWorkerLock.new(upsert, resource: resource, owner: owner)
                    }]
                  ], nil)
      end

      def postgresql_group(over, url)
        # The tables made before the workers open them together (CREATE TABLE IF NOT EXISTS races with itself).
        LeaseMachines::Store.new(url).close
        Stores::PostgreSQLUpsertLock.new(url, resource: "setup").close
        config = PG::Connection.conninfo_parse(url).to_h { [_1[:keyword], _1[:val]] }.compact
        model = { adapter: "postgresql", host: config["host"], port: Integer(config["port"]),
                  database: config["dbname"], username: config["user"] }
        Group.new("PostgreSQL", over, [
                    ["`LeaseMachines::Store`", :store, lambda { |resource, owner|
                      StoreWorkerLock.new(url, resource: resource, owner: owner, busy_timeout: BUSY_TIMEOUT)
                    }],
                    ["one-statement upsert (ShedLock's SQL)", :upsert, lambda { |resource, owner|
                      PostgreSQLUpsertWorkerLock.new(url, resource: resource, owner: owner)
                    }],
                    ["`with_advisory_lock`", :advisory, lambda { |resource, _owner|
                      AdvisoryWorkerLock.new(Workers.advisory_model(model), resource: resource)
                    }]
                  ], url)
      end

      def redis_group
        redis = @redis
        Group.new("Redis", "TCP 127.0.0.1", [
                    ["`LeaseMachines::Store`", :store, lambda { |resource, owner|
                      StoreWorkerLock.new(redis.client, resource: resource, owner: owner)
                    }],
                    ["`SET NX PX` + compare-and-delete", :upsert, lambda { |resource, owner|
                      RedisWorkerLock.new(redis.client, resource: resource, owner: owner)
                    }]
                  ], nil)
      end

      # Every count and mode of the group, its locks in turn at each.
      def measure(group)
        COUNTS.each do |count|
          MODES.each do |mode|
            group.locks.each do |name, kind, open|
              row = run(group, name, kind, open, count, mode)
              @rows << row
              puts "measured:  #{group.title}, #{name.delete("`")}, #{count} #{count == 1 ? "worker" : "workers"}, " \
                   "#{mode}: #{Bench.si(row.decisions)} decisions/s, p50 #{Table.us(row.p50)} µs, p99 " \
                   "#{Table.us(row.p99)} µs" \
                   "#{", #{row.errors} errors (#{row.error})" if row.errors.positive?}"
            end
          end
        end
      end

      # Forks +count+ workers of one lock, opens the gate once all are ready, and gathers their figures.
      def run(group, name, kind, open, count, mode)
        tag = "#{kind}-#{count}-#{mode}"
        wal = wal_syncs(group)
        gate, opener = IO.pipe
        workers = Array.new(count) do |index|
          reader, writer = IO.pipe
          pid = fork do
            opener.close
            reader.close
            resource = mode == :distinct ? "#{tag}-#{index}" : tag
            Workers.work(writer, gate, index) { open.call(resource, index + 1) }
          end
          writer.close
          [pid, reader]
        end
        gate.close
        ready = workers.map { |_, reader| Marshal.load(reader) }
        pressure = Stores.cpu_pressure
        opener.close
        reports = ready.all?(:ready) ? workers.map { |_, reader| Marshal.load(reader) } : ready.grep(Hash)
        workers.each do |pid, reader|
          reader.close
          Process.wait(pid)
        end
        row(group, name, kind, count, mode, reports, [pressure, wal])
      rescue EOFError
        abort "bench/workers.rb: a worker of #{name} (#{group.title}) ended without a word"
      end

      def row(group, name, kind, count, mode, reports, before)
        failed = reports.find { _1[:failed] }
        abort "bench/workers.rb: a worker of #{name} (#{group.title}) failed: #{failed[:failed]}" if failed

        pressure, wal = before
        pressure = pressure && Stores.cpu_pressure&.then { |now| (now[0] - pressure[0]) / (now[1] - pressure[1]) }
        decisions = reports.sum { _1[:decisions] + _1[:warmup] }
        flushes = wal && (wal_syncs(group) - wal).fdiv([decisions, 1].max)
        weighted = reports.flat_map do |report|
          weight = report[:decisions].fdiv([report[:sample].size, 1].max)
          report[:sample].map { [_1, weight] }
        end
        p50, p99 = Workers.quantiles(weighted, 0.5, 0.99)
        cpu = reports.sum { _1[:cpu] } / (reports.map { _1[:elapsed] }.max * Etc.nprocessors)
        errors = reports.sum { _1[:errors] }
        Row.new(group, name, kind, count, mode, rate(reports, :decisions), rate(reports, :cycles), p50, p99,
                reports.filter_map { _1[:max] }.max, errors, reports.filter_map { _1[:error] }.first, cpu, pressure,
                flushes)
      end

      # The workers' +key+ per second, each over its own measured time, added.
      def rate(reports, key) = reports.sum { _1[key].fdiv(_1[:elapsed]) }

      # The server's count of WAL flushes, once every worker's backend has ended (and reported its own).
      def wal_syncs(group)
        return unless group.wal

        PG.connect(group.wal) do |admin| # the parent's, closed before any fork
          deadline = Workers.now + 5
          sleep 0.01 while Integer(admin.exec("SELECT count(*) FROM pg_stat_activity WHERE backend_type = " \
                                              "'client backend'").getvalue(0, 0)) > 1 && Workers.now < deadline
          Integer(admin.exec("SELECT wal_sync FROM pg_stat_wal").getvalue(0, 0))
        end
      end

      def write_svg
        return if @rows.empty?

        FileUtils.mkdir_p(File.dirname(SVG_PATH))
        File.write(SVG_PATH, Chart.new(@rows).to_s)
        puts "", "chart:     #{relative(SVG_PATH)}"
      end

      def relative(path) = path.delete_prefix("#{File.expand_path("..", __dir__)}/")
    end

    module_function

    # A worker, in its own process: opens its lock (the block), says it is ready, waits for the gate to open (its
    # write end closed), runs cycles for WARMUP then SECONDS, and writes its report. Never returns: exit! leaves the
    # parent's at_exit (the servers' stop) and finalizers alone.
    def work(out, gate, index)
      lock = yield
      Marshal.dump(:ready, out)
      out.flush
      gate.read
      gate.close
      Marshal.dump(cycles(lock, index), out)
      out.close
      exit!(0)
    rescue Exception => e # rubocop:disable Lint/RescueException -- whatever it is, the parent must hear of it
      begin
        Marshal.dump({ failed: "#{e.class}: #{e.message} (#{e.backtrace&.first})" }, out)
      rescue StandardError
        nil
      end
      exit!(1)
    end

    # Lock cycles until the measured time is over: the counts from its start, the latencies (a sample of SAMPLE at
    # most) and the longest, the process's CPU time and the measured time itself (to the end of the last cycle); and
    # the decisions before it (WARMUP's), whose WAL flushes the server counts with the rest.
    def cycles(lock, index)
      from = now + WARMUP
      to = from + SECONDS
      latencies = []
      counts = { cycles: 0, attempts: 0, errors: 0 }
      error = nil
      cpu = nil
      warmup = 0
      while (started = now) < to
        if cpu.nil? && started >= from
          cpu = Process.clock_gettime(Process::CLOCK_PROCESS_CPUTIME_ID)
          warmup = latencies.size
          latencies.clear
          counts.transform_values! { 0 }
        end
        begin
          counts[:cycles] += 1 if lock.timed_cycle(latencies)
        rescue StandardError => e
          counts[:errors] += 1
          error ||= "#{e.class}: #{e.message}"
        end
        counts[:attempts] += 1
      end
      elapsed = now - from
      sample = latencies.size > SAMPLE ? latencies.sample(SAMPLE, random: Random.new(index)) : latencies
      counts.merge(decisions: latencies.size, warmup: warmup, sample: sample, max: latencies.max, error: error,
                   elapsed: elapsed,
                   cpu: Process.clock_gettime(Process::CLOCK_PROCESS_CPUTIME_ID) - (cpu || 0))
    end

    # The +qs+ quantiles of weighted values ([value, weight] pairs): the least value whose cumulative weight
    # reaches q of the whole; nil for none.
    def quantiles(pairs, *qs)
      sorted = pairs.sort_by(&:first)
      total = sorted.sum(&:last)
      qs.map do |q|
        sum = 0.0
        sorted.find { |_, weight| (sum += weight) >= q * total }&.first || sorted.last&.first
      end
    end

    # An abstract ActiveRecord class connected to +config+ (with_advisory_lock uses the class's connection); made in
    # the worker, after the fork.
    def advisory_model(config)
      model = Class.new(ActiveRecord::Base) { self.abstract_class = true }
      Workers.const_set(:AdvisoryRecord, model)
      model.establish_connection(**config)
      model
    end

    # The Markdown tables, and where each lock stops scaling.
    class Table
      def self.us(seconds) = seconds ? (seconds * 1e6).round.to_s.reverse.scan(/\d{1,3}/).join(",").reverse : "n/a"

      def initialize(rows, skipped)
        @rows = rows
        @skipped = skipped
      end

      def to_s
        tables = @rows.group_by(&:group).map { |group, rows| table(group, rows) }
        [*tables, scaling, *@skipped.map { |what, why| "Skipped: #{what}: #{why}." }].join("\n\n")
      end

      private

      def table(group, rows)
        wal = group.wal ? "WAL flushes per decision | " : ""
        lines = ["#{group.title}:", "",
                 "| lock | workers | resources | decisions/s | lock cycles/s | p50 µs | p99 µs | max µs | " \
                 "store/upsert (lock cycles/s) | workers' CPU (of all cores) | waited for a CPU | #{wal}errors |",
                 "|---|---:|---|---:|---:|---:|---:|---:|---|---:|---:|#{"---:|" if group.wal}---:|"]
        rows.each do |row|
          cells = [row.name, row.workers, row.mode, Bench.si(row.decisions), Bench.si(row.cycles), Table.us(row.p50),
                   Table.us(row.p99), Table.us(row.max), ratio(row, rows), Stores.percent(row.cpu),
                   row.pressure ? Stores.percent(row.pressure) : "n/a"]
          cells << format("%.2f", row.flushes) if group.wal
          cells << row.errors
          lines << "| #{cells.join(" | ")} |"
        end
        lines.join("\n")
      end

      # The store's lock cycles per second over the upsert's at the same count and mode, with the target where
      # there is one.
      def ratio(row, rows)
        return "" unless row.kind == :store

        upsert = rows.find { _1.kind == :upsert && _1.workers == row.workers && _1.mode == row.mode }
        return "n/a" unless upsert&.cycles&.positive?

        ratio = row.cycles / upsert.cycles
        text = format("%.2fx", ratio)
        return text unless row.group.database == "PostgreSQL" && row.mode == :distinct &&
                           TARGET_COUNTS.include?(row.workers)

        "#{text} (target at least #{TARGET}x: #{ratio >= TARGET ? "met" : "**missed**"})"
      end

      # For each lock and mode, the count of workers that gave it the most decisions per second, and what the
      # machine and the server did at the next count: the figures to say why it stops there.
      def scaling
        lines = ["Where each lock stops scaling (the most decisions per second, and what came with more workers):", ""]
        @rows.group_by { [_1.group, _1.name, _1.mode] }.each do |(group, name, mode), rows|
          best = rows.max_by(&:decisions)
          after = rows.find { _1.workers > best.workers }
          line = "- #{group.title}, #{name}, #{mode}: most at #{best.workers} " \
                 "#{best.workers == 1 ? "worker" : "workers"}, #{Bench.si(best.decisions)} decisions/s " \
                 "(p99 #{Table.us(best.p99)} µs, the longest #{Table.us(best.max)} µs)"
          line += after ? "; at #{after.workers}: #{Bench.si(after.decisions)}/s, p99 #{Table.us(after.p99)} µs, " \
                          "the longest #{Table.us(after.max)} µs, #{facts(after)}" : "; no more workers measured"
          lines << "#{line}."
        end
        lines.join("\n")
      end

      def facts(row)
        facts = ["workers' CPU #{Stores.percent(row.cpu)} of the machine"]
        facts << "tasks waited for a CPU #{Stores.percent(row.pressure)} of the time" if row.pressure
        facts << "#{format("%.2f", row.flushes)} WAL flushes per decision" if row.flushes
        facts << "#{row.errors} errors" if row.errors.positive?
        facts.join(", ")
      end
    end

    # The chart of docs/performance-workers.svg, drawn by hand: a panel per database and transport, decisions per
    # second against workers (a log scale), a line per lock (its colour) and mode (solid: distinct resources,
    # dashed: one resource), with axes, ticks, labels and a legend. The layout depends only on the rows' counts and
    # groups; numbers are rounded, so that the same figures give the same file.
    class Chart
      PANEL_WIDTH = 440
      PANEL_HEIGHT = 280
      COLUMNS = 2
      TOP = 64
      LEFT = 64
      RIGHT = 16
      PLOT_TOP = 28
      BOTTOM = 44
      COLOURS = { store: "#1559a8", upsert: "#13794a", advisory: "#a05a00" }.freeze
      KINDS = { store: "LeaseMachines::Store", upsert: "one-statement upsert (Redis: SET NX PX)",
                advisory: "with_advisory_lock" }.freeze
      DASHES = { distinct: nil, one: "6 4" }.freeze
      GREY = "#56616b"

      def initialize(rows)
        @rows = rows
        @groups = rows.map(&:group).uniq
        @counts = rows.map(&:workers).uniq.sort
      end

      def to_s
        rows_of_panels = (@groups.size + COLUMNS - 1) / COLUMNS
        width = PANEL_WIDTH * COLUMNS
        height = TOP + (rows_of_panels * PANEL_HEIGHT)
        parts = [%(<text x="#{width / 2}" y="20" text-anchor="middle" font-size="14" font-weight="600">) +
                 "Decisions per second by worker processes (bench/workers.rb)</text>", *legend]
        @groups.each_with_index do |group, index|
          parts.concat(panel(group, (index % COLUMNS) * PANEL_WIDTH, TOP + ((index / COLUMNS) * PANEL_HEIGHT)))
        end
        %(<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 #{width} #{height}" width="#{width}" ) +
          %(height="#{height}" font-family="system-ui, sans-serif" font-size="11" role="img" ) +
          %(aria-label="Decisions per second by worker processes">\n) +
          %(<rect width="#{width}" height="#{height}" fill="#fff"/>\n#{parts.join("\n")}\n</svg>\n)
      end

      private

      # A swatch per lock drawn and per mode, in one line under the title.
      def legend
        kinds = KINDS.keys & @rows.map(&:kind)
        entries = kinds.map { [KINDS[_1], COLOURS[_1], nil] } +
                  [["distinct resources", GREY, nil], ["one resource", GREY, DASHES[:one]]]
        x = 20
        entries.map do |label, colour, dash|
          item = %(<line x1="#{x}" y1="40" x2="#{x + 22}" y2="40" stroke="#{colour}" stroke-width="2") +
                 %(#{%( stroke-dasharray="#{dash}") if dash}/>) +
                 %(<text x="#{x + 27}" y="44">#{escape(label)}</text>)
          x += 32 + (label.size * 6)
          item
        end
      end

      def panel(group, left, top)
        rows = @rows.select { _1.group == group }
        x0 = left + LEFT
        x1 = left + PANEL_WIDTH - RIGHT
        y0 = top + PANEL_HEIGHT - BOTTOM
        y1 = top + PLOT_TOP
        step, high = scale(rows.map(&:decisions).max)
        x = ->(count) { position(count, x0, x1) }
        y = ->(value) { (y0 - ((y0 - y1) * value / high)).round(1) }
        parts = [%(<text x="#{(x0 + x1) / 2}" y="#{top + 16}" text-anchor="middle" font-weight="600">) +
                 "#{escape(group.title)}</text>"]
        (0..(high / step).round).each do |i|
          value = i * step
          parts << %(<line x1="#{x0}" y1="#{y[value]}" x2="#{x1}" y2="#{y[value]}" stroke="#e6eaee"/>) +
                   %(<text x="#{x0 - 6}" y="#{y[value] + 4}" text-anchor="end" fill="#{GREY}">) +
                   "#{Bench.si(value)}</text>"
        end
        @counts.each do |count|
          parts << %(<line x1="#{x[count]}" y1="#{y0}" x2="#{x[count]}" y2="#{y0 + 5}" stroke="#{GREY}"/>) +
                   %(<text x="#{x[count]}" y="#{y0 + 18}" text-anchor="middle" fill="#{GREY}">#{count}</text>)
        end
        parts << %(<line x1="#{x0}" y1="#{y0}" x2="#{x1}" y2="#{y0}" stroke="#{GREY}"/>)
        parts << %(<line x1="#{x0}" y1="#{y0}" x2="#{x0}" y2="#{y1}" stroke="#{GREY}"/>)
        parts << %(<text x="#{(x0 + x1) / 2}" y="#{y0 + 36}" text-anchor="middle" fill="#{GREY}">) +
                 "worker processes (log scale)</text>"
        parts << %(<text transform="translate(#{left + 14} #{(y0 + y1) / 2}) rotate(-90)" text-anchor="middle" ) +
                 %(fill="#{GREY}">decisions/s</text>)
        rows.group_by { [_1.kind, _1.mode] }.each { |(kind, mode), line| parts << series(kind, mode, line, x, y) }
        parts
      end

      def series(kind, mode, rows, x, y)
        points = rows.sort_by(&:workers).map { [x[_1.workers], y[_1.decisions]] }
        colour = COLOURS.fetch(kind)
        dash = DASHES[mode] ? %( stroke-dasharray="#{DASHES[mode]}") : ""
        title = "#{KINDS.fetch(kind)}, #{mode == :one ? "one resource" : "distinct resources"}"
        %(<g><title>#{escape(title)}</title><polyline fill="none" stroke="#{colour}" stroke-width="2"#{dash} ) +
          %(points="#{points.map { _1.join(",") }.join(" ")}"/>) +
          points.map { |px, py| %(<circle cx="#{px}" cy="#{py}" r="2.5" fill="#{colour}"/>) }.join + "</g>"
      end

      # The x of +count+ workers on a log scale over the counts measured (one count: the middle).
      def position(count, x0, x1)
        low, high = @counts.minmax.map { Math.log(_1) }
        return ((x0 + x1) / 2.0).round(1) if high == low

        (x0 + 10 + ((x1 - x0 - 20) * (Math.log(count) - low) / (high - low))).round(1)
      end

      # [a tick step of 1, 2 or 5 times a power of ten, the axis' top: a whole number of steps] for values up to
      # +max+, at most six steps.
      def scale(max)
        max = 1.0 unless max&.positive?
        power = 10.0**Math.log10(max / 6).floor
        step = [1, 2, 5, 10].map { _1 * power }.find { max / _1 <= 6 }
        [step, (max / step).ceil * step]
      end

      def escape(text) = text.gsub("&", "&amp;").gsub("<", "&lt;").gsub(">", "&gt;")
    end
  end
end

Bench::Workers::Run.new.call if $PROGRAM_NAME == __FILE__
