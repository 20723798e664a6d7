# frozen_string_literal: true

require "test_helper"
require "timeout"
require "lease_machines/store" if LeaseMachines::TestSupport::SQLITE3

# A soak of asynchronous exceptions: Timeout, Thread#raise and Thread#kill land at random instants inside the
# store's requests. None may leave a transaction open, a lock held or a decision half-made: after each one the
# connection is idle, another connection writes at once, and the grants and fenced writes that came back obey the
# rules. The same soak runs on both databases (StoreInterruptTest, StorePostgreSQLInterruptTest below); each says
# how to write the application's row, read the rows back and see that no lock is left.
module StoreInterruptSoak
  RESOURCES = %w[nightly-report invoices].freeze
  Abandon = Class.new(StandardError)

  def teardown
    @probe&.close
    @store&.close
  end

  # One request of a random kind against the store; grants that came back are recorded.
  def request(random)
    resource = RESOURCES.sample(random: random)
    now = Process.clock_gettime(Process::CLOCK_REALTIME)
    case random.rand(4)
    when 0, 1
      decision = @store.reacquire(resource: resource, owner: 7, ttl: 0.5, now: now)
      @granted[resource] << decision.lease.token if decision.granted?
    when 2
      token = @granted[resource].last or return
      @store.fenced(resource: resource, token: token) { |db| write(db, resource, token) }
    else
      token = @granted[resource].last or return
      @store.release(resource: resource, owner: 7, token: token, now: now)
    end
  rescue LeaseMachines::Fenced
    nil
  end

  # How long interrupts are spread over, in seconds: +requests_per_window+ requests of the median time of five
  # uninterrupted ones, measured now. On a loaded machine (a proof beside three others on two cores) a request takes
  # longer, and a fixed window would interrupt nearly every request before a grant came back.
  def interrupt_window
    took = Array.new(5) do
      started = Process.clock_gettime(Process::CLOCK_MONOTONIC)
      @store.reacquire(resource: "calibration", owner: 7, ttl: 0.5, now: Process.clock_gettime(Process::CLOCK_REALTIME))
      Process.clock_gettime(Process::CLOCK_MONOTONIC) - started
    end
    took.sort[2] * requests_per_window
  end

  def for_at_most(seconds)
    deadline = Process.clock_gettime(Process::CLOCK_MONOTONIC) + seconds
    yield while Process.clock_gettime(Process::CLOCK_MONOTONIC) < deadline
  end

  def assert_idle_and_unlocked(round)
    refute idle_in_transaction?, "round #{round}: a transaction was left open"
    assert_unlocked(round)
  end

  # Thread.handle_interrupt does not defer a signal's trap handler: one that raises can land anywhere, even right
  # after BEGIN. The store claims its transaction before opening it, so such an exception leaves a claim the next
  # request rolls back, never a transaction nobody knows of.
  def test_a_raising_trap_handler_never_leaves_a_transaction_open_or_a_write_uncommitted
    plain_suite_only!("signals at random instants")
    returned = trap_soak(3.0, at_least: 10)
    assert_idle_and_unlocked(:trap)
    grants = @granted[RESOURCES.first]
    assert_equal grants.sort.uniq, grants, "tokens came back in order, none twice"
    assert_operator @store.checkpoint(resource: RESOURCES.first).last_issued.to_i, :>=, grants.max.to_i
    written = written_tokens(RESOURCES.first).size
    assert_operator written, :>=, returned, "every fenced write that returned was committed"
    assert_operator returned, :>=, 10, "the soak did real work"
  end

  # Requests for +seconds+ while another thread sends this process USR1, whose handler raises, every 0 to 0.5 ms,
  # and on past them (for up to +seconds+ more) until +at_least+ fenced writes have returned: a loaded machine (a
  # proof beside three others on two cores) gets through fewer in the same seconds. Returns how many fenced writes
  # returned. The last request is one no signal interrupts.
  def trap_soak(seconds, at_least:)
    signal = Class.new(StandardError)
    previous = trap("USR1") { raise signal }
    returned = 0
    stop = false
    window = interrupt_window
    sender = Thread.new do
      until stop
        Process.kill("USR1", Process.pid)
        sleep(rand * 0.6 * window)
      end
    end
    random = Random.new(Minitest.seed)
    deadline = Process.clock_gettime(Process::CLOCK_MONOTONIC) + seconds
    begin
      while (now = Process.clock_gettime(Process::CLOCK_MONOTONIC)) < deadline ||
            (returned < at_least && now < deadline + seconds)
        begin
          if random.rand < 0.5
            decision = @store.reacquire(resource: RESOURCES.first, owner: 7, ttl: 0.5,
                                        now: Process.clock_gettime(Process::CLOCK_REALTIME))
            @granted[RESOURCES.first] << decision.lease.token if decision.granted?
          elsif (token = @granted[RESOURCES.first].last)
            @store.fenced(resource: RESOURCES.first, token: token) { |db| write(db, RESOURCES.first, token) }
            returned += 1
          end
        rescue signal, LeaseMachines::Fenced
          nil
        end
      end
    rescue signal
      retry # landed between the requests (the loop's own clock read included): on to the same deadline
    end
    returned
  ensure
    begin
      trap("USR1") { nil } # a signal still on its way lands harmlessly from here on
    rescue signal
      retry
    end
    stop = true
    sender&.join
    # A signal the sender sent may still be on its way to this thread: let it land in the harmless handler, and never
    # give USR1 back to its default action (which ends the process, silently, in the middle of the suite).
    sleep 0.2
    trap("USR1", [nil, "DEFAULT", "SYSTEM_DEFAULT"].include?(previous) ? "IGNORE" : previous)
    # What a signal left is cleared by the next request, as the store promises.
    @store.checkpoint(resource: RESOURCES.first)
  end

  def test_random_interrupts_never_leave_a_transaction_open_or_a_decision_half_made
    random = Random.new(Minitest.seed)
    interrupts = Hash.new(0)
    rounds = iterations(150)
    window = nil
    round = -1
    # On past the rounds (for up to three times as many) until each resource has its floor of grants: on a loaded
    # machine requests take longer, so more of them are interrupted before a grant came back.
    while (round += 1) < rounds || (RESOURCES.any? { @granted[_1].size < 10 } && round < rounds * 4)
      window = interrupt_window if (round % 30).zero?
      case round % 3
      when 0
        begin
          Timeout.timeout(random.rand * window) { for_at_most(2.0) { request(random) } }
          flunk "round #{round}: the timeout never arrived (swallowed inside a request?)"
        rescue Timeout::Error
          interrupts[:timeout] += 1
        end
      else
        worker = Thread.new { for_at_most(5.0) { request(random) } }
        worker.report_on_exception = false
        sleep(random.rand * 1.25 * window)
        if round % 3 == 1
          worker.raise(Abandon)
          interrupts[:raise] += 1
        else
          worker.kill
          interrupts[:kill] += 1
        end
        begin
          assert worker.join(10), "round #{round}: the interrupted worker did not finish"
        rescue Abandon
          nil
        end
      end
      assert_idle_and_unlocked(round)
    end

    assert_equal round, interrupts.values.sum
    RESOURCES.each do |resource|
      grants = @granted[resource]
      assert_operator grants.size, :>=, 10, "#{resource}: the soak did real work"
      assert_equal grants.sort.uniq, grants, "#{resource}: tokens came back in order, none twice"
      last_issued = @store.checkpoint(resource: resource).last_issued
      assert_operator last_issued, :>=, grants.max, "#{resource}: every grant returned was committed"
      written = written_tokens(resource)
      assert_equal written.sort, written, "#{resource}: a fenced write landed after a newer token's"
      assert_empty written - grants, "#{resource}: every write carried a granted token"
      highest = @store.fence_highest(resource: resource)
      assert_equal written.max, highest, "#{resource}: the fence mark is the newest committed write's token"
    end
  end
end

# The application's table of writes in an SQLite database: the store's own (SQLite), or its fence (Redis).
module StoreInterruptSoak::SQLiteWrites
  def write(db, resource, token) = db.execute("INSERT INTO writes (resource, token) VALUES (?, ?)", [resource, token])

  def written_tokens(resource)
    @store.database.execute("SELECT token FROM writes WHERE resource = ? ORDER BY id", [resource]).flatten
  end

  def idle_in_transaction? = @store.database.transaction_active?
end

class StoreInterruptTest < Minitest::Test
  include StoreInterruptSoak
  include StoreInterruptSoak::SQLiteWrites

  # Interrupts are spread over about four requests.
  def requests_per_window = 4

  def setup
    requires_sqlite3!
    dir = scratch_dir("lease-interrupts")
    @path = File.join(dir, "leases.sqlite3")
    @store = LeaseMachines::Store.new(@path)
    @store.database.execute("CREATE TABLE writes (id INTEGER PRIMARY KEY, resource TEXT, token INTEGER)")
    @probe = LeaseMachines::Store.new(@path, busy_timeout: 0)
    @granted = Hash.new { |hash, key| hash[key] = [] }
  end

  # Another connection writes at once: SQLite's one write lock is free.
  def assert_unlocked(round)
    decision = @probe.acquire(resource: "probe-#{round}", owner: 1, ttl: 1.0, now: 0.0)
    assert_equal :granted, decision.status, "round #{round}: another connection could not write at once"
  end
end

# The soak on PostgreSQL: a connection left inside a transaction by a killed thread (or with a query's results still
# on their way) is rolled back or settled by the store, never reused half-done; no row lock outlives a request.
class StorePostgreSQLInterruptTest < Minitest::Test
  include StoreInterruptSoak

  # Interrupts are spread over about ten requests: most of a request's time is the server's (two round trips on
  # loopback to a server that fsyncs its commit), so more of them are needed for as many interrupts in the store's
  # own code as the SQLite soak's four give.
  def requests_per_window = 10

  def setup
    cluster = require_postgres!
    require "pg"
    schema = "t_#{Process.pid}_#{rand(1 << 30)}"
    @admin = PG.connect(cluster.url)
    @admin.exec("CREATE SCHEMA #{schema}")
    @admin.exec("SET search_path = #{schema}")
    @store = LeaseMachines::Store.new("#{cluster.url}?options=-csearch_path%3D#{schema}")
    @store.database.exec("CREATE TABLE writes (id bigserial PRIMARY KEY, resource text, token bigint)")
    @granted = Hash.new { |hash, key| hash[key] = [] }
  end

  def teardown
    super
    @admin&.close
  end

  def write(db, resource, token)
    db.exec_params("INSERT INTO writes (resource, token) VALUES ($1, $2)", [resource, token])
  end

  def written_tokens(resource)
    @admin.exec_params("SELECT token FROM writes WHERE resource = $1 ORDER BY id", [resource])
          .column_values(0).map(&:to_i)
  end

  def idle_in_transaction? = @store.database.transaction_status != PG::PQTRANS_IDLE

  # No row of the store's tables is locked (another connection locks them all at once, without waiting), and the
  # store's backend holds no lock of a transaction.
  def assert_unlocked(round)
    @admin.transaction do |admin|
      admin.exec("SELECT 1 FROM lease_machines_leases FOR UPDATE NOWAIT")
      admin.exec("SELECT 1 FROM lease_machines_fences FOR UPDATE NOWAIT")
    end
    held = @admin.exec_params("SELECT count(*) FROM pg_locks WHERE pid = $1 AND locktype = 'transactionid'",
                              [@store.database.backend_pid]).getvalue(0, 0).to_i
    assert_equal 0, held, "round #{round}: the store's connection still holds a transaction's lock"
  rescue PG::LockNotAvailable => e
    flunk "round #{round}: a row of the store is still locked (#{e.message.lines.first.strip})"
  end
end

require "support/redis_support"

# The soak on Redis, its fence in SQLite: an interrupt that lands while a command or a commit script is on its way
# leaves no reply unread on the client (the next request reads its own answer, never the one before it), no decision
# half-written in Redis (a commit is one script) and no fence transaction open.
class StoreRedisInterruptTest < Minitest::Test
  include StoreInterruptSoak
  include StoreInterruptSoak::SQLiteWrites
  include RedisStoreSupport

  # Interrupts are spread over about six requests: a decision is one or two round trips to a server on loopback.
  def requests_per_window = 6

  def setup
    url = fresh_redis_url
    @fence = File.join(scratch_dir("lease-redis-interrupts"), "app.sqlite3")
    @store = LeaseMachines::Store.new(url, fence: @fence)
    @store.database.execute("CREATE TABLE writes (id INTEGER PRIMARY KEY, resource TEXT, token INTEGER)")
    @probe = LeaseMachines::Store.new(url, fence: @fence, busy_timeout: 0)
    @granted = Hash.new { |hash, key| hash[key] = [] }
  end

  # Another store decides and writes through the fence at once (the fence's SQLite lock is free), and the
  # interrupted store's client answers its own next command (no reply of an interrupted one left unread).
  def assert_unlocked(round)
    decision = @probe.acquire(resource: "probe-#{round}", owner: 1, ttl: 1.0, now: 0.0)
    assert_equal :granted, decision.status, "round #{round}: another store could not decide at once"
    @probe.fenced(resource: "probe-#{round}", token: decision.lease.token, now: 0.5) { nil }
    echo = "round-#{round}"
    assert_equal echo, @store.instance_variable_get(:@adapter).client.call("ECHO", echo),
                 "round #{round}: the client read an earlier command's reply"
  end
end
