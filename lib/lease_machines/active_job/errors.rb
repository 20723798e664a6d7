# frozen_string_literal: true

require "lease_machines/errors"

module LeaseMachines
  # A job's lease is held by another owner and the job may not wait for it any longer: +on_conflict: :raise+, or
  # +:retry+ after its +attempts+ ran out. Nothing of the job ran.
  class LeaseBusy < Error
    attr_reader :resource, :attempts

    def initialize(resource:, attempts:)
      @resource = resource
      @attempts = attempts
      super("#{resource}: the lease is held by another owner (#{attempts} retries spent); the job did not run")
    end
  end

  # The job's lease can no longer be trusted (lost, or at risk when checked): the job's cooperative stop point,
  # raised by JobLease#check! (never by Thread#raise).
  class LeaseLost < Error
    attr_reader :resource, :token, :state

    def initialize(resource:, token:, state:)
      @resource = resource
      @token = token
      @state = state
      super("#{resource}: the lease with token #{token} is #{state}; stop before writing")
    end
  end
end
