# frozen_string_literal: true

module LeaseMachines
  # What LeaseMachines.audit found: +valid+ (true when +findings+ is empty), +checked_events+ and the +findings+ (a
  # frozen Array). AuditReport.codes, from the extension, lists every finding code in the core's order.
  AuditReport = Data.define(:valid, :checked_events, :findings) do
    # One broken rule: +code+ (a Symbol such as +:token_not_rising+), the +resource+, the offending event's
    # +event_index+ (from 0) and a +message+ for people.
    self::Finding = Data.define(:code, :resource, :event_index, :message)

    # The report read from its JSON document (format 1). Raises InvalidDocument.
    def self.from_json(json) = _from_json(json)

    def valid? = valid

    # The report as a JSON document (format 1).
    def to_json(*) = _to_json
  end

  # Checks +events+ (an Array of Event, such as Table#events or LeaseMachines.events_from_json) against the rules
  # every table history keeps and returns an AuditReport. Raises TypeError for anything but Events.
  def self.audit(events) = _audit(events)
end
