# frozen_string_literal: true

require "test_helper"

# LeaseMachines::FenceGuard and FencedWrite: storage-side fencing for many resources.
class FenceGuardTest < Minitest::Test
  def write(resource, token, owner: 1) = LeaseMachines::FencedWrite.new(resource:, owner:, token:, operation: "UPDATE")

  def test_accepts_iff_the_token_is_at_least_the_resources_highest
    guard = LeaseMachines::FenceGuard.new
    assert guard.check(write("jobs", 2))
    assert guard.check(write("jobs", 2)), "one lease writes many times"
    refute guard.check(write("jobs", 1))
    assert guard.check(write("mail", 1)), "marks are per resource"
    assert_equal [2, nil], [guard.highest("jobs"), guard.highest("none")]
    refute guard.check(write("new", 0)), "token 0 is never accepted"
  end

  def test_a_fenced_write_comes_from_a_live_table_lease
    table = LeaseMachines::Table.new
    old = table.acquire(resource: "jobs", owner: 1, now: 0.0, ttl: 5.0).lease
    new = table.transfer(resource: "jobs", owner: 1, token: old.token, new_owner: 2, now: 1.0, ttl: 5.0).lease
    guard = LeaseMachines::FenceGuard.new
    assert guard.check(new.fenced_write("commit", now: 2.0))
    late = old.fenced_write("late commit", now: 4.0)
    assert_equal ["jobs", 1, 1, "late commit"], late.deconstruct
    refute guard.check(late)
    assert_nil old.fenced_write("too late", now: 5.0)
  end

  def test_restored_from_its_marks_and_from_json
    guard = LeaseMachines::FenceGuard.new
    guard.check(write("jobs", 7, owner: 2))
    assert_equal [LeaseMachines::FenceMark.new(resource: "jobs", token: 7, owner: 2)], guard.marks
    [LeaseMachines::FenceGuard.new(marks: guard.marks), LeaseMachines::FenceGuard.from_json(guard.to_json)].each do |copy|
      refute copy.check(write("jobs", 6))
      assert_equal 7, copy.highest("jobs")
    end
    assert_equal '{"format":1,"marks":[{"resource":"jobs","token":7,"owner":2}]}', guard.to_json
  end

  def test_bad_input_raises
    ill_typed!
    mark = LeaseMachines::FenceMark.new(resource: "jobs", token: 1, owner: 1)
    assert_raises(ArgumentError) { LeaseMachines::FenceGuard.new(marks: [mark, mark]) }
    assert_raises(ArgumentError) { LeaseMachines::FenceGuard.new(marks: [mark.with(token: 0)]) }
    assert_raises(TypeError) { LeaseMachines::FenceGuard.new(marks: [[1, 2, 3]]) }
    assert_raises(TypeError) { LeaseMachines::FenceGuard.new.check(["jobs", 1, 1]) }
    assert_raises(LeaseMachines::InvalidDocument) { LeaseMachines::FenceGuard.from_json('{"format":1,"marks":[{"resource":"a","token":0,"owner":1}]}') }
    assert_raises(TypeError) { LeaseMachines::FenceGuard.from_json(nil) }
  end
end
