# frozen_string_literal: true

require "active_support/notifications"

module LeaseMachines
  module Jobs
    # The ActiveSupport::Notifications events of a job's lease, each "<event>.lease_machines", with +job+,
    # +resource+, +owner+, +token+ and +slot+ in every payload (+owner+ and +token+ nil before a grant; +slot+ the
    # semaphore's slot of a holds_lease limit: lease, else nil). +lost+ says the lease's state moved to :lost (from
    # the renewer's thread, or the job's); +loss+ what the job's declaration did about it once the job let the
    # LeaseLost or Fenced out (+action+ :retry, :discard or :raise; :resume for a continuable job stopped at a
    # checkpoint), as +conflict+ says what it did about a lease held by another owner.
    module Instrumentation
      EVENTS = %i[acquire conflict renew at_risk lost loss fenced_write release thread_error].freeze
      NAMESPACE = "lease_machines"

      module_function

      def instrument(event, job:, resource:, owner:, token:, slot: nil, **extra, &)
        raise ArgumentError, "unknown lease_machines event #{event.inspect}" unless EVENTS.include?(event)

        payload = { job: job, resource: resource, owner: owner, token: token, slot: slot, **extra }
        ActiveSupport::Notifications.instrument("#{event}.#{NAMESPACE}", payload, &)
      end
    end
  end
end
