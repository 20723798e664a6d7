# frozen_string_literal: true

# How a semaphore's slots are best locked on PostgreSQL: grants per second of one limit-4 resource from W worker
# threads at once (each its own connection), every worker taking a slot and giving it back at once, on a throwaway
# cluster under tmp/ (fsync on) over its Unix socket:
#
#   bin/rake bench:slots   # or: bin/ruby bench/slots.rb
#
# - `LeaseMachines::Store` (acquire(limit: 4), release(slot:)): every request locks all the resource's slot rows,
#   slot 0's first, and the core decides over all of them;
# - the two ways of locking, each as one autocommitted statement over a table of 4 slot rows, so that they differ
#   in the lock alone: every slot row locked (FOR UPDATE), then the lowest free one taken; or the lowest free slot
#   row that no other transaction has locked taken (FOR UPDATE SKIP LOCKED LIMIT 1), the others skipped.
#
# With W = 4 workers on 4 slots a worker always finds a slot free (each holds one at most), so every refusal is a
# false conflict: a free slot that a transaction had locked (to release it, or to look at it) was skipped. BENCH_TIME
# sets the seconds per row (default 3).

require "fileutils"
require "securerandom"
require_relative "support"
require_relative "../examples/support/postgres_cluster"
require "lease_machines/store"

module Bench
  module Slots
    LIMIT = 4
    WORKERS = [1, LIMIT, 2 * LIMIT].freeze # each a thread with a connection of its own
    NOW = "extract(epoch FROM clock_timestamp())"
    TAKE = "UPDATE bench_slots s SET owner = $2, token = s.token + 1, expires_at = #{NOW} + 30 FROM (%s) free " \
           "WHERE s.resource = $1 AND s.slot = free.slot RETURNING s.slot, s.token"
    LOCK_ALL = format(TAKE, "SELECT min(slot) AS slot FROM (SELECT slot, expires_at FROM bench_slots WHERE " \
                            "resource = $1 ORDER BY slot FOR UPDATE) locked WHERE expires_at <= #{NOW}")
    SKIP_LOCKED = format(TAKE, "SELECT slot FROM bench_slots WHERE resource = $1 AND expires_at <= #{NOW} " \
                               "ORDER BY slot LIMIT 1 FOR UPDATE SKIP LOCKED")
    GIVE_BACK = "UPDATE bench_slots SET owner = NULL, expires_at = 0 WHERE resource = $1 AND slot = $2 " \
                "AND owner = $3 AND token = $4"

    # One worker's lock: +take+ returns [slot, token] or nil (refused); +give_back+ releases it.
    class StoreSlots
      def initialize(url) = @store = LeaseMachines::Store.new(url)

      def take(owner)
        lease = @store.acquire(resource: "bench", owner: owner, ttl: 30.0, limit: LIMIT).lease
        lease && [lease.slot, lease.token]
      end

      def give_back(owner, (slot, token))
        @store.release(resource: "bench", owner: owner, token: token, slot: slot).status == :released or
          raise "the store refused a release"
      end

      def close = @store.close
    end

    class SqlSlots
      def initialize(url, sql)
        @connection = PG.connect(url)
        @sql = sql
      end

      def take(owner) = @connection.exec_params(@sql, ["bench", owner]).values.first&.map { Integer(_1) }

      def give_back(owner, (slot, token))
        @connection.exec_params(GIVE_BACK, ["bench", slot, owner, token]).cmd_tuples == 1 or
          raise "a release matched no row"
      end

      def close = @connection.close
    end

    Row = Data.define(:lock, :workers, :grants, :refused, :seconds) do
      def rate = grants / seconds
    end

    class Run
      def initialize
        @dir = File.expand_path("../tmp/bench-slots-#{Process.pid}", __dir__)
        @rows = []
      end

      def call
        reason = PostgresCluster.unavailable_reason
        abort "bench/slots.rb: #{reason}" if reason
        Bench.scratch(@dir) do |servers|
          Bench.header("a semaphore's slots on PostgreSQL: every slot row locked, or SKIP LOCKED (bench/slots.rb)")
          @cluster = PostgresCluster.new.start(dir: File.join(@dir, "postgres")).tap { servers << _1 }
          url = @cluster.socket_url
          PG.connect(url) do |db|
            db.exec("CREATE TABLE bench_slots (resource text, slot int, owner bigint, token bigint NOT NULL, " \
                    "expires_at float8 NOT NULL, PRIMARY KEY (resource, slot))")
            db.exec("INSERT INTO bench_slots SELECT 'bench', slot, NULL, 0, 0 " \
                    "FROM generate_series(0, #{LIMIT - 1}) slot")
            puts "postgres:  PostgreSQL #{db.exec("SHOW server_version").getvalue(0, 0)}, over its Unix socket; " \
                 "#{Bench::TIME} s per row (BENCH_TIME)"
          end
          locks = [["`LeaseMachines::Store`, every slot row locked", -> { StoreSlots.new(url) }],
                   ["one statement, every slot row locked (`FOR UPDATE`)", -> { SqlSlots.new(url, LOCK_ALL) }],
                   ["one statement, `FOR UPDATE SKIP LOCKED LIMIT 1`", -> { SqlSlots.new(url, SKIP_LOCKED) }]]
          WORKERS.each { |workers| locks.each { |name, open| @rows << time(name, open, workers) } }
          puts
          puts markdown
        end
      end

      private

      # W threads, each with its own lock (connection), taking and giving back slots until the time is up.
      def time(name, open, workers)
        locks = Array.new(workers) { open.call }
        start = Queue.new
        deadline = nil
        threads = locks.map do |lock|
          Thread.new do
            owner = SecureRandom.random_number(1 << 62) + 1
            grants = refused = 0
            start.pop
            while Process.clock_gettime(Process::CLOCK_MONOTONIC) < deadline
              held = lock.take(owner)
              next refused += 1 unless held

              grants += 1
              lock.give_back(owner, held)
            end
            [grants, refused]
          end
        end
        began = Process.clock_gettime(Process::CLOCK_MONOTONIC)
        deadline = began + Bench::TIME
        workers.times { start << true }
        counts = threads.map(&:value)
        Row.new(name, workers, counts.sum(&:first), counts.sum(&:last),
                Process.clock_gettime(Process::CLOCK_MONOTONIC) - began)
      ensure
        locks&.each(&:close)
      end

      def markdown
        lines = ["| lock of a limit-#{LIMIT} resource | workers | grants/s | refused while a slot was free |",
                 "|---|---:|---:|---|"]
        @rows.each do |row|
          falsely = row.workers <= LIMIT ? "#{row.refused} of #{row.grants + row.refused}" : "n/a (more workers)"
          lines << "| #{row.lock} | #{row.workers} | #{format("%.0f", row.rate)} | #{falsely} |"
        end
        lines.join("\n")
      end
    end
  end
end

Bench::Slots::Run.new.call if $PROGRAM_NAME == __FILE__
