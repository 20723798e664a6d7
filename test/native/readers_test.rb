# frozen_string_literal: true

require "json"
require "test_helper"

# Every reader refuses state no table can produce, at read time, naming the field: nothing impossible gets in to
# fail later (an audit that raises, metrics that do not add up).
class ReadersTest < Minitest::Test
  def refused(document, &)
    error = assert_raises(LeaseMachines::InvalidDocument, &)
    assert_equal "invalid document: #{document}", error.message
  end

  def test_an_empty_resource_name_is_refused_by_every_reader
    refused("resources[0].resource must not be empty") do
      LeaseMachines::Table.from_json('{"format":1,"observed_ns":0,"resources":[{"resource":"","last_issued":1,' \
                                     '"revision":2,"term":null,"lease":null}]}')
    end
    refused("events[1].resource must not be empty") do
      LeaseMachines.events_from_json(
        '{"format":1,"events":[' \
        '{"resource":"a","kind":"acquired","at_ns":0,"owner":1,"token":1,"revision":1,"expires_at_ns":1,' \
        '"term":null,"replaced":null},' \
        '{"resource":"","kind":"acquired","at_ns":0,"owner":1,"token":1,"revision":1,"expires_at_ns":1,' \
        '"term":null,"replaced":null}]}'
      )
    end
    refused("marks[0].resource must not be empty") do
      LeaseMachines::FenceGuard.from_json('{"format":1,"marks":[{"resource":"","token":1,"owner":1}]}')
    end
    refused("findings[0].resource must not be empty") do
      LeaseMachines::AuditReport.from_json('{"format":1,"valid":false,"checked_events":1,"findings":[{"code":' \
                                           '"not_live","resource":"","event_index":0,"message":""}]}')
    end
    error = assert_raises(ArgumentError) do
      LeaseMachines::FenceGuard.new(marks: [LeaseMachines::FenceMark.new(resource: "", token: 1, owner: 1)])
    end
    assert_equal "resource must not be empty", error.message
  end

  def test_a_resource_recorded_without_ever_being_granted_is_refused
    never = '{"format":1,"observed_ns":0,"resources":[{"resource":"a","last_issued":null,"revision":3,' \
            '"term":null,"lease":null}]}'
    refused('"a": the resource is recorded but was never granted (never_granted)') do
      LeaseMachines::Table.from_json(never)
    end
  end

  def real_metrics
    table = LeaseMachines::Table.new
    table.acquire(resource: "a", owner: 1, now: 0.0, ttl: 1.0)
    table.acquire(resource: "a", owner: 2, now: 0.5, ttl: 1.0)
    table.acquire(resource: "b", owner: 2, now: 0.5, ttl: 1.0)
    table.metrics(now: 0.75)
  end

  def test_metrics_no_table_can_report_are_refused
    metrics = real_metrics
    assert_equal metrics, LeaseMachines::Metrics.from_json(metrics.to_json)
    impossible = {
      { live_leases: 0 } => "live_leases + expired_leases must equal stored_leases",
      { resources: 1 } => "stored_leases cannot exceed resources",
      { events: 3 } => "events must equal accepted (one event per accepted command)",
      { rejected: 0 } => "rejections must add up to rejected",
      { rejections: metrics.rejections.merge(occupied: 2) } => "rejections must add up to rejected",
      { holder_transitions: 3 } => "holder_transitions cannot exceed accepted",
      { highest_token: nil } => "highest_token must be null without resources and set with stored leases"
    }
    impossible.each do |change, message|
      document = JSON.parse(metrics.to_json).merge(change.transform_keys(&:to_s)).to_json
      refused(message) { LeaseMachines::Metrics.from_json(document) }
      error = assert_raises(ArgumentError) { metrics.with(**change).to_json }
      assert_equal "impossible metrics: #{message}", error.message
    end
    refused("accepted must be in 0..=18446744073709551615, got -2") do
      LeaseMachines::Metrics.from_json(JSON.parse(metrics.to_json).merge("accepted" => -2).to_json)
    end
    refused("rejections.occupied must be in 0..=18446744073709551615, got -1") do
      LeaseMachines::Metrics.from_json(JSON.parse(metrics.to_json).tap { _1["rejections"]["occupied"] = -1 }.to_json)
    end
  end
end
