# frozen_string_literal: true

module LeaseMachines
  # A candidate for leadership: +id+ (an owner Integer) and +priority+ (Integer, higher wins).
  Candidate = Data.define(:id, :priority)
end
