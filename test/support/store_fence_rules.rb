# frozen_string_literal: true

require "support/store_rules"

# The store's fence knows every grant: a write is admitted only under the lease live on the store's clock, so a
# holder whose lease went to another owner, was released or ran out is refused at once, before any successor writes.
# The same on every store (test/store/fence_test.rb).
module StoreFenceRules
  include LeaseMachines::TestSupport::StoreRules

  R = "nightly-report"

  # The test's store, on the clock @now (100.0 at first), with the table +report+.
  def store
    @store ||= begin
      @now ||= 100.0
      open_store(clock: -> { @now }).tap { sql(_1.database, "CREATE TABLE report (token bigint)") }
    end
  end

  def write(token) = store.fenced(resource: R, token: token) { |db| sql(db, "INSERT INTO report VALUES (?)", [token]) }
  def written = reported

  def refused(token)
    assert_raises(LeaseMachines::Fenced) { store.fenced(resource: R, token: token) { flunk "must not run" } }
  end

  def test_an_old_token_is_refused_as_soon_as_another_process_was_granted_a_newer_one
    first = store.acquire(resource: R, owner: 7, ttl: 10.0).lease
    write(first.token)
    @now = 111.0 # worker 7 paused past its TTL; another process takes the lease and commits, but has not written yet
    other = open_store(clock: -> { @now })
    assert_equal 2, other.acquire(resource: R, owner: 12, ttl: 10.0).lease.token
    other.close
    error = refused(first.token)
    assert_equal [:stale_token, 1, 2], [error.reason, error.token, error.highest]
    assert_equal "nightly-report: token 1 is older than the newest issued (2); the write was refused", error.message
    assert_equal 1, store.fence_highest(resource: R), "the successor has not written: the mark alone allows token 1"
    write(2)
    assert_equal [1, 2], written
  end

  def test_an_expired_lease_with_no_successor_is_refused
    lease = store.acquire(resource: R, owner: 7, ttl: 10.0).lease
    @now = 109.999
    write(lease.token)
    @now = 110.0 # the expiry instant belongs to the next owner
    error = refused(lease.token)
    assert_equal [:expired, 1], [error.reason, error.highest]
    assert_equal "nightly-report: token 1 belongs to a lease that expired; the write was refused", error.message
    assert_equal [1], written
  end

  def test_a_renewed_lease_keeps_writing_past_its_first_deadline
    lease = store.acquire(resource: R, owner: 7, ttl: 10.0).lease
    @now = 108.0
    assert_predicate store.renew(resource: R, owner: 7, token: lease.token, ttl: 10.0), :renewed?
    @now = 115.0
    write(lease.token)
    assert_equal [1], written
  end

  def test_a_released_lease_is_refused
    lease = store.acquire(resource: R, owner: 7, ttl: 10.0).lease
    assert_predicate store.release(resource: R, owner: 7, token: lease.token), :released?
    error = refused(lease.token)
    assert_equal :not_held, error.reason
    assert_equal "nightly-report: token 1 belongs to a lease that was released; the write was refused", error.message
  end

  def test_a_transfer_and_a_reacquire_fence_the_old_token_at_once
    lease = store.acquire(resource: R, owner: 7, ttl: 10.0).lease
    moved = store.transfer(resource: R, owner: 7, token: lease.token, new_owner: 12, ttl: 10.0).lease
    assert_equal :stale_token, refused(lease.token).reason
    rotated = store.reacquire(resource: R, owner: 12, ttl: 10.0).lease
    assert_equal :stale_token, refused(moved.token).reason
    write(rotated.token)
    assert_equal [3], written
  end

  def test_now_can_be_given_and_a_clock_behind_the_store_reads_as_its_latest_instant
    lease = store.acquire(resource: R, owner: 7, ttl: 10.0).lease
    assert_equal :ok, store.fenced(resource: R, token: lease.token, now: 105.0) { :ok }
    store.acquire(resource: "other", owner: 1, ttl: 1.0) # the store recorded 100.0 for "other" only
    @now = 120.0
    store.renew(resource: R, owner: 7, token: lease.token, ttl: 1.0) # refused as expired, recorded at 120.0
    error = assert_raises(LeaseMachines::Fenced) { store.fenced(resource: R, token: lease.token, now: 101.0) { flunk } }
    assert_equal :expired, error.reason, "101.0 is behind the 120.0 this resource saw: read as 120.0"
  end

  def test_statements_given_up_front_run_with_the_check_and_the_mark
    assert_statements_run_with_the_check_and_the_mark(&:itself)
  end

  # The statements' rows come back as the driver reads them (+as_read+: what it makes of the token written).
  def assert_statements_run_with_the_check_and_the_mark(&as_read)
    token = store.acquire(resource: R, owner: 7, ttl: 30.0, now: 0.0).lease.token
    insert = [placeholders("INSERT INTO report VALUES (?)"), [token]]
    rows = store.fenced(resource: R, token: token, now: 1.0, statements: [insert, ["SELECT token FROM report", []]])
    assert_equal [[], [[as_read.call(token)]]], rows
    assert_equal token, store.fence_highest(resource: R)
    store.acquire(resource: R, owner: 8, ttl: 30.0, now: 40.0)
    error = assert_raises(LeaseMachines::Fenced) do
      store.fenced(resource: R, token: token, now: 41.0, statements: [insert])
    end
    assert_equal :stale_token, error.reason
    assert_equal [token], written
  end
end
