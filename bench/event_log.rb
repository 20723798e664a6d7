# frozen_string_literal: true

# What the event log costs per decision on each SQL store, against the row's own write and one indexed insert:
#
#   bin/rake bench:event_log   # or: bin/ruby bench/event_log.rb
#   BENCH_EVENT_LOG_N=200 bin/rake bench:event_log   # fewer transactions per variant and round (default 1000)
#
# Every store writes one event per decision, in the decision's own transaction, and prunes the log in constant work.
# Here the log's statements are timed alone, in transactions of a decision's shape, beside the same transaction
# without them:
#
# - PostgreSQL over its Unix socket (a throwaway PostgresCluster under tmp/, fsync on), one connection, the store's
#   schema made by opening a LeaseMachines::Store once (which also makes the lease row the updates rewrite). Each
#   transaction is one simple query (PG::Connection#exec): BEGIN; SET LOCAL synchronous_commit = on; <statements>;
#   COMMIT. Variants: (a) the lease row's UPDATE alone; (b) (a) + one plain INSERT into lease_machines_events with
#   an event's columns (seq counted up here); (c) (a) + SELECT lease_machines_log_event(...) with keep_events 1000
#   and max_age 7 days, in steady state (its lease has more than 1000 events before timing, so that every call
#   deletes one; the log ANALYZEd then, as autovacuum would have); (d) the same with keep_events 1,000,000 (pruning
#   never finds a row to delete); (e) (c) with the session's plan_cache_mode = force_generic_plan. Beside wall time,
#   the server backend's CPU time: the first field of /proc/<backend pid>/schedstat (nanoseconds on a CPU) before
#   and after each batch.
# - SQLite (a file under tmp/, WAL, synchronous FULL, as the store opens it): variants (a) to (d), each transaction
#   BEGIN IMMEDIATE ... COMMIT of prepared statements, the log's being the store's own (LeaseMachines::Store::SQLite's
#   event insert and its TEMP pruning trigger, made from the store's SQL on a connection of its own, since the
#   trigger fires on every insert of its connection: (a) and (b) run on another without it); then
#   LeaseMachines::Store#renew as shipped against the same renewals with the store's pruning trigger dropped on the
#   store's own connection (its event insert still runs: the difference is what pruning costs a whole decision).
#   CPU is this process's (CLOCK_PROCESS_CPUTIME_ID): SQLite runs in it.
#
# Timing: each variant runs BENCH_EVENT_LOG_N transactions (default 1000) per round, in ROUNDS (7) rounds that take
# the variants in turn, so that they share the machine's moments; the tables give each variant's median over the
# rounds of microseconds per transaction, and that median minus the row update's (a) median: the log's own cost. The
# last line per store sums it up: what the log costs in CPU beyond the row's write, what one indexed insert costs,
# and what pruning and the lease's newest seq add beyond it ((c) - (b)). About a minute in all by default; the
# figures are printed, never asserted. Wall time includes the commit's fsync, which CPU time does not.

require "fileutils"
require_relative "support"
require_relative "../examples/support/postgres_cluster"
require "lease_machines/store"

module Bench
  module EventLog
    N = Integer(ENV.fetch("BENCH_EVENT_LOG_N", "1000"))
    ROUNDS = 7
    KEEP_EVENTS = 1000
    MAX_AGE = 7 * 86_400.0
    # keep_events for (d): more events than the benchmark ever writes for one lease, so that nothing is pruned.
    KEEP_ALL = 1_000_000
    # The lease row the variants' UPDATE rewrites, and (SQLite) the lease the store's renewals renew: apart, so that
    # the raw updates never change a row behind the store's back.
    RESOURCE = "bench"
    STORE_RESOURCE = "bench-store"
    # Each variant's events go to a lease of their own (seq counts per lease): the pruned lease never sees another
    # variant's events.
    LEASES = { plain: "bench-plain", pruned: "bench-pruned", kept: "bench-kept", generic: "bench-generic" }.freeze

    def self.now = Process.clock_gettime(Process::CLOCK_MONOTONIC)
    def self.realtime = Process.clock_gettime(Process::CLOCK_REALTIME)

    # One variant's figures: medians over the rounds, in microseconds per transaction.
    Row = Data.define(:key, :label, :wall, :cpu)

    # The variants of one store, timed in interleaved rounds. +variants+ are [key, label, batch] where batch.call(n)
    # runs n transactions and answers [wall seconds, CPU seconds] (what a batch sets up, it does outside its timing).
    def self.measure(variants)
      samples = variants.to_h { |key, _, _| [key, { wall: [], cpu: [] }] }
      ROUNDS.times do
        variants.each do |key, _, batch|
          wall, cpu = batch.call(N)
          samples[key][:wall] << wall / N * 1e6
          samples[key][:cpu] << cpu / N * 1e6
        end
      end
      variants.map do |key, label, _|
        Row.new(key, label, Bench.quantile(samples[key][:wall], 0.5), Bench.quantile(samples[key][:cpu], 0.5))
      end
    end

    # A Markdown table of +rows+ (the first the row update alone), then the line that sums it up.
    def self.report(title, cpu_title, rows)
      base = rows.first
      by = rows.to_h { [_1.key, _1] }
      lines = ["#### #{title}", "",
               "| variant | wall µs per transaction | #{cpu_title} CPU µs | minus the row update alone " \
               "(wall / CPU µs) |", "|---|---:|---:|---:|"]
      rows.each do |row|
        minus = row.equal?(base) ? "—" : format("%+.1f / %+.1f", row.wall - base.wall, row.cpu - base.cpu)
        lines << format("| %s | %.1f | %.1f | %s |", row.label, row.wall, row.cpu, minus)
      end
      log = by.fetch(:pruned).cpu - base.cpu
      insert = by.fetch(:plain).cpu - base.cpu
      extra = by.fetch(:pruned).cpu - by.fetch(:plain).cpu
      lines << "" << format("%s: the log costs %.1f µs of CPU per decision beyond the row's write; one indexed " \
                            "insert costs %.1f µs; pruning and the lease's newest seq add %.1f µs",
                            title.split(" ").first, log, insert, extra)
      # SQLite's whole renewals, with and without the store's pruning: what pruning costs inside a decision.
      if (shipped = by[:renew]) && (unpruned = by[:renew_unpruned])
        lines << format("%s: Store#renew spends %.1f µs of CPU (%.1f µs of wall time) on pruning per decision " \
                        "(as shipped minus its trigger dropped)", title.split(" ").first,
                        shipped.cpu - unpruned.cpu, shipped.wall - unpruned.wall)
      end
      lines.join("\n")
    end

    # The PostgreSQL variants on one connection to a throwaway cluster.
    class PostgreSQL
      def initialize(url)
        require "pg"
        # The store makes its schema (tables, lease_machines_log_event) and the lease row the updates rewrite.
        store = LeaseMachines::Store.new(url)
        store.acquire(resource: RESOURCE, owner: 1, ttl: 3600.0).lease or raise "the store refused the first grant"
        store.close
        @connection = PG.connect(url)
        @schedstat = "/proc/#{@connection.backend_pid}/schedstat"
        @seq = 0
      end

      def version = @connection.exec("SHOW server_version").getvalue(0, 0)
      def close = @connection.close

      def variants
        [[:update, "(a) the row's `UPDATE` alone", batch { "" }],
         [:plain, "(b) (a) + one plain `INSERT` into `lease_machines_events`", batch { plain_insert }],
         [:pruned, "(c) (a) + `lease_machines_log_event`, keep_events #{KEEP_EVENTS} (prunes every call)",
          batch { log_event(:pruned, KEEP_EVENTS) }],
         [:kept, "(d) (a) + `lease_machines_log_event`, keep_events #{KEEP_ALL} (prunes nothing)",
          batch { log_event(:kept, KEEP_ALL) }],
         [:generic, "(e) (c) under `plan_cache_mode = force_generic_plan`",
          batch(generic: true) { log_event(:generic, KEEP_EVENTS) }]]
      end

      # Fills the pruned leases past keep_events, so that every timed call deletes the event that falls out.
      def warm_up
        [:pruned, :generic].each do |lease|
          (KEEP_EVENTS + 100).times { transaction(log_event(lease, KEEP_EVENTS)) }
        end
        # The statistics autovacuum would have gathered by now on a server that ran this long (its analyze waits up
        # to a minute): without them, the function's plans (kept for the session, made while the log was nearly
        # empty and never analyzed) scan the whole log, and each call costs over a millisecond more. ANALYZE
        # invalidates those plans, so that the timed calls run on plans made with the log's real size.
        @connection.exec("ANALYZE lease_machines_events")
        variants.each { |_, _, run| run.call(50) }
      end

      # Events of the log per lease now (a check that the pruned leases stay at keep_events).
      def counts
        @connection.exec("SELECT resource, count(*) FROM lease_machines_events GROUP BY resource ORDER BY resource")
                   .values.to_h { |resource, count| [resource, Integer(count)] }
      end

      private

      UPDATE = "UPDATE lease_machines_leases SET revision = revision + 1 WHERE resource = '#{RESOURCE}'; ".freeze
      private_constant :UPDATE

      # A batch of n transactions, each the row's UPDATE and what the block answers (SQL ending in "; "): [wall
      # seconds, the backend's CPU seconds]. +generic+ sets the session's plan_cache_mode for it, outside the timing.
      def batch(generic: false, &statements)
        lambda do |n|
          @connection.exec("SET plan_cache_mode = force_generic_plan") if generic
          cpu = backend_cpu
          started = EventLog.now
          n.times { transaction(statements.call) }
          wall = EventLog.now - started
          cpu = backend_cpu - cpu
          @connection.exec("RESET plan_cache_mode") if generic
          [wall, cpu]
        end
      end

      def transaction(statements)
        @connection.exec("BEGIN; SET LOCAL synchronous_commit = on; #{UPDATE}#{statements}COMMIT")
      end

      # Seconds the backend has run on a CPU (schedstat's first field is nanoseconds).
      def backend_cpu = Integer(File.read(@schedstat).split.first) / 1e9

      # The same columns as an event the store writes (a renewal's), with seq counted up here: no lookup, no pruning.
      def plain_insert
        @seq += 1
        "INSERT INTO lease_machines_events (resource, slot, seq, kind, at, owner, token, expires_at, revision, " \
          "reason, replaced_owner, replaced_token, replaced_expires_at, highest) VALUES ('#{LEASES[:plain]}', 0, " \
          "#{@seq}, 'renewed', #{EventLog.realtime}, 1, 7, #{EventLog.realtime + 30}, #{@seq}, NULL, NULL, NULL, " \
          "NULL, NULL); "
      end

      # The store's call of a renewal's event, as lease_machines_commit_known makes it.
      def log_event(lease, keep)
        at = EventLog.realtime
        "SELECT lease_machines_log_event('#{LEASES.fetch(lease)}', 0, 'renewed', #{at}, 1, 7, #{at + 30}, 1, " \
          "NULL, NULL, NULL, NULL, NULL, #{keep}, #{MAX_AGE}); "
      end
    end

    # The SQLite variants on one connection of this process's, and the store's renewals with and without pruning.
    class SQLite
      STORE = LeaseMachines::Store::SQLite
      # The store's own SQL (private constants of its adapter: read, never copied, so that they cannot drift).
      LOG_EVENT = STORE.const_get(:LOG_EVENT)
      RETENTION = STORE.const_get(:RETENTION)
      SET_RETENTION = STORE.const_get(:SET_RETENTION)
      PRUNE_TRIGGER = "temp.lease_machines_prune_events"
      UPDATE = "UPDATE lease_machines_leases SET revision = revision + 1 WHERE resource = ?"
      PLAIN_INSERT = "INSERT INTO lease_machines_events (resource, slot, seq, kind, at, owner, token, expires_at, " \
                     "revision, reason, replaced_owner, replaced_token, replaced_expires_at, highest) " \
                     "VALUES (?, 0, ?, 'renewed', ?, 1, 7, ?, ?, NULL, NULL, NULL, NULL, NULL)"

      def initialize(path)
        # The store makes the file (WAL, synchronous FULL), its schema, the row the variants update and its own lease.
        @store = LeaseMachines::Store.new(path)
        @store.acquire(resource: RESOURCE, owner: 1, ttl: 3600.0).lease or raise "the first grant was refused"
        @lease = @store.acquire(resource: STORE_RESOURCE, owner: 1, ttl: 3600.0).lease or raise "a grant was refused"
        # Two connections: the pruning trigger fires on every insert of the connection that has it, so (a) and (b)
        # run on one without it (bare), (c) and (d) on one with it (logged).
        @bare, @logged = Array.new(2) do
          SQLite3::Database.new(path).tap do |db|
            db.busy_timeout = 5000
            db.execute("PRAGMA synchronous = FULL")
          end
        end
        @logged.execute_batch(RETENTION)
        @statements = { bare: @bare.prepare(UPDATE), logged: @logged.prepare(UPDATE) }
        @plain = @bare.prepare(PLAIN_INSERT)
        @log = @logged.prepare(LOG_EVENT)
        @seq = 0
      end

      def journal_mode = @bare.get_first_value("PRAGMA journal_mode")
      def synchronous = @bare.get_first_value("PRAGMA synchronous")

      def close
        [*@statements.values, @plain, @log].each(&:close)
        [@bare, @logged].each(&:close)
        @store.close
      end

      def variants
        [[:update, "(a) the row's `UPDATE` alone", batch(:bare) { nil }],
         [:plain, "(b) (a) + one plain `INSERT` into `lease_machines_events`", batch(:bare) { plain_insert }],
         [:pruned, "(c) (a) + the store's event insert and pruning trigger, keep_events #{KEEP_EVENTS} " \
                   "(prunes every call)", batch(:logged, keep: KEEP_EVENTS) { log_event(:pruned) }],
         [:kept, "(d) (a) + the same, keep_events #{KEEP_ALL} (prunes nothing)",
          batch(:logged, keep: KEEP_ALL) { log_event(:kept) }],
         [:renew, "`Store#renew` as shipped (the whole decision)", renewals(prune: true)],
         [:renew_unpruned, "`Store#renew` with the store's pruning trigger dropped", renewals(prune: false)]]
      end

      def warm_up
        retain(KEEP_EVENTS)
        (KEEP_EVENTS + 100).times { transaction(:logged) { log_event(:pruned) } }
        # The store's own lease past keep_events too.
        (KEEP_EVENTS + 100).times { renew }
        variants.each { |_, _, run| run.call(50) }
      end

      def counts = @bare.execute("SELECT resource, count(*) FROM lease_machines_events GROUP BY resource").to_h

      private

      # A batch of n transactions on the +connection+ named (:bare or :logged), with +keep+ as its retention.
      def batch(connection, keep: nil, &statements)
        lambda do |n|
          retain(keep) if keep
          timed(n) { transaction(connection, &statements) }
        end
      end

      # Renewals of the store's lease; without +prune+, the store's TEMP trigger dropped on its own connection for
      # the batch (and made again after it from the store's SQL, which creates it only where it is missing).
      def renewals(prune:)
        lambda do |n|
          @store.database.execute("DROP TRIGGER #{PRUNE_TRIGGER}") unless prune
          begin
            timed(n) { renew }
          ensure
            @store.database.execute_batch(RETENTION) unless prune
          end
        end
      end

      def renew
        @store.renew(resource: STORE_RESOURCE, owner: 1, token: @lease.token, ttl: 3600.0).lease or
          raise "the store refused a renewal"
      end

      def timed(n)
        cpu = Process.clock_gettime(Process::CLOCK_PROCESS_CPUTIME_ID)
        started = EventLog.now
        n.times { yield }
        [EventLog.now - started, Process.clock_gettime(Process::CLOCK_PROCESS_CPUTIME_ID) - cpu]
      end

      # This connection's retention (the settings the TEMP trigger reads), set outside any timing.
      def retain(keep) = @logged.execute(SET_RETENTION, [keep, MAX_AGE])

      # One transaction as the store's: BEGIN IMMEDIATE, the row's UPDATE, what the block runs, COMMIT.
      def transaction(connection)
        db = connection == :bare ? @bare : @logged
        db.execute("BEGIN IMMEDIATE")
        run(@statements.fetch(connection), RESOURCE)
        yield
        db.execute("COMMIT")
      end

      def run(statement, *binds)
        statement.bind_params(*binds)
        statement.step
      ensure
        statement.reset!
      end

      def plain_insert
        @seq += 1
        at = EventLog.realtime
        run(@plain, LEASES[:plain], @seq, at, at + 30, @seq)
      end

      # The store's event of a renewal: ?1 resource, ?2 slot, then kind, at, owner, token, expires_at, revision,
      # reason, replaced owner, token and expires_at, highest.
      def log_event(lease)
        at = EventLog.realtime
        run(@log, LEASES.fetch(lease), 0, "renewed", at, 1, 7, at + 30, 1, nil, nil, nil, nil, nil)
      end
    end

    class Run
      def initialize
        @dir = File.expand_path("../tmp/bench-event-log-#{Process.pid}", __dir__)
      end

      def call
        Bench.scratch(@dir) do |servers|
          header
          tables = []
          tables << postgresql(servers)
          tables << sqlite
          puts
          puts tables.compact.join("\n\n")
        end
      end

      private

      # Bench.header's lines but benchmark-ips' timing, which this benchmark does not use.
      def header
        puts "# the event log's cost per decision on the SQL stores (bench/event_log.rb)"
        puts "ruby:      #{RUBY_DESCRIPTION}"
        puts "machine:   #{Bench.machine}"
        puts "load:      #{Bench.load_average} (load average over 1, 5, 15 minutes before timing; keep the machine " \
             "quiet)"
        puts "timing:    #{N} transactions per variant and round (BENCH_EVENT_LOG_N), #{ROUNDS} interleaved " \
             "rounds, medians"
      end

      def postgresql(servers)
        reason = PostgresCluster.unavailable_reason
        return warn("bench/event_log.rb: the PostgreSQL rows skipped: #{reason}") if reason

        cluster = PostgresCluster.new.start(dir: File.join(@dir, "postgres")).tap { servers << _1 }
        bench = PostgreSQL.new(cluster.socket_url)
        puts "postgres:  PostgreSQL #{bench.version} over its Unix socket, fsync on, synchronous_commit on"
        measure(bench, "postgres: ", "PostgreSQL (Unix socket, one connection)", "server backend")
      ensure
        bench&.close
      end

      def sqlite
        bench = SQLite.new(File.join(@dir, "event_log.sqlite3"))
        puts "sqlite:    SQLite #{SQLite3::SQLITE_VERSION}, journal_mode #{bench.journal_mode}, synchronous " \
             "#{bench.synchronous} (2: FULL)"
        measure(bench, "sqlite:   ", "SQLite (WAL, synchronous FULL, in this process)", "process")
      ensure
        bench&.close
      end

      # Warms +bench+ up, times its variants and reports them under +title+, its CPU +whose+ (the lines it prints
      # start with +tag+).
      def measure(bench, tag, title, whose)
        bench.warm_up
        rows = EventLog.measure(bench.variants)
        puts "#{tag} events per lease after timing: #{bench.counts}"
        EventLog.report(title, whose, rows)
      end
    end
  end
end

Bench::EventLog::Run.new.call if $PROGRAM_NAME == __FILE__
