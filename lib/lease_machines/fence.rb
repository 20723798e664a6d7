# frozen_string_literal: true

module LeaseMachines
  # The check at the protected resource: remembers the highest token it accepted and refuses older ones
  # (Fence#accept, native).
  class Fence
    # A fence whose high-water mark is +highest+ (+nil+, or the Integer it persisted before a restart).
    def self.new(highest: nil) = _new(highest)
  end
end
