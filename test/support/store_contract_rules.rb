# frozen_string_literal: true

require "support/store_rules"

# The store's requests, decisions and checkpoints, the same on every store (test/store/store_test.rb runs them on
# SQLite, PostgreSQL, MySQL and Redis): every decision durable, revisions rising on accepted changes, tokens rising
# across restarts, and a fenced write's block and mark in one transaction.
module StoreContractRules
  include LeaseMachines::TestSupport::StoreRules

  R = "nightly-report"

  def store = @store ||= open_store(clock: LeaseMachines::TestSupport::STILL_CLOCK)

  def reopen = open_store(clock: LeaseMachines::TestSupport::STILL_CLOCK)

  # Issues tokens 1 to +count+ on +resource+ (to owner 1, leases of 1 s from t = 0, 1, ...).
  def issue(count, resource: R)
    count.times { |i| store.reacquire(resource: resource, owner: 1, ttl: 1.0, now: i.to_f) }
  end

  def test_acquire_commits_the_grant
    decision = store.acquire(resource: R, owner: 7, ttl: 30.0, now: 100.0)
    assert_equal [:granted, 1, 130.0], [decision.status, decision.lease.token, decision.lease.expires_at]
    other = reopen
    assert_equal LeaseMachines::Checkpoint.new(last_issued: 1, lease: decision.lease, observed: 100.0),
                 other.checkpoint(resource: R)
    assert_equal 1, other.revision(resource: R)
  end

  def test_each_request_makes_one_native_decision_call
    store.acquire(resource: R, owner: 7, ttl: 30.0, now: 1.0)
    assert_equal %i[_resource_name _store_decide],
                 native_calls { store.renew(resource: R, owner: 7, token: 1, ttl: 30.0, now: 2.0) }
    assert_equal %i[_resource_name _store_decide],
                 native_calls { store.transfer(resource: R, owner: 7, token: 1, new_owner: 8, ttl: 30.0, now: 2.0) }
    assert_equal %i[_resource_name _store_check_write], native_calls { store.fenced(resource: R, token: 2) { nil } }
  end

  def test_every_decision_is_durable_and_revisions_rise_on_accepted_changes
    assert_equal :granted, store.acquire(resource: R, owner: 7, ttl: 30.0, now: 0.0).status
    assert_equal :occupied, store.acquire(resource: R, owner: 12, ttl: 30.0, now: 1.0).reason
    assert_equal 1, store.revision(resource: R), "a refusal is no change"
    assert_equal 40.0, store.renew(resource: R, owner: 7, token: 1, ttl: 30.0, now: 10.0).lease.expires_at
    assert_equal 2, granted(store.reacquire(resource: R, owner: 7, ttl: 30.0, now: 11.0)).token
    assert_equal :stale_token, store.release(resource: R, owner: 7, token: 1, now: 12.0).reason
    assert_equal :released, store.release(resource: R, owner: 7, token: 2, now: 12.0).status
    assert_equal 4, store.revision(resource: R)
    assert_equal 12.0, store.checkpoint(resource: R).observed
  end

  def test_resources_are_independent
    assert_equal 1, granted(store.acquire(resource: "a", owner: 1, ttl: 5.0, now: 0.0)).token
    assert_equal 1, granted(store.acquire(resource: "b", owner: 2, ttl: 5.0, now: 0.0)).token
  end

  def test_transfer_hands_the_lease_over_with_a_greater_token
    store.acquire(resource: R, owner: 7, ttl: 30.0, now: 0.0)
    decision = store.transfer(resource: R, owner: 7, token: 1, new_owner: 12, ttl: 30.0, now: 5.0)
    assert_equal :transferred, decision.status
    assert_equal [12, 2, 35.0], [decision.lease.owner, decision.lease.token, decision.lease.expires_at]
    assert_equal :stale_token, store.renew(resource: R, owner: 7, token: 1, ttl: 30.0, now: 6.0).reason
  end

  def test_a_refused_transfer_changes_nothing
    store.acquire(resource: R, owner: 7, ttl: 30.0, now: 0.0)
    before = store.checkpoint(resource: R)
    assert_equal :invalid_ttl, store.transfer(resource: R, owner: 7, token: 1, new_owner: 12, ttl: 0.0, now: 5.0).reason
    after = store.checkpoint(resource: R)
    assert_equal [before.last_issued, before.lease, 5.0], [after.last_issued, after.lease, after.observed]
  end

  def test_a_restart_loses_nothing_and_tokens_keep_rising
    store.acquire(resource: R, owner: 7, ttl: 1.0, now: 0.0)
    store.close
    @store = reopen
    assert_equal 2, granted(store.acquire(resource: R, owner: 12, ttl: 1.0, now: 1.0)).token
  end

  # The default clock: the wall clock (SQLite's, a Redis store's) or the server's (PostgreSQL, MySQL), read on
  # this machine as the same instants; with :clamp either way.
  def test_the_default_clock_is_the_wall_clock_with_clamp
    before = Process.clock_gettime(Process::CLOCK_REALTIME)
    @store = open_store
    lease = granted(store.acquire(resource: R, owner: 7, ttl: 30.0))
    assert_in_delta before + 30.0, lease.expires_at, 5.0
    # A clock that steps back is evaluated at the latest instant recorded: the lease is not shortened.
    stepped_back = open_store(clock: -> { before - 3600.0 })
    assert_equal :occupied, stepped_back.acquire(resource: R, owner: 12, ttl: 30.0).reason
    renewed = stepped_back.renew(resource: R, owner: 7, token: 1, ttl: 1.0)
    assert_equal lease.expires_at, renewed.lease.expires_at
  end

  def test_fenced_runs_the_block_and_raises_the_mark_in_one_transaction
    issue(2)
    sql(store.database, "CREATE TABLE report (token bigint)")
    assert_equal :ok, store.fenced(resource: R, token: 2) { |db| sql(db, "INSERT INTO report VALUES (2)") && :ok }
    assert_equal 2, store.fence_highest(resource: R)
    store.fenced(resource: R, token: 2) { |db| sql(db, "INSERT INTO report VALUES (2)") }
    error = assert_raises(LeaseMachines::Fenced) do
      store.fenced(resource: R, token: 1) { flunk "the block must not run for a stale token" }
    end
    assert_equal [R, 1, 2], [error.resource, error.token, error.highest]
    assert_equal :stale_token, error.reason
    assert_equal "nightly-report: token 1 is older than the newest issued (2); the write was refused", error.message
    assert_equal [2, 2], reported
  end

  def test_an_exception_in_the_block_rolls_back_the_write_and_the_mark
    issue(5)
    sql(store.database, "CREATE TABLE report (token bigint)")
    assert_raises(RuntimeError) do
      store.fenced(resource: R, token: 5) do |db|
        sql(db, "INSERT INTO report VALUES (5)")
        raise "disk full, say"
      end
    end
    assert_nil store.fence_highest(resource: R)
    assert_empty reported
  end

  def test_owners_above_2_63_round_trip
    lease = granted(store.acquire(resource: R, owner: 2**64 - 1, ttl: 1.0, now: 0.0))
    assert_equal 2**64 - 1, store.checkpoint(resource: R).lease.owner
    assert_equal lease, store.checkpoint(resource: R).lease
  end
end

# What leaves a fenced block other than a normal return rolls everything back, and the store stays usable
# afterwards; tokens a history never issued are refused; the same on every store.
module StoreTransactionRules
  include LeaseMachines::TestSupport::StoreRules

  R = "nightly-report"

  # The test's store, with the table +report+ and tokens 1 to 5 issued.
  def store
    @store ||= open_store(clock: LeaseMachines::TestSupport::STILL_CLOCK).tap do |opened|
      sql(opened.database, "CREATE TABLE report (token bigint UNIQUE)")
      5.times { |i| opened.reacquire(resource: R, owner: 1, ttl: 1.0, now: i.to_f) }
    end
  end

  def assert_nothing_written_and_usable
    assert_empty reported
    assert_nil store.fence_highest(resource: R)
    refute in_transaction?
    assert_equal 6, granted(store.reacquire(resource: R, owner: 1, ttl: 1.0, now: 5.0)).token, "the store still works"
  end

  def test_a_throw_out_of_the_block_rolls_back
    catch(:out) do
      store.fenced(resource: R, token: 5) do |db|
        sql(db, "INSERT INTO report VALUES (5)")
        throw :out
      end
    end
    assert_nothing_written_and_usable
  end

  def test_a_non_standard_error_out_of_the_block_rolls_back
    interrupt = Class.new(Exception) # rubocop:disable Lint/InheritException
    assert_raises(interrupt) do
      store.fenced(resource: R, token: 5) do |db|
        sql(db, "INSERT INTO report VALUES (5)")
        raise interrupt
      end
    end
    assert_nothing_written_and_usable
  end

  def test_a_token_never_issued_for_the_resource_is_refused
    error = assert_raises(ArgumentError) { store.fenced(resource: R, token: 2**40) { flunk "must not run" } }
    assert_equal "nightly-report: token 1099511627776 was never issued (the last one was 5)", error.message
    assert_nil store.fence_highest(resource: R), "the fence mark did not move"
  end

  def test_token_zero_is_refused_with_a_clear_message
    error = assert_raises(LeaseMachines::Fenced) { store.fenced(resource: R, token: 0) { flunk "must not run" } }
    assert_equal "nightly-report: token 0 is never issued; the write was refused", error.message
  end

  def test_a_bad_clock_policy_is_refused_at_once
    ill_typed!
    assert_raises(ArgumentError) { open_store(clock_policy: :sometimes) }
  end
end
