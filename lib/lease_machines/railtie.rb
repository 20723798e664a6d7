# frozen_string_literal: true

require "rails/railtie"

module LeaseMachines
  # Rails glue, loaded by +require "lease_machines"+ when Rails is: every job class (ActiveJob::Base) includes
  # LeaseMachines::ActiveJob, so that +holds_lease+ is there to declare, and +config.lease_machines+ configures it:
  #
  #   config.lease_machines.default_ttl = 30.seconds # the TTL of a holds_lease that names none
  #   config.lease_machines.store = -> { LeaseMachines::Store.new(Rails.root.join("storage/leases.sqlite3").to_s) }
  #   config.to_prepare { LeaseMachines::ActiveJob.fence_record = ApplicationRecord } # whose database holds the fence
  #
  # The options are those of LeaseMachines::ActiveJob::Configuration (store, default_ttl, fence_record, executor,
  # error_handler, renewal, jitter, clock), applied after the application's config/initializers ran. Unset, the store
  # is the application's own SQLite database (the fence record's), whose tables +bin/rails g lease_machines:install+
  # migrates, and the executor is the application's, so that each pass of the renewer runs inside it. Errors go to
  # Rails.error.
  class Railtie < ::Rails::Railtie
    config.lease_machines = ActiveSupport::OrderedOptions.new

    # Opens a Store on the fence record's database: the application's, when it is SQLite.
    APPLICATION_DATABASE = lambda do
      record = LeaseMachines::ActiveJob.configuration.fence_record!
      db_config = record.connection_db_config
      unless db_config.adapter.to_s.start_with?("sqlite")
        raise ArgumentError, "config.lease_machines.store: the default store is the application's SQLite database, " \
                             "but #{record.name}'s is #{db_config.adapter}; set config.lease_machines.store"
      end
      database = db_config.database.to_s
      if database == ":memory:" || database.start_with?("file:")
        raise ArgumentError, "config.lease_machines.store: #{record.name}'s SQLite database is #{database}, which " \
                             "other connections cannot open; set config.lease_machines.store"
      end
      LeaseMachines::Store.new(File.expand_path(database, ::Rails.root.to_s))
    end

    initializer "lease_machines.active_job", after: :load_config_initializers do |app|
      options = app.config.lease_machines
      ActiveSupport.on_load(:active_job) do
        require "lease_machines/active_job"
        Railtie.configure(LeaseMachines::ActiveJob, options, app)
        include LeaseMachines::ActiveJob
      end
    end

    # Applies +options+ (config.lease_machines) to +active_job+'s configuration. Raises ArgumentError naming an option
    # it does not know, and the configuration's own TypeError or ArgumentError for a value it refuses.
    def self.configure(active_job, options, app)
      settings = options.to_h
      configuration = active_job.configuration
      unknown = settings.keys.reject { configuration.respond_to?(:"#{_1}=") }
      unless unknown.empty?
        raise ArgumentError, "config.lease_machines: unknown option#{"s" if unknown.size > 1} #{unknown.join(", ")}"
      end

      settings = { store: APPLICATION_DATABASE, executor: app.executor }.merge(settings)
      settings.each { |name, value| configuration.public_send(:"#{name}=", value) unless name == :store }
      active_job.store = settings[:store] # last: it resets the connections opened so far
      configuration
    end
  end
end
