# frozen_string_literal: true

require "test_helper"

# LeaseMachines::Table: the table's rules, one test each, through the Ruby API.
class TableTest < Minitest::Test
  def setup
    @table = LeaseMachines::Table.new
  end

  def acquire(resource = "jobs", owner: 1, now: 0.0, ttl: 5.0, **options)
    @table.acquire(resource:, owner:, now:, ttl:, **options)
  end

  def test_each_resource_has_its_own_token_namespace
    assert_equal 1, granted(acquire("jobs")).token
    assert_equal 1, granted(acquire("mail", owner: 2)).token
    assert_equal 2, @table.size
  end

  def test_a_table_lease_carries_resource_issued_at_revision_and_term
    lease = granted(acquire(now: 3.0))
    assert_equal ["jobs", 1, 1, 3.0, 8.0, 1, nil],
                 [lease.resource, lease.owner, lease.token, lease.issued_at, lease.expires_at, lease.revision, lease.term]
    assert_equal lease, @table.lease("jobs")
    assert_predicate lease, :frozen?
  end

  def test_live_and_remaining_follow_expiry_at_expires_at
    lease = granted(acquire)
    assert lease.live?(now: 4.999)
    refute lease.live?(now: 5.0)
    assert_in_delta 3.0, lease.remaining(now: 2.0)
    assert_in_delta 0.0, lease.remaining(now: 9.0)
  end

  def test_occupied_while_live_then_a_greater_token_at_expiry
    granted(acquire)
    assert_equal :occupied, acquire(owner: 2, now: 4.0).reason
    assert_equal [2, 2], granted(acquire(owner: 2, now: 5.0)).then { [_1.owner, _1.token] }
  end

  def test_revision_rises_on_every_accepted_change_and_never_on_a_rejection
    lease = granted(acquire)
    refute_predicate acquire(owner: 2, now: 1.0), :accepted?
    assert_equal 1, @table.revision("jobs")
    assert_equal 2, @table.renew(resource: "jobs", owner: 1, token: lease.token, now: 2.0, ttl: 5.0).lease.revision
    assert_predicate @table.release(resource: "jobs", owner: 1, token: lease.token, now: 3.0), :released?
    assert_equal 3, @table.revision("jobs")
    assert_equal 0, @table.revision("unknown")
  end

  def test_expected_revision_is_compare_and_set
    granted(acquire(expected_revision: 0))
    assert_equal :revision_mismatch, acquire("jobs", owner: 2, now: 9.0, expected_revision: 0).reason
    assert_equal 2, granted(acquire("jobs", owner: 2, now: 9.0, expected_revision: 1)).owner
  end

  def test_transfer_gives_the_new_owner_a_greater_token_and_fences_the_old_one
    old = granted(acquire)
    decision = @table.transfer(resource: "jobs", owner: 1, token: old.token, new_owner: 2, now: 2.0, ttl: 10.0)
    assert_predicate decision, :transferred?
    assert_equal [2, 2, 2.0, 12.0], decision.lease.then { [_1.owner, _1.token, _1.issued_at, _1.expires_at] }
    assert_equal :stale_token, @table.renew(resource: "jobs", owner: 1, token: old.token, now: 3.0, ttl: 5.0).reason
    assert_equal :wrong_owner,
                 @table.transfer(resource: "jobs", owner: 1, token: 2, new_owner: 3, now: 3.0, ttl: 1.0).reason
  end

  def test_reap_drops_only_expired_leases_and_keeps_the_high_water
    granted(acquire)
    assert_equal :occupied, @table.reap(resource: "jobs", now: 4.0).reason
    assert_predicate @table.reap(resource: "jobs", now: 5.0), :reaped?
    assert_nil @table.lease("jobs")
    assert_equal :not_held, @table.reap(resource: "jobs", now: 6.0).reason
    assert_equal 1, @table.last_issued("jobs")
    assert_equal 2, granted(acquire(now: 6.0)).token
  end

  def test_reap_expired_reaps_every_expired_lease_and_no_live_one
    granted(acquire("a", ttl: 1.0))
    granted(acquire("b", ttl: 9.0))
    granted(acquire("c", ttl: 2.0))
    reaping = @table.reap_expired(now: 2.0)
    assert_equal %w[a c], reaping.leases.map(&:resource)
    refute_predicate reaping, :rejected?
    assert_equal :clock_regressed, @table.reap_expired(now: 1.0).reason
  end

  def test_reacquire_rotates_the_holders_own_lease
    first = granted(acquire)
    second = granted(@table.reacquire(resource: "jobs", owner: 1, now: 1.0, ttl: 5.0))
    assert_equal 2, second.token
    assert_equal :stale_token, @table.release(resource: "jobs", owner: 1, token: first.token, now: 2.0).reason
  end

  def test_batch_applies_in_order_and_a_rejection_changes_nothing
    batch = @table.apply_batch([
      { command: :acquire, resource: "jobs", owner: 1, now: 0.0, ttl: 5.0 },
      { command: :acquire, resource: "jobs", owner: 2, now: 1.0, ttl: 5.0 },
      { command: :transfer, resource: "jobs", owner: 1, token: 1, new_owner: 2, now: 2.0, ttl: 5.0 },
      { command: :reap, resource: "jobs", now: 3.0 },
      { command: :release, resource: "jobs", owner: 2, token: 2, now: 4.0 }
    ])
    assert_equal [3, 2], [batch.accepted, batch.rejected]
    assert_equal %i[granted rejected transferred rejected released], batch.decisions.map(&:status)
    assert_equal %i[acquired transferred released], @table.events.map(&:kind)
  end

  def test_a_malformed_batch_entry_raises_before_any_command_runs
    ill_typed!
    good = { command: :acquire, resource: "jobs", owner: 1, now: 0.0, ttl: 5.0 }
    error = assert_raises(ArgumentError) { @table.apply_batch([good, { command: :renew, resource: "jobs", now: 1.0 }]) }
    assert_equal "commands[1] (:renew): missing keywords: :owner, :token, :ttl", error.message
    error = assert_raises(ArgumentError) { @table.apply_batch([good, good.merge(command: :steal)]) }
    assert_match(/unknown command :steal \(valid: :acquire, :reacquire, :renew, :release, :transfer, :reap\)/,
                 error.message)
    assert_raises(ArgumentError) { @table.apply_batch([good.merge(colour: :red)]) }
    assert_raises(TypeError) { @table.apply_batch([good, good.merge(owner: "1")]) }
    assert_raises(TypeError) { @table.apply_batch(good) }
    assert_equal 0, @table.size
    assert_empty @table.events
  end

  # A batch entry takes exactly its method's keywords, refused in the words the method's own call uses.
  def test_a_batch_entry_takes_exactly_the_keywords_of_its_method
    ill_typed!
    granted(acquire)
    before = @table.to_json
    renew = { command: :renew, resource: "jobs", owner: 1, token: 1, now: 1.0, ttl: 5.0 }
    refused = {
      renew.merge(expected_revision: 1) => "unknown keyword: :expected_revision",
      renew.merge(new_owner: 2, colour: :red) => "unknown keywords: :new_owner, :colour",
      { command: :acquire, resource: "b", owner: 1, now: 1.0, ttl: 5.0, token: "garbage" } => "unknown keyword: :token",
      { command: :reap, resource: "jobs", now: 1.0, owner: 1 } => "unknown keyword: :owner",
      { command: :release, resource: "jobs", owner: 1, now: 1.0, ttl: 1.0 } => "missing keyword: :token",
      renew.except(:ttl).merge("ttl" => 5.0) => "missing keyword: :ttl"
    }
    refused.each do |entry, message|
      direct = assert_raises(ArgumentError) { @table.public_send(entry[:command], **entry.except(:command)) }
      assert_equal message, direct.message
      error = assert_raises(ArgumentError) { @table.apply_batch([renew, entry]) }
      assert_equal "commands[1] (#{entry[:command].inspect}): #{message}", error.message
    end
    assert_equal before, @table.to_json, "nothing applied, not even the good first entry"
    assert_equal 1, @table.events.size
    assert_equal 0, @table.metrics(now: 1.0).rejected
  end

  def test_a_batch_entry_checks_its_values_as_the_method_does
    ill_typed!
    granted(acquire)
    before = @table.to_json
    good = { command: :acquire, resource: "b", owner: 1, now: 1.0, ttl: 5.0 }
    [good.merge(expected_revision: "1"), good.merge(ttl: -1.0), good.merge(owner: 2**64), good.merge(resource: ""),
     { command: :renew, resource: "jobs", owner: 1, token: nil, now: 1.0, ttl: 5.0 }].each do |entry|
      direct = assert_raises(TypeError, RangeError, ArgumentError) do
        @table.public_send(entry[:command], **entry.except(:command))
      end
      error = assert_raises(direct.class) { @table.apply_batch([good, entry]) }
      assert_equal direct.message, error.message
    end
    assert_equal before, @table.to_json
    assert_equal 1, @table.apply_batch([good.merge(expected_revision: 0)]).accepted
  end

  def test_events_record_every_accepted_change
    lease = granted(acquire)
    @table.renew(resource: "jobs", owner: 1, token: lease.token, now: 1.0, ttl: 5.0)
    acquire(owner: 2, now: 2.0)
    event = @table.events.last
    assert_equal [:renewed, 1.0, 1, 1, 2, 6.0, nil], event.deconstruct[1..7]
    assert_equal LeaseMachines::Lease.new(owner: 1, token: 1, expires_at: 5.0), event.replaced
    assert_equal 2, @table.events.size
  end

  def test_the_event_log_keeps_the_newest_events_and_counts_the_dropped
    table = LeaseMachines::Table.new(event_capacity: 2)
    %w[a b c].each_with_index { |name, index| table.acquire(resource: name, owner: 1, now: index, ttl: 5.0) }
    assert_equal %w[b c], table.events.map(&:resource)
    assert_equal [1, 2], [table.dropped_events, table.event_capacity]
    assert_equal 3, table.metrics(now: 3.0).events
  end

  def test_metrics_count_leases_commands_reasons_and_holder_transitions
    a = granted(acquire("a", ttl: 2.0))
    granted(acquire("b", owner: 2, ttl: 9.0))
    @table.renew(resource: "a", owner: 1, token: a.token, now: 1.0, ttl: 2.0)
    acquire("b", owner: 3, now: 1.0)
    granted(acquire("a", owner: 3, now: 3.0))
    metrics = @table.metrics(now: 4.0)
    assert_equal [2, 2, 2, 0, 2], [metrics.resources, metrics.stored_leases, metrics.live_leases,
                                   metrics.expired_leases, metrics.highest_token]
    assert_equal [4, 1, 4], [metrics.accepted, metrics.rejected, metrics.events]
    assert_equal 1, metrics.rejections[:occupied]
    assert_equal LeaseMachines::REASONS, metrics.rejections.keys
    assert_equal 3, metrics.holder_transitions
    assert_equal 1, @table.metrics(now: 8.5).expired_leases
  end

  def test_clock_policy_clamp_evaluates_late_requests_at_the_watermark
    table = LeaseMachines::Table.new(clock_policy: :clamp)
    table.acquire(resource: "a", owner: 1, now: 10.0, ttl: 5.0)
    lease = table.acquire(resource: "b", owner: 1, now: 9.0, ttl: 5.0).lease
    assert_equal [10.0, 15.0], [lease.issued_at, lease.expires_at]
    granted(acquire("a", now: 10.0))
    assert_equal :clock_regressed, acquire("b", now: 9.0).reason, "the default policy refuses instead"
  end

  def test_deadlines_are_exact_floats
    lease = granted(acquire(now: 0.1, ttl: 0.2))
    authority = LeaseMachines::Authority.new
    assert_equal authority.acquire(owner: 1, now: 0.1, ttl: 0.2).lease.expires_at, lease.expires_at
    refute lease.live?(now: lease.expires_at)
    assert_equal :granted, acquire(owner: 2, now: lease.expires_at).status
  end

  def test_json_round_trip_continues_the_same_history
    granted(acquire)
    granted(acquire("mail", owner: 2, now: 1.0))
    copy = LeaseMachines::Table.from_json(@table.to_json)
    assert_equal @table.to_json, copy.to_json
    [@table, copy].each do |table|
      assert_equal :occupied, table.acquire(resource: "jobs", owner: 3, now: 2.0, ttl: 1.0).reason
      assert_equal 2, table.acquire(resource: "mail", owner: 3, now: 7.0, ttl: 1.0).lease.token
    end
    assert_equal @table.to_json, copy.to_json
  end

  def test_from_json_refuses_bad_documents_with_what_is_wrong
    error = assert_raises(LeaseMachines::InvalidDocument) { LeaseMachines::Table.from_json("{") }
    assert_match(/malformed JSON document/, error.message)
    assert_kind_of ArgumentError, error
    error = assert_raises(LeaseMachines::InvalidDocument) { LeaseMachines::Table.from_json('{"format":2}') }
    assert_equal "unsupported format 2 (this version reads format 1)", error.message
    invalid = '{"format":1,"observed_ns":0,"resources":[{"resource":"a","last_issued":1,"revision":1,' \
              '"term":null,"lease":{"owner":1,"token":2,"issued_at_ns":0,"expires_at_ns":1,"term":null}}]}'
    error = assert_raises(LeaseMachines::InvalidDocument) { LeaseMachines::Table.from_json(invalid) }
    assert_match(/token_above_high_water/, error.message)
    assert_raises(LeaseMachines::InvalidDocument) { LeaseMachines::Table.from_json("\xff".b) }
  end

  def test_bad_arguments_raise_and_change_nothing
    ill_typed!
    granted(acquire)
    before = @table.to_json
    assert_raises(TypeError) { acquire(:jobs) }
    error = assert_raises(ArgumentError) { acquire("") }
    assert_equal "resource must not be empty", error.message
    assert_raises(ArgumentError) { acquire("\xff".dup.force_encoding("UTF-8")) }
    assert_raises(RangeError) { acquire("x", owner: -1) }
    assert_raises(ArgumentError) { acquire("x", now: Float::NAN) }
    assert_raises(TypeError) { acquire("x", expected_revision: "1") }
    assert_raises(RangeError) { @table.transfer(resource: "jobs", owner: 1, token: 1, new_owner: 2**64, now: 1.0, ttl: 1.0) }
    assert_raises(TypeError) { @table.acquire_leadership(resource: "x", certificate: :elected, owner: 1, now: 1.0, ttl: 1.0) }
    assert_raises(ArgumentError) { LeaseMachines::Table.new(clock_policy: :sometimes) }
    assert_raises(RangeError) { LeaseMachines::Table.new(event_capacity: -1) }
    assert_equal before, @table.to_json
  end

  def test_token_zero_is_refused_as_a_stale_or_missing_token
    assert_equal :not_held, @table.renew(resource: "jobs", owner: 1, token: 0, now: 0.0, ttl: 1.0).reason
    granted(acquire)
    assert_equal :stale_token, @table.release(resource: "jobs", owner: 1, token: 0, now: 1.0).reason
    batch = @table.apply_batch([{ command: :release, resource: "jobs", owner: 1, token: 0, now: 1.0 }])
    assert_equal [:stale_token], batch.decisions.map(&:reason)
  end

  def test_a_frozen_table_refuses_every_command
    @table.freeze
    assert_raises(FrozenError) { acquire }
    assert_raises(FrozenError) { @table.reap_expired(now: 1.0) }
    assert_raises(FrozenError) { @table.apply_batch([]) }
  end
end
