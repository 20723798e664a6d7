# frozen_string_literal: true

module LeaseMachines
  module Jobs
    # Prepended to ActiveJob::Continuable (Rails 8.1: ActiveSupport.on_load(:active_job_continuable), as ActiveRecord
    # prepends its own check of open transactions): a checkpoint of a continuable job that holds a lease (before each
    # step but the first, and at every +step.set!+, +step.advance!+, +step.checkpoint!+) first saves the job's progress
    # through the fence when its declaration keeps it there (+progress: :fenced+), then stops the job if its lease is
    # not held any more: see Progress.checkpoint. Jobs without a lease checkpoint as before.
    module Checkpoints
      def checkpoint!
        Progress.checkpoint(self)
        super
      end
    end
  end
end
