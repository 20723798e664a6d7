# frozen_string_literal: true

module LeaseMachines
  # The highest +token+ a FenceGuard accepted for +resource+, and the +owner+ whose write set it.
  FenceMark = Data.define(:resource, :token, :owner)
end
