# frozen_string_literal: true

require "test_helper"
require "lease_machines/store" if LeaseMachines::TestSupport::SQLITE3
require "support/fault_soak"
require "support/redis_support"

# A Jepsen-style fault soak of the Redis store (test/support/fault_soak.rb), as Sidekiq shops run it: the leases in a
# redis-server with appendfsync always, the fence and the application's table of writes in PostgreSQL. Worker
# processes loop over three resources on stores of their own, recording every operation, while the nemesis kills
# workers with SIGKILL and starts new ones, crashes Redis (SIGKILL) and starts it again with its AOF, and cuts one
# worker's host (TestHosts: a network namespace; it reaches both servers through forwarders) off the network while
# it holds a lease, healing it after the lease's TTL. While that worker is cut off, its lease still live, Redis
# crashes once more and starts without its AOF (the append-only directory removed before the start: what a server
# without persistence comes back with, nothing): the lease is lost, another worker may take it before it would have
# expired, and the healed worker's writes with its old token meet the fence. (Without TestHosts, every other crash
# is that lossy one.)
#
# The checker proves, over the merged histories and the final state (Redis's lease hashes and token epoch,
# PostgreSQL's fence and writes), that no token was granted twice, even across the restart that lost every grant
# (the token epoch, committed in PostgreSQL, moves above them); that the grants since the last restart are in Redis;
# that leases never overlapped on the server's clock except across a restart that lost them, which are counted with
# the writes refused to their old holders; that the committed writes' tokens never decrease and never interleave;
# that every write the cut-off worker tried after its lease expired was refused; and that no worker kept failing once
# the faults were over. A fenced write does not lock the lease (it lives in Redis, the write in PostgreSQL), so a
# write may commit after a newer token's grant, before that token's first write: the fence's order is what protects
# the data, and what is checked. LEASE_MACHINES_SOAK_SECONDS sets how long the faults go on (default 20;
# `bin/rake soak:redis` runs 60); the histories are kept in tmp/redis-faults-PID after a failure, or with
# LEASE_MACHINES_SOAK_KEEP=1.
class StoreRedisFaultsTest < Minitest::Test
  include RedisFaultSoak
  include RedisStoreSupport

  def test_kills_redis_restarts_with_and_without_its_aof_and_a_cut_off_host_never_let_a_stale_write_land
    start_redis_soak("redis-faults")
    @redis = own_redis("--appendonly", "yes", "--appendfsync", "always")
    prepare_schema
    LeaseMachines::Store.new(@redis.url, fence: @url).close # the fence's tables, before the workers race to make them
    make_host
    @crash_lock = Mutex.new
    run_soak
    result = redis_check(redis(@redis.url))
    puts "\n#{result.summary}"
    assert_empty result.violations.first(20), "#{result.violations.size} violations (histories in #{@history_dir})"
    counts = result.counts
    assert_soaked(counts)
    assert_operator counts[:lossy], :>=, 1, "the nemesis restarted Redis without its data"
    assert_operator counts[:restarts] - counts[:lossy], :>=, 1, "and with it"
    FileUtils.rm_rf(@dir) unless ENV["LEASE_MACHINES_SOAK_KEEP"] == "1" # else kept, as after a failure
  ensure
    stop_soak
    drop_schema
  end

  private

  # The host's worker reaches Redis and PostgreSQL through forwarders on the hosts' server address.
  def make_host
    return unless cut_off_host

    @host_url = host_url
    @host_redis = "redis://#{@hosts.server_address}:#{link_to(@redis.port).port}/0"
  end

  def worker_store(host) = host ? { url: @host_redis, fence: @host_url } : { url: @redis.url, fence: @url }

  # A crash of Redis that keeps the AOF (every answered decision is back); without a host to cut off, every other
  # one loses everything.
  def crash_server(number) = restart_redis(lossy: !@hosts && number.odd?)

  # The host's worker holds +lease+ and is cut off: Redis loses everything, that lease with it.
  def while_cut_off(_lease) = restart_redis(lossy: true)

  def restart_redis(lossy:)
    @crash_lock.synchronize do
      @nemesis.operation("restart", lossy: lossy) do
        @redis.stop(signal: "KILL")
        FileUtils.rm_rf(Dir[File.join(@redis.dir, "{appendonlydir,dump.rdb}")]) if lossy
        @redis.start && nil
      end
    end
  end
end
