# frozen_string_literal: true

require "test_helper"

# The holder's rules through the gem (the crate's tests/holder_rules.rs has the same list).
class HolderTest < Minitest::Test
  def setup
    @cadence = LeaseMachines::Cadence.new(ttl: 30.0, renew_every: 10.0, warn_before: 5.0)
    @holder = LeaseMachines::Holder.new(token: 1, at: 0.0, cadence: @cadence)
  end

  def test_a_new_holder_is_confirmed_and_counts_from_its_send
    assert_equal [:confirmed, 1, 0.0, 10.0, 25.0],
                 [@holder.state, @holder.token, @holder.renewed_at, @holder.next_renewal, @holder.warning_deadline]
    assert_equal @cadence, @holder.cadence
  end

  def test_renewal_is_due_every_renew_every_and_while_outstanding
    refute @holder.renewal_due?(now: 9.0)
    assert @holder.renewal_due?(now: 10.0)
    assert @holder.refresh(now: 10.0)
    assert @holder.renewal_due?(now: 10.5), "retried until confirmed"
  end

  def test_refresh_before_and_after_the_warning_deadline
    assert @holder.refresh(now: 10.0)
    assert_equal :unconfirmed, @holder.state
    late = LeaseMachines::Holder.new(token: 1, at: 0.0, cadence: @cadence)
    assert late.refresh(now: 25.0)
    assert_equal :at_risk, late.state
  end

  def test_deadlines_count_from_the_first_send_of_the_confirmed_attempt
    @holder.refresh(now: 10.0)
    @holder.refresh(now: 12.0)
    assert @holder.confirm(token: 1, at: 14.0)
    assert_equal [10.0, 35.0, 20.0], [@holder.renewed_at, @holder.warning_deadline, @holder.next_renewal]
  end

  def test_a_reply_arriving_past_the_warning_deadline_is_at_risk
    @holder.refresh(now: 10.0)
    assert @holder.confirm(token: 1, at: 36.0)
    assert_equal :at_risk, @holder.state
    assert @holder.at_risk?(now: 36.0)
  end

  def test_stale_confirmations_are_ignored
    holder = LeaseMachines::Holder.new(token: 5, at: 0.0, cadence: @cadence)
    holder.refresh(now: 10.0)
    refute holder.confirm(token: 4, at: 11.0)
    refute holder.confirm(token: 0, at: 11.0)
    assert_equal [:unconfirmed, 5], [holder.state, holder.token]
  end

  def test_expire_then_only_a_strictly_newer_token_recovers
    assert @holder.expire
    refute @holder.expire
    assert_equal :expired, @holder.state
    refute @holder.renewal_due?(now: 99.0)
    assert @holder.at_risk?(now: 0.0)
    refute @holder.reacquire(token: 1, at: 40.0)
    assert @holder.reacquire(token: 2, at: 40.0)
    assert_equal [:confirmed, 2, 65.0], [@holder.state, @holder.token, @holder.warning_deadline]
  end

  def test_fence_is_terminal_and_idempotent
    assert @holder.fence
    assert @holder.fence
    assert_equal :fenced, @holder.state
    assert_nil @holder.warning_deadline
    assert_nil @holder.next_renewal
    refute @holder.refresh(now: 1.0)
    refute @holder.confirm(token: 9, at: 1.0)
    refute @holder.reacquire(token: 9, at: 1.0)
    assert @holder.at_risk?(now: 0.0)
  end

  def test_a_frozen_holder_refuses_every_mutation
    @holder.freeze
    assert_raises(FrozenError) { @holder.refresh(now: 10.0) }
    assert_raises(FrozenError) { @holder.confirm(token: 1, at: 10.0) }
    assert_raises(FrozenError) { @holder.expire }
    assert_raises(FrozenError) { @holder.reacquire(token: 2, at: 10.0) }
    assert_raises(FrozenError) { @holder.fence }
    assert_equal :confirmed, @holder.state
    assert @holder.renewal_due?(now: 10.0), "queries still work"
  end

  def test_inspect
    assert_equal "#<LeaseMachines::Holder token=1 state=:confirmed renewed_at=0.0>", @holder.inspect
  end
end
