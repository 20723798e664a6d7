# frozen_string_literal: true

require "lease_machines/errors"

module LeaseMachines
  # The job's lease can no longer be trusted (lost, or at risk when checked): the job's cooperative stop point,
  # raised by JobLease#check! and JobLease#fenced (never by Thread#raise). +reason+ is why it was lost (the
  # authority's refusal, :fenced, :job_ended), or nil.
  class LeaseLost < Error
    attr_reader :resource, :token, :state, :reason

    def initialize(resource:, token:, state:, reason: nil)
      @resource = resource
      @token = token
      @state = state
      @reason = reason
      super("#{resource}: the lease with token #{token} is #{state}#{" (#{reason})" if reason}; stop before writing")
    end
  end
end
