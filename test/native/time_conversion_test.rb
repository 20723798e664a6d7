# frozen_string_literal: true

require "json"
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

  # An Integer stands for the Float it converts to: one bound for both kinds of number.
  def test_integer_and_float_seconds_share_one_bound
    [2**64, 2**64 + 1, 2**64 - 1].each do |seconds|
      assert_equal LeaseMachines::Lease.new(owner: 1, token: 1, expires_at: seconds.to_f),
                   LeaseMachines::Lease.new(owner: 1, token: 1, expires_at: seconds), "#{seconds} reads as #{seconds.to_f}"
    end
    assert_equal :deadline_overflow, LeaseMachines::Authority.new.acquire(owner: 1, now: 1.0, ttl: 2**64).reason
    ill_typed!
    { 2**65 => (2**65).to_s, 2**1100 => "an Integer of 1101 bits" }.each do |seconds, shown|
      error = assert_raises(ArgumentError) { LeaseMachines::Lease.new(owner: 1, token: 1, expires_at: seconds) }
      assert_equal "expires_at must be finite, non-negative seconds up to 2**64, got #{shown}", error.message
    end
  end

  def test_a_deadline_near_the_end_of_time_stays_usable
    authority = LeaseMachines::Authority.new
    lease = authority.acquire(owner: 1, now: 2.0**64 - 2048, ttl: 2000.0).lease
    assert_equal 2.0**64, lease.expires_at
    restored = LeaseMachines::Authority.restore(LeaseMachines::Checkpoint.new(**authority.checkpoint.to_h))
    assert_equal authority.checkpoint, restored.checkpoint
  end

  # A TableLease's time methods take +now+ as every other method does: the extension's conversion, the core's rule.
  def test_a_table_lease_judges_time_as_its_table_does
    table = LeaseMachines::Table.new
    lease = table.acquire(resource: "a", owner: 1, now: EPOCH, ttl: 0.1).lease
    at = lease.expires_at
    before = at.prev_float
    assert [lease.live?(now: before), lease.remaining(now: before).positive?, !lease.fenced_write(:w, now: before).nil?].all?
    assert_equal :occupied, table.acquire(resource: "a", owner: 2, now: before, ttl: 1.0).reason
    assert_equal [false, 0.0, nil], [lease.live?(now: at), lease.remaining(now: at), lease.fenced_write(:w, now: at)]
    assert_equal :granted, table.acquire(resource: "a", owner: 2, now: at, ttl: 1.0).status
  end

  def test_less_than_a_nanosecond_before_expiry_is_expired_everywhere
    table = LeaseMachines::Table.new
    lease = table.acquire(resource: "a", owner: 1, now: 0.0, ttl: 5.0).lease
    now = 5.0 - 1e-10 # the nanosecond nearest it is 5 s, the deadline itself
    plain = LeaseMachines::Lease.new(owner: 1, token: 1, expires_at: 5.0)
    assert_equal [false, 0.0], [plain.live?(now:), plain.remaining(now:)]
    assert_equal [false, 0.0, nil], [lease.live?(now:), lease.remaining(now:), lease.fenced_write(:w, now:)]
    assert_equal :granted, table.acquire(resource: "a", owner: 2, now:, ttl: 1.0).status
  end

  def test_a_table_lease_refuses_a_bad_now_as_a_lease_does
    ill_typed!
    lease = LeaseMachines::Table.new.acquire(resource: "a", owner: 1, now: 0.0, ttl: 5.0).lease
    plain = LeaseMachines::Lease.new(owner: 1, token: 1, expires_at: 5.0)
    [-100, -0.5, Float::NAN, Float::INFINITY, nil, "1.0", 2**65].each do |now|
      expected = assert_raises(ArgumentError, TypeError) { plain.live?(now:) }
      [-> { lease.live?(now:) }, -> { lease.remaining(now:) }, -> { lease.fenced_write(:w, now:) }].each do |call|
        error = assert_raises(expected.class, "now: #{now.inspect}", &call)
        assert_equal expected.message, error.message
      end
    end
  end

  # A deadline read from JSON (nanoseconds) need not be a Float: it is reported rounded up, so the lease is never
  # live at the expires_at it reports, and the document round-trips unchanged.
  def test_a_json_deadline_off_the_float_grid_is_reported_rounded_up
    off_grid = 1_700_000_000_000_000_001 # EPOCH plus 1 ns; the Floats around EPOCH are 238 ns apart
    json = '{"format":1,"observed_ns":1700000000000000000,"resources":[{"resource":"a","last_issued":1,' \
           '"revision":1,"term":null,"lease":{"owner":1,"token":1,"issued_at_ns":1600000000000000000,' \
           "\"expires_at_ns\":#{off_grid},\"term\":null}}]}"
    table = LeaseMachines::Table.from_json(json)
    lease = table.lease("a")
    assert_equal EPOCH.next_float, lease.expires_at
    assert lease.live?(now: EPOCH)
    assert_equal :occupied, table.acquire(resource: "a", owner: 2, now: EPOCH, ttl: 1.0).reason
    refute lease.live?(now: lease.expires_at)
    assert_equal json, table.to_json
    assert_equal :granted, table.acquire(resource: "a", owner: 2, now: lease.expires_at, ttl: 1.0).status
  end

  def test_a_json_watermark_off_the_float_grid_is_no_regression_at_the_observed_it_reports
    json = '{"format":1,"observed_ns":1700000000000000001,"resources":[]}'
    table = LeaseMachines::Table.from_json(json)
    assert_equal EPOCH.next_float, table.observed
    assert_equal :granted, table.acquire(resource: "a", owner: 1, now: table.observed, ttl: 1.0).status
  end

  def test_a_checkpoint_read_from_json_never_shortens_its_lease
    json = '{"format":1,"last_issued":1,"lease":{"owner":1,"token":1,"expires_at_ns":1700000000000000001},' \
           '"observed_ns":1600000000000000000}'
    checkpoint = LeaseMachines::Checkpoint.from_json(json)
    assert_equal EPOCH.next_float, checkpoint.lease.expires_at
    authority = LeaseMachines::Authority.restore(checkpoint)
    assert_equal :occupied, authority.acquire(owner: 2, now: EPOCH, ttl: 1.0).reason
    assert_equal :granted, authority.acquire(owner: 2, now: checkpoint.lease.expires_at, ttl: 1.0).status
  end

  # A Float +now+ becomes the nanosecond nearest its exact value (Rational(now) is exact), at every scale from a
  # microsecond to 2**41 s. A tie (a fraction of k/1024 s is exactly half a nanosecond off) rounds to the even one.
  def test_a_float_now_becomes_the_nearest_nanosecond
    random = Random.new(Minitest.seed)
    scales = [1e-6, 1.0, 1_000.0, EPOCH, 2.0**32, 2.0**40]
    samples = Array.new(iterations(3_000)) { scales.sample(random:) * random.rand(2.0) }
    ties = [1.0 / 1024, 3.0 / 1024, 7.0 + (5.0 / 1024), 1_000.0 + (511.0 / 1024)]
    (samples + ties + [0.0, 1e-9, 0.5e-9, 4_294_967_295.999_999_9]).each do |now|
      table = LeaseMachines::Table.new
      table.acquire(resource: "a", owner: 1, now:, ttl: 1.0)
      observed = JSON.parse(table.to_json).fetch("observed_ns")
      assert_equal (Rational(now) * 1_000_000_000).round(half: :even), observed, "now: #{now} (#{now.to_r})"
    end
  end
end
