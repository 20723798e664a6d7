# frozen_string_literal: true

require "test_helper"
require "json"
require "securerandom"
require "lease_machines/store" if LeaseMachines::TestSupport::SQLITE3
require "support/fault_soak"

# A Jepsen-style fault soak of the PostgreSQL store (test/support/fault_soak.rb). Worker processes loop over
# three resources on stores of their own (acquire or reacquire, fenced writes into the application's table, renew,
# release, transfer), recording every operation in a history, while the nemesis kills workers with SIGKILL and
# starts new ones, crashes the server (`pg_ctl stop -m immediate`) and starts it again, and cuts one worker's host
# (TestHosts: a network namespace) off the network while it holds a lease, healing it after the lease's TTL: the
# worker goes on writing with its old token. The checker then proves, over the merged histories and the final
# tables, that no token was granted twice, every grant returned is in the database, leases never overlapped on the
# server's clock, the committed writes' tokens never decrease and never interleave, no write landed after a newer
# token was granted, every write the cut-off worker tried after its lease expired was refused, and no worker kept
# failing once the faults were over. Without TestHosts the cut is skipped (saying why), the rest runs.
# LEASE_MACHINES_SOAK_SECONDS sets how long the faults go on (default 20; `bin/rake soak:postgres` runs 60); the
# histories are kept in tmp/postgres-faults-PID after a failure, or with LEASE_MACHINES_SOAK_KEEP=1.
class StorePostgreSQLFaultsTest < Minitest::Test
  include FaultSoak

  def test_kills_server_crashes_and_a_cut_off_host_never_break_the_leases_or_the_fence
    @cluster = require_postgres!
    plain_suite_only!("forks and spawns workers")
    @dir = File.expand_path("../../tmp/postgres-faults-#{Process.pid}", __dir__)
    start_soak
    prepare_database
    make_host
    run_soak
    assert_sound(check)
    FileUtils.rm_rf(@dir) unless ENV["LEASE_MACHINES_SOAK_KEEP"] == "1" # else kept, as after a failure
  ensure
    stop_everything
  end

  # The checker itself, on made-up histories: a clean one passes, a token granted twice and a stale write that
  # landed are reported. A checker that cannot fail proves nothing.
  def test_the_checker_passes_a_clean_history
    dir, a, b = histories
    a.ok(a.invoke("release", resource: "r", owner: 1, token: 1), { status: "released", token: 1 })
    grant(b, owner: 2, token: 2, expires_at: 103.0)
    result = checked(dir, last_issued: 2, writes: [row(1, 1, 1, 1, 100.5)])
    assert_empty result.violations
    assert_match(/decisions=3 \(grants=2\) fenced writes=1 .*violations=0\z/, result.summary)
  end

  def test_the_checker_reports_a_token_granted_twice
    dir, _, b = histories
    grant(b, owner: 2, token: 1, expires_at: 102.0)
    violations = checked(dir, last_issued: 1, writes: [row(1, 1, 1, 1, 100.5)]).violations
    assert_includes violations, "r: token 1 granted 2 times (a#1 acquire r, b#1 acquire r)"
    assert(violations.any? { _1.include?("b#1 acquire r got token 1 after a#1 acquire r had returned token 1") })
  end

  def test_the_checker_reports_a_stale_write_that_landed
    dir, a, b = histories
    a.note("stubborn", resource: "r", token: 1, expires_at: FaultHistory.wall) # cut off; its lease expires now
    grant(b, owner: 2, token: 2, expires_at: 200.0)
    written(b, owner: 2, token: 2, seq: 1, id: 2)
    written(a, owner: 1, token: 1, seq: 2, id: 3) # the store let it through
    result = checked(dir, last_issued: 2, fence: 2,
                          writes: [row(1, 1, 1, 1, 100.5), row(2, 2, 2, 1, 199.5), row(3, 1, 1, 2, 199.7)])
    expected = [
      /\Aa#3 write r 1 2: a write after its lease expired at .* returned ok\z/,
      /\Ar: write 3 \(token 1\) committed after write 2 \(token 2\)\z/,
      /\Ar: the writes of token 1 \(ids 1\.\.3\) interleave with another token's\z/,
      /\Ar: write 3 \(token 1, worker 1\) landed at 199\.7, after token 2 was granted at 199\.0 \(b#1 acquire r\)\z/
    ]
    expected.each { |pattern| assert(result.violations.any? { pattern.match?(_1) }, "#{pattern} in #{result.violations}") }
    assert_match(/violations=4\z/, result.summary)
  end

  # A Redis that restarted with nothing (lossy) lost token 1's live lease: token 2**40 + 1 (the next epoch's first)
  # overlaps it, counted with the old holder's write that was then refused; the grants since the restart are checked
  # against Redis's row, the ones before its epoch's floor are not.
  def test_the_checker_counts_the_leases_a_lossy_restart_lost_and_their_refused_writes
    dir, a, b = histories
    epoch = 2**40
    restart(dir, lossy: true)
    grant(b, owner: 2, token: epoch + 1, expires_at: 101.5)
    refused(a, owner: 1, token: 1, seq: 2)
    result = checked(dir, last_issued: epoch + 1, floor: epoch, fence: 1, writes: [row(1, 1, 1, 1, 100.5)])
    assert_empty result.violations
    assert_match(/restarts=1 \(lossy=1\) .*leases lost=1, their writes refused=1; violations=0\z/, result.summary)

    violations = checked(dir, last_issued: epoch, floor: epoch, fence: 1, writes: [row(1, 1, 1, 1, 100.5)]).violations
    assert_equal ["r: b#1 acquire r returned token #{epoch + 1}, above the stored last_issued #{epoch}"], violations
  end

  # A restart that kept its data excuses no overlap; and without the floor, the earlier epochs' tokens are counted.
  def test_the_checker_reports_leases_that_overlap_across_a_restart_that_kept_them
    dir, _, b = histories
    restart(dir, lossy: false)
    grant(b, owner: 2, token: 2**40 + 1, expires_at: 101.5)
    violations = checked(dir, last_issued: 2**40 + 1, fence: 1, writes: [row(1, 1, 1, 1, 100.5)]).violations
    overlap = "r: b#1 acquire r (token #{2**40 + 1}) started at 100.5, before token 1's"
    assert(violations.any? { _1.start_with?(overlap) }, violations.inspect)
    assert_includes violations, "r: #{2**40 + 1} tokens issued, #{2**40 - 1} of them by no grant returned ok, with " \
                                "only 0 grants of unknown outcome"
  end

  # A holder's next grant ends its earlier lease at that grant's instant on the server's clock, which may be a little
  # before the process invoked it (the Redis store decides on the row its last commit left, with the clock carried
  # from the server's last answer); another owner's grant before the newer lease ends is still an overlap.
  def test_the_checker_ends_a_lease_at_its_holders_next_grant_and_reports_an_overlap_with_that_grant
    dir, a, b = histories
    writes = [row(1, 1, 1, 1, 100.2)]
    grant(a, owner: 1, token: 2, expires_at: 101.5) # decided at 100.5, before token 1's expiry (101.0)
    assert_empty checked(dir, last_issued: 2, writes: writes).violations
    grant(b, owner: 2, token: 3, expires_at: 101.7)
    assert_equal ["r: b#1 acquire r (token 3) started at 100.7, before token 2's lease (a#3 acquire r) ended at 101.5"],
                 checked(dir, last_issued: 3, writes: writes).violations
  end

  # With the lease in another database than the write (locked_leases: false), a write that committed after a newer
  # token's grant, before that token's first write, is the fence's to order, not a violation.
  def test_the_checker_leaves_a_write_after_a_successors_grant_to_the_fence_when_the_write_does_not_lock_the_lease
    dir, a, b = histories
    grant(b, owner: 2, token: 2, expires_at: 200.0)
    written(a, owner: 1, token: 1, seq: 2, id: 2)
    rows = [row(1, 1, 1, 1, 100.5), row(2, 1, 1, 2, 199.2)]
    assert_empty checked(dir, last_issued: 2, writes: rows, locked_leases: false).violations
    assert_equal ["r: write 2 (token 1, worker 1) landed at 199.2, after token 2 was granted at 199.0 (b#1 acquire r)"],
                 checked(dir, last_issued: 2, writes: rows).violations
  end

  private

  def restart(dir, lossy:)
    nemesis = FaultHistory::Recorder.new(File.join(dir, "nemesis.jsonl"), process: "nemesis")
    nemesis.ok(nemesis.invoke("restart", lossy: lossy))
  end

  def refused(recorder, owner:, token:, seq:)
    index = recorder.invoke("write", resource: "r", owner: owner, token: token, seq: seq)
    recorder.fail(index, error: "LeaseMachines::Fenced", message: "stale", reason: "stale_token")
  end

  # A fresh directory with the histories of processes a and b, in which a (owner 1) was granted token 1 until 101.0
  # and wrote once with it (row 1).
  def histories
    dir = scratch_dir("fault-history")
    a, b = %w[a b].map { FaultHistory::Recorder.new(File.join(dir, "#{_1}.jsonl"), process: _1) }
    grant(a, owner: 1, token: 1, expires_at: 101.0)
    written(a, owner: 1, token: 1, seq: 1, id: 1)
    [dir, a, b]
  end

  def grant(recorder, owner:, token:, expires_at:, ttl: 1.0)
    index = recorder.invoke("acquire", resource: "r", owner: owner, ttl: ttl)
    recorder.ok(index, { status: "granted", token: token, owner: owner, expires_at: expires_at })
  end

  def written(recorder, owner:, token:, seq:, id:)
    recorder.ok(recorder.invoke("write", resource: "r", owner: owner, token: token, seq: seq), id)
  end

  def row(id, token, worker, seq, at)
    { "id" => id, "resource" => "r", "token" => token, "worker" => worker, "seq" => seq, "at" => at }
  end

  def checked(dir, last_issued:, writes: [], fence: writes.map { _1["token"] }.max, **options)
    FaultHistory::Checker.new(FaultHistory.load(dir), leases: { "r" => { "last_issued" => last_issued } },
                                                      fences: fence ? { "r" => fence } : {}, writes: writes,
                                                      **options).check
  end

  # The soak's schema (FaultSoak#prepare_schema) with the lease store's tables.
  def prepare_database
    prepare_schema
    LeaseMachines::Store.new(@url).close # the store's schema, before the workers race to make it
  end

  # The host the nemesis cuts off (FaultSoak#cut_off_host), whose worker reaches the server through a forwarder on
  # the hosts' server address (the server listens on 127.0.0.1).
  def make_host
    @host_url = host_url if cut_off_host
  end

  def worker_store(host) = { url: host ? @host_url : @url }

  def crash_server(_number) = @nemesis.operation("restart") { @cluster.restart(mode: :immediate) && nil }

  def stop_everything
    stop_soak
    drop_schema
  end

  # The checker over the merged histories and the final tables (after every worker was killed).
  def check
    stop_workers
    leases = admin(@url) do |db|
      db.type_map_for_results = PG::BasicTypeMapForResults.new(db) # bigints as Integers
      db.exec("SELECT resource, last_issued FROM lease_machines_leases").to_h { [_1["resource"], _1.slice("last_issued")] }
    end
    fences, writes = fences_and_writes
    FaultHistory::Checker.new(FaultHistory.load(@history_dir), leases: leases, fences: fences, writes: writes).check
  end
end
