# frozen_string_literal: true

require "fileutils"
require "minitest/autorun"
require "securerandom"
require "tmpdir"
require "lease_machines"
require_relative "../examples/support/capture"
require_relative "../examples/support/postgres_cluster"
require_relative "../examples/support/mysql_server"

module LeaseMachines
  # Shared helpers and the suite's two extra modes:
  #
  # - LEASE_MACHINES_GC_STRESS=1 runs every test body with GC.stress on, so an object the extension forgot to keep
  #   alive is collected at the worst moment.
  # - LEASE_MACHINES_RBS_TEST=1 is set when the suite runs under RBS's runtime type checks (rake test:rbs); tests
  #   that deliberately pass ill-typed arguments skip themselves there, since RBS refuses them before the call.
  module TestSupport
    GC_STRESS = ENV["LEASE_MACHINES_GC_STRESS"] == "1"
    RBS_TEST = ENV["LEASE_MACHINES_RBS_TEST"] == "1"
    # The suite run against an installed gem (rake platform:prove and gem:smoke set LEASE_MACHINES_TEST_INSTALLED=1): the
    # extension must come from GEM_HOME, and tests of this checkout's scripts skip themselves.
    INSTALLED = ENV["LEASE_MACHINES_TEST_INSTALLED"] == "1"
    # Under qemu-aarch64-static without binfmt a child Ruby cannot be started: tests that run one skip themselves.
    NO_SPAWN = ENV["LEASE_MACHINES_TEST_NO_SPAWN"] == "1"
    # Whether the sqlite3 gem loads (LeaseMachines::Store needs it; the gem does not depend on it).
    SQLITE3 = begin
      require "sqlite3"
      true
    rescue LoadError
      false
    end

    # The message of every skip for want of PostgreSQL starts with this (the suite counts them at the end).
    POSTGRES_SKIP = "PostgreSQL unavailable:"
    # The same for MySQL (MariaDB).
    MYSQL_SKIP = "MySQL unavailable:"
    # The checkout's scratch directory, where the suite's PostgreSQL clusters live.
    TMP = File.expand_path("../tmp", __dir__)

    class << self
      # The suite's PostgreSQL cluster (examples/support/postgres_cluster.rb): one per test process, started on first
      # use in the checkout's tmp/postgres-PID, destroyed when the process that started it exits. Tests call
      # require_postgres! first.
      def postgres
        POSTGRES_LOCK.synchronize do
          raise @postgres_failure if @postgres_failure

          @postgres ||= begin
            discard_stale_postgres
            cluster = PostgresCluster.new.start(dir: File.join(TMP, "postgres-#{Process.pid}"))
            owner = Process.pid
            at_exit { cluster.destroy if Process.pid == owner }
            cluster
          rescue PostgresCluster::Error => e
            @postgres_failure = e # every test that asks says the same, rather than starting again in a used directory
            raise
          end
        end
      end

      # The clusters of test processes that are gone (killed before their at_exit ran): stopped, removed.
      def discard_stale_postgres = discard_stale("postgres") { PostgresCluster.new.attach(dir: _1).destroy }

      def process_alive?(pid)
        Process.kill(0, pid)
        true
      rescue Errno::ESRCH
        false
      rescue Errno::EPERM
        true
      end

      # The suite's MariaDB server (examples/support/mysql_server.rb): one per test process, started on first use in
      # the checkout's tmp/mysql-PID, destroyed when the process that started it exits. Tests call require_mysql!.
      def mysql
        POSTGRES_LOCK.synchronize do
          raise @mysql_failure if @mysql_failure

          @mysql ||= begin
            discard_stale("mysql") { MySQLServer.new.attach(dir: _1).destroy }
            server = MySQLServer.new.start(dir: File.join(TMP, "mysql-#{Process.pid}"))
            owner = Process.pid
            at_exit { server.destroy if Process.pid == owner }
            server
          rescue MySQLServer::Error => e
            @mysql_failure = e
            raise
          end
        end
      end

      # The directories named PREFIX-PID of test processes that are gone, each yielded (to stop and remove).
      def discard_stale(prefix)
        Dir[File.join(TMP, "#{prefix}-*")].each do |dir|
          pid = File.basename(dir)[/\A#{prefix}-(\d+)(?:-|\z)/, 1]&.to_i
          next if pid.nil? || pid == Process.pid || process_alive?(pid)

          yield dir
        end
      end

      # How many tests asked for MySQL (require_mysql!), and how many of them skipped for want of it.
      def mysql_counts = @mysql_counts ||= { asked: 0, skipped: 0 }

      # The line the suite ends with when a test asked for MySQL.
      def mysql_summary = summary("MySQL", mysql_counts, MYSQL_SKIP, "throwaway MariaDB servers",
                                  MySQLServer.unavailable_reason)

      # The line the suite ends with for the +database+ tests +counts+ tallied (nil when none asked): how many ran
      # on +servers+, or how many skipped (each skip's message starts with +skip+) and why (+reason+).
      def summary(database, counts, skip, servers, reason)
        asked, skipped = counts.values_at(:asked, :skipped)
        return if asked.zero?
        return "#{database}: #{asked} tests ran against #{servers}, none skipped" if skipped.zero?

        "#{skip} #{skipped} of #{asked} #{database} tests skipped (#{reason})"
      end

      # How many tests asked for PostgreSQL (require_postgres!), and how many of them skipped for want of it.
      def postgres_counts = @postgres_counts ||= { asked: 0, skipped: 0 }

      # The line the suite ends with when a test asked for PostgreSQL (Minitest.after_run, below).
      def postgres_summary = summary("PostgreSQL", postgres_counts, POSTGRES_SKIP, "throwaway clusters",
                                     PostgresCluster.unavailable_reason)
    end
    POSTGRES_LOCK = Mutex.new

    # A store clock that stays at the epoch: with the store's :clamp policy, a request without now: (a fenced write)
    # is evaluated at the latest instant the store recorded, so tests that pass now: to their decisions can write
    # through the fence under the lease they were granted.
    STILL_CLOCK = -> { 0.0 }

    # Runs +command+ with each case's arguments and asserts a usage error: exit status 2, nothing on stdout, and on
    # stderr the one line "PROGRAM: MESSAGE; see bin/PROGRAM --help" (bin/worker-seven, bin/nightly-report).
    def assert_usage_errors(command, program, cases)
      require "open3"
      cases.each do |args, message|
        output, errors, status = Open3.capture3(command, *args)
        assert_equal [2, "", "#{program}: #{message}; see bin/#{program} --help\n"],
                     [status.exitstatus, output, errors], args.join(" ")
      end
    end

    def before_setup
      super
      GC.stress = true if GC_STRESS
    end

    def after_teardown
      GC.stress = false if GC_STRESS
      if failures.any? { _1.is_a?(Minitest::Skip) && _1.message.start_with?(POSTGRES_SKIP) }
        POSTGRES_LOCK.synchronize { TestSupport.postgres_counts[:skipped] += 1 }
      end
      if failures.any? { _1.is_a?(Minitest::Skip) && _1.message.start_with?(MYSQL_SKIP) }
        POSTGRES_LOCK.synchronize { TestSupport.mysql_counts[:skipped] += 1 }
      end
      (@scratch_dirs || []).each do |dir|
        FileUtils.chmod_R("u+w", dir)
        FileUtils.remove_entry(dir)
      end
      super
    end

    # Runs +command+ (a story, an application that forks Solid Queue's processes) in a process group of its own and
    # asserts that it exited with status +exit+ within +seconds+; returns its output and errors. Its output goes to a
    # file, not a pipe a forked process could keep open, and the group is killed once it exited, or after +seconds+
    # (a hang fails the test rather than block the suite): Capture.capture2e_within.
    def run_within(seconds, *command, exit: 0)
      output, status = Capture.capture2e_within(seconds, *command)
      ran = command.map { File.basename(_1) }.join(" ")
      assert status, "#{ran}: killed after #{seconds}s:\n#{output}"
      assert_equal exit, status.exitstatus, "#{ran}:\n#{output}"
      output
    end

    # Waits up to +timeout+ seconds for the block to be true (asking every 10 ms); returns whether it became so. For
    # a test that must see an event happen before it acts, whatever the machine's load, rather than sleep and hope.
    def eventually(timeout = 5.0)
      deadline = Process.clock_gettime(Process::CLOCK_MONOTONIC) + timeout
      until yield
        return false if Process.clock_gettime(Process::CLOCK_MONOTONIC) > deadline

        sleep 0.01
      end
      true
    end

    # Skip a test of LeaseMachines::Store when this Ruby has no sqlite3 gem.
    def requires_sqlite3!
      skip "the sqlite3 gem is not installed for this Ruby" unless SQLITE3
    end

    # Skip a test that needs PostgreSQL (a server and the pg gem) where there is none, saying why; else the suite's
    # cluster (TestSupport.postgres), started if need be.
    def require_postgres!
      POSTGRES_LOCK.synchronize { TestSupport.postgres_counts[:asked] += 1 }
      reason = PostgresCluster.unavailable_reason
      skip "#{POSTGRES_SKIP} #{reason}" if reason
      TestSupport.postgres
    end

    # Skip a test that needs MySQL (a MariaDB server and the mysql2 gem) where there is none, saying why; else the
    # suite's server (TestSupport.mysql), started if need be.
    def require_mysql!
      mysql_available!
      TestSupport.mysql
    end

    # Skip a test that needs MySQL where there is none, saying why (counted as require_mysql! counts), without the
    # suite's server: for a test that starts servers of its own.
    def mysql_available!
      POSTGRES_LOCK.synchronize { TestSupport.mysql_counts[:asked] += 1 }
      reason = MySQLServer.unavailable_reason
      skip "#{MYSQL_SKIP} #{reason}" if reason
    end

    # The URL of a new, empty database on the suite's MariaDB server (skipped where there is none).
    def fresh_mysql_database_url = require_mysql!.fresh_database_url

    # The URL of a new, empty schema in the suite's PostgreSQL cluster (skipped where there is none): the store
    # creates its tables there at first use.
    def fresh_postgres_schema_url
      schema = "t_#{SecureRandom.hex(6)}"
      "#{create_in_postgres("SCHEMA", schema).url}?options=-csearch_path%3D#{schema}"
    end

    # The URL of a new, empty database in the suite's PostgreSQL cluster (skipped where there is none), its name
    # starting with +prefix+.
    def fresh_postgres_database_url(prefix)
      database = "#{prefix}_#{SecureRandom.hex(4)}"
      create_in_postgres("DATABASE", database).url.sub(%r{/postgres\z}, "/#{database}")
    end

    # Creates +kind+ (SCHEMA, DATABASE) +name+ in the suite's PostgreSQL cluster (skipped where there is none), and
    # returns the cluster.
    def create_in_postgres(kind, name)
      cluster = require_postgres!
      require "pg"
      PG.connect(cluster.url) { _1.exec("CREATE #{kind} #{name}") }
      cluster
    end

    # The extension's private methods (the native calls) made while the block runs, in order.
    def native_calls
      calls = []
      trace = TracePoint.new(:c_call) do |tp|
        calls << tp.method_id if tp.method_id.start_with?("_") && tp.defined_class.inspect.include?("LeaseMachines")
      end
      trace.enable { yield }
      calls
    end

    # Skip a test that starts another Ruby process when that is impossible here.
    def spawns_ruby!
      skip "cannot start a child Ruby here (qemu-user without binfmt)" if NO_SPAWN
    end

    # Skip a test that works through child processes (+what+ says which) under GC.stress or RBS's runtime checks:
    # neither reaches a child, so the plain suite covers it.
    def plain_suite_only!(what)
      skip "#{what}; the plain suite covers it" if GC_STRESS || RBS_TEST
    end

    # Skip a test of this checkout's scripts when the suite runs against an installed gem.
    def checkout_only!(what)
      skip "#{what}, not the installed gem" if INSTALLED
    end

    # Skip a test that runs Solid Queue's processes in this checkout's Rails application (+what+ says which) where
    # they cannot run: under GC.stress or RBS's runtime checks (neither reaches a child), against an installed gem,
    # or without sqlite3 or the solid_queue gem.
    def requires_solid_queue!(what)
      plain_suite_only!("forks Solid Queue's processes")
      checkout_only!("runs this checkout's #{what}")
      requires_sqlite3!
      Gem::Specification.find_by_name("solid_queue")
    rescue Gem::MissingSpecError
      skip "Solid Queue is not installed for this Ruby"
    end

    # A fresh directory named after +prefix+, removed after the test (made writable first, since a test may have
    # taken the write permission away).
    def scratch_dir(prefix)
      dir = Dir.mktmpdir(prefix)
      (@scratch_dirs ||= []) << dir
      dir
    end

    # Skip a test that starts Ractors where they cannot run (RBS's runtime checks are not Ractor-safe) or would take
    # minutes (GC.stress), and quiet Ruby's warning that Ractors are experimental.
    def ractors!
      skip "too slow under GC.stress" if GC_STRESS
      skip "RBS's runtime checks are not Ractor-safe" if RBS_TEST
      Warning[:experimental] = false
    end

    # Skip a test that passes arguments outside the signatures on purpose.
    def ill_typed!
      skip "passes ill-typed arguments on purpose; RBS's runtime checks refuse them first" if RBS_TEST
    end

    # Fewer iterations when every allocation runs the GC.
    def iterations(normal)
      GC_STRESS ? [normal / 50, 10].max : normal
    end

    def granted(decision)
      assert_equal :granted, decision.status, "expected a grant, got #{decision.inspect}"
      decision.lease
    end
  end
end

Minitest::Test.include(LeaseMachines::TestSupport)
Minitest.after_run do
  [LeaseMachines::TestSupport.postgres_summary, LeaseMachines::TestSupport.mysql_summary].compact.each { puts _1 }
end

if LeaseMachines::TestSupport::INSTALLED
  native = $LOADED_FEATURES.grep(/lease_machines_native/)
  unless !native.empty? && native.all? { |path| path.start_with?(ENV.fetch("GEM_HOME")) }
    abort "test_helper: LEASE_MACHINES_TEST_INSTALLED=1, but the extension was loaded from #{native.inspect}, " \
          "not from GEM_HOME (#{ENV.fetch("GEM_HOME", "unset")})"
  end
  puts "Testing the installed gem: #{native.first}"
end
