# frozen_string_literal: true

module LeaseMachines
  # What Table#apply_batch returns: one Decision per command, in order (a frozen Array), and how many were
  # +accepted+ and +rejected+.
  Batch = Data.define(:decisions, :accepted, :rejected)
end
