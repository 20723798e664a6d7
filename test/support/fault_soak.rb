# frozen_string_literal: true

require "json"
require "securerandom"
require_relative "fault_history"
require_relative "../../examples/support/hosts"

# The machinery of the stores' Jepsen-style fault soaks (test/store/*_faults_test.rb), over
# test/support/fault_history.rb: worker processes (FaultHistory::LeaseWorker) loop over RESOURCES on stores of
# their own, recording every operation, while the nemesis kills workers with SIGKILL and starts new ones, crashes
# the server at moments of its own (the including test's #crash_server) and cuts one worker's host (TestHosts: a
# network namespace) off the network while it holds a lease, healing it after the lease's TTL.
#
# The including test defines #worker_store (the store arguments of a worker on the machine, or on the host: a Hash
# with :url and perhaps :fence) and #crash_server (given its number, from 0); it sets @dir and @cluster (the suite's
# PostgreSQL, where the application's table of writes is: #prepare_schema, #written_count, #fences_and_writes),
# calls #start_soak, opens #cut_off_host (its links: #link_to), then #run_soak, and ends with #stop_soak. A soak
# whose application's table is elsewhere (the MySQL store's, in its own database: test/store/mysql_faults_test.rb)
# defines #written_count and its own check instead.
module FaultSoak
  RESOURCES = %w[ledger invoices reports].freeze
  WORKERS = 4
  SECONDS = Float(ENV.fetch("LEASE_MACHINES_SOAK_SECONDS", "20"))
  RUBY = File.expand_path("../../bin/ruby", __dir__)
  # How long (seconds) the host's worker has to hold a lease once a cut is requested: its process may have just
  # been started again, and it competes with the others for the resources through the server's crashes (a proof
  # beside three others on two cores once waited more than 8 s).
  CUT_WAIT = 30.0

  private

  def start_soak
    FileUtils.rm_rf(@dir)
    @history_dir = File.join(@dir, "history")
    @control = File.join(@dir, "control")
    FileUtils.mkdir_p([@history_dir, @control])
    @nemesis = FaultHistory::Recorder.new(File.join(@history_dir, "nemesis.jsonl"), process: "nemesis")
    @random = Random.new(Minitest.seed)
    @workers = {}
    @incarnations = Hash.new(0)
    @lock = Mutex.new
    @deaths = []
  end

  # The host the nemesis cuts off (a TestHosts of one), or nil (why is printed): the rest of the soak runs.
  def cut_off_host
    unless TestHosts.available?
      puts "\npartition skipped: #{TestHosts.unavailable_reason}"
      return
    end

    @hosts = TestHosts.new(1, prefix: "lmf#{Process.pid % 100_000}")
  end

  # A forwarder on the hosts' server address to 127.0.0.1:+port+ (where the servers listen), for the host's worker.
  def link_to(port)
    (@links ||= []).push(FaultHistory::Link.new(listen: [@hosts.server_address, 0], target: ["127.0.0.1", port]).start)
                   .last
  end

  # Workers 0..WORKERS-1 are forked; worker WORKERS, the one the nemesis cuts off, runs on the host.
  def host_slot = (WORKERS if @hosts)
  def slots = [*0...WORKERS, *host_slot]

  def start_worker(slot)
    host = slot == host_slot
    incarnation = @lock.synchronize { @incarnations[slot] += 1 }
    config = { **worker_store(host), process: "w#{slot}.#{incarnation}", owner: slot * 1000 + incarnation,
               resources: RESOURCES, dir: @history_dir, seed: @random.rand(2**32), control: (@control if host),
               parent: Process.pid }
    pid = host ? spawn_on_host(config) : fork { run_forked(config) }
    @lock.synchronize { @workers[slot] = [pid, config[:process]] }
  end

  def spawn_on_host(config)
    log = File.join(@history_dir, "#{config[:process]}.log")
    code = "require #{File.expand_path("fault_history", __dir__).dump}; " \
           "FaultHistory::LeaseWorker.from_env.run"
    @hosts[0].spawn({ "FAULT_WORKER" => JSON.generate(config) }, RUBY, "-e", code, out: log, err: log)
  end

  def run_forked(config)
    FaultHistory::LeaseWorker.new(**config).run
  rescue Exception => e # rubocop:disable Lint/RescueException
    warn "fault soak worker #{config[:process]}: #{e.class}: #{e.message}\n#{e.backtrace.first(5).join("\n")}"
  ensure
    exit!(1)
  end

  # Kills the worker in +slot+ (SIGKILL) and starts its next incarnation.
  def kill(slot)
    pid, process = @lock.synchronize { @workers.fetch(slot) }
    status = @nemesis.operation("kill", worker: process) do
      Process.kill(:KILL, pid)
      Process.wait2(pid).last.to_s
    end
    @deaths << "#{process}: #{status}" unless status.include?("SIGKILL")
    start_worker(slot)
  end

  # The nemesis, for SECONDS: a kill every 0.2 to 0.6 s, a server crash (#crash_server, given its number from 0) at
  # a random moment of every 10 s or so, and (with a host) a cut, in a thread of its own, at a random moment of
  # every 20 s or so. On a loaded machine (a proof beside three others on two cores) the same seconds hold fewer
  # faults and writes: the kills go on past SECONDS, for up to SECONDS more, until the soak has its SECONDS kills
  # and 10 writes a second (the test's floor).
  def run_soak(crashes: (SECONDS / 10).round)
    slots.each { start_worker(_1) }
    start = monotonic
    deadline = start + SECONDS
    crashes = moments(start, crashes) { |span| @random.rand(0.2..0.8) * span }
    cuts = @hosts ? moments(start, (SECONDS / 20).floor) { |span| @random.rand(1.0..[span - 7.0, 1.0].max) } : []
    @cutter = Thread.new { cuts.each { cut_off(_1, deadline) } }
    @cutter.report_on_exception = false # join raises it
    next_kill = start + @random.rand(0.2..0.6)
    kills = 0
    crashed = 0
    while (now = monotonic) < deadline || (now < deadline + SECONDS && !enough?(kills))
      if crashes.first && now >= crashes.first
        crashes.shift
        crash_server(crashed)
        crashed += 1
      elsif now >= next_kill
        kill((slots - [*(host_slot if @cutting)]).sample(random: @random))
        kills += 1
        next_kill = monotonic + @random.rand(0.2..0.6)
      end
      sleep 0.01
    end
    @cutter.join
  end

  # Whether the soak has had its floor of faults and writes (asserted after the check); the writes are counted at
  # most twice a second.
  def enough?(kills)
    return false if kills < SECONDS
    return @written_enough if @written_enough || monotonic < (@counted_at || 0) + 0.5

    @counted_at = monotonic
    @written_enough = (written_count || 0) >= 10 * SECONDS
  end

  # At least one moment after +start+, one in each of +count+ equal spans of SECONDS (the block: where in its span).
  def moments(start, count)
    count = [count, 1].max
    span = SECONDS / count
    Array.new(count) { |i| start + i * span + yield(span) }
  end

  # Runs the block (a fault that takes seconds: a failover) in a thread of its own, after the one before it, so that
  # the nemesis's kills go on meanwhile; #stop_soak and #faults_done wait for it.
  def in_background(&fault)
    faults_done
    @fault = Thread.new(&fault)
    @fault.report_on_exception = false # joined: its exception is raised there
  end

  def faults_done = @fault&.join

  # Asks the host's worker to hold a lease and stop, cuts its host off, heals it once the lease has expired (and
  # half a second more), lets it write with its old token for 1.5 s, then kills it and starts a new one.
  def cut_off(at, deadline)
    sleep [at - monotonic, 0].max
    return if monotonic > deadline - 4.0

    @cutting = true
    FileUtils.touch(File.join(@control, "cut-request"))
    ready = File.join(@control, "ready")
    waited = monotonic + CUT_WAIT
    sleep 0.01 until File.exist?(ready) || monotonic > waited
    unless File.exist?(ready)
      flunk "the host's worker did not hold a lease within #{CUT_WAIT} s of the cut's request " \
            "(its history: #{@history_dir})"
    end
    lease = JSON.parse(File.read(ready), symbolize_names: true)
    @nemesis.operation("cut", worker: lease[:process], **lease.slice(:resource, :token, :expires_at)) do
      @hosts[0].cut! && nil
    end
    FileUtils.touch(File.join(@control, "cut"))
    while_cut_off(lease)
    sleep 0.01 until FaultHistory.wall > lease.fetch(:expires_at) + 0.5
    @nemesis.operation("heal", worker: lease[:process]) { @hosts[0].heal! && nil }
    sleep 1.5
    Dir[File.join(@control, "*")].each { File.delete(_1) }
    kill(host_slot)
    @cutting = false
  end

  # What the nemesis does once the host is cut off, its worker holding +lease+ (a Hash: resource, token,
  # expires_at); nothing, unless the including test says otherwise.
  def while_cut_off(lease); end

  def stop_workers
    @lock&.synchronize do
      @workers.each_value do |pid, _|
        Process.kill(:KILL, pid)
        Process.wait(pid)
      rescue Errno::ESRCH, Errno::ECHILD
        nil
      end
      @workers.clear
    end
  end

  # Everything the soak started stopped: the nemesis's cutter, the workers, the forwarders and the host.
  def stop_soak
    @cutter&.kill
    @fault&.kill
    stop_workers
    (@links || []).each(&:stop)
    @hosts&.destroy
  end

  # The floor of faults and writes every soak asserts, after its check; a cut-off worker that tried no late write is
  # said, not failed (whether it got to depends on the machine's load).
  def assert_soaked(counts)
    assert_empty @deaths, "workers that died on their own (their logs: #{@history_dir})"
    assert_operator counts[:kills], :>=, SECONDS, "the nemesis killed workers"
    assert_operator counts[:restarts], :>=, 1, "the nemesis crashed the server"
    assert_operator counts[:writes], :>=, 10 * SECONDS, "the soak wrote through the fence"
    return unless @hosts

    assert_operator counts[:cuts], :>=, 1, "the nemesis cut a host off while it held a lease"
    return unless counts[:stale_fenced] < counts[:cuts]

    puts "note: the cut-off worker tried no late write before the soak ended (#{counts[:cuts]} cuts); " \
         "nothing to refuse this run"
  end

  # The verdict of a soak whose store keeps its event log in @url's database: the checker's +result+ printed, with no
  # violation; the store's own event log, written in each request's transaction through the kills and crashes, a
  # history the core's audit finds nothing wrong with; and the floor of faults and writes (#assert_soaked).
  def assert_sound(result)
    puts "\n#{result.summary}"
    assert_empty result.violations.first(20), "#{result.violations.size} violations (histories in #{@history_dir})"
    audit = LeaseMachines::Store.new(@url).then { |store| store.audit.tap { store.close } }
    assert audit.valid?, "the event log fails the audit: #{audit.findings.first(5).map(&:to_h)}"
    assert_operator audit.checked_events, :>=, 10, "the event log holds the soak's changes"
    assert_soaked(result.counts)
  end

  # A schema of the soak's own on the suite's cluster (@cluster), with the application's table of writes; @url is
  # its URL on 127.0.0.1.
  def prepare_schema
    require "pg"
    @schema = "faults_#{SecureRandom.hex(4)}"
    @url = url("127.0.0.1", @cluster.port)
    admin(@cluster.url) { _1.exec("CREATE SCHEMA #{@schema}") }
    admin(@url) { _1.exec(FaultHistory::LeaseWorker::TABLE) }
  end

  # The soak's schema on the server at +address+ and +port+; the server's notices to the workers (its warning on an
  # immediate shut-down) left out.
  def url(address, port, extra = "")
    "postgresql://#{PostgresCluster::USER}@#{address}:#{port}/postgres?" \
      "options=-csearch_path%3D#{@schema}%20-cclient_min_messages%3Derror#{extra}"
  end

  # The soak's schema on the host's forwarder to PostgreSQL: its connection gives up 1 s after the link goes quiet, a
  # reconnect after 2 s (it keeps trying).
  def host_url = url(@hosts.server_address, link_to(@cluster.port).port, "&tcp_user_timeout=1000&connect_timeout=2")

  def admin(url)
    connection = PG.connect(url)
    yield connection
  ensure
    connection&.close
  end

  def written_count
    admin(@url) { _1.exec("SELECT count(*) FROM writes").getvalue(0, 0).to_i }
  rescue PG::Error
    nil # the server is starting again
  end

  # The fences' high-waters (resource => highest) and the rows of the application's table, for the checker.
  def fences_and_writes
    admin(@url) do |db|
      db.type_map_for_results = PG::BasicTypeMapForResults.new(db) # bigints as Integers, doubles as Floats
      [db.exec("SELECT resource, highest FROM lease_machines_fences").to_h { [_1["resource"], _1["highest"]] },
       db.exec("SELECT id, resource, token, worker, seq, at FROM writes").to_a]
    end
  end

  def drop_schema
    admin(@url) { _1.exec("DROP SCHEMA #{@schema} CASCADE") } if @schema
  rescue PG::Error => e
    warn "could not drop #{@schema}: #{e.message}"
  end

  def monotonic = FaultHistory.monotonic
end

# What the Redis store's fault soaks share (test/store/redis_faults_test.rb, redis_failover_faults_test.rb): the
# leases in Redis, the fence and the application's table of writes in the suite's PostgreSQL.
module RedisFaultSoak
  include FaultSoak

  private

  # The soak's start: the suite's PostgreSQL, a Redis to be had, workers that fork; its files in tmp/NAME-PID.
  def start_redis_soak(name)
    @cluster = require_postgres!
    require_redis!
    plain_suite_only!("forks and spawns workers")
    @dir = File.expand_path("../../tmp/#{name}-#{Process.pid}", __dir__)
    start_soak
  end

  # The checker over the merged histories, the lease hashes and token epoch of the Redis primary +client+ (the
  # grants since its epoch began are above the floor), and PostgreSQL's tables.
  def redis_check(client)
    stop_workers
    leases = RESOURCES.to_h do |resource|
      issued = client.call("HGET", LeaseMachines::Store::Redis.key(resource, "lease"), "last_issued")
      [resource, { "last_issued" => issued && Integer(issued) }]
    end
    epoch = client.call("HGET", "lease_machines:token_epoch", "epoch")
    floor = epoch ? Integer(epoch) << LeaseMachines::TOKEN_EPOCH_BITS : 0
    fences, writes = fences_and_writes
    FaultHistory::Checker.new(FaultHistory.load(@history_dir), leases: leases, fences: fences, writes: writes,
                                                               floor: floor, locked_leases: false).check
  end
end
