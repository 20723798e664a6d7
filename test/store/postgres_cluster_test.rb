# frozen_string_literal: true

require "test_helper"

# The suite's throwaway PostgreSQL (examples/support/postgres_cluster.rb, TestSupport.postgres): Debian 12's server
# 15 reached with the pg gem over TCP and the Unix socket, libpq's pipeline mode, an immediate stop (a crash, for the
# server) that loses no committed row, and nothing left running once a cluster is destroyed or its process exits.
class PostgresClusterTest < Minitest::Test
  def setup
    @cluster = require_postgres!
  end

  def teardown
    (@own || []).each(&:destroy)
  end

  def test_a_connection_over_tcp_and_over_the_socket_reaches_postgresql_15
    [@cluster.url, @cluster.socket_url].each do |url|
      PG.connect(url) do |connection|
        assert_equal [["1"]], connection.exec("SELECT 1").values, url
        assert_operator connection.server_version, :>=, 150_000
        assert_equal %w[on 100], %w[fsync max_connections].map { connection.exec("SHOW #{_1}").getvalue(0, 0) }
      end
    end
  end

  def test_pipeline_mode_sends_queries_before_reading_their_results
    PG.connect(@cluster.url) do |connection|
      connection.enter_pipeline_mode
      assert_equal PG::PQ_PIPELINE_ON, connection.pipeline_status
      [1, 2, 3].each { connection.send_query_params("SELECT $1::int * 10", [_1]) }
      connection.pipeline_sync
      sums = 3.times.map do
        result = connection.get_result
        assert_nil connection.get_result, "each query's results end with nil"
        result.getvalue(0, 0)
      end
      assert_equal %w[10 20 30], sums
      assert_equal PG::PGRES_PIPELINE_SYNC, connection.get_result.result_status
      connection.exit_pipeline_mode
      assert_equal [["4"]], connection.exec("SELECT 2 + 2").values
    end
  end

  def test_an_immediate_restart_keeps_committed_rows_and_the_port
    cluster = own_cluster("restart")
    port = cluster.port
    old_pid = cluster.pid
    before = PG.connect(cluster.url)
    before.set_notice_receiver { nil } # the server's "terminating connection due to immediate shutdown"
    before.exec("CREATE TABLE ledger (token bigint PRIMARY KEY)")
    before.exec("INSERT INTO ledger VALUES (7)")
    cluster.restart
    assert_equal port, cluster.port
    refute_equal old_pid, cluster.pid, "a new server process"
    assert_raises(PG::Error, "the old session died with its server") { before.exec("SELECT 1") }
    PG.connect(cluster.url) { assert_equal [["7"]], _1.exec("SELECT token FROM ledger").values }
  ensure
    before&.close
  end

  def test_nothing_is_left_once_a_cluster_is_destroyed
    cluster = own_cluster("destroy")
    dir = cluster.dir
    url = cluster.url
    server = cluster.pid
    # A forked child inherits the hook that stops the server at exit, and must not run it.
    Process.wait(fork { exit })
    assert cluster.running?, "a child's exit left the server alone"
    cluster.destroy
    refute cluster.running?
    refute File.exist?(dir), dir
    assert gone?(server), "postgres #{server} still runs"
    assert_raises(PG::ConnectionBad) { PG.connect(url, connect_timeout: 5) }
  end

  private

  # A cluster of the test's own, beside the suite's (tmp/postgres-PID-NAME), destroyed after the test.
  def own_cluster(name)
    cluster = PostgresCluster.new.start(dir: "#{@cluster.dir}-#{name}")
    (@own ||= []) << cluster
    cluster
  end

  # The process has exited within 5 seconds (a zombie its new parent has not reaped yet counts as exited).
  def gone?(pid)
    deadline = Process.clock_gettime(Process::CLOCK_MONOTONIC) + 5
    until [nil, "Z"].include?(process_state(pid))
      return false if Process.clock_gettime(Process::CLOCK_MONOTONIC) > deadline

      sleep 0.05
    end
    true
  end

  # The state letter of /proc/PID/stat, or nil when there is no such process.
  def process_state(pid)
    File.read("/proc/#{pid}/stat")[/\) (\S)/, 1]
  rescue Errno::ENOENT, Errno::ESRCH
    nil
  end
end
