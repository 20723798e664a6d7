# frozen_string_literal: true

# The Ruby benchmarks in bench/ (benchmark-ips), run through the Ruby running rake (FileUtils::RUBY) against the
# compiled extension: first with YJIT off, then with --yjit. BENCH_WARMUP and BENCH_TIME set benchmark-ips' warmup and
# time per report in seconds (default 1 and 3: a full `rake bench` takes about three minutes). Performance is measured
# here and never asserted in tests.
namespace :bench do
  # [label, extra ruby flags] for each run; without YJIT in this Ruby, only the first.
  modes = [["off", []]]
  modes << ["on", ["--yjit"]] if defined?(RubyVM::YJIT)

  results = "tmp/bench"

  desc "Time Authority#acquire/renew/release, Fence#accept and Table#acquire against the native floors (empty, " \
       "behind keywords, building the answer's records) and pure Ruby"
  task decisions: :compile do
    mkdir_p results
    modes.each do |mode, flags|
      sh({ "BENCH_RESULTS" => "#{results}/yjit-#{mode}.json" }, FileUtils::RUBY, *flags, "-Ilib", "bench/decisions.rb")
    end
    puts
    sh FileUtils::RUBY, "bench/summary.rb", *modes.map { |mode, _| "#{results}/yjit-#{mode}.json" }
  end

  desc "Break a granted acquire into its layers (floor, keywords, native call, Data.new), timed and allocations counted"
  task profile: :compile do
    modes.each { |_, flags| sh FileUtils::RUBY, *flags, "-Ilib", "bench/profile.rb" }
  end

  desc "Count instructions per decision with valgrind's callgrind: the core's decisions, the Ruby calls and floors"
  task instructions: :compile do
    sh FileUtils::RUBY, "-Ilib", "bench/instructions.rb"
  end

  desc "The dashboard's pages (LeaseMachines::Web) at 100,000 resources on SQLite, beside an offset pager's query"
  task web: :compile do
    sh FileUtils::RUBY, "-Ilib", "bench/web.rb"
  end

  desc "Lock cycles and renewals per second of the SQLite, PostgreSQL and MySQL stores against one-statement " \
       "upserts, with_advisory_lock and Redis, on throwaway servers, from one process, then from many " \
       "(bench:workers; BENCH_WORKERS=none: not) (STORES=mysql,...: only those; prints docs/performance.md's " \
       "tables and writes its chart; about two minutes, then ten)"
  task stores: :compile do
    sh FileUtils::RUBY, "-Ilib", "bench/stores.rb"
    many = ENV.fetch("STORES", "sqlite,postgresql,redis").split(",").map(&:strip) & %w[sqlite postgresql redis]
    sh FileUtils::RUBY, "-Ilib", "bench/workers.rb" unless ENV["BENCH_WORKERS"] == "none" || many.empty?
  end

  desc "Many worker processes at once (BENCH_WORKERS=1,4,16,64) on distinct resources and on one: decisions/s and " \
       "p50/p99 latency of the SQLite, PostgreSQL (Unix socket, TCP) and Redis stores against one-statement upserts, " \
       "with_advisory_lock and SET NX PX (STORES=...: only those; BENCH_WORKERS_SECONDS per run, default 5; prints " \
       "Markdown tables, writes docs/performance-workers.svg; about ten minutes)"
  task workers: :compile do
    sh FileUtils::RUBY, "-Ilib", "bench/workers.rb"
  end

  desc "Jobs per second through ActiveJob's :inline adapter with and without holds_lease (limit 1 and 4) and " \
       "with_advisory_lock, on SQLite and a throwaway PostgreSQL, with the lease-store requests per job (prints " \
       "docs/performance.md's table; about a minute)"
  task jobs: :compile do
    sh FileUtils::RUBY, "-Ilib", "bench/jobs.rb"
  end

  desc "A semaphore's slots on a throwaway PostgreSQL: the store (every slot row locked) against one-statement " \
       "FOR UPDATE and FOR UPDATE SKIP LOCKED locks, from 1, 4 and 8 worker threads (about 30 seconds)"
  task slots: :compile do
    sh FileUtils::RUBY, "-Ilib", "bench/slots.rb"
  end

  desc "What the event log costs per decision on PostgreSQL (a throwaway cluster, Unix socket) and SQLite: " \
       "transactions of a decision's shape with the row's UPDATE alone, + one plain INSERT, + the store's logging " \
       "and pruning (keep_events 1000, and 1,000,000: nothing pruned), wall and server/process CPU per transaction " \
       "(BENCH_EVENT_LOG_N per round, default 1000; prints Markdown tables; about a minute)"
  task event_log: :compile do
    sh FileUtils::RUBY, "-Ilib", "bench/event_log.rb"
  end

  desc "Check only that bench/reference.rb answers as the native gem does (no timing)"
  task agreement: :compile do
    sh FileUtils::RUBY, "-Ilib", "-e", 'require "./bench/agreement"; puts Agreement.check!'
  end
end

desc "Run the Ruby benchmarks (bench/decisions.rb) with YJIT off, then on, and print docs/performance.md's table"
task bench: "bench:decisions"
