# frozen_string_literal: true

module LeaseMachines
  # A member that voted, in one term, for two different candidates: +first+ and +second+ are the two votes.
  Equivocation = Data.define(:voter, :first, :second)
end
