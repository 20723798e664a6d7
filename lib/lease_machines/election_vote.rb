# frozen_string_literal: true

module LeaseMachines
  # One member's vote: +voter+ and +candidate+ (owner Integers), +term+ (Integer) and whether it was +granted+.
  ElectionVote = Data.define(:voter, :candidate, :term, :granted)
end
