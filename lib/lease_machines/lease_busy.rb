# frozen_string_literal: true

require "lease_machines/errors"

module LeaseMachines
  # A job's lease is held by another owner: raised from the job's around_perform, before any of the job ran, and
  # handled by the job class as its declaration said (+on_conflict: :retry+ is retry_on, which raises it once
  # +attempts+ retries were spent; +:discard+ is discard_on; +:raise+ lets it through). +attempts+ is how many
  # retries were spent before it.
  class LeaseBusy < Error
    attr_reader :resource, :attempts

    def initialize(resource:, attempts:)
      @resource = resource
      @attempts = attempts
      super("#{resource}: the lease is held by another owner (#{attempts} retries spent); the job did not run")
    end
  end
end
