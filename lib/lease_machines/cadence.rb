# frozen_string_literal: true

module LeaseMachines
  # A holder's renewal schedule, in Float seconds. Cadence.new raises ArgumentError unless 0 < renew_every < ttl and
  # warn_before < ttl.
  Cadence = Data.define(:ttl, :renew_every, :warn_before) do
    include FrozenValue

    # Checks and stores the members (natively, ffi/src/values.rs); values the extension builds skip it.
    def initialize(ttl:, renew_every:, warn_before:) = _initialize(ttl, renew_every, warn_before)
  end
end
