# frozen_string_literal: true

require "test_helper"

# Resource names are bounded (LeaseMachines::MAX_RESOURCE_BYTES bytes of UTF-8) wherever they enter, and a table
# keeps each name once: its events share it instead of copying it.
class ResourceNamesTest < Minitest::Test
  MAX = LeaseMachines::MAX_RESOURCE_BYTES
  LONG = "a" * (MAX + 1)
  TOO_LONG = "resource must be at most #{MAX} bytes of UTF-8, got #{MAX + 1} bytes".freeze

  def setup
    @table = LeaseMachines::Table.new
  end

  def assert_too_long(message = TOO_LONG, &)
    error = assert_raises(ArgumentError, &)
    assert_equal message, error.message
  end

  def document_error(field)
    "invalid document: #{field} must be at most #{MAX} bytes of UTF-8, got #{MAX + 1} bytes"
  end

  def test_the_limit_is_one_constant_in_bytes_of_utf8
    assert_equal 1024, MAX
    longest = "\u00e9" * (MAX / 2)
    assert_equal 1, @table.acquire(resource: longest, owner: 1, now: 0.0, ttl: 1.0).lease.token
    assert_too_long("resource must be at most #{MAX} bytes of UTF-8, got #{MAX + 2} bytes") do
      @table.acquire(resource: "#{longest}\u00e9", owner: 1, now: 0.0, ttl: 1.0)
    end
  end

  def test_every_table_command_and_query_refuses_a_long_name
    @table.acquire(resource: "a", owner: 1, now: 0.0, ttl: 1.0)
    before = @table.to_json
    assert_too_long { @table.acquire(resource: LONG, owner: 1, now: 0.0, ttl: 1.0) }
    assert_too_long { @table.reacquire(resource: LONG, owner: 1, now: 0.0, ttl: 1.0) }
    assert_too_long { @table.renew(resource: LONG, owner: 1, token: 1, now: 0.0, ttl: 1.0) }
    assert_too_long { @table.release(resource: LONG, owner: 1, token: 1, now: 0.0) }
    assert_too_long { @table.transfer(resource: LONG, owner: 1, token: 1, new_owner: 2, now: 0.0, ttl: 1.0) }
    assert_too_long { @table.reap(resource: LONG, now: 0.0) }
    [:lease, :revision, :last_issued, :term].each { |query| assert_too_long { @table.public_send(query, LONG) } }
    assert_too_long do
      @table.apply_batch([{ command: :acquire, resource: "b", owner: 1, now: 0.0, ttl: 1.0 },
                          { command: :reap, resource: LONG, now: 0.0 }])
    end
    assert_equal before, @table.to_json
    assert_equal 1, @table.events.size
  end

  def test_every_reader_refuses_a_long_name
    table = %({"format":1,"observed_ns":0,"resources":[{"resource":"#{LONG}","last_issued":1,"revision":2,) +
            %("term":null,"lease":null}]})
    assert_too_long(document_error("resources[0].resource")) { LeaseMachines::Table.from_json(table) }
    events = %({"format":1,"events":[{"resource":"#{LONG}","kind":"acquired","at_ns":0,"owner":1,"token":1,) +
             %("revision":1,"expires_at_ns":1,"term":null,"replaced":null}]})
    assert_too_long(document_error("events[0].resource")) { LeaseMachines.events_from_json(events) }
    marks = %({"format":1,"marks":[{"resource":"a","token":1,"owner":1},{"resource":"#{LONG}","token":1,"owner":1}]})
    assert_too_long(document_error("marks[1].resource")) { LeaseMachines::FenceGuard.from_json(marks) }
    report = %({"format":1,"valid":false,"checked_events":1,"findings":[{"code":"not_live","resource":"#{LONG}",) +
             %("event_index":0,"message":""}]})
    assert_too_long(document_error("findings[0].resource")) { LeaseMachines::AuditReport.from_json(report) }
  end

  def test_guards_and_audits_refuse_a_long_name
    mark = LeaseMachines::FenceMark.new(resource: LONG, token: 1, owner: 1)
    assert_too_long { LeaseMachines::FenceGuard.new(marks: [mark]) }
    guard = LeaseMachines::FenceGuard.new
    assert_too_long { guard.check(LeaseMachines::FencedWrite.new(resource: LONG, owner: 1, token: 1, operation: :w)) }
    assert_too_long { guard.highest(LONG) }
    assert_empty guard.marks
    @table.acquire(resource: "a", owner: 1, now: 0.0, ttl: 1.0)
    event = @table.events.first
    assert_too_long { LeaseMachines.audit([event.with(resource: LONG)]) }
    assert_too_long { LeaseMachines.events_to_json([event.with(resource: LONG)]) }
  end

  def test_the_events_of_a_resource_share_its_name
    name = "r" * MAX
    token = @table.acquire(resource: name.dup, owner: 1, now: 0.0, ttl: 1.0).lease.token
    99.times { |step| @table.renew(resource: name.dup, owner: 1, token:, now: step * 0.01, ttl: 1.0) }
    resources = @table.events.map(&:resource)
    assert_equal [100, 1], [resources.size, resources.uniq(&:object_id).size]
    assert_equal name, resources.first
    assert_predicate resources.first, :frozen?
  end
end
