# frozen_string_literal: true

require "active_support"
require "active_support/concern"
require "active_job"
require "lease_machines"
require "lease_machines/store"
require_relative "lease_busy"
require_relative "lease_lost"
require_relative "jobs/seconds"
require_relative "jobs/conflict"
require_relative "jobs/loss"
require_relative "jobs/lost"
require_relative "jobs/refused"
require_relative "jobs/configuration"
require_relative "jobs/store_pool"
require_relative "jobs/resource_key"
require_relative "jobs/declaration"
require_relative "jobs/declarations"
require_relative "jobs/instrumentation"
require_relative "jobs/job_lease"
require_relative "jobs/fence_transaction"
require_relative "jobs/renewer"
require_relative "jobs/progress"
require_relative "jobs/checkpoints"
require_relative "jobs/execution"
require_relative "jobs/log_subscriber"
require_relative "jobs/fork_hook"
require_relative "holds_lease"

# Rails 8.1's continuable jobs stop at a checkpoint once their lease is not held (see LeaseMachines::Jobs::Progress);
# an ActiveJob without ActiveJob::Continuable never runs this.
ActiveSupport.on_load(:active_job_continuable) { prepend LeaseMachines::Jobs::Checkpoints }

module LeaseMachines
  # Leases for ActiveJob, outside Rails as inside it: where jobs take their leases (+store+, a Store or a factory of
  # them), the fence's database (+fence_record+), and the one renewer of the process. A job class includes
  # LeaseMachines::HoldsLease and declares +holds_lease+ (in Rails every job class has it already: see Railtie).
  module Jobs
    class << self
      def configuration = @configuration ||= Configuration.new

      # Yields the configuration; returns it.
      def configure
        yield configuration
        configuration
      end

      def store = configuration.store

      # The lease store: a LeaseMachines::Store, or a factory of them (one per thread, the renewer's own). Closes
      # the stores the factory opened so far.
      def store=(store)
        pool.reset
        configuration.store = store
      end

      def fence_record = configuration.fence_record
      def fence_record=(record)
        configuration.fence_record = record
      end

      def pool = @pool ||= StorePool.new(configuration)
      def renewer = @renewer ||= Renewer.new(configuration, pool)

      # In a forked child: a renewer of its own, new store connections.
      def after_fork
        renewer.after_fork
        pool.after_fork
      end
    end
  end
end
