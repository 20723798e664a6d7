# frozen_string_literal: true

require "test_helper"
require "lease_machines/store" if LeaseMachines::TestSupport::SQLITE3

# Ten worker processes take the slots of a limit-1 and a limit-3 semaphore, log their entry and exit through their
# slot's fence, and some are killed with SIGKILL at random moments (and replaced). A checker then replays the log in
# commit order: a holder is in from its entry until its exit, or until its slot's next holder entered (the fence
# refuses it from then on); at no entry are more holders in than the limit, tokens rise per slot, and every killed
# worker's slot was granted again after its TTL. On SQLite (StoreSemaphoreSoakTest) and PostgreSQL
# (StoreSemaphoreSoakPostgreSQLTest).
module StoreSemaphoreSoak
  LIMITS = { "one" => 1, "three" => 3 }.freeze
  WORKERS = 10
  TTL = 0.3

  def worker(seed)
    fork do
      random = Random.new(seed)
      store = open_store
      loop do
        key = LIMITS.keys.sample(random: random)
        lease = store.acquire(resource: key, owner: Process.pid, ttl: TTL, limit: LIMITS.fetch(key)).lease
        unless lease
          sleep random.rand(0.01)
          next
        end
        begin
          store.fenced(resource: key, token: lease.token, slot: lease.slot) { log(_1, key, lease, "enter") }
          sleep random.rand(0.04)
          store.fenced(resource: key, token: lease.token, slot: lease.slot) { log(_1, key, lease, "exit") }
        rescue LeaseMachines::Fenced
          nil # its slot went to another holder: it stops writing
        end
        store.release(resource: key, owner: Process.pid, token: lease.token, slot: lease.slot)
      end
    rescue StandardError => e
      warn "semaphore worker #{Process.pid}: #{e.class}: #{e.message}"
      exit!(1)
    end
  end

  # How many times a worker entered +key+'s semaphore so far, by the log.
  def entered(key) = entries.count { _1[0] == key && _1[4] == "enter" }

  def test_ten_workers_never_exceed_a_limit_and_a_killed_workers_slot_frees_after_its_ttl
    plain_suite_only!("forks workers")
    random = Random.new(Minitest.seed)
    workers = Array.new(WORKERS) { worker(random.rand(2**32)) }
    killed = []
    deadline = Process.clock_gettime(Process::CLOCK_MONOTONIC) + 4.0
    # On past the 4 s (for up to 8 s more) until there were 5 kills and 20 grants on each key: a loaded machine
    # gets through less.
    while (now = Process.clock_gettime(Process::CLOCK_MONOTONIC)) < deadline ||
          ((killed.size < 5 || LIMITS.keys.any? { |key| entered(key) < 20 }) && now < deadline + 8.0)
      sleep random.rand(0.2..0.5)
      victim = workers.delete_at(random.rand(workers.size))
      Process.kill(:KILL, victim)
      Process.wait(victim)
      killed << [victim, Time.now.to_f]
      workers << worker(random.rand(2**32))
    end
    sleep TTL * 4 # the last victim's slot runs out, and is granted again
    workers.each { Process.kill(:KILL, _1) }
    workers.each { Process.wait(_1) }

    log = entries
    assert_operator killed.size, :>=, 5
    LIMITS.each do |key, limit|
      rows = log.select { _1[0] == key }
      assert_operator rows.count { _1[4] == "enter" }, :>=, 20, "#{key}: the soak did real work"
      most = 0
      inside = {} # slot => [owner, token] of the holder in it
      rows.each do |_, slot, token, owner, kind|
        if kind == "enter"
          previous = inside[slot]
          assert_operator token, :>, previous[1], "#{key} slot #{slot}: a token did not rise" if previous
          inside[slot] = [owner, token]
          most = [most, inside.size].max
          assert_operator inside.size, :<=, limit, "#{key}: #{inside.size} holders at once under a limit of #{limit}"
        elsif inside[slot] == [owner, token]
          inside.delete(slot)
        end
      end
      assert_equal limit, most, "#{key}: the limit was reached"
    end
    # A worker killed inside its slot (its last entry an enter) left it to run out: it was granted again later.
    inside_when_killed = killed.filter_map { |pid, _| log.select { _1[3] == pid }.last }.select { _1[4] == "enter" }
    regranted = inside_when_killed.count { |held| log.any? { _1[0..1] == held[0..1] && _1[2] > held[2] } }
    assert_equal inside_when_killed.size, regranted, "every slot a killed holder left was granted again"
  end
end

class StoreSemaphoreSoakTest < Minitest::Test
  include StoreSemaphoreSoak

  def setup
    requires_sqlite3!
    @path = File.join(scratch_dir("lease-semaphore-soak"), "soak.sqlite3")
    LeaseMachines::Store.new(@path).tap do |store|
      store.database.execute("CREATE TABLE log (id INTEGER PRIMARY KEY, key TEXT, slot INTEGER, token INTEGER, " \
                             "owner INTEGER, kind TEXT)")
    end.close
  end

  def open_store = LeaseMachines::Store.new(@path, busy_timeout: 10.0)

  def log(db, key, lease, kind)
    db.execute("INSERT INTO log (key, slot, token, owner, kind) VALUES (?, ?, ?, ?, ?)",
               [key, lease.slot, lease.token, lease.owner, kind])
  end

  def entries
    SQLite3::Database.new(@path).then do |db|
      db.execute("SELECT key, slot, token, owner, kind FROM log ORDER BY id").tap { db.close }
    end
  end
end

class StoreSemaphoreSoakPostgreSQLTest < Minitest::Test
  include StoreSemaphoreSoak

  def setup
    @url = fresh_postgres_schema_url
    # bigserial ids in commit order: each entry's transaction takes the log's one lock before its id.
    PG.connect(@url) do |db|
      db.exec("CREATE TABLE log (id bigserial PRIMARY KEY, key text, slot int, token bigint, owner bigint, kind text)")
    end
  end

  def open_store = LeaseMachines::Store.new(@url, busy_timeout: 10.0)

  def log(db, key, lease, kind)
    db.exec("LOCK TABLE log IN EXCLUSIVE MODE")
    db.exec_params("INSERT INTO log (key, slot, token, owner, kind) VALUES ($1, $2, $3, $4, $5)",
                   [key, lease.slot, lease.token, lease.owner, kind])
  end

  def entries
    PG.connect(@url) do |db|
      db.exec("SELECT key, slot, token, owner, kind FROM log ORDER BY id").values
        .map { |key, slot, token, owner, kind| [key, Integer(slot), Integer(token), Integer(owner), kind] }
    end
  end
end
