# frozen_string_literal: true

require "test_helper"
require "lease_machines/store" if LeaseMachines::TestSupport::SQLITE3

# A bounded multi-process soak: worker processes acquire, write through the fence and release on two resources
# while the test kills them with SIGKILL at random moments and starts replacements. Afterwards the database is
# intact, the tokens in the write log only rise per resource (so no stale write landed and no two holders'
# writes interleaved), and no token was granted twice.
class StoreSoakTest < Minitest::Test
  RESOURCES = %w[reports invoices].freeze
  WORKERS = 4

  def setup
    requires_sqlite3!
    plain_suite_only!("forks workers")
    @path = File.join(scratch_dir("lease-soak"), "soak.sqlite3")
    store = LeaseMachines::Store.new(@path)
    store.database.execute_batch(<<~SQL)
      CREATE TABLE writes (id INTEGER PRIMARY KEY, resource TEXT NOT NULL, token INTEGER NOT NULL);
      CREATE TABLE grants (resource TEXT NOT NULL, token INTEGER NOT NULL);
    SQL
    store.close
  end

  def worker(seed)
    fork do
      random = Random.new(seed)
      store = LeaseMachines::Store.new(@path, busy_timeout: 10.0, keep_events: 1_000_000) # all of it, for the audit
      loop do
        resource = RESOURCES.sample(random: random)
        decision = store.acquire(resource: resource, owner: Process.pid, ttl: 0.05 + random.rand(0.1))
        unless decision.granted?
          sleep random.rand(0.005)
          next
        end
        token = decision.lease.token
        store.database.execute("INSERT INTO grants VALUES (?, ?)", [resource, token])
        random.rand(1..4).times do
          store.fenced(resource: resource, token: token) do |db|
            db.execute("INSERT INTO writes (resource, token) VALUES (?, ?)", [resource, token])
          end
          sleep random.rand(0.03)
        rescue LeaseMachines::Fenced
          break
        end
        store.release(resource: resource, owner: Process.pid, token: token) if random.rand < 0.5
      end
    rescue StandardError => e
      warn "soak worker #{Process.pid}: #{e.class}: #{e.message}"
      exit!(1)
    end
  end

  def test_workers_killed_at_random_never_break_the_fence_or_the_token_sequence
    random = Random.new(Minitest.seed)
    deadline = Process.clock_gettime(Process::CLOCK_MONOTONIC) + 8.0
    workers = Array.new(WORKERS) { |i| worker(random.rand(2**32) + i) }
    kills = 0
    # On past the 8 s (for up to 8 s more) until there were 20 kills: a loaded machine gets through fewer.
    while (now = Process.clock_gettime(Process::CLOCK_MONOTONIC)) < deadline || (kills < 20 && now < deadline + 8.0)
      sleep random.rand(0.05..0.25)
      victim = workers.delete_at(random.rand(workers.size))
      Process.kill(:KILL, victim)
      _, status = Process.wait2(victim)
      assert status.signaled?, "worker #{victim} died on its own: #{status.inspect}"
      kills += 1
      workers << worker(random.rand(2**32))
    end
    workers.each { |pid| Process.kill(:KILL, pid) }
    workers.each { |pid| Process.wait(pid) }

    db = SQLite3::Database.new(@path)
    assert_equal [["ok"]], db.execute("PRAGMA integrity_check")
    # The event log, written in each request's transaction while workers were killed, passes the core's audit.
    audit = LeaseMachines::Store.new(db).audit
    assert audit.valid?, "the event log fails the audit: #{audit.findings.first(5).map(&:to_h)}"
    assert_operator audit.checked_events, :>=, 20, "the event log holds the soak's changes"
    assert_operator kills, :>=, 20
    RESOURCES.each do |resource|
      tokens = db.execute("SELECT token FROM writes WHERE resource = ? ORDER BY id", [resource]).flatten
      assert_operator tokens.size, :>=, 20, "#{resource}: the soak did real work"
      assert_equal tokens.sort, tokens, "#{resource}: a write with an older token landed after a newer one"
      granted = db.execute("SELECT token FROM grants WHERE resource = ?", [resource]).flatten
      assert_equal granted.uniq.size, granted.size, "#{resource}: a token was granted twice"
      last_issued = db.get_first_value("SELECT last_issued FROM lease_machines_leases WHERE resource = ?", [resource])
      assert_operator last_issued, :>=, granted.max
      assert_empty tokens - granted, "#{resource}: every write's token was granted"
    end
    db.close
  end
end
