# frozen_string_literal: true

require "test_helper"

# Ruby sees Floats, the core counts nanoseconds. Every instant the gem returns converts back to exactly the instant
# the engine uses, and a computed deadline is never shown earlier than it is.
class TimeConversionTest < Minitest::Test
  EPOCH = 1_700_000_000.0 # at Unix-epoch scale a Float cannot hold every nanosecond

  def test_a_deadline_passed_back_as_now_is_expired_at_epoch_scale
    random = Random.new(Minitest.seed)
    iterations(500).times do
      authority = LeaseMachines::Authority.new
      now = EPOCH + random.rand(1_000.0)
      lease = authority.acquire(owner: 1, now: now, ttl: random.rand(0.001..100.0)).lease
      refute lease.live?(now: lease.expires_at), "live at its own expires_at: #{lease.inspect}"
      assert_equal lease, LeaseMachines::Lease.new(**lease.to_h)
      assert authority.acquire(owner: 2, now: lease.expires_at, ttl: 1.0).granted?
    end
  end

  def test_renewed_deadlines_round_trip_too
    authority = LeaseMachines::Authority.new
    authority.acquire(owner: 1, now: EPOCH, ttl: 30.1)
    lease = authority.renew(owner: 1, token: 1, now: EPOCH + 10.3, ttl: 30.1).lease
    assert_equal lease, LeaseMachines::Lease.new(**lease.to_h)
    assert_equal :expired, authority.renew(owner: 1, token: 1, now: lease.expires_at, ttl: 1.0).reason
  end

  def test_a_holder_is_at_risk_at_the_warning_deadline_it_reports
    cadence = LeaseMachines::Cadence.new(ttl: 30.1, renew_every: 10.3, warn_before: 5.0)
    holder = LeaseMachines::Holder.new(token: 1, at: EPOCH, cadence: cadence)
    assert holder.at_risk?(now: holder.warning_deadline)
    assert holder.renewal_due?(now: holder.next_renewal)
  end

  def test_the_largest_time_round_trips
    lease = LeaseMachines::Lease.new(owner: 1, token: 1, expires_at: 2**64 - 1)
    assert_equal 2.0**64, lease.expires_at
    assert_equal lease, LeaseMachines::Lease.new(**lease.to_h)
    assert_equal :deadline_overflow, LeaseMachines::Authority.new.acquire(owner: 1, now: 1.0, ttl: 2.0**64).reason
    ill_typed!
    assert_raises(ArgumentError) { LeaseMachines::Lease.new(owner: 1, token: 1, expires_at: 2.0**64 * 2) }
  end

  def test_a_deadline_near_the_end_of_time_stays_usable
    authority = LeaseMachines::Authority.new
    lease = authority.acquire(owner: 1, now: 2.0**64 - 2048, ttl: 2000.0).lease
    assert_equal 2.0**64, lease.expires_at
    restored = LeaseMachines::Authority.restore(LeaseMachines::Checkpoint.new(**authority.checkpoint.to_h))
    assert_equal authority.checkpoint, restored.checkpoint
  end
end
