# frozen_string_literal: true

module LeaseMachines
  module Jobs
    # The Fenced refusal of a write under a job's own lease, raised by JobLease#fenced (see Loss).
    class Refused < Fenced
      include Loss
    end
  end
end
