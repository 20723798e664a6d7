# frozen_string_literal: true

module LeaseMachines
  # What Table#reap_expired returns: the TableLeases reaped (a frozen Array), in resource order, and +reason+
  # (+:clock_regressed+ when the whole sweep was refused, +nil+ otherwise).
  Reaping = Data.define(:leases, :reason) do
    def rejected? = !reason.nil?
  end
end
