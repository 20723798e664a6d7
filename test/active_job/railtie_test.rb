# frozen_string_literal: true

require "test_helper"
require "support/dummy_app"
require "fileutils"
require "json"
require "open3"
require "securerandom"

# The Railtie and the install generator, in a tiny Rails application (test/dummy, copied for each test): the
# generator writes the migration of the lease store's tables, db:migrate creates them in the application's own
# database, and a job that declares holds_lease without an include (and without ttl:, from
# config.lease_machines.default_ttl) runs with its write fenced, its lease taken in the application's database.
class RailtieTest < Minitest::Test
  include LeaseMachines::TestSupport::DummyApp

  def setup
    @app = copy_dummy_app("lm-dummy-app")
  end

  def teardown
    PG.connect(@cluster.url) { _1.exec("DROP DATABASE IF EXISTS #{@database} WITH (FORCE)") } if @database
    super
  end

  def test_the_generator_writes_the_migration_and_a_job_holds_its_lease_in_the_application_database
    output = rails("generate", "lease_machines:install")
    assert_match(%r{create\s+db/migrate/\d{14}_create_lease_machines_tables\.rb}, output)
    assert_match(%r{create\s+config/initializers/lease_machines\.rb}, output)
    assert_match(/warning\s+db\/schema\.rb cannot record these tables/, output, "the dummy keeps schema_format :ruby")
    migration = File.read(Dir[File.join(@app, "db/migrate/*_create_lease_machines_tables.rb")].fetch(0))
    # The migration's version is the application's Rails: 8.1, or 7.2 on the second lane.
    require "active_record/version"
    version = Regexp.escape(ActiveRecord::VERSION::STRING[/\A\d+\.\d+/])
    assert_match(/^class CreateLeaseMachinesTables < ActiveRecord::Migration\[#{version}\]$/, migration)
    assert_includes migration, "CREATE TABLE IF NOT EXISTS lease_machines_leases ("
    assert_includes migration, "CREATE TABLE IF NOT EXISTS lease_machines_fences ("

    rails("db:migrate")
    tables = sqlite("SELECT name, sql FROM sqlite_master WHERE type = 'table' AND name LIKE 'lease_machines_%' " \
                    "ORDER BY name")
    assert_equal %w[lease_machines_events lease_machines_fences lease_machines_leases lease_machines_progress
                    lease_machines_schema lease_machines_slot_fences lease_machines_slots], tables.map(&:first)
    store_tables = tables.reject { |name, _| name == "lease_machines_progress" } # the jobs' table, portable
    assert store_tables.all? { |_, sql| sql.rstrip.end_with?(") STRICT") },
           "the migration keeps the store's STRICT tables"

    facts = JSON.parse(rails("runner", "script/nightly_report.rb").lines.last)
    assert_jobs_ran(facts, "sqlite")
    assert_equal [File.join(@app, "db/test.sqlite3"), false], [facts["store"][2], facts["store"][1]],
                 "the application's SQLite file, on the machine's wall clock"

    rails("db:rollback")
    assert_empty sqlite("SELECT name FROM sqlite_master WHERE name LIKE 'lease_machines_%'")
  end

  # An application whose migrations an earlier version wrote (the format 1 tables, no event log): the generator
  # writes the migration that adds the log, db:migrate raises the format, and db:rollback takes it back to 1.
  def test_the_generator_upgrades_an_earlier_install_with_a_migration_adding_the_event_log
    rails("generate", "lease_machines:install")
    created = Dir[File.join(@app, "db/migrate/*_create_lease_machines_tables.rb")].fetch(0)
    format_1 = File.read(created).gsub(/^    execute <<~'SQL'\n(?:(?!    SQL\n).)*lease_machines_events.*?^    SQL\n/m, "")
                                 .gsub(/^    execute <<~'SQL'\n(?:(?!    SQL\n).)*SET format = 2.*?^    SQL\n/m, "")
                                 .sub("VALUES (1, 2)", "VALUES (1, 1)").sub(/^    drop_table :lease_machines_events\n/, "")
    refute_includes format_1, "CREATE TABLE IF NOT EXISTS lease_machines_events"
    File.write(created, format_1)
    rails("db:migrate")
    assert_equal [[1]], sqlite("SELECT format FROM lease_machines_schema")

    output = rails("generate", "lease_machines:install")
    assert_match(%r{create\s+db/migrate/\d{14}_add_lease_machines_events\.rb}, output)
    refute_match(/create_lease_machines_tables|initializers/, output)
    rails("db:migrate")
    assert_equal [[2]], sqlite("SELECT format FROM lease_machines_schema")
    assert_equal [["lease_machines_events"]], sqlite("SELECT name FROM sqlite_master WHERE name = 'lease_machines_events'")
    rails("db:rollback")
    assert_equal [[1]], sqlite("SELECT format FROM lease_machines_schema")
    assert_empty sqlite("SELECT name FROM sqlite_master WHERE name = 'lease_machines_events'")
  end

  # On PostgreSQL (DATABASE_URL, a database of its own in the suite's cluster): the generator writes the PostgreSQL
  # schema, the default store opens a connection of its own to the application's database (on the server's clock),
  # and the fence runs on ActiveRecord's own connection, in the application's transaction.
  def test_on_postgresql_the_generator_writes_its_schema_and_a_job_holds_its_lease_in_the_application_database
    env = { "DATABASE_URL" => postgres_database }
    output = rails("generate", "lease_machines:install", env: env)
    assert_equal %w[create warning create], output.lines.map { _1.split.first }, output
    assert_match(/warning\s+db\/schema\.rb and db\/structure\.sql keep no rows: /, output)
    migration = File.read(Dir[File.join(@app, "db/migrate/*_create_lease_machines_tables.rb")].fetch(0))
    assert_includes migration,
                    "      INSERT INTO lease_machines_schema (id, format) VALUES (1, 2) ON CONFLICT (id) DO NOTHING\n"
    assert_includes migration, "      CREATE TABLE IF NOT EXISTS lease_machines_leases (\n        resource    text "
    assert_includes migration, "      CREATE TABLE IF NOT EXISTS lease_machines_fences (\n        resource text   "
    refute_includes migration, "STRICT"
    assert_match(/^    execute <<~'SQL'\n(?:(?!    SQL\n).)*CREATE OR REPLACE FUNCTION lease_machines_log_event\(.*?^      \$\$\n    SQL\n/m,
                 migration, "the event log's function is one statement, its body whole")

    rails("db:migrate", env: env)
    assert_equal %w[lease_machines_events lease_machines_fences lease_machines_history lease_machines_leases
                    lease_machines_progress lease_machines_schema lease_machines_slot_fences lease_machines_slots],
                 postgres_tables
    assert_equal [["2"]], postgres("SELECT format FROM lease_machines_schema").values

    facts = JSON.parse(rails("runner", "script/nightly_report.rb", env: env).lines.last)
    assert_jobs_ran(facts, "postgresql")
    assert_equal [true, "postgresql://postgres@127.0.0.1:#{@cluster.port}/#{@database}"],
                 [facts["store"][1], facts["store"][2]], "the server's clock, on a connection of the store's own"

    rails("db:rollback", env: env)
    assert_empty postgres_tables
    assert_empty postgres("SELECT proname FROM pg_proc WHERE proname = 'lease_machines_log_event'").values
  end

  # The default store on PostgreSQL reaches the application's database as ActiveRecord does: here over the Unix
  # socket, in the schema that schema_search_path names, where the store creates its tables at first use (without the
  # generator's migration) and the fence finds them.
  def test_on_postgresql_the_default_store_connects_as_active_record_does
    postgres("CREATE SCHEMA app")
    socket = "postgresql:///#{@database}?host=#{CGI.escape(@cluster.dir)}&port=#{@cluster.port}&user=postgres" \
             "&schema_search_path=app"
    rails("db:migrate", env: { "DATABASE_URL" => socket })
    facts = JSON.parse(rails("runner", "script/nightly_report.rb", env: { "DATABASE_URL" => socket }).lines.last)
    assert_equal [[1, "totals for Acme"]], facts["report"]
    assert_equal [["NightlyReportJob:Account/1", 1]], facts["fences"]
    assert_equal "postgresql://postgres@/#{@database}", facts["store"][2], "the host is in the URL's query"
    assert_equal [%w[app lease_machines_events], %w[app lease_machines_fences], %w[app lease_machines_history],
                  %w[app lease_machines_leases], %w[app lease_machines_schema],
                  %w[app lease_machines_slot_fences], %w[app lease_machines_slots]],
                 postgres("SELECT table_schema, table_name FROM information_schema.tables WHERE table_name LIKE " \
                          "'lease_machines_%' ORDER BY table_name").values
  end

  # On MySQL (DATABASE_URL, a database of its own on the suite's MariaDB server): the generator writes the MySQL
  # schema, db:migrate creates it, and a job holds its lease there, its write fenced on ActiveRecord's own mysql2
  # connection, on the server's clock.
  def test_on_mysql_the_generator_writes_its_schema_and_a_job_holds_its_lease_in_the_application_database
    server = require_mysql!
    url = server.fresh_database_url("lm_railtie")
    env = { "DATABASE_URL" => url }
    output = rails("generate", "lease_machines:install", env: env)
    assert_equal %w[create warning create], output.lines.map { _1.split.first }, output
    assert_match(/warning\s+db\/schema\.rb and db\/structure\.sql keep no rows: .*Store::MySQL::SCHEMA/, output)
    migration = File.read(Dir[File.join(@app, "db/migrate/*_create_lease_machines_tables.rb")].fetch(0))
    assert_includes migration, "resource    VARBINARY(1024) NOT NULL PRIMARY KEY"
    assert_includes migration, ") ENGINE = InnoDB\n"

    rails("db:migrate", env: env)
    client = server.connect(database: url[%r{/(\w+)\z}, 1])
    tables = -> { client.query("SHOW TABLES LIKE 'lease\\_machines\\_%'", as: :array).map(&:first).sort }
    assert_equal %w[lease_machines_events lease_machines_fences lease_machines_history lease_machines_leases
                    lease_machines_progress lease_machines_schema lease_machines_slot_fences lease_machines_slots],
                 tables.call

    facts = JSON.parse(rails("runner", "script/nightly_report.rb", env: env).lines.last)
    assert_jobs_ran(facts, "mysql")
    assert_equal [true, url], [facts["store"][1], facts["store"][2]], "the server's clock, on a connection of its own"

    rails("db:rollback", env: env)
    assert_empty tables.call
  ensure
    client&.close
  end

  def test_the_generator_refuses_a_database_the_store_does_not_run_on
    output, status = rails_status("generate", "lease_machines:install", env: { "DUMMY_ADAPTER" => "trilogy" })
    assert_match(/lease_machines:install: the lease store runs on SQLite, PostgreSQL and MySQL \(mysql2\); primary is /,
                 output)
    assert_match(/primary is trilogy in test/, output)
    refute status.success?, output
    assert_empty Dir[File.join(@app, "db/migrate/*_create_lease_machines_tables.rb")]
  end

  # The migration is written for one adapter: SQLite in one environment and PostgreSQL in another would fail there.
  def test_the_generator_refuses_a_database_of_two_adapters
    output, status = rails_status("generate", "lease_machines:install",
                                  env: { "DUMMY_PRODUCTION_ADAPTER" => "postgresql" })
    refute status.success?, output
    assert_equal "lease_machines:install: primary is not the same database in every environment (sqlite in test, " \
                 "postgresql in production), and the migration is written for one; use one adapter in every " \
                 "environment\n", output
    assert_empty Dir[File.join(@app, "db/migrate/*_create_lease_machines_tables.rb")]
  end

  def test_the_generator_refuses_a_database_config_database_yml_does_not_name
    output, status = rails_status("generate", "lease_machines:install", "--database", "animals")
    refute status.success?, output
    assert_match(/lease_machines:install: config\/database\.yml names no database "animals"/, output)
    assert_empty Dir[File.join(@app, "db/migrate/*_create_lease_machines_tables.rb")]
  end

  # Before, a misspelt option or an extra argument was ignored, and the migration written as if it were not there.
  def test_the_generator_refuses_an_unknown_option_or_an_argument_naming_it
    help = "bin/rails generate lease_machines:install --help lists the options"
    {
      %w[--databse primary] => "unknown option --databse (did you mean --database?); #{help}",
      %w[--databse=primary --frob] => "unknown options --databse=primary (did you mean --database?), --frob (did you mean --force?); #{help}",
      %w[extra] => "unexpected argument \"extra\" (it takes no arguments, only options)",
      %w[--database primary extra more] =>
        "unexpected arguments \"extra\", \"more\" (it takes no arguments, only options)"
    }.each do |args, message|
      output, status = rails_status("generate", "lease_machines:install", *args)
      assert_equal [1, "lease_machines:install: #{message}\n"], [status.exitstatus, output], args.join(" ")
    end
    assert_empty Dir[File.join(@app, "db/migrate/*_create_lease_machines_tables.rb")]
    assert_empty Dir[File.join(@app, "config/initializers/lease_machines.rb")]
  end

  # Before, Thor read a --database without a value as the database "database".
  def test_the_generator_needs_a_name_after_database
    [%w[--database], %w[--database=], %w[--db --force]].each do |args|
      output, status = rails_status("generate", "lease_machines:install", *args)
      assert_equal [1, "lease_machines:install: --database needs a database name (config/database.yml names: " \
                       "primary)\n"], [status.exitstatus, output], args.join(" ")
    end
    assert_empty Dir[File.join(@app, "db/migrate/*_create_lease_machines_tables.rb")]
  end

  # The note about setting the fence record to another database's class is for another database than the primary.
  def test_the_generator_for_the_primary_database_has_no_note_about_another
    output = rails("generate", "lease_machines:install", "--database", "primary")
    assert_equal %w[create warning create], output.lines.map { _1.split.first }, output
    assert_match(%r{create\s+db/migrate/\d{14}_create_lease_machines_tables\.rb}, output)
  end

  # Rails 8's layout keeps Solid Queue's tables in a queue database of their own: the generator says the lease store's
  # go where the fenced writes go, and writes its migration there only.
  def test_beside_a_queue_database_the_generator_says_the_lease_store_goes_where_the_fenced_writes_go
    File.write(File.join(@app, "config/database.yml"), <<~YAML)
      test:
        primary:
          adapter: sqlite3
          database: db/test.sqlite3
          default_transaction_mode: immediate
          timeout: 5000
        queue:
          adapter: sqlite3
          database: db/test_queue.sqlite3
          migrations_paths: db/queue_migrate
    YAML
    output = rails("generate", "lease_machines:install")
    assert_match(/note\s+Solid Queue's tables are in the queue database; the lease store's go in primary, where the /,
                 output)
    assert_equal 1, Dir[File.join(@app, "db/migrate/*_create_lease_machines_tables.rb")].size
    assert_empty Dir[File.join(@app, "db/queue_migrate/*")]
  end

  # Before, config.lease_machines = "x" was kept, and the boot failed later with a NoMethodError (to_h for "x").
  def test_assigning_config_lease_machines_anything_but_its_options_is_a_type_error_saying_how_to_set_them
    initializer = File.join(@app, "config/initializers/lease_machines_assigned.rb")
    File.write(initializer, "Rails.application.config.lease_machines = \"x\"\n")
    output, status = rails_status("runner", "1")
    assert_equal 1, status.exitstatus, output
    assert_match(/lease_machines_assigned\.rb:1:in [`']<top \(required\)>'/, output) # Ruby 3.3's quote, or 3.4's
    assert_includes output.lines.first, "config.lease_machines cannot be set to \"x\": it is lease_machines' " \
                                        "options (an ActiveSupport::OrderedOptions, applied to LeaseMachines::" \
                                        "Jobs.configuration); set each option on it, as in " \
                                        "config.lease_machines.default_ttl = 30.seconds (TypeError)\n"
    File.write(initializer, "Rails.application.config.lease_machines = { default_ttl: 5.0 }\n")
    output, status = rails_status("runner", "1")
    assert_equal 1, status.exitstatus, output
    shown = { default_ttl: 5.0 }.inspect # this Ruby's Hash#inspect (3.4's differs from 3.3's)
    assert_includes output.lines.first, "config.lease_machines cannot be set to #{shown}: it is"
    # Its own kind of object replaces it.
    File.write(initializer, "Rails.application.config.lease_machines = " \
                            "ActiveSupport::OrderedOptions[default_ttl: 5.0]\n")
    assert_equal "5.0\n", rails("runner", "puts LeaseMachines::Jobs.configuration.default_ttl")
  end

  def test_a_misspelt_option_stops_the_boot_naming_it
    output, status = rails_status("runner", "1", env: { "DUMMY_MISSPELT_OPTION" => "1" })
    refute status.success?, "the boot itself fails, before any job class is loaded"
    assert_match(/config\.lease_machines: unknown option renew_evry \(the options: clock, default_ttl, /, output)
  end

  def test_a_store_set_with_the_gems_own_api_in_an_initializer_is_kept
    rails("db:migrate")
    facts = JSON.parse(rails("runner", "script/nightly_report.rb", env: { "DUMMY_OWN_STORE" => "1" }).lines.last)
    assert_equal false, facts["default_store"]
    assert_equal [[1, "totals for Acme"]], facts["report"], "the job ran on the store the initializer set"
  end

  private

  # What script/nightly_report.rb found after its two jobs, on either database: NightlyReportJob's lease taken in the
  # application's database (+adapter+), its write fenced with token 1, the lease released; StaleReportJob's lease
  # taken over before it wrote, its fenced write refused and its whole transaction rolled back.
  def assert_jobs_ran(facts, adapter)
    assert_equal true, facts["included"], "the Railtie includes LeaseMachines::HoldsLease in ActiveJob::Base"
    assert_equal 30.0, facts["default_ttl"]
    assert_equal 30.0, facts["ttl"], "holds_lease without ttl: takes config.lease_machines.default_ttl"
    assert_equal true, facts["executor"], "the renewer runs in the application's executor"
    assert_equal "ApplicationRecord", facts["fence_record"], "set in config.to_prepare"
    assert_equal true, facts["default_store"], "the application's own database"
    assert_equal adapter, facts["store"][0]
    assert_equal [adapter, true], facts["fence"], "the fence ran on ActiveRecord's own connection"
    assert_equal [[1, "totals for Acme"]], facts["report"], "nothing of the stale job's transaction landed"
    assert_equal [["NightlyReportJob:Account/1", nil, nil], ["StaleReportJob:Account/1", 2, 4242]], facts["leases"],
                 "the lease was taken, then released, in the app's database; the other was taken over"
    assert_equal [["NightlyReportJob:Account/1", 1]], facts["fences"], "the write went through the fence, with token 1"
    assert_equal ["stale_token", 1, 2], facts["stale"], "the stale holder was refused before its successor wrote"
    assert_equal %w[released rejected], facts["released"]
  end

  # A database of its own for the test in the suite's PostgreSQL cluster (skipped without one): its URL.
  def postgres_database
    @cluster = require_postgres!
    require "pg"
    require "cgi"
    @database = "lm_railtie_#{SecureRandom.hex(4)}"
    PG.connect(@cluster.url) { _1.exec("CREATE DATABASE #{@database}") }
    "postgresql://postgres@127.0.0.1:#{@cluster.port}/#{@database}"
  end

  def postgres(sql)
    postgres_database unless @database
    PG.connect(@cluster.url.sub(%r{/postgres\z}, "/#{@database}")) { _1.exec(sql) }
  end

  def postgres_tables
    postgres("SELECT tablename FROM pg_tables WHERE tablename LIKE 'lease_machines_%' ORDER BY tablename")
      .column_values(0)
  end

  def rails(*args, env: {})
    output, status = rails_status(*args, env: env)
    assert status.success?, "bin/rails #{args.join(" ")}:\n#{output}"
    output
  end

  def rails_status(*args, env: {})
    dummy_rails(@app, *args, env: env)
  end

  def sqlite(sql)
    database = SQLite3::Database.new(File.join(@app, "db/test.sqlite3"))
    database.execute(sql)
  ensure
    database&.close
  end
end
