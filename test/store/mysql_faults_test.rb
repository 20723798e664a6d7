# frozen_string_literal: true

require "test_helper"
require "lease_machines/store" if LeaseMachines::TestSupport::SQLITE3
require "support/fault_soak"

# The Jepsen-style fault soak of the MySQL store (test/support/fault_soak.rb), on a MariaDB server of its own
# (examples/support/mysql_server.rb, durable commits: innodb_flush_log_at_trx_commit=1, sync_binlog=1). Worker
# processes loop over three resources on stores of their own (acquire or reacquire, fenced writes into the
# application's table in the same database, renew, release, transfer), recording every operation in a history,
# while the nemesis kills workers with SIGKILL (their transactions die with their connections) and starts new ones,
# crashes the server (SIGKILL, MySQLServer#restart(mode: :immediate)) and starts it again on the same data, and cuts
# one worker's host (TestHosts: a network namespace, reaching the server through a forwarder on the hosts' server
# address) off the network while it holds a lease, healing it after the lease's TTL: the worker goes on writing with
# its old token. The checker then proves what it proves of the PostgreSQL store (test/store/postgresql_faults_test.rb):
# no token granted twice, every grant returned in the database (every decision a worker saw committed survived the
# crashes), leases that never overlap on the server's clock, the writes' tokens never decreasing nor interleaving, no
# write landed after a newer token's grant, every late write of the cut-off worker refused, no worker stuck once the
# faults were over. LEASE_MACHINES_SOAK_SECONDS sets how long the faults go on (default 20; `bin/rake soak:mysql`
# runs 60); the histories are kept in tmp/mysql-faults-PID after a failure, or with LEASE_MACHINES_SOAK_KEEP=1.
class StoreMySQLFaultsTest < Minitest::Test
  include FaultSoak

  def test_kills_server_crashes_and_a_cut_off_host_never_break_the_leases_or_the_fence_on_mysql
    mysql_available!
    plain_suite_only!("forks and spawns workers")
    @dir = File.expand_path("../../tmp/mysql-faults-#{Process.pid}", __dir__)
    start_soak
    prepare_server
    make_host
    run_soak
    assert_sound(check)
    assert_no_deadlocks
    @passed = true
  ensure
    stop_everything
  end

  private

  # No request was a deadlock's victim. A decision locks its resource's row before anything else, and a fenced write
  # its lease's row: requests on one resource queue on that row, and requests on different resources share no row
  # but the event log's, where each inserts its own event and prunes by an index (constant work, the store says).
  # A deadlock is a request that failed (StoreError) for no fault of the soak's; the server's log, kept with the
  # histories, describes each one (innodb_print_all_deadlocks).
  def assert_no_deadlocks
    deadlocked = FaultHistory.load(@history_dir).ops.select { _1.outcome&.fetch("message", nil)&.include?("Deadlock") }
    assert_empty deadlocked.first(10).map(&:to_s),
                 "#{deadlocked.size} requests were deadlocks' victims (histories and server.log in #{@dir})"
  end

  # A MariaDB server of the soak's own (the suite's is never crashed), in the checkout's tmp/mysql-PID-faults (a
  # later test process removes it if this one was killed), with the application's table of writes and the store's
  # schema, made before the workers race to make it; its log describes every deadlock.
  def prepare_server
    @server = MySQLServer.new.start(dir: File.expand_path("../../tmp/mysql-#{Process.pid}-faults", __dir__),
                                    settings: ["innodb-print-all-deadlocks=ON"])
    @url = @server.url
    admin { _1.query(FaultHistory::LeaseWorker::MYSQL_TABLE) }
    LeaseMachines::Store.new(@url).close
  end

  # The host the nemesis cuts off (FaultSoak#cut_off_host), whose worker reaches the server through a forwarder on
  # the hosts' server address (the server listens on 127.0.0.1); a connection attempt gives up after 2 s (it keeps
  # trying).
  def make_host
    return unless cut_off_host

    @host_url = "mysql2://root@#{@hosts.server_address}:#{link_to(@server.port).port}/#{MySQLServer::DATABASE}" \
                "?connect_timeout=2"
  end

  def worker_store(host) = { url: host ? @host_url : @url }

  def crash_server(_number) = @nemesis.operation("restart") { @server.restart(mode: :immediate) && nil }

  def admin
    client = @server.connect
    yield client
  ensure
    client&.close
  end

  def written_count
    admin { _1.query("SELECT COUNT(*) FROM writes", as: :array).first.first }
  rescue Mysql2::Error
    nil # the server is starting again
  end

  # The checker over the merged histories and the final tables (after every worker was killed): the resources' names
  # are VARBINARY, read back as UTF-8.
  def check
    stop_workers
    leases, fences, writes = admin do |db|
      [db.query("SELECT resource, last_issued FROM lease_machines_leases")
         .to_h { [named(_1), _1.slice("last_issued")] },
       db.query("SELECT resource, highest FROM lease_machines_fences").to_h { [named(_1), _1["highest"]] },
       db.query("SELECT id, resource, token, worker, seq, at FROM writes").to_a]
    end
    FaultHistory::Checker.new(FaultHistory.load(@history_dir), leases: leases, fences: fences, writes: writes).check
  end

  def named(row) = row["resource"].dup.force_encoding(Encoding::UTF_8)

  # Everything stopped; the server destroyed, its log kept with the histories; those removed after a pass (kept
  # with LEASE_MACHINES_SOAK_KEEP=1).
  def stop_everything
    stop_soak
    FileUtils.cp(File.join(@server.dir, "server.log"), @dir) if @server&.dir && File.directory?(@dir)
    @server&.destroy
    FileUtils.rm_rf(@dir) if @passed && ENV["LEASE_MACHINES_SOAK_KEEP"] != "1"
  end
end
