# frozen_string_literal: true

require "test_helper"

# The extension keeps a few Ruby classes it looked up (Decision, TableLease, InvalidDocument). Compaction moves
# objects the garbage collector was not told about; these tests move everything that can move between two calls.
class CompactionTest < Minitest::Test
  def setup
    skip "this Ruby cannot compact its heap" unless GC.respond_to?(:verify_compaction_references)
    skip "compaction under GC.stress takes minutes" if GC_STRESS
  end

  def compact!
    GC.verify_compaction_references(expand_heap: true, toward: :empty)
  end

  def test_authority_decisions_survive_compaction
    authority = LeaseMachines::Authority.new
    lease = granted(authority.acquire(owner: 1, now: 0.0, ttl: 5.0))
    compact!
    decision = authority.release(owner: 1, token: lease.token, now: 1.0)
    assert_instance_of LeaseMachines::Decision, decision
    assert_equal [:released, nil, nil], decision.deconstruct
    assert_equal 2, granted(authority.acquire(owner: 2, now: 2.0, ttl: 5.0)).token
  end

  def test_table_decisions_and_leases_survive_compaction
    table = LeaseMachines::Table.new
    table.acquire(resource: "r", owner: 1, now: 0.0, ttl: 5.0)
    compact!
    lease = granted(table.acquire(resource: "r", owner: 2, now: 6.0, ttl: 5.0))
    assert_instance_of LeaseMachines::TableLease, lease
    assert_equal ["r", 2, 2, 6.0, 11.0, 2, nil], lease.deconstruct
    assert_equal lease, table.lease("r")
  end

  def test_invalid_documents_still_raise_their_class_after_compaction
    LeaseMachines::Checkpoint.from_json("{") rescue nil # rubocop:disable Style/RescueModifier
    compact!
    assert_raises(LeaseMachines::InvalidDocument) { LeaseMachines::Checkpoint.from_json("{") }
  end
end
