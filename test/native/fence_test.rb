# frozen_string_literal: true

require "test_helper"

class FenceTest < Minitest::Test
  def test_a_new_fence_has_no_mark_and_accepts_any_token
    fence = LeaseMachines::Fence.new
    assert_nil fence.highest
    assert fence.accept(5)
    assert_equal 5, fence.highest
  end

  def test_newer_and_equal_tokens_are_accepted_older_ones_refused
    fence = LeaseMachines::Fence.new(highest: 7)
    assert_equal [true, false, true, true, false], [8, 7, 8, 9, 8].map { |token| fence.accept(token) }
    assert_equal 9, fence.highest
  end

  def test_token_zero_is_always_refused
    fence = LeaseMachines::Fence.new
    refute fence.accept(0)
    assert_nil fence.highest
  end

  def test_the_largest_token_is_accepted
    fence = LeaseMachines::Fence.new(highest: 2**64 - 2)
    assert fence.accept(2**64 - 1)
    assert_equal 2**64 - 1, fence.highest
  end

  def test_a_restarted_fence_keeps_its_mark
    fence = LeaseMachines::Fence.new(highest: LeaseMachines::Fence.new(highest: 4).highest)
    refute fence.accept(3)
  end

  def test_a_frozen_fence_refuses_accept
    fence = LeaseMachines::Fence.new(highest: 2).freeze
    assert_raises(FrozenError) { fence.accept(3) }
    assert_raises(FrozenError) { fence.accept(1) }
    assert_equal 2, fence.highest
  end

  def test_inspect
    assert_equal "#<LeaseMachines::Fence highest=3>", LeaseMachines::Fence.new(highest: 3).inspect
  end
end
