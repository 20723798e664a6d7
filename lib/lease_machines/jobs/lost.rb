# frozen_string_literal: true

module LeaseMachines
  module Jobs
    # The LeaseLost of a job's own lease: what JobLease#check! and JobLease#fenced raise once the lease is lost (see
    # Loss).
    class Lost < LeaseLost
      include Loss
    end
  end
end
