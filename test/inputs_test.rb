# frozen_string_literal: true

require "test_helper"

# Every malformed input raises the exception the contract names, with a message naming the argument and the value;
# the object it was given to is left unchanged.
class InputsTest < Minitest::Test
  HUGE = 2**200
  BAD_INTEGERS = {
    nil => [TypeError, "owner must be an Integer in 0..2**64-1, got NilClass nil"],
    "1" => [TypeError, 'owner must be an Integer in 0..2**64-1, got String "1"'],
    :a => [TypeError, "owner must be an Integer in 0..2**64-1, got Symbol :a"],
    1.0 => [TypeError, "owner must be an Integer in 0..2**64-1, got Float 1.0"],
    1r => [TypeError, "owner must be an Integer in 0..2**64-1, got Rational (1/1)"],
    -1 => [RangeError, "owner must be in 0..2**64-1, got -1"],
    2**64 => [RangeError, "owner must be in 0..2**64-1, got 18446744073709551616"],
    HUGE => [RangeError, "owner must be in 0..2**64-1, got #{2**200}"]
  }.freeze

  BAD_TIMES = {
    -1 => ArgumentError,
    -0.5 => ArgumentError,
    Float::NAN => ArgumentError,
    Float::INFINITY => ArgumentError,
    -Float::INFINITY => ArgumentError,
    2**65 => ArgumentError,
    1e300 => ArgumentError,
    HUGE => ArgumentError,
    nil => TypeError,
    "1.0" => TypeError,
    :now => TypeError,
    1r => TypeError
  }.freeze

  def setup
    ill_typed!
    @authority = LeaseMachines::Authority.new
    @authority.acquire(owner: 1, now: 1.0, ttl: 10.0)
    @before = @authority.checkpoint
  end

  def teardown
    assert_equal @before, @authority.checkpoint, "a raising call changes nothing" if @authority
  end

  def test_owners_must_be_integers_in_range
    BAD_INTEGERS.each do |value, (exception, message)|
      error = assert_raises(exception, "owner: #{value.inspect}") { @authority.acquire(owner: value, now: 2.0, ttl: 1.0) }
      assert_equal message, error.message
    end
  end

  def test_tokens_must_be_integers_in_range
    BAD_INTEGERS.each do |value, (exception, message)|
      error = assert_raises(exception) { @authority.renew(owner: 1, token: value, now: 2.0, ttl: 1.0) }
      assert_equal message.sub("owner", "token"), error.message
      assert_raises(exception) { @authority.release(owner: 1, token: value, now: 2.0) }
    end
  end

  def test_times_and_ttls_must_be_finite_non_negative_seconds
    BAD_TIMES.each do |value, exception|
      error = assert_raises(exception, "now: #{value.inspect}") { @authority.acquire(owner: 2, now: value, ttl: 1.0) }
      assert_match(/\Anow must be /, error.message)
      error = assert_raises(exception, "ttl: #{value.inspect}") { @authority.acquire(owner: 2, now: 2.0, ttl: value) }
      assert_match(/\Attl must be /, error.message)
    end
  end

  def test_time_messages_say_what_is_accepted
    error = assert_raises(ArgumentError) { @authority.acquire(owner: 2, now: -1.0, ttl: 1.0) }
    assert_equal "now must be finite, non-negative seconds up to 2**64, got -1.0", error.message
    error = assert_raises(TypeError) { @authority.acquire(owner: 2, now: 1.0, ttl: "5") }
    assert_equal 'ttl must be seconds as a Float or an Integer, got String "5"', error.message
  end

  def test_integer_seconds_and_negative_zero_are_accepted
    authority = LeaseMachines::Authority.new
    assert_equal 5.0, authority.acquire(owner: 1, now: -0.0, ttl: 5).lease.expires_at
    @authority = nil
  end

  def test_missing_or_unknown_keywords_are_argument_errors
    assert_raises(ArgumentError) { @authority.acquire(owner: 1, now: 2.0) }
    assert_raises(ArgumentError) { @authority.acquire(owner: 1, now: 2.0, ttl: 1.0, token: 1) }
    assert_raises(ArgumentError) { @authority.acquire(1, 2.0, 1.0) }
  end

  def test_clock_policy_must_be_a_known_symbol
    error = assert_raises(ArgumentError) { LeaseMachines::Authority.new(clock_policy: :lenient) }
    assert_equal "unknown clock_policy :lenient (valid: :reject, :clamp)", error.message
    error = assert_raises(TypeError) { LeaseMachines::Authority.new(clock_policy: "clamp") }
    assert_equal 'clock_policy must be a Symbol (:reject or :clamp), got "clamp"', error.message
  end

  def test_restore_needs_a_checkpoint
    assert_raises(TypeError) { LeaseMachines::Authority.restore(nil) }
    assert_raises(TypeError) { LeaseMachines::Authority.restore({ last_issued: 1 }) }
  end

  def test_fence_inputs
    fence = LeaseMachines::Fence.new(highest: 3)
    BAD_INTEGERS.each do |value, (exception, message)|
      error = assert_raises(exception) { fence.accept(value) }
      assert_equal message.sub("owner", "token"), error.message
    end
    assert_equal 3, fence.highest
    error = assert_raises(ArgumentError) { LeaseMachines::Fence.new(highest: 0) }
    assert_equal "highest must be an issued token (1..2**64-1), got 0", error.message
    assert_raises(TypeError) { LeaseMachines::Fence.new(highest: 2.0) }
    assert_raises(RangeError) { LeaseMachines::Fence.new(highest: -2) }
  end

  def test_value_inputs
    assert_raises(ArgumentError) { LeaseMachines::Lease.new(owner: 1, token: 0, expires_at: 1.0) }
    assert_raises(TypeError) { LeaseMachines::Lease.new(owner: 1.5, token: 1, expires_at: 1.0) }
    assert_raises(ArgumentError) { LeaseMachines::Lease.new(owner: 1, token: 1, expires_at: Float::NAN) }
    error = assert_raises(TypeError) { LeaseMachines::Checkpoint.new(last_issued: 1, lease: {}, observed: 0.0) }
    assert_equal "lease must be a LeaseMachines::Lease or nil, got {}", error.message
    assert_raises(ArgumentError) { LeaseMachines::Checkpoint.new(last_issued: 0, lease: nil, observed: 0.0) }
    lease = LeaseMachines::Lease.new(owner: 1, token: 1, expires_at: 1.0)
    error = assert_raises(ArgumentError) { LeaseMachines::Checkpoint.new(last_issued: nil, lease: lease, observed: 0.0) }
    assert_equal "impossible checkpoint: lease token 1 was never issued (last_issued is nil)", error.message
    error = assert_raises(ArgumentError) { LeaseMachines::Cadence.new(ttl: 10.0, renew_every: 10.0, warn_before: 1.0) }
    assert_equal "a cadence needs 0 < renew_every < ttl and warn_before < ttl, got ttl=10.0 renew_every=10.0 " \
                 "warn_before=1.0", error.message
  end

  def test_holder_inputs
    cadence = LeaseMachines::Cadence.new(ttl: 10.0, renew_every: 5.0, warn_before: 1.0)
    assert_raises(ArgumentError) { LeaseMachines::Holder.new(token: 0, at: 0.0, cadence: cadence) }
    assert_raises(TypeError) { LeaseMachines::Holder.new(token: 1, at: 0.0, cadence: { ttl: 10.0 }) }
    holder = LeaseMachines::Holder.new(token: 1, at: 0.0, cadence: cadence)
    assert_raises(ArgumentError) { holder.refresh(now: -1.0) }
    assert_raises(RangeError) { holder.confirm(token: -1, at: 1.0) }
    assert_raises(TypeError) { holder.renewal_due?(now: nil) }
    assert_equal :confirmed, holder.state
  end

  def test_arguments_that_must_be_gem_objects_say_so
    error = assert_raises(TypeError) { LeaseMachines::Authority.restore(Object.new) }
    assert_match(/\Acheckpoint must be a LeaseMachines::Checkpoint, got #<Object/, error.message)
    error = assert_raises(TypeError) { LeaseMachines::Holder.new(token: 1, at: 0.0, cadence: 5) }
    assert_equal "cadence must be a LeaseMachines::Cadence, got 5", error.message
  end

  def test_messages_name_the_real_class_of_an_object_with_singleton_methods
    odd = Object.new
    def odd.to_int = 1
    error = assert_raises(TypeError) { @authority.acquire(owner: odd, now: 2.0, ttl: 1.0) }
    assert_match(/\Aowner must be an Integer in 0..2\*\*64-1, got Object #<Object/, error.message)
  end

  def test_a_symbol_that_is_not_utf8_is_an_unknown_clock_policy
    error = assert_raises(ArgumentError) { LeaseMachines::Authority.new(clock_policy: "\xff".b.to_sym) }
    assert_match(/\Aunknown clock_policy/, error.message)
  end

  def test_no_class_can_be_allocated_uninitialised
    [LeaseMachines::Authority, LeaseMachines::Fence, LeaseMachines::Holder, LeaseMachines::Lease,
     LeaseMachines::Checkpoint, LeaseMachines::Cadence].each do |klass|
      assert_raises(TypeError, klass.name) { klass.allocate }
    end
  end

  def test_a_gigantic_integer_is_described_not_printed
    error = assert_raises(RangeError) { @authority.acquire(owner: 2**(2**20), now: 2.0, ttl: 1.0) }
    assert_equal "owner must be in 0..2**64-1, got an Integer of 1048577 bits", error.message
  end

  def test_a_huge_value_is_shown_shortened
    error = assert_raises(RangeError) { @authority.acquire(owner: 10**100, now: 2.0, ttl: 1.0) }
    assert_operator error.message.length, :<, 100
    assert error.message.end_with?("...")
  end
end
