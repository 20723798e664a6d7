# frozen_string_literal: true

require "rails/generators"
require "rails/generators/active_record"

module LeaseMachines
  module Generators
    # bin/rails generate lease_machines:install: the migration that creates the lease store's tables in the
    # application's database (the fence checks, inside the application's own transactions, the tokens the store
    # issued, so both live in one database), and config/initializers/lease_machines.rb.
    class InstallGenerator < ::Rails::Generators::Base
      include ::ActiveRecord::Generators::Migration

      source_root File.expand_path("templates", __dir__)
      desc "Writes the migration that creates lease_machines_leases and lease_machines_fences (the lease store's " \
           "schema, format 1) in the application's SQLite database, and an initializer for config.lease_machines."

      # A refusal (Thor::Error) exits non-zero, so that a script running the generator stops.
      def self.exit_on_failure? = true

      class_option :database, type: :string, aliases: "--db",
                              desc: "The database (of config/database.yml) the migration is for"

      def create_migration_file
        refuse_other_databases
        migration_template "create_lease_machines_tables.rb.tt",
                           File.join(db_migrate_path, "create_lease_machines_tables.rb")
        if ::Rails.application.config.active_record.schema_format.to_s != "sql"
          say_status :warning, "db/schema.rb cannot record these tables (SQLite REAL columns, STRICT): set " \
                               "config.active_record.schema_format = :sql, or db:schema:load leaves them out", :yellow
        end
        return unless options[:database]

        say_status :note, "the fence and the default store use ActiveRecord::Base's database: set the fence record " \
                          "to #{options[:database]}'s class (config.to_prepare { LeaseMachines::ActiveJob." \
                          "fence_record = ... })", :yellow
      end

      def create_initializer = template("lease_machines.rb.tt", "config/initializers/lease_machines.rb")

      private

      # The schema's statements, as the gem's store creates them (LeaseMachines::Store::SCHEMA), comments kept.
      def schema_statements
        require "lease_machines/store"
        LeaseMachines::Store::SCHEMA.split(/;[ \t]*$/).map(&:strip).reject { |sql| sql.lines.all? { _1.start_with?("--") } }
      end

      def migration_version = "[#{::ActiveRecord::VERSION::MAJOR}.#{::ActiveRecord::VERSION::MINOR}]"

      # Refuses, before writing anything, a --database that config/database.yml does not name, and a database of that
      # name that is not SQLite in any environment (SQLite in development and PostgreSQL in production would fail at
      # deploy). Read without connecting, nor loading an adapter.
      def refuse_other_databases
        require "active_record/database_configurations"
        configurations = ::ActiveRecord::DatabaseConfigurations.new(::Rails.application.config.database_configuration)
        name = options[:database] || "primary"
        configs = configurations.configurations.select { _1.name == name }
        if configs.empty?
          raise Thor::Error, "lease_machines:install: config/database.yml names no database #{name.inspect}"
        end

        configs.each do |config|
          next if config.adapter.to_s.start_with?("sqlite")

          raise Thor::Error, "lease_machines:install: the lease store runs on SQLite in this release; " \
                             "#{config.name} is #{config.adapter} in #{config.env_name}"
        end
      end
    end
  end
end
