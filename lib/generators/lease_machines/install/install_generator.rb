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
        adapter = database_config&.adapter.to_s
        unless adapter.empty? || adapter.start_with?("sqlite")
          raise Thor::Error, "lease_machines:install: the lease store runs on SQLite in this release; " \
                             "#{database_config.name} is #{adapter}"
        end

        migration_template "create_lease_machines_tables.rb.tt",
                           File.join(db_migrate_path, "create_lease_machines_tables.rb")
      end

      def create_initializer = template("lease_machines.rb.tt", "config/initializers/lease_machines.rb")

      private

      # The schema's statements, as the gem's store creates them (LeaseMachines::Store::SCHEMA), comments kept.
      def schema_statements
        require "lease_machines/store"
        LeaseMachines::Store::SCHEMA.split(/;\s*$/).map(&:strip).reject { |sql| sql.lines.all? { _1.start_with?("--") } }
      end

      def migration_version = "[#{::ActiveRecord::VERSION::MAJOR}.#{::ActiveRecord::VERSION::MINOR}]"

      # The database's configuration, read from config/database.yml without connecting (nor loading its adapter).
      def database_config
        require "active_record/database_configurations"
        configurations = ::ActiveRecord::DatabaseConfigurations.new(::Rails.application.config.database_configuration)
        configs = configurations.configs_for(env_name: ::Rails.env.to_s)
        options[:database] ? configs.find { _1.name == options[:database] } : configs.first
      end
    end
  end
end
