# frozen_string_literal: true

require "test_helper"
require "lease_machines/store" if LeaseMachines::TestSupport::SQLITE3
# The server's clock stepped back (libfaketime on the server process, its offset in a file the test rewrites): a
# store that decides on the server's clock (Redis TIME, PostgreSQL clock_timestamp()) evaluates a later request at
# the latest instant it recorded (the :clamp clock policy), so the step neither revives nor shortens a lease, nor
# lets a second holder in; once the clock runs on, the lease ends, and the next grant's token fences the old one.
#
# On PostgreSQL (StorePostgreSQLClockStepTest). Debian 12's redis-server cannot run under libfaketime (its jemalloc
# calls clock_gettime while libfaketime initializes, which libfaketime refuses: "unexpected recursive calls"); the
# Redis store decides on TIME through the same native call with the same clock policy, and its commit script refuses
# an instant later than TIME, so a step back there is decided again at the row's watermark.
module ClockStepRules
  LIBFAKETIME = "/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1"
  R = "nightly-report"

  # The server process's environment: its wall clock offset by what the file says, read at every call (the
  # monotonic clock left alone: the server's timers keep running).
  def stepped_clock_env
    skip "no libfaketime (Debian's faketime package, which bin/setup installs)" unless File.exist?(LIBFAKETIME)
    dir = File.join(LeaseMachines::TestSupport::TMP, "clock-step-#{Process.pid}-#{SecureRandom.hex(3)}")
    FileUtils.mkdir_p(dir, mode: 0o755) # the server's user reads the file
    File.chmod(0o755, dir)
    @offset_file = File.join(dir, "offset")
    step_clock("+0")
    @offset_dir = dir
    { "LD_PRELOAD" => LIBFAKETIME, "FAKETIME_TIMESTAMP_FILE" => @offset_file, "FAKETIME_NO_CACHE" => "1",
      "FAKETIME_DONT_FAKE_MONOTONIC" => "1" }
  end

  # The server's clock set +offset+ from the real one ("-30": 30 s back).
  def step_clock(offset)
    File.write(@offset_file, "#{offset}\n")
    File.chmod(0o644, @offset_file)
  end

  def test_a_step_back_of_the_servers_clock_neither_revives_nor_shortens_a_lease_nor_lets_a_second_holder_in
    store = clocked_store
    before = store.now
    held = store.acquire(resource: R, owner: 7, ttl: 2.0).lease
    step_clock("-30")
    deadline = Process.clock_gettime(Process::CLOCK_MONOTONIC) + 10
    sleep 0.05 until store.now < before - 20 || Process.clock_gettime(Process::CLOCK_MONOTONIC) > deadline
    assert_operator store.now, :<, before - 20, "the server's clock went back"
    refused = store.acquire(resource: R, owner: 12, ttl: 2.0)
    assert_equal [:rejected, :occupied], [refused.status, refused.reason], "evaluated at the latest instant recorded"
    renewed = store.renew(resource: R, owner: 7, token: held.token, ttl: 2.0).lease
    assert_operator renewed.expires_at, :>=, held.expires_at, "never shortened"
    assert_equal :ok, store.fenced(resource: R, token: held.token) { :ok }
    sleep 2.5 # past the lease's TTL in real time: the clock still stands at the watermark
    assert_equal :occupied, store.acquire(resource: R, owner: 12, ttl: 2.0).reason, "not expired by a step back"
    step_clock("+0")
    sleep 0.05 until store.now > renewed.expires_at
    successor = store.acquire(resource: R, owner: 12, ttl: 2.0).lease
    assert_equal held.token + 1, successor.token
    error = assert_raises(LeaseMachines::Fenced) { store.fenced(resource: R, token: held.token) { flunk } }
    assert_equal :stale_token, error.reason
    assert_predicate store.audit, :valid?
  end
end

class StorePostgreSQLClockStepTest < Minitest::Test
  include ClockStepRules

  def clocked_store
    require_postgres!
    require "pg"
    @cluster = PostgresCluster.new.start(dir: File.join(LeaseMachines::TestSupport::TMP, "pg-clock-#{Process.pid}"),
                                         env: stepped_clock_env)
    @store = LeaseMachines::Store.new(@cluster.url)
  end

  def teardown
    @store&.close
    @cluster&.destroy
    FileUtils.rm_rf(@offset_dir) if @offset_dir
    super
  end
end
