# frozen_string_literal: true

require "test_helper"
require "lease_machines/store/errors"

# The one native call a store's semaphore request makes (its slot rows in, the decision, its slot and the row to write
# out), on rows kept in memory: what the store tests exercise through a database, here under GC.stress too.
class SlotDecisionsTest < Minitest::Test
  def decide(rows, kind, args, now)
    LeaseMachines.__send__(:_store_decide_slots, "memory", "r", kind, args, now, :clamp, rows, nil)
  end

  def test_a_sequence_of_requests_on_rows_in_memory
    rows = []
    granted = [7, 12, 19].map do |owner|
      decision, slot, write = decide(rows, :acquire, [owner, 10.0, 2], 1.0)
      rows[slot] = write if write
      [decision.status, slot, decision.lease&.token]
    end
    assert_equal [[:granted, 0, 1], [:granted, 1, 1], [:rejected, 0, nil]], granted
    decision, slot, write = decide(rows, :release, [1, 12, 1], 2.0)
    assert_equal [:released, 1], [decision.status, slot]
    rows[slot] = write
    assert_equal [nil, nil, nil, 1, 2.0, 2], rows[1]
    decision, slot, = decide(rows, :renew, [1, 12, 1, 10.0], 3.0)
    assert_equal [:rejected, :not_held, 1], [decision.status, decision.reason, slot]
  end

  def test_corrupt_rows_are_store_errors_and_bad_arguments_input_faults
    error = assert_raises(LeaseMachines::StoreError) { decide([[1, 5, 10.0, 2, 0.0, 9]], :acquire, [1, 1.0, 1], 0.0) }
    assert_match(/corrupt lease row for "r" in memory: lease token 5 was never issued/, error.message)
    too_many = Array.new(1025)
    assert_raises(LeaseMachines::StoreError) { decide(too_many, :acquire, [1, 1.0, 1], 0.0) }
    assert_raises(ArgumentError) { decide([], :acquire, [1, 1.0, 0], 0.0) }
    assert_raises(ArgumentError) { decide([], :renew, [1024, 1, 1, 1.0], 0.0) }
    assert_raises(ArgumentError) { decide([], :transfer, [1, 1, 2, 1.0], 0.0) }
  end

  def test_a_slot_lease_checks_its_slot_as_the_store_does
    lease = LeaseMachines::SlotLease.new(slot: 3, owner: 7, token: 2, expires_at: 10)
    assert_equal [3, 10.0, true], [lease.slot, lease.expires_at, lease.live?(now: 9.5)]
    error = assert_raises(ArgumentError) do
      LeaseMachines::SlotLease.new(slot: 1024, owner: 7, token: 2, expires_at: 1.0)
    end
    assert_equal "slot must be from 0 to 1023, got 1024", error.message
    assert_raises(ArgumentError) { LeaseMachines::SlotLease.new(slot: 0, owner: 7, token: 0, expires_at: 1.0) }
  end
end
