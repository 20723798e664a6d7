# frozen_string_literal: true

require "test_helper"
require "lease_machines/store" if LeaseMachines::TestSupport::SQLITE3
require "support/fault_soak"

# A Jepsen-style fault soak of the PostgreSQL store through failovers to an asynchronous standby that lagged
# (test/support/fault_soak.rb): a primary and a streaming standby (pg_basebackup) behind a forwarder that the workers
# reach as "the database" (what a floating address or a pooler gives them), the lease tables, the fence and the
# application's table of writes all in that database. While the nemesis kills workers, it fails the database over:
# the standby stops receiving, the primary goes on granting and writing for half a second, then stops with
# -m immediate and is never started again; the standby is promoted (a new timeline), the forwarder moves to it, and
# a new standby is made of it for the next failover. Each failover loses grants, fence marks and writes that the old
# primary acknowledged.
#
# The checker proves, over the merged histories and the promoted database, that no token was granted twice across
# the failovers (the first grant of each new timeline moves the token epoch above every token before it), that the
# committed writes' tokens never decrease or interleave, that the writes of holders whose grant was lost were
# refused, and that every write that returned ok is in the table unless a failover came after it (counted: writes
# lost). LEASE_MACHINES_SOAK_SECONDS sets how long the faults go on (default 20); the histories are kept in
# tmp/postgresql-failover-PID after a failure, or with LEASE_MACHINES_SOAK_KEEP=1.
class StorePostgreSQLFailoverFaultsTest < Minitest::Test
  include FaultSoak

  def test_failovers_to_a_standby_that_lagged_never_repeat_a_token_or_let_a_stale_write_land
    require_postgres!
    plain_suite_only!("forks and spawns workers")
    @dir = File.expand_path("../../tmp/postgresql-failover-#{Process.pid}", __dir__)
    start_soak
    @clusters = []
    @cluster = new_cluster { |made, dir| made.start(dir: dir) }
    @standby = new_standby
    @link = FaultHistory::Link.new(listen: ["127.0.0.1", 0], target: ["127.0.0.1", @cluster.port]).start
    prepare_schema
    LeaseMachines::Store.new(@url).close # the store's tables, before the workers race for them
    run_soak
    faults_done
    result = check
    puts "\n#{result.summary}"
    assert_empty result.violations.first(20), "#{result.violations.size} violations (histories in #{@history_dir})"
    assert_soaked(result.counts)
    assert_operator result.counts[:lossy], :>=, 1, "the nemesis failed the database over"
    passed = ENV["LEASE_MACHINES_SOAK_KEEP"] != "1"
  ensure
    @link&.stop
    stop_soak
    drop_schema
    (@clusters || []).each(&:destroy) # before their directories, which are under @dir, go
    FileUtils.rm_rf(@dir) if passed
  end

  private

  def new_cluster
    PostgresCluster.new.tap do |made|
      @clusters << made
      yield made, File.join(@dir, "pg-#{@clusters.size}")
    end
  end

  def new_standby = new_cluster { |made, dir| made.start_standby(dir: dir, primary: @cluster) }

  def worker_store(_host) = { url: url("127.0.0.1", @link.port) }

  # The standby stops receiving; the primary grants and writes on for half a second, then stops (-m immediate,
  # never to start again); the standby is promoted and the forwarder moved to it. Then a new standby of it.
  def crash_server(_number)
    in_background { fail_over }
  end

  def fail_over
    # The loss begins when the standby stops receiving: the operation spans it.
    @nemesis.operation("restart", lossy: true, fault: "failover") do
      @standby.stop(mode: :fast) # it keeps what it received
      sleep 0.5
      @cluster.stop(mode: :immediate)
      @standby.restart(mode: :fast) # its own WAL only: the primary is gone
      @standby.promote
      port = @link.port
      @link.stop
      @link = FaultHistory::Link.new(listen: ["127.0.0.1", port], target: ["127.0.0.1", @standby.port]).start
      nil
    end
    @cluster = @standby
    @url = url("127.0.0.1", @cluster.port)
    @standby = new_standby
  end

  # The checker over the merged histories and the promoted database's tables (its token epoch's floor: the grants
  # below it are not counted against its rows).
  def check
    stop_workers
    leases, floor = admin(@url) do |db|
      [db.exec("SELECT resource, last_issued FROM lease_machines_leases").to_h do |row|
        [row["resource"], { "last_issued" => row["last_issued"]&.to_i }]
      end,
       db.exec("SELECT epoch FROM lease_machines_history").getvalue(0, 0).to_i << LeaseMachines::TOKEN_EPOCH_BITS]
    end
    fences, writes = fences_and_writes
    FaultHistory::Checker.new(FaultHistory.load(@history_dir), leases: leases, fences: fences, writes: writes,
                                                               floor: floor, lossy_writes: true).check
  end
end
