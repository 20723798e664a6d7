# frozen_string_literal: true

require "test_helper"

# Lease, Checkpoint, Cadence and Decision are frozen values: compared by value, hashable, inspectable, matchable and
# shareable between Ractors.
class ValuesTest < Minitest::Test
  def test_a_checkpoint_says_which_tokens_its_history_issued
    three = LeaseMachines::Checkpoint.new(last_issued: 3, lease: nil, observed: 0.0)
    assert_equal [false, true, true, true, false, false], [0, 1, 2, 3, 4, 2**64 - 1].map { three.issued?(_1) }
    refute LeaseMachines::Checkpoint.new(last_issued: nil, lease: nil, observed: 0.0).issued?(1)
  end

  def test_issued_takes_a_token
    ill_typed!
    checkpoint = LeaseMachines::Checkpoint.new(last_issued: 3, lease: nil, observed: 0.0)
    assert_raises(TypeError) { checkpoint.issued?("2") }
    assert_raises(RangeError) { checkpoint.issued?(-1) }
  end

  def lease(token: 1) = LeaseMachines::Lease.new(owner: 7, token: token, expires_at: 30.0)

  def checkpoint = LeaseMachines::Checkpoint.new(last_issued: 2, lease: lease, observed: 5.0)

  def cadence = LeaseMachines::Cadence.new(ttl: 30.0, renew_every: 10.0, warn_before: 5.0)

  def test_values_are_frozen_from_birth
    [lease, checkpoint, cadence, LeaseMachines::Authority.new.acquire(owner: 1, now: 0.0, ttl: 1.0)].each do |value|
      assert_predicate value, :frozen?, value.inspect
    end
  end

  def test_values_compare_and_hash_by_value
    assert_equal lease, lease
    assert lease.eql?(lease)
    refute_equal lease, lease(token: 2)
    refute_equal lease, "a lease"
    assert_equal lease.hash, lease.hash
    assert_equal checkpoint, checkpoint
    assert_equal cadence, cadence
    assert_equal 1, { lease => 1, lease => 1 }.size
    assert_equal 2, [lease, lease(token: 2), lease].uniq.size
  end

  def test_a_lease_from_the_authority_equals_one_built_from_its_parts
    granted = LeaseMachines::Authority.new.acquire(owner: 7, now: 0.0, ttl: 30.0).lease
    assert_equal lease, granted
    assert_equal lease.hash, granted.hash
  end

  def test_accessors_and_to_h
    assert_equal({ owner: 7, token: 1, expires_at: 30.0 }, lease.to_h)
    assert_equal({ last_issued: 2, lease: lease, observed: 5.0 }, checkpoint.to_h)
    assert_equal({ ttl: 30.0, renew_every: 10.0, warn_before: 5.0 }, cadence.to_h)
    assert_nil LeaseMachines::Checkpoint.new(last_issued: nil, lease: nil, observed: 0.0).last_issued
  end

  def test_lease_liveness
    assert lease.live?(now: 29.999)
    refute lease.live?(now: 30.0)
    assert_equal 10.0, lease.remaining(now: 20.0)
    assert_equal 0.0, lease.remaining(now: 31.0)
  end

  def test_pattern_matching
    case checkpoint
    in { last_issued: Integer => issued, lease: { owner:, token: } }
      assert_equal [2, 7, 1], [issued, owner, token]
    end
    assert_equal({ token: 1 }, lease.deconstruct_keys([:token]))
  end

  def test_inspect
    assert_equal "#<LeaseMachines::Lease owner=7 token=1 expires_at=30.0>", lease.inspect
    assert_equal "#<LeaseMachines::Checkpoint last_issued=2 lease=#<LeaseMachines::Lease owner=7 token=1 " \
                 "expires_at=30.0> observed=5.0>", checkpoint.inspect
    assert_equal "#<LeaseMachines::Cadence ttl=30.0 renew_every=10.0 warn_before=5.0>", cadence.inspect
  end

  def test_dup_and_clone_return_the_value_itself
    [lease, checkpoint, cadence].each do |value|
      assert_same value, value.dup
      assert_same value, value.clone
    end
  end

  def test_values_are_ractor_shareable
    decision = LeaseMachines::Authority.new.acquire(owner: 1, now: 0.0, ttl: 1.0)
    [lease, checkpoint, cadence, decision].each do |value|
      assert Ractor.shareable?(Ractor.make_shareable(value)), value.inspect
    end
    assert Ractor.shareable?(lease), "a Lease is shareable as it comes"
  end

  def test_decisions_are_data_with_predicates
    decision = LeaseMachines::Decision.new(status: :released, lease: nil, reason: nil)
    assert_kind_of Data, decision
    assert_predicate decision, :released?
    assert_predicate decision, :accepted?
    assert_equal %i[granted renewed transferred released reaped rejected], LeaseMachines::Decision.statuses
  end
end
