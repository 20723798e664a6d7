# frozen_string_literal: true

require "rails/railtie"

module LeaseMachines
  # Rails glue, loaded by +require "lease_machines"+ when Rails is: every job class (ActiveJob::Base) includes
  # LeaseMachines::ActiveJob, so that +holds_lease+ is there to declare, and +config.lease_machines+ configures it:
  #
  #   config.lease_machines.default_ttl = 30.seconds # the TTL of a holds_lease that names none
  #   config.to_prepare { LeaseMachines::ActiveJob.fence_record = ApplicationRecord } # whose database holds the fence
  #
  # The options are those of LeaseMachines::ActiveJob::Configuration (store, default_ttl, fence_record, executor,
  # error_handler, renewal, jitter, clock), applied after the application's config/initializers ran (which may also
  # call LeaseMachines::ActiveJob.configure: what they set is kept). Unset, the store is the application's own SQLite
  # database (the fence record's: the fence checks the tokens the store issued, so the two share one database), whose
  # tables +bin/rails g lease_machines:install+ migrates, and the executor is the application's, unless code
  # reloading is on (a pending reload would hold up the renewer, which runs no application code). The renewer's
  # errors go to Rails.error. config.lease_machines itself is set option by option: assigning it anything but an
  # ActiveSupport::OrderedOptions (config.lease_machines = "x", or a Hash) raises TypeError.
  class Railtie < ::Rails::Railtie
    # +options+, when it is config.lease_machines' kind of object (an ActiveSupport::OrderedOptions); otherwise a
    # TypeError that says what config.lease_machines is and how its options are set.
    def self.options!(options)
      return options if ActiveSupport::OrderedOptions === options # Module#===: a BasicObject has no is_a?

      raise TypeError, "config.lease_machines cannot be set to #{LeaseMachines.__send__(:_shown, options)}: it is " \
                       "lease_machines' options (an ActiveSupport::OrderedOptions, applied to " \
                       "LeaseMachines::ActiveJob's configuration); set each option on it, as in " \
                       "config.lease_machines.default_ttl = 30.seconds"
    end

    # config.lease_machines= of every Rails configuration: only an ActiveSupport::OrderedOptions replaces the options,
    # anything else is a TypeError saying how to set them (Rails would keep it, and the boot fail later with a
    # NoMethodError).
    module OptionsAssignment
      def lease_machines=(options)
        Railtie.options!(options)
        method_missing(:lease_machines=, options) # where Rails keeps a railtie's configuration
      end
    end
    ::Rails::Railtie::Configuration.include(OptionsAssignment)

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
        raise ArgumentError, "config.lease_machines.store: #{record.name}'s SQLite database is #{database}, and the " \
                             "store opens a file path (not a URI or an in-memory database); set " \
                             "config.lease_machines.store"
      end
      LeaseMachines::Store.new(File.expand_path(database, ::Rails.root.to_s))
    end

    # Before the application's config/initializers, so that they (and config.to_prepare) can name
    # LeaseMachines::ActiveJob. Without the sqlite3 gem (the store's database) the jobs' leases are left out.
    initializer "lease_machines.active_job.load" do
      require "lease_machines/active_job"
    rescue LoadError => e
      raise unless e.path == "sqlite3"

      warn "lease_machines: holds_lease is not available: the lease store needs the sqlite3 gem (#{e.message})"
    end

    initializer "lease_machines.active_job", after: :load_config_initializers do |app|
      next unless defined?(LeaseMachines::ActiveJob)

      Railtie.configure(LeaseMachines::ActiveJob, app.config.lease_machines, app)
      ActiveSupport.on_load(:active_job) { include LeaseMachines::ActiveJob }
    end

    # Applies +options+ (config.lease_machines) to +active_job+'s configuration, then the defaults for what neither
    # they nor the application's initializers set. Raises TypeError when +options+ is not an
    # ActiveSupport::OrderedOptions, ArgumentError naming an option it does not know, and the configuration's own
    # TypeError or ArgumentError, prefixed with the option's name, for a value it refuses.
    def self.configure(active_job, options, app)
      settings = options!(options).to_h
      configuration = active_job.configuration
      known = configuration.public_methods.grep(/\A[a-z_]+=\z/).map { _1.to_s.chomp("=").to_sym }.sort
      unknown = settings.keys - known
      unless unknown.empty?
        raise ArgumentError, "config.lease_machines: unknown option#{"s" if unknown.size > 1} #{unknown.join(", ")} " \
                             "(the options: #{known.join(", ")})"
      end

      store = settings.delete(:store)
      settings.each { |name, value| set(configuration, name, value) }
      set(configuration, :executor, app.executor) if !settings.key?(:executor) && configuration.executor.nil? &&
                                                     !app.config.reloading_enabled?
      store ||= configuration.store || APPLICATION_DATABASE
      begin
        active_job.store = store # last: it resets the connections opened so far
      rescue TypeError, ArgumentError => e
        raise e.class, "config.lease_machines.store: #{e.message}"
      end
      configuration
    end

    def self.set(configuration, name, value)
      configuration.public_send(:"#{name}=", value)
    rescue TypeError, ArgumentError => e
      raise e.class, "config.lease_machines.#{name}: #{e.message}"
    end
    private_class_method :set
  end
end
