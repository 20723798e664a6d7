# frozen_string_literal: true

require "test_helper"
require "lease_machines/store" if LeaseMachines::TestSupport::SQLITE3
require "support/fault_soak"
require "support/redis_support"

# A Jepsen-style fault soak of the Redis store through real replication (test/support/fault_soak.rb): two
# redis-servers with appendfsync everysec, one the other's replica, behind a forwarder that the workers reach as "the
# primary" (what a Sentinel-aware client or a floating address gives them); the fence and the application's table of
# writes in PostgreSQL. While the nemesis kills workers, it takes turns at three faults, each of which loses grants:
#
# - failover: the replica is cut off (REPLICAOF NO ONE) while the primary goes on granting, the primary is killed
#   (SIGKILL), the forwarder moves to the promoted replica, and the old primary comes back as its replica;
# - failback: the replica is cut off the same way, then the primary takes its data (REPLICAOF) and is promoted again:
#   the same server process, with the grants it made meanwhile gone;
# - crash: the primary is killed (SIGKILL) while the writes run and starts again from its AOF (everysec: up to a
#   second of grants lost).
#
# The checker proves, over the merged histories and the final state, that no token was granted twice across every
# one of them (the token epoch moves with the server's history: run_id and master_replid), that the committed writes'
# tokens never decrease or interleave, and that the writes of holders whose grant was lost were refused.
# LEASE_MACHINES_SOAK_SECONDS sets how long the faults go on (default 20); the histories are kept in
# tmp/redis-failover-PID after a failure, or with LEASE_MACHINES_SOAK_KEEP=1.
class StoreRedisFailoverFaultsTest < Minitest::Test
  include RedisFaultSoak
  include RedisStoreSupport

  FAULTS = %w[failover failback crash].freeze

  def test_failovers_failbacks_and_crashes_of_replicated_redis_never_repeat_a_token_or_let_a_stale_write_land
    start_redis_soak("redis-failover")
    @servers = Array.new(2) { own_redis("--appendonly", "yes", "--appendfsync", "everysec") }
    @primary = 0
    follow(1, 0)
    @link = FaultHistory::Link.new(listen: ["127.0.0.1", 0], target: ["127.0.0.1", @servers[0].port]).start
    prepare_schema
    LeaseMachines::Store.new(primary_url, fence: @url).close # the fence's tables, before the workers race for them
    run_soak(crashes: FAULTS.size)
    faults_done
    result = redis_check(admin_of(@primary))
    puts "\n#{result.summary}"
    assert_empty result.violations.first(20), "#{result.violations.size} violations (histories in #{@history_dir})"
    assert_soaked(result.counts)
    assert_equal FAULTS.size, result.counts[:lossy], "each fault could lose grants"
    FileUtils.rm_rf(@dir) unless ENV["LEASE_MACHINES_SOAK_KEEP"] == "1"
  ensure
    @link&.stop
    stop_soak
    drop_schema
  end

  private

  def primary_url = "redis://127.0.0.1:#{@link.port}/0"
  def worker_store(_host) = { url: primary_url, fence: @url }

  def admin_of(index) = (@admins ||= {})[index] ||= redis(@servers[index].url)

  # Server +index+ made a replica of server +of+, and waited for until it holds everything +of+ took so far.
  def follow(index, of)
    admin_of(index).call("REPLICAOF", "127.0.0.1", @servers[of].port.to_s)
    offset = ->(i, field) { admin_of(i).call("INFO", "replication")[/^#{field}:(\d+)/, 1].to_i }
    deadline = monotonic + 60
    until admin_of(index).call("INFO", "replication").include?("master_link_status:up") &&
          offset.call(index, "slave_repl_offset") >= offset.call(of, "master_repl_offset")
      flunk "server #{index} never caught up with server #{of}" if monotonic > deadline
      sleep 0.02
    end
  end

  # The forwarder the workers reach, moved to server +index+ (their connections through the old one break).
  def point_at(index)
    port = @link.port
    @link.stop
    @link = FaultHistory::Link.new(listen: ["127.0.0.1", port], target: ["127.0.0.1", @servers[index].port]).start
  end

  def crash_server(number)
    fault = FAULTS[number % FAULTS.size]
    in_background do
      primary = @primary
      replica = 1 - primary
      # The loss begins when the replica is cut off: the operation spans it.
      @nemesis.operation("restart", lossy: true, fault: fault) do
        unless fault == "crash"
          admin_of(replica).call("REPLICAOF", "NO", "ONE") # cut off: the primary's next grants never reach it
          sleep 0.5 # and the primary goes on granting
        end
        __send__(fault, primary, replica) && nil
      end
    end
  end

  # The primary killed, the workers moved to the cut-off replica, the old primary back as its replica.
  def failover(primary, replica)
    @servers[primary].stop(signal: "KILL")
    point_at(replica)
    @primary = replica
    @admins&.delete(primary)&.close
    @servers[primary].start
    follow(primary, replica)
  end

  # The primary takes the cut-off replica's data and is promoted again; the replica follows it again.
  def failback(primary, replica)
    follow(primary, replica) # its data replaced by the replica's
    admin_of(primary).call("REPLICAOF", "NO", "ONE") # promoted again, the same process
    follow(replica, primary)
  end

  # The primary killed while the writes run and started again from its AOF; the replica follows it again.
  def crash(primary, replica)
    @servers[primary].stop(signal: "KILL")
    @admins&.delete(primary)&.close
    @servers[primary].start # from its AOF: the last second of grants may be gone
    follow(replica, primary)
  end
end
