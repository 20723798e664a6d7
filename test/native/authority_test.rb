# frozen_string_literal: true

require "test_helper"

# The authority's rules through the gem, one test each (the crate's tests/authority_rules.rs has the same list).
class AuthorityTest < Minitest::Test
  def setup
    @authority = LeaseMachines::Authority.new
  end

  def test_a_grant_carries_a_lease_and_no_reason
    decision = @authority.acquire(owner: 1, now: 0.0, ttl: 5.0)
    assert_equal [:granted, LeaseMachines::Lease.new(owner: 1, token: 1, expires_at: 5.0), nil],
                 [decision.status, decision.lease, decision.reason]
    assert_predicate decision, :granted?
    assert_predicate decision, :accepted?
    refute_predicate decision, :rejected?
  end

  def test_a_rejection_carries_a_reason_and_no_lease
    @authority.acquire(owner: 1, now: 0.0, ttl: 5.0)
    decision = @authority.acquire(owner: 2, now: 1.0, ttl: 5.0)
    assert_equal [:rejected, nil, :occupied], [decision.status, decision.lease, decision.reason]
    assert_predicate decision, :rejected?
    refute_predicate decision, :accepted?
  end

  def test_tokens_strictly_increase_even_for_the_same_owner
    tokens = 5.times.map { |i| granted(@authority.acquire(owner: 1, now: i * 2.0, ttl: 1.0)).token }
    assert_equal [1, 2, 3, 4, 5], tokens
  end

  def test_a_lease_expires_at_now_equal_to_expires_at
    @authority.acquire(owner: 1, now: 0.0, ttl: 2.0)
    assert_equal :occupied, @authority.acquire(owner: 2, now: 1.999, ttl: 1.0).reason
    assert_equal 2, granted(@authority.acquire(owner: 2, now: 2.0, ttl: 1.0)).token
  end

  def test_acquire_by_the_holder_of_a_live_lease_is_occupied
    @authority.acquire(owner: 1, now: 0.0, ttl: 5.0)
    assert_equal :occupied, @authority.acquire(owner: 1, now: 1.0, ttl: 5.0).reason
  end

  def test_renewal_keeps_the_token_counts_from_now_and_never_shortens
    @authority.acquire(owner: 1, now: 0.0, ttl: 10.0)
    renewed = @authority.renew(owner: 1, token: 1, now: 1.0, ttl: 2.0)
    assert_equal [:renewed, 1, 10.0], [renewed.status, renewed.lease.token, renewed.lease.expires_at]
    assert_equal 13.0, @authority.renew(owner: 1, token: 1, now: 3.0, ttl: 10.0).lease.expires_at
  end

  def test_renewal_cannot_resurrect_an_expired_or_released_lease
    @authority.acquire(owner: 1, now: 0.0, ttl: 1.0)
    assert_equal :expired, @authority.renew(owner: 1, token: 1, now: 1.0, ttl: 5.0).reason
    authority = LeaseMachines::Authority.new
    authority.acquire(owner: 1, now: 0.0, ttl: 5.0)
    assert_equal :released, authority.release(owner: 1, token: 1, now: 1.0).status
    assert_equal :not_held, authority.renew(owner: 1, token: 1, now: 1.0, ttl: 5.0).reason
  end

  def test_renewal_and_release_need_the_current_owner_and_token
    @authority.acquire(owner: 1, now: 0.0, ttl: 5.0)
    assert_equal :stale_token, @authority.renew(owner: 1, token: 2, now: 1.0, ttl: 5.0).reason
    assert_equal :wrong_owner, @authority.renew(owner: 2, token: 1, now: 1.0, ttl: 5.0).reason
    assert_equal :stale_token, @authority.release(owner: 1, token: 2, now: 1.0).reason
    assert_equal :wrong_owner, @authority.release(owner: 2, token: 1, now: 1.0).reason
  end

  def test_token_zero_is_never_current
    assert_equal :not_held, @authority.renew(owner: 1, token: 0, now: 0.0, ttl: 5.0).reason
    @authority.acquire(owner: 1, now: 0.0, ttl: 5.0)
    assert_equal :stale_token, @authority.renew(owner: 1, token: 0, now: 1.0, ttl: 5.0).reason
    assert_equal :stale_token, @authority.release(owner: 1, token: 0, now: 1.0).reason
    assert_equal 1.0, @authority.observed, "the clock still advanced"
  end

  def test_release_keeps_the_token_high_water
    @authority.acquire(owner: 1, now: 0.0, ttl: 5.0)
    @authority.release(owner: 1, token: 1, now: 1.0)
    assert_nil @authority.lease
    assert_equal 1, @authority.last_issued
    assert_equal 2, granted(@authority.acquire(owner: 2, now: 1.0, ttl: 5.0)).token
  end

  def test_zero_ttl_and_deadline_overflow_are_decisions
    assert_equal :invalid_ttl, @authority.acquire(owner: 1, now: 0.0, ttl: 0.0).reason
    assert_equal :invalid_ttl, @authority.acquire(owner: 1, now: 0.0, ttl: 0).reason
    assert_equal :deadline_overflow, @authority.acquire(owner: 1, now: 1.0, ttl: 2**64 - 1).reason
  end

  def test_a_regressing_clock_is_rejected_and_changes_nothing
    @authority.acquire(owner: 1, now: 10.0, ttl: 5.0)
    before = @authority.checkpoint
    assert_equal :clock_regressed, @authority.acquire(owner: 2, now: 9.0, ttl: 5.0).reason
    assert_equal :clock_regressed, @authority.renew(owner: 1, token: 1, now: 9.0, ttl: 5.0).reason
    assert_equal :clock_regressed, @authority.release(owner: 1, token: 1, now: 9.0).reason
    assert_equal before, @authority.checkpoint
  end

  def test_a_rejected_request_still_advances_the_clock
    @authority.acquire(owner: 1, now: 0.0, ttl: 10.0)
    @authority.acquire(owner: 2, now: 7.0, ttl: 1.0)
    assert_equal 7.0, @authority.observed
  end

  def test_clamp_evaluates_a_regressed_request_at_the_latest_instant
    authority = LeaseMachines::Authority.new(clock_policy: :clamp)
    assert_equal :clamp, authority.clock_policy
    authority.acquire(owner: 1, now: 0.0, ttl: 5.0)
    authority.acquire(owner: 2, now: 6.0, ttl: 0.0)
    assert_equal :expired, authority.renew(owner: 1, token: 1, now: 4.0, ttl: 5.0).reason, "no revival"
    lease = granted(authority.acquire(owner: 2, now: 3.0, ttl: 5.0))
    assert_equal 11.0, lease.expires_at, "counted from 6 s, not 3 s"
  end

  def test_reacquire_rotates_the_holders_own_grant
    @authority.acquire(owner: 1, now: 0.0, ttl: 10.0)
    rotated = granted(@authority.reacquire(owner: 1, now: 1.0, ttl: 10.0))
    assert_equal [2, 11.0], [rotated.token, rotated.expires_at]
    assert_equal :stale_token, @authority.renew(owner: 1, token: 1, now: 2.0, ttl: 10.0).reason
    assert_equal :occupied, @authority.reacquire(owner: 2, now: 2.0, ttl: 10.0).reason
  end

  def test_checkpoint_and_restore_continue_the_history
    @authority.acquire(owner: 1, now: 3.0, ttl: 10.0)
    checkpoint = @authority.checkpoint
    assert_equal [1, LeaseMachines::Lease.new(owner: 1, token: 1, expires_at: 13.0), 3.0],
                 [checkpoint.last_issued, checkpoint.lease, checkpoint.observed]
    restored = LeaseMachines::Authority.restore(checkpoint)
    assert_equal :clock_regressed, restored.acquire(owner: 2, now: 2.0, ttl: 1.0).reason
    assert_equal :occupied, restored.acquire(owner: 2, now: 4.0, ttl: 1.0).reason
    assert_equal 2, granted(restored.acquire(owner: 2, now: 13.0, ttl: 1.0)).token
  end

  def test_restore_takes_a_clock_policy
    restored = LeaseMachines::Authority.restore(@authority.checkpoint, clock_policy: :clamp)
    assert_equal :clamp, restored.clock_policy
    assert_equal :reject, LeaseMachines::Authority.restore(@authority.checkpoint).clock_policy
  end

  def test_token_space_exhaustion_fails_closed
    checkpoint = LeaseMachines::Checkpoint.new(last_issued: 2**64 - 1, lease: nil, observed: 0.0)
    authority = LeaseMachines::Authority.restore(checkpoint)
    assert_equal :token_space_exhausted, authority.acquire(owner: 1, now: 0.0, ttl: 1.0).reason
    assert_equal 2**64 - 1, authority.last_issued
  end

  def test_the_largest_owner_and_token_round_trip
    checkpoint = LeaseMachines::Checkpoint.new(last_issued: 2**64 - 2, lease: nil, observed: 0.0)
    lease = granted(LeaseMachines::Authority.restore(checkpoint).acquire(owner: 2**64 - 1, now: 0.0, ttl: 1.0))
    assert_equal [2**64 - 1, 2**64 - 1], [lease.owner, lease.token]
  end

  def test_every_reason_is_a_known_symbol
    assert_equal %i[clock_regressed invalid_ttl deadline_overflow occupied token_space_exhausted not_held stale_token
                    wrong_owner expired revision_mismatch revision_space_exhausted no_quorum not_leader stale_term leadership_required],
                 LeaseMachines::REASONS
  end

  def test_a_frozen_authority_refuses_every_mutation
    @authority.acquire(owner: 1, now: 0.0, ttl: 5.0)
    @authority.freeze
    assert_raises(FrozenError) { @authority.acquire(owner: 2, now: 9.0, ttl: 1.0) }
    assert_raises(FrozenError) { @authority.reacquire(owner: 1, now: 1.0, ttl: 1.0) }
    assert_raises(FrozenError) { @authority.renew(owner: 1, token: 1, now: 1.0, ttl: 1.0) }
    error = assert_raises(FrozenError) { @authority.release(owner: 1, token: 1, now: 1.0) }
    assert_match(/can't modify frozen LeaseMachines::Authority/, error.message)
    assert_equal 1, @authority.checkpoint.last_issued, "reads still work"
    assert_equal 0.0, @authority.observed, "nothing changed"
  end

  def test_an_authority_cannot_be_copied
    assert_raises(TypeError) { @authority.dup }
    assert_raises(TypeError) { @authority.clone }
  end

  def test_inspect_shows_the_state
    @authority.acquire(owner: 1, now: 0.0, ttl: 5.0)
    assert_equal "#<LeaseMachines::Authority clock_policy=:reject checkpoint=#<LeaseMachines::Checkpoint " \
                 "last_issued=1 lease=#<LeaseMachines::Lease owner=1 token=1 expires_at=5.0> observed=0.0>>",
                 @authority.inspect
  end
end
