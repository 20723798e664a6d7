# frozen_string_literal: true

module LeaseMachines
  # A Table's figures at one instant. +rejections+ is a frozen Hash of every reason in REASONS to its count;
  # +highest_token+ is +nil+ before the first grant. Command and event counts cover the table's life since it was
  # created or read back.
  Metrics = Data.define(:resources, :stored_leases, :live_leases, :expired_leases, :highest_token, :events,
                        :accepted, :rejected, :rejections, :holder_transitions) do
    # The metrics read from their JSON document (format 1). Raises InvalidDocument, also for counts no table can
    # report together (live + expired != stored, events != accepted, reasons not adding up to rejected, ...).
    def self.from_json(json) = _from_json(json)

    # The metrics as a JSON document (format 1). Raises ArgumentError for counts no table can report together.
    def to_json(*) = _to_json
  end
end
