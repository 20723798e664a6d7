# frozen_string_literal: true

require "test_helper"

# Every record the gem hands out is a frozen Data, whether the extension built it or Ruby did; the lists of Symbols
# come from the core's enums; the native methods behind the Ruby layer are private.
class RecordsTest < Minitest::Test
  def table_with_history
    LeaseMachines::Table.new.tap do |table|
      lease = table.acquire(resource: "jobs", owner: 1, now: 0.0, ttl: 5.0).lease
      table.renew(resource: "jobs", owner: 1, token: lease.token, now: 1.0, ttl: 5.0)
    end
  end

  def test_every_record_is_a_frozen_data_value
    authority = LeaseMachines::Authority.new
    decision = authority.acquire(owner: 1, now: 0.0, ttl: 1.0)
    table = table_with_history
    cadence = LeaseMachines::Cadence.new(ttl: 3.0, renew_every: 1.0, warn_before: 0.5)
    holder = LeaseMachines::Holder.new(token: 1, at: 0.0, cadence:)
    records = [decision, decision.lease, authority.checkpoint, holder.cadence, table.lease("jobs"), *table.events,
               table.metrics(now: 2.0), LeaseMachines.audit(table.events), table.reap_expired(now: 9.0),
               table.apply_batch([{ command: :reap, resource: "jobs", now: 9.0 }])]
    records.each do |record|
      assert_kind_of Data, record
      assert_predicate record, :frozen?, record.inspect
      assert Ractor.shareable?(record), "shareable as it comes: #{record.inspect}"
    end
  end

  def test_the_simulation_records_are_frozen_data_values
    report = LeaseMachines.simulate(cycles: 10, resources: 3)
    records = [LeaseMachines::SimulationConfig.new, LeaseMachines::SimulationConfig.failover_preset, report,
               report.config, LeaseMachines::SimulationReport.from_json(report.to_json)]
    records.each do |record|
      assert_kind_of Data, record
      assert_predicate record, :frozen?, record.inspect
      assert Ractor.shareable?(record), "shareable as it comes: #{record.inspect}"
    end
    assert_instance_of LeaseMachines::SimulationConfig, report.config
    assert_equal LeaseMachines::SimulationConfig.new(cycles: 10, resources: 3), report.config
    assert_equal report, records.last
  end

  # A refusal is one kept Decision per reason, for an Authority and a Table alike: equal to a Decision built in Ruby,
  # frozen and shareable, and still each request's own (the authority's watermark moves, the table counts it).
  def test_a_refusal_is_the_same_value_every_time
    authority = LeaseMachines::Authority.new
    authority.acquire(owner: 1, now: 0.0, ttl: 10.0)
    table = LeaseMachines::Table.new
    table.acquire(resource: "a", owner: 1, now: 0.0, ttl: 10.0)
    refusals = [authority.acquire(owner: 2, now: 1.0, ttl: 1.0), authority.acquire(owner: 3, now: 2.0, ttl: 1.0),
                table.acquire(resource: "a", owner: 2, now: 1.0, ttl: 1.0)]
    refusals.each do |refusal|
      assert_equal LeaseMachines::Decision.new(status: :rejected, lease: nil, reason: :occupied), refusal
      assert [refusal.frozen?, Ractor.shareable?(refusal)].all?, refusal.inspect
    end
    assert_equal 2.0, authority.observed
    assert_equal 1, table.metrics(now: 1.0).rejections[:occupied]
    stale = authority.renew(owner: 1, token: 9, now: 3.0, ttl: 1.0)
    assert_equal %i[rejected stale_token], [stale.status, stale.reason]
  end

  def test_a_lease_built_in_ruby_is_checked_and_normalised
    lease = LeaseMachines::Lease.new(owner: 7, token: 1, expires_at: 30)
    assert_equal 30.0, lease.expires_at
    assert_kind_of Float, lease.expires_at
    assert_equal lease, LeaseMachines::Lease.new(7, 1, 30.0)
    assert_equal lease.with(token: 2), LeaseMachines::Lease.new(owner: 7, token: 2, expires_at: 30.0)
    assert_raises(ArgumentError) { lease.with(token: 0) }
    assert_raises(ArgumentError) { LeaseMachines::Lease.new(owner: 7, token: 1) }
    assert_raises(FrozenError) { lease.__send__(:initialize, owner: 1, token: 1, expires_at: 1.0) }
  end

  def test_the_lists_of_symbols_come_from_the_extension_in_the_cores_order
    assert_equal %i[acquired reacquired renewed released transferred reaped], LeaseMachines::Event.kinds
    assert_equal %i[token_not_rising revision_not_rising time_backwards overlapping_leases grant_while_live
                    renewal_shortened renewal_changed_token token_mismatch reap_unexpired not_live],
                 LeaseMachines::AuditReport.codes
    assert_equal %i[granted renewed transferred released reaped rejected], LeaseMachines::Decision.statuses
    assert_predicate LeaseMachines::REASONS, :frozen?
  end

  def test_native_methods_are_private
    [[LeaseMachines::Authority, :_new], [LeaseMachines::Table, :_from_json], [LeaseMachines::Checkpoint, :_from_json],
     [LeaseMachines::Metrics, :_from_json], [LeaseMachines, :_audit], [LeaseMachines::Election, :_certify_votes],
     [LeaseMachines::Simulation, :_new], [LeaseMachines::SimulationConfig, :_failover_preset],
     [LeaseMachines::SimulationReport, :_from_json]]
      .each { |receiver, name| assert_includes receiver.private_methods, name, "#{receiver}.#{name}" }
    refute_respond_to LeaseMachines::Authority.new, :_acquire
    refute_respond_to LeaseMachines::Lease.new(owner: 1, token: 1, expires_at: 1.0), :_live
    refute_respond_to LeaseMachines::Table.new, :_events
    simulation = LeaseMachines::Simulation.new(LeaseMachines::SimulationConfig.new(cycles: 1))
    %i[_step _cycles_run _finish].each { |name| refute_respond_to simulation, name }
    refute_respond_to simulation.config, :_default_config
    refute_respond_to simulation.finish, :_to_json
  end
end
