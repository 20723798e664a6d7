# frozen_string_literal: true

require "active_support"
require "active_job"
require "lease_machines"
require "lease_machines/store"
require_relative "active_job/errors"
require_relative "active_job/configuration"
require_relative "active_job/store_pool"
require_relative "active_job/resource_key"
require_relative "active_job/declaration"
require_relative "active_job/declaration_methods"
require_relative "active_job/instrumentation"
require_relative "active_job/job_lease"
require_relative "active_job/fenced_write"
require_relative "active_job/renewer"
require_relative "active_job/execution"
require_relative "active_job/log_subscriber"
require_relative "active_job/fork_hook"

module LeaseMachines
  # Leases for ActiveJob: include it in a job class and declare
  #
  #   holds_lease key: ->(account) { account }, ttl: 30.seconds, renew_every: 10.seconds,
  #               on_conflict: :retry, wait: 15.seconds, attempts: 20
  #
  # Each perform then holds the lease of its resource (taken in around_perform, renewed in the background, released
  # when it ends), and the job's body reads it as +lease+. Job classes gain only +holds_lease+ and +lease+.
  module ActiveJob
    def self.included(base)
      unless base.respond_to?(:around_perform)
        raise TypeError, "#{name} is for ActiveJob job classes (with around_perform), not #{base.inspect}"
      end

      base.extend(ClassMethods)
    end

    # The lease of the job's current (or last) perform; nil before one was granted.
    def lease = @lease_machines_lease

    class << self
      def configuration = @configuration ||= Configuration.new

      # Yields the configuration.
      def configure
        yield configuration
        configuration
      end

      def store = configuration.store

      # The lease store: a LeaseMachines::Store, or a factory of them (one per thread, the renewer's own).
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
