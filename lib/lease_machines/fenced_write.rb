# frozen_string_literal: true

module LeaseMachines
  # A write to +resource+ by +owner+ under the lease with +token+; +operation+ says what it does. A FenceGuard
  # checks it.
  FencedWrite = Data.define(:resource, :owner, :token, :operation)
end
