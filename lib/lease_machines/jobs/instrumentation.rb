# frozen_string_literal: true

require "active_support/notifications"

module LeaseMachines
  module Jobs
    # The events of a job's lease, each "<event>.lease_machines", with +job+, +resource+, +owner+, +token+ and +slot+
    # in every payload (+owner+ and +token+ nil before a grant; +slot+ the semaphore's slot of a holds_lease limit:
    # lease, else nil):
    #
    # - through ActiveSupport::Notifications, the payload as it is (the job itself, an error as the exception);
    # - where Rails 8.1's structured event reporter is (Rails.event, ActiveSupport.event_reporter), also to it, once
    #   the instrumented block (a fenced write's) has run, named as Rails names its own ("lease_machines.<event>"),
    #   the payload with plain values only (the job as +job_class+ and +job_id+, an error as +error_class+ and
    #   +error_message+); the reporter adds its tags and context.
    module Instrumentation
      EVENTS = %i[acquire conflict renew at_risk lost fenced_write release thread_error].freeze
      NAMESPACE = "lease_machines"

      module_function

      def instrument(event, job:, resource:, owner:, token:, slot: nil, **extra, &)
        raise ArgumentError, "unknown lease_machines event #{event.inspect}" unless EVENTS.include?(event)

        name = "#{event}.#{NAMESPACE}"
        payload = { job: job, resource: resource, owner: owner, token: token, slot: slot, **extra }
        begin
          ActiveSupport::Notifications.instrument(name, payload, &)
        ensure
          report(event, payload)
        end
      end

      # The event to Rails 8.1's structured event reporter, where there is one (Rails 7.2 has none).
      def report(event, payload)
        reporter = ActiveSupport.respond_to?(:event_reporter) && ActiveSupport.event_reporter
        return unless reporter

        job = payload[:job]
        error = payload[:error] || payload[:exception_object]
        reported = payload.except(:job, :error, :exception, :exception_object)
        reported = { job_class: job.class.name, job_id: job.job_id, **reported } if job
        reported.merge!(error_class: error.class.name, error_message: error.message) if error
        reporter.notify("#{NAMESPACE}.#{event}", reported)
      end
    end
  end
end
