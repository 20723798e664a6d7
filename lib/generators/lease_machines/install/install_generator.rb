# frozen_string_literal: true

require "rails/generators"
require "rails/generators/active_record"

module LeaseMachines
  module Generators
    # bin/rails generate lease_machines:install: the migration that creates the lease store's tables in the
    # application's database, SQLite, PostgreSQL or MySQL (the fence checks, inside the application's own
    # transactions, the tokens the store issued, so both live in one database), and
    # config/initializers/lease_machines.rb.
    class InstallGenerator < ::Rails::Generators::Base
      include ::ActiveRecord::Generators::Migration

      source_root File.expand_path("templates", __dir__)
      desc "Writes the migration that creates lease_machines_leases, lease_machines_fences, the semaphores' " \
           "lease_machines_slots and lease_machines_slot_fences, the event log lease_machines_events and, on " \
           "PostgreSQL and MySQL, the token epochs' lease_machines_history (the " \
           "lease store's schema, format 2), and the continuable jobs' lease_machines_progress, in the " \
           "application's SQLite, PostgreSQL or MySQL database, and an initializer " \
           "for config.lease_machines. Where an earlier version's migration created the format 1 tables, it writes " \
           "the migration that adds the event log instead."

      # A refusal (Thor::Error) exits non-zero, so that a script running the generator stops.
      def self.exit_on_failure? = true

      # An unknown option (a misspelt --databse) is refused, not ignored; and so is an argument, also one after the
      # options (which Rails' generators, strict_args_position!, would drop unseen: here they reach #args).
      check_unknown_options!
      def self.strict_args_position = false

      # --database without a value is "" (Thor's default for it would be the string "database").
      class_option :database, type: :string, aliases: "--db", lazy_default: "",
                              desc: "The database (of config/database.yml) the migration is for"

      # Refuses, before anything is written, an unknown option and any argument: one line each, naming it.
      def initialize(args = [], options = {}, config = {})
        super
        return if self.args.empty?

        raise Thor::Error, "lease_machines:install: unexpected argument#{"s" if self.args.size > 1} " \
                           "#{self.args.map(&:inspect).join(", ")} (it takes no arguments, only options)"
      rescue Thor::UnknownArgumentError => e
        raise Thor::Error, "lease_machines:install: #{unknown_options(e)}"
      end

      def create_migration_file
        refuse_other_databases
        if created_before?
          return migration_template("add_lease_machines_events.rb.tt",
                                    File.join(db_migrate_path, "add_lease_machines_events.rb"))
        end

        migration_template "create_lease_machines_tables.rb.tt",
                           File.join(db_migrate_path, "create_lease_machines_tables.rb")
        if server?
          say_status :warning, "db/schema.rb and db/structure.sql keep no rows: a database loaded from them " \
                               "(db:schema:load, db:prepare) lacks lease_machines_schema's format row, and the store " \
                               "refuses it until #{schema_name} is run there", :yellow
        elsif ::Rails.application.config.active_record.schema_format.to_s != "sql"
          say_status :warning, "db/schema.rb cannot record these tables (SQLite REAL columns, STRICT): set " \
                               "config.active_record.schema_format = :sql, or db:schema:load leaves them out", :yellow
        end
        if @queue_database && name_of_database != "queue"
          say_status :note, "Solid Queue's tables are in the queue database; the lease store's go in " \
                            "#{name_of_database}, where the jobs' fenced writes go (the fence checks the tokens the " \
                            "store issued, in the application's own transaction)", :yellow
        end
        return if @primary

        say_status :note, "the fence and the default store use ActiveRecord::Base's database, the primary one: for " \
                          "#{options[:database]}, set the fence record to a class connected to it " \
                          "(config.to_prepare { LeaseMachines::Jobs.fence_record = ... })", :yellow
      end

      def create_initializer
        initializer = "config/initializers/lease_machines.rb"
        template("lease_machines.rb.tt", initializer) unless created_before? && File.exist?(File.join(destination_root, initializer))
      end

      private

      # The schema's statements, as the gem's store creates them on the database's adapter
      # (LeaseMachines::Store::SCHEMA, LeaseMachines::Store::PostgreSQL::SCHEMA, LeaseMachines::Store::MySQL::SCHEMA),
      # comments kept.
      def schema_statements
        require "lease_machines/store"
        schema = Object.const_get(schema_name)
        statements(schema).map(&:strip).reject { |sql| sql.lines.all? { _1.start_with?("--") } }
      end

      # The constant that holds the schema for the database's adapter.
      def schema_name
        { postgresql: "LeaseMachines::Store::PostgreSQL::SCHEMA", mysql: "LeaseMachines::Store::MySQL::SCHEMA" }
          .fetch(@adapter, "LeaseMachines::Store::SCHEMA")
      end

      # The table of continuable jobs' progress (LeaseMachines::Jobs::Progress::SCHEMA, portable to SQLite and
      # PostgreSQL; MYSQL_SCHEMA on MySQL).
      def progress_schema
        require "lease_machines/jobs"
        (mysql? ? LeaseMachines::Jobs::Progress::MYSQL_SCHEMA : LeaseMachines::Jobs::Progress::SCHEMA).strip
      end

      # +schema+ split into its statements at each line that ends with a semicolon, but not inside a dollar-quoted
      # body (a function's, whose own statements end lines with semicolons too).
      def statements(schema)
        statements = [+""]
        quoted = false
        schema.each_line do |line|
          quoted = !quoted if line.scan("$$").size.odd?
          if !quoted && line.match?(/;[ \t]*$/)
            statements.last << line.sub(/;[ \t]*$/, "")
            statements << +""
          else
            statements.last << line
          end
        end
        statements
      end

      # The statements of the event log (format 2), for a database of format 1: the log's table and index, and the
      # format raised.
      def event_log_statements
        schema_statements.select { _1.include?("lease_machines_events") || _1.include?("SET format = 2") }
      end

      # Whether this application's migrations already create the lease store's tables (an earlier version's
      # install): then the event log is added by a migration of its own.
      def created_before?
        Dir[File.join(destination_root, db_migrate_path, "*_create_lease_machines_tables.rb")].any?
      end

      # The database (of config/database.yml) the migration is for.
      def name_of_database = options[:database] || "primary"

      # Whether the migration is for PostgreSQL, MySQL (either is a server: #server?), else SQLite, as
      # config/database.yml names the database.
      def postgresql? = @adapter == :postgresql
      def mysql? = @adapter == :mysql
      def server? = postgresql? || mysql?

      def migration_version = "[#{::ActiveRecord::VERSION::MAJOR}.#{::ActiveRecord::VERSION::MINOR}]"

      # The message for Thor's UnknownArgumentError: the unknown options, with the known one each may have meant.
      def unknown_options(error)
        spell = DidYouMean::SpellChecker.new(dictionary: error.switches) if defined?(DidYouMean::SpellChecker)
        shown = error.unknown.map do |given|
          meant = spell&.correct(given.split("=", 2).first)&.first
          meant ? "#{given} (did you mean #{meant}?)" : given
        end
        "unknown option#{"s" if shown.size > 1} #{shown.join(", ")}; " \
          "bin/rails generate lease_machines:install --help lists the options"
      end

      # Refuses, before writing anything, a --database without a name or one that config/database.yml does not name,
      # and a database of that name that is not SQLite, PostgreSQL or MySQL (mysql2) in some environment, or not the
      # same one in every environment (the migration is written for one: SQLite in development and PostgreSQL in
      # production would fail at deploy). Read without connecting, nor loading an adapter. Notes the adapter, and
      # whether it is the primary database (ActiveRecord::Base's).
      def refuse_other_databases
        require "active_record/database_configurations"
        configurations = ::ActiveRecord::DatabaseConfigurations.new(::Rails.application.config.database_configuration)
        if options[:database]&.empty?
          names = configurations.configurations.map(&:name).uniq.join(", ")
          raise Thor::Error, "lease_machines:install: --database needs a database name (config/database.yml names: " \
                             "#{names})"
        end
        name = name_of_database
        @primary = configurations.primary?(name)
        # Rails 8's layout: Solid Queue's tables in a database of their own, named queue.
        @queue_database = configurations.configurations.any? { _1.name == "queue" }
        configs = configurations.configurations.select { _1.name == name }
        if configs.empty?
          raise Thor::Error, "lease_machines:install: config/database.yml names no database #{name.inspect}"
        end

        adapters = configs.to_h do |config|
          adapter = config.adapter.to_s
          kind = if adapter.start_with?("sqlite") then :sqlite
                 elsif adapter == "postgresql" then :postgresql
                 elsif adapter == "mysql2" then :mysql
                 else
                   raise Thor::Error, "lease_machines:install: the lease store runs on SQLite, PostgreSQL and MySQL " \
                                      "(mysql2); #{config.name} is #{adapter} in #{config.env_name}"
                 end
          [config.env_name, kind]
        end
        @adapter, other = adapters.values.uniq
        return unless other

        raise Thor::Error, "lease_machines:install: #{name} is not the same database in every environment " \
                           "(#{adapters.map { |env, kind| "#{kind} in #{env}" }.join(", ")}), and the migration is " \
                           "written for one; use one adapter in every environment"
      end
    end
  end
end
