# frozen_string_literal: true

require "test_helper"

# LeaseMachines.audit on real table logs, corrupted one way each; and the JSON documents for events, metrics, audit
# reports and checkpoints.
class AuditTest < Minitest::Test
  def real_log
    table = LeaseMachines::Table.new
    lease = table.acquire(resource: "jobs", owner: 1, now: 0.0, ttl: 5.0).lease
    table.renew(resource: "jobs", owner: 1, token: lease.token, now: 1.0, ttl: 5.0)
    moved = table.transfer(resource: "jobs", owner: 1, token: lease.token, new_owner: 2, now: 2.0, ttl: 5.0).lease
    table.reap(resource: "jobs", now: 7.0)
    table.acquire(resource: "jobs", owner: 3, now: 8.0, ttl: 5.0)
    assert_equal 2, moved.token
    table.events
  end

  def findings(events) = LeaseMachines.audit(events).findings.map { [_1.code, _1.event_index] }

  # examples/events.json, the log the README's `bin/lease_machines audit` line checks, is core/FORMAT.md's example.
  def test_the_example_event_log_is_the_format_documents_and_valid
    root = File.expand_path("../..", __dir__)
    example = File.read(File.join(root, "examples", "events.json"))
    assert_equal File.read(File.join(root, "core", "FORMAT.md"))[/^\{"format":1,"events":.*\n/], example
    events = LeaseMachines.events_from_json(example)
    assert_equal %i[acquired transferred], events.map(&:kind)
    assert_predicate LeaseMachines.audit(events), :valid?
  end

  def test_a_tables_own_log_is_valid
    report = LeaseMachines.audit(real_log)
    assert_predicate report, :valid?
    assert_equal 5, report.checked_events
  end

  def test_each_corruption_is_found
    log = real_log
    assert_equal [[:token_not_rising, 4]], findings(log.dup.tap { _1[4] = _1[4].with(token: 2) })
    assert_equal [[:revision_not_rising, 2]], findings(log.dup.tap { _1[2] = _1[2].with(revision: 1) })
    assert_equal [[:time_backwards, 4]], findings(log.dup.tap { _1[4] = _1[4].with(at: 6.0) })
    assert_equal [[:renewal_shortened, 1]], findings(log.dup.tap { _1[1] = _1[1].with(expires_at: 4.0) })
    assert_equal [[:renewal_changed_token, 1]], findings(log.dup.tap { _1[1] = _1[1].with(token: 9) })
    assert_equal [[:reap_unexpired, 3]], findings(log.dup.tap { _1[3] = _1[3].with(at: 6.5) })
    early = log.dup.tap { _1[4] = _1[4].with(at: 6.0); _1.delete_at(3) }
    assert_equal [[:grant_while_live, 3]], findings(early)
    foreign = log.dup.tap { _1[2] = _1[2].with(replaced: LeaseMachines::Lease.new(owner: 9, token: 9, expires_at: 9.0)) }
    assert_equal [[:overlapping_leases, 2]], findings(foreign)
  end

  def test_findings_carry_resource_and_message
    log = real_log.dup
    log[1] = log[1].with(expires_at: 4.0)
    finding = LeaseMachines.audit(log).findings.first
    assert_equal ["jobs", "a renewal moved the expiry earlier"], [finding.resource, finding.message]
    assert_includes LeaseMachines::AuditReport.codes, finding.code
  end

  def test_documents_round_trip
    log = real_log
    assert_equal log, LeaseMachines.events_from_json(LeaseMachines.events_to_json(log))
    report = LeaseMachines.audit(log.dup.tap { _1[1] = _1[1].with(expires_at: 4.0) })
    assert_equal report, LeaseMachines::AuditReport.from_json(report.to_json)
    metrics = LeaseMachines::Table.new.tap { _1.acquire(resource: "a", owner: 1, now: 0.0, ttl: 1.0) }.metrics(now: 0.5)
    assert_equal metrics, LeaseMachines::Metrics.from_json(metrics.to_json)
    authority = LeaseMachines::Authority.new
    authority.acquire(owner: 1, now: 0.25, ttl: 0.5)
    checkpoint = authority.checkpoint
    assert_equal '{"format":1,"last_issued":1,"lease":{"owner":1,"token":1,"expires_at_ns":750000000},' \
                 '"observed_ns":250000000}', checkpoint.to_json
    assert_equal checkpoint, LeaseMachines::Checkpoint.from_json(checkpoint.to_json)
  end

  def test_bad_documents_and_bad_events_raise
    ill_typed!
    assert_raises(LeaseMachines::InvalidDocument) { LeaseMachines.events_from_json('{"format":1,"events":[{}]}') }
    assert_raises(LeaseMachines::InvalidDocument) { LeaseMachines::Metrics.from_json("[]") }
    assert_raises(LeaseMachines::InvalidDocument) { LeaseMachines::AuditReport.from_json('{"format":1,"valid":true}') }
    error = assert_raises(LeaseMachines::InvalidDocument) do
      LeaseMachines::Checkpoint.from_json('{"format":1,"last_issued":0,"lease":null,"observed_ns":0}')
    end
    assert_equal "invalid document: last_issued is 0, which is never a token", error.message
    assert_raises(TypeError) { LeaseMachines.audit([{ resource: "jobs" }]) }
    assert_raises(TypeError) { LeaseMachines.audit(nil) }
    event = real_log.first
    error = assert_raises(ArgumentError) { LeaseMachines.audit([event.with(kind: :stolen)]) }
    assert_match(/unknown kind :stolen \(valid: :acquired, :reacquired/, error.message)
    assert_raises(ArgumentError) { LeaseMachines.audit([event.with(token: 0)]) }
  end
end
