# frozen_string_literal: true

# Lock cycles (acquire + release) and renewals per second of the lease store, against the simplest locks that keep the
# same durability and against the ones users trade durability and fencing for, all from this one process:
#
#   bin/rake bench:stores   # or: bin/ruby bench/stores.rb
#   STORES=mysql bin/rake bench:stores   # only the MySQL rows (a comma-separated list of sqlite, postgresql,
#                                        # redis, mysql; default: all)
#
# - LeaseMachines::Store on SQLite (WAL, synchronous FULL, a file under tmp/), and a one-statement SQLite upsert
#   lease with the same pragmas (INSERT ... ON CONFLICT DO UPDATE ... WHERE expired; DELETE to release; UPDATE to
#   renew), each statement its own transaction;
# - LeaseMachines::Store on PostgreSQL over a Unix socket and over TCP (a throwaway PostgresCluster under tmp/,
#   fsync on, synchronous_commit on), and a one-statement upsert lease in ShedLock's style on the same server
#   (autocommit, one statement, one round trip per decision);
# - with_advisory_lock (ActiveRecord's postgresql adapter) on the same server: with_advisory_lock("...") {} per cycle;
# - Redis, through one redis-client connection each, on a throwaway redis-server that keeps nothing (--save ""
#   --appendonly no): LeaseMachines::Store on Redis (without a fence, and with its fence in SQLite: the token
#   epoch's check; as two stores taking turns on one lease, so that each decision follows the other store's; and
#   once more committing by WATCH / MULTI / EXEC instead of its script), its commit script alone (each decision's
#   COMMIT sent again, with no read and no decision: the floor of its decisions), SET NX PX with a
#   compare-and-delete script (EVAL), and a redlock-style single-instance lock (EVALSHA scripts, a random value, the
#   validity check);
# - LeaseMachines::Store on MySQL over a Unix socket and over TCP (a throwaway MySQLServer, MariaDB, under tmp/:
#   innodb_flush_log_at_trx_commit=1, sync_binlog=1, the binary log on), ShedLock's MySQL lease on the same server
#   (an UPDATE that takes an expired row, one round trip in autocommit, after a first INSERT IGNORE), and
#   with_advisory_lock through ActiveRecord's mysql2 adapter (GET_LOCK(name, 0) / RELEASE_LOCK: session state);
# - the PostgreSQL rows again over TCP through a network namespace and a veth pair with netem's delay on both ends
#   (BENCH_NETEM_DELAY_MS each way, default 0.5: a round trip gains 1 ms). Needs root and the kernel's netem: where
#   either is missing, those rows are skipped and the reason printed. 0 makes the link without netem.
#
# Every durable row commits one write per decision (checked: the store's revisions, and PostgreSQL's own count of
# WAL flushes, pg_stat_wal; on MySQL InnoDB's count of its redo log's fsyncs, Innodb_os_log_fsyncs). Round trips are
# counted on the timed connections before timing. Targets: the store's time per operation at most 1.3x the upsert's
# on SQLite and PostgreSQL and at most 1.5x on MySQL (socket and TCP), for lock cycles and renewals, and at most 2x
# SET NX PX + compare-and-delete's on Redis, which neither decides, fences nor keeps an event log.
# with_advisory_lock and redlock have no target: they are what giving up durability and fencing buys.
#
# Timing: benchmark-ips, BENCH_WARMUP (default 1 s) per report once, then BENCH_TIME (default 3 s) per report split
# into BENCH_ROUNDS (default 9) rounds; a round times every row of a group in turn, so that the store and the upsert
# it is compared with share the machine's moments (a neighbour's burst of fsyncs or of CPU); a figure is the median
# of its rounds, ± half their interquartile range, and a ratio the median of the rounds' own ratios. After timing,
# each store and its upsert run again with their time taken apart: the native decision, this thread's and the server
# backend's time on a CPU and waiting for one (schedstat), the rest (the disk, the network), and the whole without
# the commit's flush (SQLite's synchronous OFF, PostgreSQL's fsync off). About two minutes in all. The last thing
# printed is docs/performance.md's Markdown.

require "fileutils"
require_relative "support"
require_relative "stores_locks"
require_relative "stores_servers"
require_relative "../examples/support/postgres_cluster"
require_relative "../examples/support/mysql_server"
require "lease_machines/store"

module Bench
  module Stores
    ROUNDS = Integer(ENV.fetch("BENCH_ROUNDS", "9"))
    # The warmup of every round after the first: benchmark-ips' estimate of cycles per 100 ms, again.
    REWARMUP = 0.1
    DELAY_MS = Float(ENV.fetch("BENCH_NETEM_DELAY_MS", "0.5"))
    # Lock cycles and renewals per row, counted (round trips, WAL flushes, revisions) before timing, and timed part
    # by part after it.
    CHECKS = 20
    PARTS = 500
    SLICES = 5
    TARGETS = { sqlite: 1.3, postgresql: 1.3, redis: 2.0, mysql: 1.5 }.freeze
    # The databases whose rows run (STORES, comma-separated; default: all).
    SELECTED = Bench.selected_stores(%i[sqlite postgresql redis mysql])

    # A figure from several rounds (in round order): the median, and half the interquartile range, relative.
    Rate = Data.define(:samples) do
      def median = Bench.quantile(samples, 0.5)
      def spread = (Bench.quantile(samples, 0.75) - Bench.quantile(samples, 0.25)) / 2.0 / median

      # How many times this one's time per operation +other+'s is: the median of the rounds' ratios, each taken
      # between two reports of the same round.
      def times(other) = Bench.quantile(other.samples.zip(samples).map { |a, b| a / b }, 0.5)

      def to_s
        digits = median >= 100 ? median.round.to_s.reverse.scan(/\d{1,3}/).join(",").reverse : format("%.1f", median)
        "#{digits} ±#{(spread * 100).round}%"
      end
    end

    # The locks of one group, timed together ([name, kind, a proc that opens it] each): how they are reached, the
    # store's target against the upsert (nil: none), and the link whose namespace their connections are opened in.
    Group = Data.define(:over, :target, :locks, :link)

    # One row of the table: the lock, its group, and its figures (round trips and WAL flushes per decision, or
    # MySQL's redo log fsyncs; nil for a lock in this process, or on neither server).
    Row = Data.define(:name, :group, :kind, :lock, :cycles, :renewals, :trips, :wal_syncs) do
      def over = group.over
      def store? = kind == :store
      def in_process? = trips.nil?
      def mysql? = !lock.mysql_connection.nil?
      # The row of +rows+ this store's row is compared with: its group's upsert (Redis: SET NX PX).
      def upsert(rows) = rows.find { _1.group.equal?(group) && _1.kind == :upsert }
    end

    # Where one lock's decision time goes, in seconds per decision: the whole, the native decision (the store's;
    # nil for others), the benchmark thread's and the server backend's time on a CPU and waiting for one (their
    # schedstat; nil in process), and the whole again with commits that do not wait for the disk.
    Profile = Data.define(:over, :name, :whole, :native, :client_cpu, :client_wait, :server_cpu, :server_wait,
                          :unflushed) do
      def waiting = client_wait + (server_wait || 0)
      def other = whole - client_cpu - (server_cpu || 0) - waiting
    end

    class Run < Bench::ServerRun
      def initialize = super("stores")

      def call
        FileUtils.mkdir_p(@dir)
        Bench.header("lock cycles and renewals per second: the lease store against other locks (bench/stores.rb)")
        puts "os:        #{Stores.os}, #{Etc.uname[:sysname]} #{Etc.uname[:release]}"
        puts "rounds:    #{ROUNDS} per report (BENCH_ROUNDS), #{format("%.2g", Bench::TIME / ROUNDS)} s each; " \
             "median ± half the interquartile range; ratios: the median of the rounds' own"
        pressure = Stores.cpu_pressure
        servers
        @notes.each { puts _1 }
        groups.each { time(_1) }
        breakdown
        @pressure = pressure && Stores.cpu_pressure&.then { |now| (now[0] - pressure[0]) / (now[1] - pressure[1]) }
        puts "pressure:  tasks waited for a CPU #{Stores.percent(@pressure)} of the run (PSI cpu some)" if @pressure
        puts
        puts markdown
      ensure
        close_all
      end

      private

      # The servers and the link, each skipped (with its reason) when it cannot be had.
      def servers
        if SELECTED.include?(:postgresql)
          @link = available("the PostgreSQL rows through the delayed link") do
            DelayedLink.new(delay_ms: DELAY_MS).open.tap { |link| @closing << -> { link.close } }
          end
          @cluster = available("the PostgreSQL rows") { postgres }
        end
        if SELECTED.include?(:redis)
          @redis = available("the Redis row") do
            require "redis-client"
            RedisServer.new(File.join(@dir, "redis")).start.tap { |redis| @closing << -> { redis.stop } }
          end
        end
        @mysql = available("the MySQL rows") { mysql } if SELECTED.include?(:mysql)
        @notes << "sqlite:    SQLite #{SQLite3::SQLITE_VERSION} (sqlite3 gem #{SQLite3::VERSION}), files in " \
                  "#{relative(@dir)}/"
        if @redis
          @notes << "redis:     Redis #{@redis.version} on 127.0.0.1:#{@redis.port}, --save \"\" --appendonly no"
        end
        @skipped.each { |what, why| @notes << "skipped:   #{what}: #{why}" }
      end

      def available(what)
        yield
      rescue Unavailable, PostgresCluster::Error, MySQLServer::Error, LoadError => e
        @skipped << [what, e.message]
        nil
      end

      # A throwaway cluster; with the link, listening on its server end too and trusting its client end.
      def postgres
        reason = PostgresCluster.unavailable_reason
        raise Unavailable, reason if reason

        listen, trust = @link ? [[@link.server_address], [@link.network]] : [[], []]
        cluster = PostgresCluster.new.start(dir: File.join(@dir, "postgres"), listen: listen, trust: trust)
        @closing << -> { cluster.destroy }
        @admin = PG.connect(cluster.socket_url)
        @closing << -> { @admin.close }
        settings = %w[server_version fsync synchronous_commit wal_sync_method].map do |name|
          @admin.exec("SHOW #{name}").getvalue(0, 0)
        end
        @notes << "postgres:  PostgreSQL #{settings[0]} in #{relative(cluster.dir)}, fsync #{settings[1]}, " \
                  "synchronous_commit #{settings[2]}, wal_sync_method #{settings[3]}"
        require "active_record"
        require "with_advisory_lock"
        cluster
      end

      # A throwaway MariaDB server (its defaults: durable commits, the binary log on), in a short directory of its
      # own (the socket's path has a bound).
      def mysql
        reason = MySQLServer.unavailable_reason
        raise Unavailable, reason if reason

        server = MySQLServer.new.start(dir: File.join(@dir, "mysql"))
        @closing << -> { server.destroy }
        @mysql_admin = server.connect
        @closing << -> { @mysql_admin.close }
        settings = %w[version innodb_flush_log_at_trx_commit sync_binlog log_bin].map do |name|
          @mysql_admin.query("SELECT @@#{name}", as: :array).first.first
        end
        @notes << "mysql:     MariaDB #{settings[0]} in #{relative(server.dir)}, innodb_flush_log_at_trx_commit " \
                  "#{settings[1]}, sync_binlog #{settings[2]}, log_bin #{settings[3]}"
        require "active_record"
        require "with_advisory_lock"
        server
      end

      def link_url = "postgresql://#{PostgresCluster::USER}@#{@link.server_address}:#{@cluster.port}/postgres"

      def groups
        sqlite = Group.new("in process", TARGETS[:sqlite], [
                             ["`LeaseMachines::Store`, SQLite", :store,
                              -> { StoreLock.new(File.join(@dir, "store.sqlite3"), resource: "bench") }],
                             ["one-statement upsert, SQLite", :upsert,
                              -> { SQLiteUpsertLock.new(File.join(@dir, "upsert.sqlite3"), resource: "bench") }]
                           ], nil)
        list = SELECTED.include?(:sqlite) ? [sqlite] : []
        if @cluster
          list << postgresql_group("Unix socket", @cluster.socket_url, TARGETS[:postgresql])
          list << postgresql_group("TCP 127.0.0.1", @cluster.url, TARGETS[:postgresql])
        end
        list << redis_group if @redis
        if @mysql
          socket = File.join(@mysql.dir, "mysqld.sock")
          list << mysql_group("Unix socket (MariaDB)", @mysql.socket_url,
                              { socket: socket, username: "root", database: MySQLServer::DATABASE })
          list << mysql_group("TCP 127.0.0.1 (MariaDB)", @mysql.url, @mysql.options)
        end
        if @cluster && @link
          rtt = 2 * DELAY_MS
          over = DELAY_MS.positive? ? "TCP, +#{format("%g", rtt)} ms round trip (netem)" : "TCP through a veth pair"
          list << postgresql_group(over, link_url, nil, link: @link)
        end
        list
      end

      # The Redis rows, each on a connection of its own to the same server (the store's fence: an SQLite file).
      def redis_group
        fence = File.join(@dir, "redis-fence.sqlite3")
        Group.new("TCP 127.0.0.1 (Redis)", TARGETS[:redis], [
                    ["`LeaseMachines::Store`, Redis", :store, -> { StoreLock.new(@redis.client, resource: "bench") }],
                    ["`LeaseMachines::Store`, Redis, fence in SQLite", :store,
                     -> { StoreLock.new(@redis.client, resource: "bench fenced", fence: fence) }],
                    ["`LeaseMachines::Store`, Redis, two stores taking turns", :store,
                     -> { TakingTurnsLock.new(@redis.client, @redis.client, resource: "bench turns") }],
                    ["the Redis store's commit script alone (no read, no decision)", :floor,
                     -> { CommitScriptLock.new(@redis.client, resource: "bench script") }],
                    ["`LeaseMachines::Store`, Redis, by `WATCH`/`MULTI`/`EXEC` (not shipped)", :store,
                     -> { StoreLock.new(@redis.client, resource: "bench watch", commit: :watch) }],
                    ["Redis `SET NX PX` + compare-and-delete (`EVAL`)", :upsert,
                     -> { RedisLock.new(@redis.client, resource: "bench") }],
                    ["redlock-style, one instance (`EVALSHA`)", :redlock,
                     -> { RedlockLock.new(@redis.client, resource: "bench") }]
                  ], nil)
      end

      # The PostgreSQL rows over +url+ (each group its own resource: the renewed leases stay held).
      def postgresql_group(over, url, target, link: nil)
        config = PG::Connection.conninfo_parse(url).to_h { [_1[:keyword], _1[:val]] }.compact
        model = advisory_model(host: config["host"], port: Integer(config["port"]), database: config["dbname"],
                               username: config["user"])
        server_group(over, target, url, model, link: link,
                     names: ["PostgreSQL", "one-statement upsert (ShedLock's SQL)",
                             "`with_advisory_lock` (ActiveRecord)"]) do |resource|
          PostgreSQLUpsertLock.new(url, resource: resource)
        end
      end

      # The MySQL rows over +url+ (the store's) and +options+ (Mysql2::Client's, for the others).
      def mysql_group(over, url, options)
        model = advisory_model(adapter: "mysql2", **options)
        server_group(over, TARGETS[:mysql], url, model,
                     names: ["MySQL", "one-statement upsert (ShedLock's MySQL SQL)",
                             "`with_advisory_lock` (ActiveRecord, `GET_LOCK`)"]) do |resource|
          MySQLUpsertLock.new(options, resource: resource)
        end
      end

      # A server's group: the store over +url+, the upsert the block opens (given the resource), with_advisory_lock
      # through +model+; +names+ the store's database and the other two rows' names.
      def server_group(over, target, url, model, names:, link: nil, &upsert)
        resource = "bench #{over}"
        database, upsert_name, advisory_name = names
        Group.new(over, target, [
                    ["`LeaseMachines::Store`, #{database}", :store, -> { StoreLock.new(url, resource: resource) }],
                    [upsert_name, :upsert, -> { upsert.call(resource) }],
                    [advisory_name, :advisory, -> { AdvisoryLock.new(model, resource: resource) }]
                  ], link)
      end

      # An abstract ActiveRecord class of its own per server address (with_advisory_lock uses the class's
      # connection).
      def advisory_model(adapter: "postgresql", **config)
        @models = (@models || 0) + 1
        model = Class.new(ActiveRecord::Base) { self.abstract_class = true }
        Stores.const_set("AdvisoryRecord#{@models}", model)
        model.establish_connection(adapter: adapter, **config)
        model
      end

      # Opens the group's locks (inside the link's namespace for its group), checks and counts each, then times them
      # all, round by round.
      def time(group)
        locks = group.locks.map do |name, kind, open|
          lock = group.link ? group.link.inside(&open) : open.call
          @closing << -> { lock.close }
          verify_route(lock, group)
          [name, kind, lock]
        end
        counts = locks.to_h { |name, _, lock| [name, count(name, lock)] }
        counted = counts.map do |name, (trips, syncs)|
          "#{name.delete("`")}: #{trips ? format("%.2f", trips) : "no"} round trips" +
            (syncs ? ", #{syncs.map { format("%.2f", _1) }.join(" + ")} flushes" : "")
        end
        puts "counted:   #{group.over}, per decision: #{counted.join("; ")}"
        rates = measure(locks)
        locks.each do |name, kind, lock|
          trips, syncs = counts.fetch(name)
          @rows << Row.new(name, group, kind, lock, rates.fetch([name, :cycle]), rates[[name, :renew]], trips, syncs)
        end
      end

      # Checks that the lock's connection comes from where its row says: the Unix socket, 127.0.0.1, or the link's
      # far end.
      def verify_route(lock, group)
        return verify_mysql_route(lock, group) if lock.mysql_connection

        connection = lock.pg_connection or return
        client = connection.exec("SELECT host(inet_client_addr())").getvalue(0, 0)
        expected = if group.link then group.link.client_address
                   elsif group.over.start_with?("Unix") then nil
                   else "127.0.0.1"
                   end
        Bench.expect!("the connection of #{lock.class} over #{group.over}", client, expected)
      end

      # The same for a MySQL connection: the server's name for its client, localhost over the socket.
      def verify_mysql_route(lock, group)
        host = lock.mysql_connection.query("SELECT HOST FROM information_schema.PROCESSLIST WHERE ID = " \
                                           "CONNECTION_ID()", as: :array).first.first
        Bench.expect!("the connection of #{lock.class} over #{group.over}", host.split(":").first,
                      group.over.start_with?("Unix") ? "localhost" : "127.0.0.1")
      end

      # [round trips, WAL flushes] per decision (acquire, release, renewal: cycles count two), over CHECKS cycles and
      # CHECKS renewals, and the store's revisions: one per decision.
      def count(name, lock)
        revisions = lock.revisions if lock.respond_to?(:revisions)
        syncs_before = wal_syncs(lock)
        lock.round_trips&.count = 0
        failed = CHECKS.times.count { !lock.cycle }
        failed += CHECKS.times.count { !lock.renew } if lock.renews?
        trips = lock.round_trips&.count
        syncs = wal_syncs(lock)
        decisions = CHECKS * (lock.renews? ? 3 : 2)
        Bench.expect!("#{name}: cycles and renewals that took another path", failed, 0)
        Bench.expect!("#{name}: revisions per decision", lock.revisions - revisions, decisions) if revisions
        [trips&.fdiv(decisions), syncs&.zip(syncs_before)&.map { |after, before| (after - before).fdiv(decisions) }]
      end

      # [PostgreSQL's count of WAL flushes], once the lock's backend has reported its own (the statistics are
      # flushed when a backend goes idle, at most once a second unless forced); on MySQL, [InnoDB's fsyncs, the
      # server's own (the binary log's)], the server's counts for all sessions (only the benchmark's run there).
      # MariaDB 10.11 has no Innodb_os_log_fsyncs: Innodb_data_fsyncs counts every fsync of InnoDB's files, and with
      # O_DIRECT (its default) only the redo log's come per commit.
      def wal_syncs(lock)
        return MYSQL_SYNCS.map { mysql_status(_1) } if lock.mysql_connection

        connection = lock.pg_connection or return
        connection.exec("SELECT pg_stat_force_next_flush()")
        sleep 0.05
        [Integer(@admin.exec("SELECT wal_sync FROM pg_stat_wal").getvalue(0, 0))]
      end

      MYSQL_SYNCS = %w[Innodb_data_fsyncs Syncs].freeze

      def mysql_status(name)
        Integer(@mysql_admin.query("SHOW GLOBAL STATUS LIKE '#{name}'", as: :array).first[1])
      end

      # benchmark-ips, ROUNDS times over every workload of the group: {[name, :cycle or :renew] => Rate}.
      def measure(locks)
        workloads = locks.flat_map do |name, _, lock|
          (lock.renews? ? %i[cycle renew] : %i[cycle]).map { |kind| [[name, kind], workload(name, lock, kind)] }
        end
        samples = Hash.new { |hash, key| hash[key] = [] }
        ROUNDS.times do |round|
          report = Benchmark.ips do |job|
            job.config(warmup: round.zero? ? Bench::WARMUP : REWARMUP, time: Bench::TIME / ROUNDS, quiet: true)
            workloads.each_with_index { |(_, work), index| job.report(index.to_s, &work) }
          end
          report.entries.each { |entry| samples[workloads[Integer(entry.label)].first] << entry.ips }
        end
        samples.transform_values { Rate.new(_1) }
      end

      def workload(name, lock, kind)
        lambda do |times|
          failed = 0
          i = 0
          while i < times
            failed += 1 unless lock.public_send(kind)
            i += 1
          end
          Bench.expect!("#{name}: #{kind}s that took another path", failed, 0)
        end
      end

      # Where the store's and the upsert's decisions spend their time, PARTS cycles each after all timing (the
      # timer stays on the native decision, and the flush stays off): on a CPU (this thread's, the server
      # backend's), waiting for one (a busy machine), or neither (the disk's flush, the network); then again without
      # the flush. And a bare round trip on each PostgreSQL transport.
      def breakdown
        @profiles = []
        @round_trips = {}
        native = [0.0]
        Stores.wrap(LeaseMachines.singleton_class, %i[_store_decide]) do |_, &call|
          started = Process.clock_gettime(Process::CLOCK_MONOTONIC)
          call.call
        ensure
          native[0] += Process.clock_gettime(Process::CLOCK_MONOTONIC) - started
        end
        @rows.select(&:store?).each do |row|
          upsert = row.upsert(@rows)
          pair = [row, upsert]
          locks = pair.map(&:lock)
          durable = profile(locks, native)
          unflushed = without_flush(locks) { profile(locks, native) }
          pair.zip(durable, unflushed) do |each, (whole, cpu, wait, server_cpu, server_wait, decided), again|
            server = each.lock.server_connection
            @profiles << Profile.new(row.over, each.name, whole, each.store? ? decided : nil, cpu, wait,
                                     server && server_cpu, server && server_wait, again.first)
          end
          connection = upsert.lock.server_connection
          @round_trips[row.over] = seconds { PARTS.times { connection.query("SELECT 1") } } / PARTS if connection
        end
      end

      # Runs the block with commits that do not wait for the disk: SQLite's synchronous OFF on the locks' connections
      # (left so after), PostgreSQL's fsync off for the whole server until the block is done (the store's own
      # transactions set synchronous_commit on, whatever the session's), MySQL's innodb_flush_log_at_trx_commit 2
      # and sync_binlog 0 (global, read at each commit) until then.
      def without_flush(locks)
        locks.filter_map(&:sqlite_connection).each { _1.execute("PRAGMA synchronous = OFF") }
        servers = locks.filter_map(&:pg_connection)
        server_fsync("off", servers) unless servers.empty?
        mysql = locks.any?(&:mysql_connection)
        mysql_flush(2, 0) if mysql
        yield
      ensure
        server_fsync("on", servers) unless servers.nil? || servers.empty?
        mysql_flush(1, 1) if mysql
      end

      def mysql_flush(log, binlog)
        @mysql_admin.query("SET GLOBAL innodb_flush_log_at_trx_commit = #{log}, GLOBAL sync_binlog = #{binlog}")
      end

      # Sets the server's fsync and waits until every one of +connections+ has read it (a backend reloads its
      # settings between statements).
      def server_fsync(value, connections)
        @admin.exec("ALTER SYSTEM SET fsync = #{value}")
        @admin.exec("SELECT pg_reload_conf()")
        deadline = Process.clock_gettime(Process::CLOCK_MONOTONIC) + 10
        until connections.all? { _1.exec("SHOW fsync").getvalue(0, 0) == value }
          abort "bench/stores.rb: the server did not take fsync = #{value}" \
            if Process.clock_gettime(Process::CLOCK_MONOTONIC) > deadline
          sleep 0.01
        end
      end

      # [whole, this thread's CPU, its wait for a CPU, the backend's CPU, its wait, the native decision] per decision
      # of each of +locks+ over PARTS cycles, the locks taking turns in SLICES slices (a slow moment of the disk or
      # the machine falls on both). +native+ is where the native decision's timer adds up.
      def profile(locks, native)
        sums = locks.map { Array.new(6, 0.0) }
        SLICES.times do
          locks.each_with_index do |lock, index|
            tasks = ["thread-self", server_task(lock)]
            native[0] = 0.0
            before = tasks.flat_map { schedstat(_1) }
            whole = seconds { (PARTS / SLICES).times { lock.cycle } }
            spent = tasks.flat_map { schedstat(_1) }.zip(before).map { |a, b| (a - b) / 1e9 }
            sums[index] = sums[index].zip([whole, *spent, native[0]]).map(&:sum)
          end
        end
        sums.map { |sum| sum.map { _1 / (2 * PARTS) } }
      end

      # The server's task that answers +lock+: PostgreSQL's backend; on MySQL, every thread of mariadbd (a thread
      # per connection, and the server's own: the redo log's writer among them), as an Array of tasks.
      def server_task(lock)
        return Dir.glob("/proc/#{@mysql.pid}/task/*").map { _1.delete_prefix("/proc/") } if lock.mysql_connection

        lock.pg_connection&.backend_pid
      end

      # [time on a CPU, time waiting for one] of a task (or the sum of an Array of tasks) so far, in nanoseconds
      # (CONFIG_SCHED_INFO); zeros for none, or for a thread that ended.
      def schedstat(task)
        return task.map { schedstat(_1) }.transpose.map(&:sum) if task.is_a?(Array)

        task ? File.read("/proc/#{task}/schedstat").split.first(2).map { Integer(_1) } : [0, 0]
      rescue Errno::ENOENT, Errno::ESRCH
        [0, 0]
      end

      def seconds
        started = Process.clock_gettime(Process::CLOCK_MONOTONIC)
        yield
        Process.clock_gettime(Process::CLOCK_MONOTONIC) - started
      end

      def relative(path) = path.delete_prefix("#{File.expand_path("..", __dir__)}/")

      def markdown
        Table.new(@rows, @profiles, @round_trips, @skipped, @pressure).to_s
      end
    end

    # docs/performance.md's tables, from the rows.
    class Table
      def initialize(rows, profiles, round_trips, skipped, pressure)
        @pressure = pressure
        @rows = rows
        @profiles = profiles
        @round_trips = round_trips
        @skipped = skipped
      end

      def to_s
        [main, "", counted, "", ratios, "", breakdown, *skipped].join("\n")
      end

      private

      def main
        lines = ["| lock | reached over | lock cycles/s | renewals/s | round trips per decision | durable | fences |",
                 "|---|---|---:|---:|---|---|---|"]
        @rows.each do |row|
          lines << "| #{row.name} | #{row.over} | #{row.cycles} | #{row.renewals || "n/a"} | #{trips(row)} | " \
                   "#{row.lock.durable? ? "yes" : "no"} | #{row.lock.fences? ? "yes" : "no"} |"
        end
        lines.join("\n")
      end

      # What the check before timing counted on the timed connections: PostgreSQL's WAL flushes per decision.
      def counted
        mysql, postgresql = @rows.select(&:wal_syncs).partition(&:mysql?).map { flushes(_1) }
        lines = []
        lines << "WAL flushes per decision (`pg_stat_wal`, counted before timing): #{postgresql}." if postgresql
        lines << "MariaDB's fsyncs per decision, the redo log's + the binary log's (`Innodb_data_fsyncs` + " \
                 "`Syncs`, counted before timing): #{mysql}." if mysql
        lines << "Tasks waited for a CPU #{Stores.percent(@pressure)} of the run (PSI)." if @pressure
        wrap(lines.join(" "))
      end

      # Each lock's count per decision (the range over its groups), or nil for no rows.
      def flushes(rows)
        rows.group_by(&:name).map do |name, same|
          "#{name} #{same.map { |row| row.wal_syncs.map { format("%.2f", _1) }.join(" + ") }.uniq.join(" to ")}"
        end.join(", ").then { _1.empty? ? nil : _1 }
      end

      def trips(row)
        return "none (in process)" if row.in_process?

        per = row.trips.round(2)
        return plain(per) unless row.kind == :advisory || row.mysql?

        "#{plain(per)} (#{plain((per * 2).round(2))} per cycle)"
      end

      # A count without a fraction of zero (3, not 3.0).
      def plain(number) = (number == number.round ? number.round : number).to_s

      def ratios
        lines = ["| store's time / the upsert's (Redis: `SET NX PX`'s) | lock cycles | renewals | target |",
                 "|---|---:|---:|---|"]
        @rows.select { _1.store? || _1.kind == :floor }.each do |store|
          upsert = store.upsert(@rows)
          cycles = store.cycles.times(upsert.cycles)
          renewals = store.renewals.times(upsert.renewals)
          name = store.store? ? store.name.split(", ").drop(1).join(", ") : store.name
          verdict = store.store? ? verdict(store.group.target, [cycles, renewals].max) : "none (the store's floor)"
          lines << "| #{name}, #{store.over} | #{format("%.2fx", cycles)} | #{format("%.2fx", renewals)} | " \
                   "#{verdict} |"
        end
        lines.join("\n")
      end

      def verdict(target, ratio)
        return "none (2 round trips against 1)" unless target

        "at most #{target}x: #{ratio <= target ? "met" : "**missed**"}"
      end

      def breakdown
        lines = ["| a decision, over | lock | whole | native decision | on a CPU: client | on a CPU: server | " \
                 "waiting for a CPU | the rest: disk, network (less overlap) | whole, without the flush |",
                 "|---|---|---:|---:|---:|---:|---:|---:|---:|"]
        @profiles.each do |p|
          cells = [p.whole, p.native, p.client_cpu, p.server_cpu, p.waiting, p.other, p.unflushed]
          lines << "| #{p.over} | #{p.name} | #{cells.map { _1 ? us(_1) : "n/a" }.join(" | ")} |"
        end
        trips = @round_trips.map { |over, seconds| "#{over} #{us(seconds)}" }
        lines << "" << wrap("A round trip (`SELECT 1`): #{trips.join(", ")}.") unless trips.empty?
        lines.join("\n")
      end

      def us(seconds) = seconds >= 1e-4 ? "#{(seconds * 1e6).round} µs" : format("%.1f µs", seconds * 1e6)

      def skipped
        @skipped.map { |what, why| "\n#{wrap("Skipped: #{what}: #{why}.")}" }
      end

      # +text+ in lines of at most 120 characters, as the prose of docs/performance.md.
      def wrap(text) = text.gsub(/(.{1,120})(?: +|\z)/, "\\1\n").chomp
    end

    module_function

    def percent(share) = "#{(share * 100).round}%"

    # The distribution (os-release's PRETTY_NAME).
    def os
      File.read("/etc/os-release")[/^PRETTY_NAME="?([^"\n]*)/, 1] || "unknown"
    rescue SystemCallError
      "unknown"
    end

    # [seconds tasks waited for a CPU in all (PSI's cpu "some" total), the monotonic clock], or nil without PSI.
    def cpu_pressure
      total = File.read("/proc/pressure/cpu")[/^some .*total=(\d+)/, 1] or return
      [Integer(total) / 1e6, Process.clock_gettime(Process::CLOCK_MONOTONIC)]
    rescue SystemCallError
      nil
    end
  end
end

Bench::Stores::Run.new.call if $PROGRAM_NAME == __FILE__
