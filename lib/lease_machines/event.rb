# frozen_string_literal: true

module LeaseMachines
  # One accepted change to one resource of a Table: +kind+ (+:acquired+, +:reacquired+, +:renewed+, +:released+,
  # +:transferred+, +:reaped+; Event.kinds, from the extension, lists them in the core's order), +at+ (Float
  # seconds), the lease's +owner+, +token+, +expires_at+ and +term+ (after the change; for a release or reap, the
  # lease that ended), the resource's +revision+ after the change, and +replaced+, the Lease record the change
  # replaced (or +nil+).
  Event = Data.define(:resource, :kind, :at, :owner, :token, :revision, :expires_at, :term, :replaced)

  # +events+ (an Array of Event) as a JSON event log (format 1). Raises TypeError for anything but Events.
  def self.events_to_json(events) = _events_to_json(events)

  # The Events of a JSON event log, a frozen Array. Raises InvalidDocument.
  def self.events_from_json(json) = _events_from_json(json)
end
