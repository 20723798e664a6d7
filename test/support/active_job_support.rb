# frozen_string_literal: true

require "test_helper"
require "support/redis_support"

# ActiveJob and ActiveRecord are development dependencies (the Gemfile's :rails group; bin/setup provisions them);
# a Ruby without them (the aarch64 Rubies under qemu, which have no sqlite3 gem either) skips these tests.
LEASE_MACHINES_RAILS = begin
  require "active_record"
  require "lease_machines/jobs"
  true
rescue LoadError
  false
end

if LEASE_MACHINES_RAILS
  ActiveJob::Base.logger = Logger.new(nil)
  ActiveRecord::Migration.verbose = false

  # The application's models, named as an application names them (a record's lease key is "Account/42").
  class Account < ActiveRecord::Base; end
  class Report < ActiveRecord::Base; end
end

module LeaseMachines
  # What the ActiveJob tests share: a database per test (the lease store's tables and the app's side by side, reached
  # through ActiveRecord's own adapter: a SQLite file, or with OnPostgreSQL a database in the suite's PostgreSQL
  # cluster), one injected clock for the store and the holders, renewals by hand, and every lease_machines event
  # recorded.
  module ActiveJobSupport
    include TestSupport

    # The settings of LeaseMachines::Jobs.configuration a test may change, put back as they were after it (the store
    # apart: teardown closes it).
    SETTINGS = %i[fence_record clock executor error_handler renewal jitter default_ttl].freeze

    # Defines +base+'s twin on PostgreSQL: a subclass named like it ("...PostgreSQLTest") that runs its tests but
    # +except+ (the ones only SQLite has a reason for) on PostgreSQL, and the tests the block defines.
    def self.on_postgresql(base, except: [], &) = twin(base, OnPostgreSQL, "PostgreSQLTest", except, &)

    # +base+'s subclass with +mod+ included, named with +suffix+ for its "Test", without the tests +except+ and with
    # those the block defines.
    def self.twin(base, mod, suffix, except, &body)
      twin = Class.new(base) { include mod }
      except.each { twin.send(:undef_method, _1) }
      twin.class_eval(&body) if body
      Object.const_set(base.name.sub(/Test\z/, suffix), twin)
    end

    # The tests on PostgreSQL: a database of the test class's own in the suite's cluster (created once per class),
    # its public schema made again for every test; skipped where there is no PostgreSQL.
    module OnPostgreSQL
      DATABASES = {}
      EMPTY = "SET client_min_messages = warning; DROP SCHEMA public CASCADE; CREATE SCHEMA public"
      LOCK = Thread::Mutex.new

      # The URL of the class's database, emptied: the lease store's tables are created by the store at its first use,
      # as the install generator's migration would.
      def connect_database
        cluster = require_postgres!
        require "pg"
        url = LOCK.synchronize do
          DATABASES[self.class] ||= begin
            name = "lm_#{self.class.name.gsub(/(?<=[a-z])(?=[A-Z])/, "_").downcase}"
            PG.connect(cluster.url) { _1.exec("CREATE DATABASE #{name}") }
            cluster.url.sub(%r{/postgres\z}, "/#{name}")
          end
        end
        PG.connect(url) { _1.exec(EMPTY) }
        ActiveRecord::Base.establish_connection("#{url}?min_messages=error") # not the server's WARNINGs on stderr
        url
      end

      def database_kind = :postgresql
    end

    # Defines +base+'s twin on MySQL (MariaDB here): "...MySQLTest", as on_postgresql.
    def self.on_mysql(base, except: [], &) = twin(base, OnMySQL, "MySQLTest", except, &)

    # The tests on MySQL: a database of the test class's own on the suite's MariaDB server, made again for every
    # test, reached through ActiveRecord's mysql2 adapter; skipped where there is no MariaDB or mysql2 gem.
    module OnMySQL
      def connect_database
        server = require_mysql!
        name = "lm_#{self.class.name.gsub(/(?<=[a-z])(?=[A-Z])/, "_").downcase}"
        client = server.connect(database: nil)
        begin
          client.query("DROP DATABASE IF EXISTS #{name}")
          client.query("CREATE DATABASE #{name}")
        ensure
          client.close
        end
        ActiveRecord::Base.establish_connection(server.url(name))
        server.url(name)
      end

      def database_kind = :mysql
    end

    # Defines +base+'s twin with its leases in Redis (a "...RedisTest"): the lease store is a Redis store whose fence is
    # the test's SQLite database, ActiveRecord's; skipped where there is no redis-server or redis-client gem.
    def self.on_redis(base, except: [], &) = twin(base, OnRedis, "RedisTest", except, &)

    module OnRedis
      include RedisStoreSupport

      def connect_database
        @redis_url = fresh_redis_url
        super
      end

      def lease_store(klass = Store) = klass.new(@redis_url, fence: path, clock: clock.to_proc)
    end

    # A clock the test moves: Float seconds.
    class Clock
      attr_reader :now

      def initialize(now = 1_000.0) = @now = now
      def call = @now
      def advance(seconds) = @now += seconds
      # As a lambda: the store and the configuration take a Proc (their signatures say so).
      def to_proc = -> { @now }
    end

    # A store whose renewals fail (StoreError) while +failing+ is set: a database the renewer cannot reach.
    class FlakyStore < (LEASE_MACHINES_RAILS ? Store : Object)
      attr_accessor :failing

      def renew(**)
        raise StoreError, "lease store #{path}: disk I/O error (injected)" if failing

        super
      end
    end

    # The database: the SQLite file's path, or the PostgreSQL database's URL (Store.new takes either).
    attr_reader :clock, :path, :events, :errors

    def setup
      super
      skip "ActiveJob, ActiveRecord or sqlite3 is not installed for this Ruby" unless LEASE_MACHINES_RAILS
      @clock = Clock.new
      LeaseMachines::Jobs.renewer.stop # a background renewer left by another file (the README's examples)
      @path = connect_database
      [Account, Report].each(&:reset_column_information) # the tables of another test, perhaps on another database
      ActiveRecord::Schema.define do
        create_table(:accounts) { |t| t.string :name }
        create_table(:reports) { |t| t.string :body; t.integer :token }
      end
      @stores = []
      clock = @clock
      stores = @stores
      @errors = []
      @configured = SETTINGS.to_h { [_1, LeaseMachines::Jobs.configuration.public_send(_1)] }
      LeaseMachines::Jobs.configure do |config|
        config.clock = clock.to_proc
        config.renewal = :manual
        config.fence_record = nil
        config.error_handler = ->(error, context) { @errors << [error, context] }
      end
      LeaseMachines::Jobs.store = -> { lease_store(FlakyStore).tap { stores << _1 } }
      @events = []
      @subscription = ActiveSupport::Notifications.subscribe(/\.lease_machines\z/) do |event|
        @events << event
      end
      ::ActiveJob::Base.queue_adapter = :test
    end

    # ActiveRecord's connection to a new SQLite file; returns its path. Fenced writes take the write lock at BEGIN: a
    # deferred transaction that read first can fail with "database is locked" (SQLITE_BUSY_SNAPSHOT, which no busy
    # timeout waits out) when another connection wrote in between. A busy timeout, as Rails' own database.yml sets
    # one: the store leaves the application's connection as it is.
    def connect_database
      path = File.join(scratch_dir("lm-active-job"), "app.sqlite3")
      ActiveRecord::Base.establish_connection(adapter: "sqlite3", database: path, default_transaction_mode: :immediate,
                                              timeout: 5_000)
      path
    end

    # Which database the test's ActiveRecord connection and lease store are on: :sqlite, :postgresql or :mysql.
    def database_kind = :sqlite

    # Inserts a report through +db+, the driver's connection a store's fenced yields (SQLite3::Database,
    # PG::Connection or Mysql2::Client), as another process's fenced write would.
    def insert_report(db, body, token)
      case database_kind
      when :postgresql then db.exec_params("INSERT INTO reports (body, token) VALUES ($1, $2)", [body, token])
      when :mysql then db.prepare("INSERT INTO reports (body, token) VALUES (?, ?)").execute(body, token)
      else db.execute("INSERT INTO reports (body, token) VALUES (?, ?)", [body, token])
      end
    end

    def teardown
      return super unless LEASE_MACHINES_RAILS

      ActiveSupport::Notifications.unsubscribe(@subscription) if @subscription
      LeaseMachines::Jobs.renewer.stop
      LeaseMachines::Jobs.store = nil # closes the stores the factory opened
      # What this file's setup and tests set (a test's fence_record that raises when used, say) does not outlive
      # them: the README's examples, run in the same process, see the configuration as they would alone.
      @configured&.each { |setting, value| LeaseMachines::Jobs.configuration.public_send(:"#{setting}=", value) }
      @other_store&.close
      ActiveRecord::Base.connection_handler.clear_all_connections!
      ActiveRecord::Base.remove_connection
      super
    end

    # The events named +name+ (without ".lease_machines"), their payloads.
    def events_named(name) = @events.select { _1.name == "#{name}.lease_machines" }.map(&:payload)

    # A store of the test's own (another process's connection) on the same database and clock.
    def other_store = @other_store ||= lease_store

    # A lease store (of class +klass+) on the test's database and clock; in Redis, for OnRedis, with its fence there.
    def lease_store(klass = Store) = klass.new(path, clock: clock.to_proc)

    # Takes +resource+'s lease for another owner, as a job of another process would.
    def held_elsewhere(resource, ttl: 30.0) = other_store.acquire(resource: resource, owner: 999, ttl: ttl)

    def renewer = LeaseMachines::Jobs.renewer

    # Loses +job+'s lease while it runs: the job stalls past its TTL, a successor (owner 999) is granted the lease for
    # 30 s, and the job's renewal is refused. Returns the successor's grant.
    def lose_lease(job)
      clock.advance(job.lease.cadence.ttl + 1.0)
      held_elsewhere(job.lease.resource).tap { renewer.renew_due }
    end

    # The successor's lease (lose_lease's) runs out: the next grant is the job's again.
    def successor_gone = clock.advance(31.0)

    # A fresh job class named +name+ under this module (ActiveJob needs named classes to enqueue).
    def job_class(name, &body)
      klass = Class.new(::ActiveJob::Base) do
        include LeaseMachines::HoldsLease
      end
      ActiveJobSupport.send(:remove_const, name) if ActiveJobSupport.const_defined?(name, false)
      ActiveJobSupport.const_set(name, klass)
      klass.class_eval(&body) if body
      klass
    end
  end
end
