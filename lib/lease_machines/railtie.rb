# frozen_string_literal: true

require "rails/railtie"

module LeaseMachines
  # Rails glue, loaded by +require "lease_machines"+ when Rails is: every job class (ActiveJob::Base) includes
  # LeaseMachines::HoldsLease, so that +holds_lease+ is there to declare, and +config.lease_machines+ configures it:
  #
  #   config.lease_machines.default_ttl = 30.seconds # the TTL of a holds_lease that names none
  #   config.to_prepare { LeaseMachines::Jobs.fence_record = ApplicationRecord } # whose database holds the fence
  #
  # The options are those of LeaseMachines::Jobs::Configuration (store, default_ttl, fence_record, executor,
  # error_handler, renewal, jitter, clock), applied after the application's config/initializers ran (which may also
  # call LeaseMachines::Jobs.configure: what they set is kept). Unset, the store is the application's own SQLite
  # or PostgreSQL database (the fence record's: the fence checks the tokens the store issued, so the two share one
  # database), whose tables +bin/rails g lease_machines:install+ migrates, and the executor is the application's,
  # unless code reloading is on (a pending reload would hold up the renewer, which runs no application code). The
  # renewer's errors go to Rails.error. config.lease_machines itself is set option by option: assigning it anything
  # but an ActiveSupport::OrderedOptions (config.lease_machines = "x", or a Hash) raises TypeError.
  class Railtie < ::Rails::Railtie
    # +options+, when it is config.lease_machines' kind of object (an ActiveSupport::OrderedOptions); otherwise a
    # TypeError that says what config.lease_machines is and how its options are set.
    def self.options!(options)
      return options if ActiveSupport::OrderedOptions === options # Module#===: a BasicObject has no is_a?

      raise TypeError, "config.lease_machines cannot be set to #{LeaseMachines.shown(options)}: it is " \
                       "lease_machines' options (an ActiveSupport::OrderedOptions, applied to " \
                       "LeaseMachines::Jobs.configuration); set each option on it, as in " \
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

    # Opens a Store on the fence record's database, the application's own: its SQLite file, or on PostgreSQL and MySQL
    # a connection of the store's own (never one of ActiveRecord's: the renewer's thread must not share a job's).
    APPLICATION_DATABASE = -> { LeaseMachines::Store.new(Railtie.application_database) }

    # What the default store opens: the fence record's database, as a SQLite path, a postgresql:// or a mysql2:// URL.
    # Raises ArgumentError for another adapter, or an SQLite database the store cannot open by path.
    def self.application_database
      record = LeaseMachines::Jobs.configuration.fence_record!
      db_config = record.connection_db_config
      adapter = db_config.adapter.to_s
      return postgresql_url(db_config.configuration_hash) if adapter == "postgresql"
      return mysql_url(db_config.configuration_hash) if adapter == "mysql2"
      unless adapter.start_with?("sqlite")
        raise ArgumentError, "config.lease_machines.store: the default store is the application's SQLite, " \
                             "PostgreSQL or MySQL (mysql2) database, but #{record.name}'s is #{adapter}; set " \
                             "config.lease_machines.store"
      end

      database = db_config.database.to_s
      if database == ":memory:" || database.start_with?("file:")
        raise ArgumentError, "config.lease_machines.store: #{record.name}'s SQLite database is #{database}, and the " \
                             "store opens a file path (not a URI or an in-memory database); set " \
                             "config.lease_machines.store"
      end
      File.expand_path(database, ::Rails.root.to_s)
    end

    # The postgresql:// URL of the database an ActiveRecord PostgreSQL configuration (+config+, its hash) names:
    # libpq's parameters as ActiveRecord's adapter passes them (+username+ is +user+, +database+ is +dbname+), and
    # its session settings (+schema_search_path+, +variables+) as the connection's options, so that the store reads
    # the tables the application's connections see. Every part percent-encoded; a host that is a socket directory
    # or a list goes in the query.
    def self.postgresql_url(config)
      require "pg"
      params = config.compact.transform_keys(&:to_sym)
      params[:user] = params.delete(:username) if params.key?(:username)
      params[:dbname] = params.delete(:database) if params.key?(:database)
      settings = (params[:variables] || {}).to_h.transform_keys(&:to_s)
                                           .reject { |_, value| value.nil? || value.to_s == ":default" }
      search_path = params[:schema_search_path] || params[:schema_order]
      settings = { "search_path" => search_path }.merge(settings) if search_path
      params.slice!(*::PG::Connection.conndefaults_hash.keys)
      options = settings.map { |name, value| "-c #{name}=#{value.to_s.gsub(/[ \\]/) { "\\#{_1}" }}" }
      params[:options] = [params[:options], *options].compact.join(" ") unless options.empty?
      user, password, host, port, dbname = params.values_at(:user, :password, :host, :port, :dbname)
      named = host.to_s.match?(/\A[A-Za-z0-9.-]+\z/)
      params = params.except(:user, :password, :dbname, *(%i[host port] if named))
      userinfo = user && "#{url_escape(user)}#{":#{url_escape(password)}" if password}@"
      authority = named ? "#{url_escape(host)}#{":#{url_escape(port)}" if port}" : ""
      query = params.map { |key, value| "#{key}=#{url_escape(value)}" }.join("&")
      "postgresql://#{userinfo}#{authority}/#{url_escape(dbname)}#{"?#{query}" unless query.empty?}"
    end

    # The mysql2:// URL of the database an ActiveRecord mysql2 configuration (+config+, its hash) names: its user,
    # password, host, port and database, and the socket and TLS settings the store takes (Store::MySQL.options_of),
    # every part percent-encoded. No host: localhost (mysql2's default socket).
    def self.mysql_url(config)
      params = config.compact.transform_keys(&:to_sym)
      user, password, host, port, database = params.values_at(:username, :password, :host, :port, :database)
      userinfo = user && "#{url_escape(user)}#{":#{url_escape(password)}" if password}@"
      authority = "#{url_escape(host || "localhost")}#{":#{url_escape(port)}" if port}"
      query = params.slice(:socket, :connect_timeout, :ssl_mode, :sslca, :sslcert, :sslkey, :sslverify)
                    .map { |key, value| "#{key}=#{url_escape(value)}" }.join("&")
      "mysql2://#{userinfo}#{authority}/#{url_escape(database)}#{"?#{query}" unless query.empty?}"
    end

    # +value+ percent-encoded, every byte but the unreserved ones (libpq decodes %XX only: a + stays a +).
    def self.url_escape(value) = value.to_s.b.gsub(/[^A-Za-z0-9\-._~]/n) { format("%%%02X", _1.ord) }
    private_class_method :url_escape

    # Before the application's config/initializers, so that they (and config.to_prepare) can name
    # LeaseMachines::Jobs. Without the sqlite3 gem (the store's database) the jobs' leases are left out.
    initializer "lease_machines.jobs.load" do
      require "lease_machines/jobs"
    rescue LoadError => e
      raise unless e.path == "sqlite3"

      warn "lease_machines: holds_lease is not available: the lease store needs the sqlite3 gem (#{e.message})"
    end

    initializer "lease_machines.jobs", after: :load_config_initializers do |app|
      next unless defined?(LeaseMachines::Jobs)

      Railtie.configure(LeaseMachines::Jobs, app.config.lease_machines, app)
      ActiveSupport.on_load(:active_job) { include LeaseMachines::HoldsLease }
    end

    # Applies +options+ (config.lease_machines) to +jobs+'s configuration, then the defaults for what neither
    # they nor the application's initializers set. Raises TypeError when +options+ is not an
    # ActiveSupport::OrderedOptions, ArgumentError naming an option it does not know, and the configuration's own
    # TypeError or ArgumentError, prefixed with the option's name, for a value it refuses.
    def self.configure(jobs, options, app)
      settings = options!(options).to_h
      configuration = jobs.configuration
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
        jobs.store = store # last: it resets the connections opened so far
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
