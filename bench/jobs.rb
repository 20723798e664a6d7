# frozen_string_literal: true

# What holds_lease costs a job: jobs per second through ActiveJob's :inline adapter (perform_later performs the job at
# once in this thread, its arguments serialized and deserialized as a queue would), with and without a lease, on each
# lease store, from this one process:
#
#   bin/rake bench:jobs   # or: bin/ruby bench/jobs.rb
#
# Every job writes one row of the application's table through ActiveRecord, on the database the lease store's tables
# live in: a SQLite file under tmp/ (WAL, the application's connection BEGIN IMMEDIATE), and a throwaway PostgreSQL
# cluster under tmp/ (fsync on, synchronous_commit on) over its Unix socket, skipped with its reason where there is
# none. The jobs, on each database:
# - no lock: Report.create!, its own transaction: what the job costs without any lock;
# - with_advisory_lock (its gem, timeout_seconds: 0, so that a held lock is a conflict at once) around the write:
#   what applications pick for one-at-a-time jobs when they do without durability and fencing (an advisory lock of
#   the session on PostgreSQL, flock(2) on a file for SQLite);
# - holds_lease: the lease acquired, the write through lease.fenced, the lease released;
# - holds_lease limit: 4: the same in a slot of the key's 4-slot semaphore.
# Before timing, each job's lease-store requests (acquire, renew, release, fenced) are counted over CHECKS jobs: the
# target is at most 3 per job that ends within its first renewal period. BENCH_WARMUP and BENCH_TIME set
# benchmark-ips' warmup and time per job (default 1 and 3 s). The last thing printed is the Markdown of
# docs/performance.md's table.

require "fileutils"
require_relative "support"
require_relative "../examples/support/postgres_cluster"
require "active_record"
require "lease_machines/jobs"
require "with_advisory_lock"

module Bench
  module Jobs
    CHECKS = 50
    LIMIT = 4
    TARGET = 3

    # Counts the lease store's requests that this thread makes while Thread.current[:bench_requests] is an Integer.
    module CountedRequests
      %i[acquire renew release fenced].each do |name|
        define_method(name) do |**keywords, &block|
          Thread.current[:bench_requests] += 1 if Thread.current[:bench_requests]
          super(**keywords, &block)
        end
      end
    end
    LeaseMachines::Store.prepend(CountedRequests)

    class Report < ActiveRecord::Base; end

    class PlainJob < ActiveJob::Base
      def perform(account) = Report.create!(body: account)
    end

    class AdvisoryLockJob < ActiveJob::Base
      def perform(account)
        locked = Report.with_advisory_lock("report #{account}", timeout_seconds: 0) { Report.create!(body: account) }
        raise "with_advisory_lock: #{account} was held" unless locked
      end
    end

    class LeaseJob < ActiveJob::Base
      include LeaseMachines::HoldsLease
      holds_lease key: ->(account) { account }, ttl: 30.0, renew_every: 10.0

      def perform(account) = lease.fenced { Report.create!(body: account, token: lease.token) }
    end

    class SlotJob < ActiveJob::Base
      include LeaseMachines::HoldsLease
      holds_lease key: ->(account) { account }, ttl: 30.0, renew_every: 10.0, limit: LIMIT

      def perform(account) = lease.fenced { Report.create!(body: account, token: lease.token) }
    end

    JOBS = [["no lock: `Report.create!`", PlainJob, false],
            ["`with_advisory_lock` around the write", AdvisoryLockJob, false],
            ["`holds_lease`, the write `lease.fenced`", LeaseJob, true],
            ["`holds_lease limit: #{LIMIT}`, the write `lease.fenced`", SlotJob, true]].freeze

    Row = Data.define(:database, :job, :figure, :requests, :fenced)

    class Run
      def initialize
        @dir = File.expand_path("../tmp/bench-jobs-#{Process.pid}", __dir__)
        @rows = []
        @notes = []
      end

      def call
        Bench.scratch(@dir) do |servers|
          @servers = servers
          ENV["FLOCK_DIR"] = @dir # with_advisory_lock's lock files on SQLite, else in the working directory
          Bench.header("jobs per second through the :inline adapter, with and without holds_lease (bench/jobs.rb)")
          ActiveJob::Base.logger = Logger.new(nil)
          ActiveJob::Base.queue_adapter = :inline
          ActiveRecord::Migration.verbose = false
          databases.each { |name, connect, store| time(name, connect, store) }
          @notes.each { puts _1 }
          puts
          puts markdown
        end
      end

      private

      # [name, how ActiveRecord connects, the lease store's factory] per database.
      def databases
        file = File.join(@dir, "app.sqlite3")
        list = [["SQLite", -> { sqlite(file) }, -> { LeaseMachines::Store.new(file) }]]
        @notes << "sqlite:    SQLite #{SQLite3::SQLITE_VERSION} (sqlite3 gem #{SQLite3::VERSION}), #{relative(file)}"
        reason = PostgresCluster.unavailable_reason
        if reason
          @notes << "skipped:   the PostgreSQL rows: #{reason}"
        else
          @cluster = PostgresCluster.new.start(dir: File.join(@dir, "postgres")).tap { @servers << _1 }
          url = @cluster.socket_url
          version = PG.connect(url) { _1.exec("SHOW server_version").getvalue(0, 0) }
          @notes << "postgres:  PostgreSQL #{version} in #{relative(@cluster.dir)}, over its Unix socket"
          config = { adapter: "postgresql", host: @cluster.dir, port: @cluster.port, username: PostgresCluster::USER,
                     database: "postgres", min_messages: "warning" }
          list << ["PostgreSQL", -> { ActiveRecord::Base.establish_connection(config) },
                   -> { LeaseMachines::Store.new(url) }]
        end
        list
      end

      def sqlite(file)
        ActiveRecord::Base.establish_connection(adapter: "sqlite3", database: file, timeout: 5_000,
                                                default_transaction_mode: :immediate)
      end

      def relative(path) = path.delete_prefix("#{File.expand_path("..", __dir__)}/")

      def time(database, connect, store)
        connect.call
        ActiveRecord::Schema.define do
          create_table(:reports, force: true) { |t| t.string :body; t.integer :token }
        end
        LeaseMachines::Jobs.store = store
        LeaseMachines::Jobs.configuration.renewal = :background
        counts = JOBS.to_h { |_, job, _| [job, requests(job)] }
        figures = Bench.ips do |ips|
          JOBS.each { |label, job, _| ips.report(label) { job.perform_later("acme") } }
        end
        JOBS.each do |label, job, fenced|
          @rows << Row.new(database, label, figures.fetch(label), counts.fetch(job), fenced)
        end
        Bench.expect!("#{database}: the jobs' writes", Report.where(body: "acme").count >= JOBS.size * CHECKS, true)
      ensure
        LeaseMachines::Jobs.store = nil
        ActiveRecord::Base.remove_connection
      end

      # The lease-store requests per job, over CHECKS jobs (each of which must have written its row).
      def requests(job)
        before = Report.count
        Thread.current[:bench_requests] = 0
        CHECKS.times { job.perform_later("acme") }
        Bench.expect!("#{job.name}'s jobs", Report.count - before, CHECKS)
        Thread.current[:bench_requests].fdiv(CHECKS)
      ensure
        Thread.current[:bench_requests] = nil
      end

      def markdown
        lines = ["| job | database | jobs/s | µs per job | store requests per job | vs no lock | fenced |",
                 "|---|---|---:|---:|---:|---:|---|"]
        @rows.each do |row|
          plain = @rows.find { _1.database == row.database && _1.job == JOBS.first.first }
          lines << "| #{row.job} | #{row.database} | #{format("%.0f", row.figure.ips)} ±" \
                   "#{row.figure.error.round}% | #{format("%.0f", row.figure.ns / 1000)} | " \
                   "#{row.fenced ? format("%.2f", row.requests) : "none"} | " \
                   "#{format("%.2fx", plain.figure.ips / row.figure.ips)} | #{row.fenced ? "yes" : "no"} |"
        end
        over = @rows.select { _1.fenced && _1.requests > TARGET }
        lines << ""
        lines << "Target: at most #{TARGET} lease-store requests per job that ends within its first renewal period " \
                 "(acquire, the fenced write's, release): #{over.empty? ? "met" : "**missed**"} on every row."
        lines.join("\n")
      end
    end
  end
end

Bench::Jobs::Run.new.call if $PROGRAM_NAME == __FILE__
