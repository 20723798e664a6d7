# frozen_string_literal: true

require "test_helper"
require "lease_machines/store" if LeaseMachines::TestSupport::SQLITE3
require "support/store_authority_rules"

# The store on MySQL (MariaDB 10.11 here), against a throwaway server the suite starts itself: the same decisions as
# the in-memory authority for the same random requests, the server's clock, the round trips each request costs
# (counted on the connection), bounded lock waits, locking reads inside an application's REPEATABLE READ
# transaction, no session state left on an application's connection, and bad input.
class StoreMySQLTest < Minitest::Test
  include LeaseMachines::TestSupport::StoreAuthorityRules

  R = "nightly-report"

  # Counts the round trips a client makes: each query (one round trip, however many statements it carries), each
  # prepared statement's prepare and execute.
  module RoundTrips
    attr_accessor :round_trips

    %i[query prepare].each do |name|
      define_method(name) do |*args, **kwargs, &block|
        self.round_trips = (round_trips || 0) + 1
        super(*args, **kwargs, &block)
      end
    end
  end

  def setup
    @server = require_mysql!
    require "mysql2"
    @url = @server.fresh_database_url
    @database = @url[%r{/(\w+)\z}, 1]
    @stores = []
    @clients = []
  end

  def teardown
    @stores.each(&:close)
    @clients.each(&:close)
  end

  # A client of the test's own on its database (an application's connection), with several statements per query.
  def client(**more)
    @server.connect(database: @database, flags: Mysql2::Client::MULTI_STATEMENTS, **more).tap { @clients << _1 }
  end

  def open_store(database = @url, **options)
    LeaseMachines::Store.new(database, **options).tap { @stores << _1 }
  end

  def counted(client)
    client.singleton_class.prepend(RoundTrips)
    client.round_trips = 0
    client
  end

  def server_now
    client.query("SELECT TIMESTAMPDIFF(MICROSECOND, '1970-01-01', UTC_TIMESTAMP(6))", as: :array).first.first / 1e6
  end

  def test_it_is_the_mysql_store_and_names_the_server_without_a_password
    store = open_store
    assert_equal :mysql, store.adapter_name
    assert_equal "mysql2://root@127.0.0.1:#{@server.port}/#{@database}", store.path
    assert_kind_of Mysql2::Client, store.database
    assert_nil store.durability
  end

  def test_the_same_random_requests_get_the_same_decisions_as_the_authority
    assert_same_decisions_as_the_authority([open_store, open_store, open_store(client)])
  end

  # A statement that may wait for a lock is always the first of its round trip (mysql2 reads a round trip's later
  # results holding Ruby's GVL): a decision is three round trips, a fenced write three in the store's own
  # transaction and two inside the application's (and two questions whether a transaction is open). A connection
  # the store opened answers that question from the server's last answer, when it says (its transaction state
  # changed: the store's own requests end with COMMIT); else it asks the server, one round trip more.
  def test_round_trips_of_a_decision_and_of_a_fenced_write
    store = open_store
    connection = counted(store.database)
    store.acquire(resource: "warm", owner: 1, ttl: 1.0) # the store's own last answer says its transaction ended
    connection.round_trips = 0
    lease = granted(store.acquire(resource: R, owner: 7, ttl: 30.0))
    assert_equal 3, connection.round_trips, "acquire"
    connection.round_trips = 0
    store.renew(resource: R, owner: 7, token: lease.token, ttl: 30.0)
    assert_equal 3, connection.round_trips, "renew"
    connection.round_trips = 0
    store.fenced(resource: R, token: lease.token) { nil }
    # The question after the block is asked of the server: the open round trip's last answer did not change the state.
    assert_equal 4, connection.round_trips, "fenced, in the store's own transaction"
    connection.round_trips = 0
    store.acquire(resource: "other", owner: 1, ttl: 5.0, limit: 3)
    assert_equal 3, connection.round_trips, "a semaphore's acquire"
    app = counted(client)
    fence = open_store(app)
    app.query("START TRANSACTION")
    app.round_trips = 0
    fence.fenced(resource: R, token: lease.token) { nil }
    # Two of them ask the server whether a transaction is open, before and after the block: the store tracks the
    # transaction state of its own connections only.
    assert_equal 4, app.round_trips, "fenced inside the application's transaction"
    app.query("COMMIT")
  end

  # A thread waiting for a lock in a later statement of a round trip would hold Ruby's GVL: the job's own fenced
  # write, holding the lock, could never commit. The store's waits are all in first statements, so the process's
  # other threads run while one waits.
  def test_a_request_waiting_for_a_lock_lets_the_other_threads_of_the_process_run
    store = open_store(busy_timeout: 10.0)
    lease = granted(store.acquire(resource: R, owner: 7, ttl: 30.0, limit: 2))
    app = client
    fence = open_store(app, clock: -> { 1.0 })
    app.query("START TRANSACTION")
    fence.fenced(resource: R, token: lease.token, slot: lease.slot) { nil } # holds the slot's rows until COMMIT
    started = Process.clock_gettime(Process::CLOCK_MONOTONIC)
    renewal = Thread.new { store.renew(resource: R, owner: 7, token: lease.token, ttl: 30.0, slot: lease.slot) }
    ticks = 0
    ticks += 1 while Process.clock_gettime(Process::CLOCK_MONOTONIC) - started < 0.5 && (sleep(0.01) || true)
    app.query("COMMIT")
    assert_equal :renewed, renewal.value.status
    assert_operator ticks, :>, 20, "this thread ran while the renewal waited"
    assert_operator Process.clock_gettime(Process::CLOCK_MONOTONIC) - started, :<, 3.0
  end

  def test_the_servers_clock_decides_when_no_now_is_given
    store = open_store
    before = server_now
    lease = granted(store.acquire(resource: R, owner: 7, ttl: 30.0))
    after = server_now
    assert_operator lease.expires_at, :>=, before + 30.0
    assert_operator lease.expires_at, :<=, after + 30.0
    assert_in_delta server_now, store.now, 1.0
  end

  def test_floats_come_back_exactly
    store = open_store
    sqlite = open_store(File.join(scratch_dir("floats"), "leases.sqlite3"))
    random = Random.new(5)
    50.times do |i|
      now = random.rand * 10**random.rand(1..15)
      ttl = random.rand * 100
      expected = LeaseMachines::Authority.new(clock_policy: :clamp).acquire(owner: i, ttl: ttl, now: now)
      assert_equal expected, store.acquire(resource: "exact-#{i}", owner: i, ttl: ttl, now: now)
      assert_equal expected.lease, store.checkpoint(resource: "exact-#{i}").lease
      sqlite.acquire(resource: "exact-#{i}", owner: i, ttl: ttl, now: now)
      assert_equal sqlite.events(resource: "exact-#{i}").map(&:to_h).map { _1.except(:id) },
                   store.events(resource: "exact-#{i}").map(&:to_h).map { _1.except(:id) }
    end
  end

  def test_names_are_kept_byte_for_byte_whatever_case_or_plane
    store = open_store
    names = ["Report", "report", "emoji-\u{1F512}", "nul\0byte", "é" * 512, "x" * 1024]
    names.each_with_index { |name, owner| granted(store.acquire(resource: name, owner: owner, ttl: 5.0, now: 1.0)) }
    names.each_with_index do |name, owner|
      assert_equal owner, store.checkpoint(resource: name).lease.owner, name[0, 20]
    end
    assert_equal names.sort_by(&:b), store.resources(limit: 10).map(&:resource)
    assert_equal 1, store.resource_count(prefix: "emoji")
    error = assert_raises(ArgumentError) { store.acquire(resource: "x" * 1025, owner: 1, ttl: 1.0) }
    assert_includes error.message, "1024 bytes"
  end

  # MySQL's REPEATABLE READ answers plain reads from the snapshot of the transaction's first read: the fence reads
  # the lease's row and mark with locking reads, which see the newest committed rows.
  def test_a_fenced_write_in_a_repeatable_read_transaction_sees_a_successor_that_committed_after_its_first_read
    store = open_store
    lease = granted(store.acquire(resource: R, owner: 7, ttl: 1.0, now: 0.0))
    app = client
    app.query("CREATE TABLE reports (id INT PRIMARY KEY, body TEXT)")
    fence = open_store(app, clock: -> { 5.0 })
    app.query("SET SESSION TRANSACTION ISOLATION LEVEL REPEATABLE READ")
    app.query("START TRANSACTION")
    assert_equal [[1]], app.query("SELECT token FROM lease_machines_leases", as: :array).to_a, "the snapshot"
    granted(store.acquire(resource: R, owner: 9, ttl: 30.0, now: 2.0))
    error = assert_raises(LeaseMachines::Fenced) do
      fence.fenced(resource: R, token: lease.token) { |c| c.query("INSERT INTO reports VALUES (1, 'stale')") }
    end
    assert_equal [:stale_token, 2], [error.reason, error.highest]
    assert_equal [[1]], app.query("SELECT token FROM lease_machines_leases", as: :array).to_a, "still the snapshot"
    app.query("COMMIT")
    assert_equal 0, app.query("SELECT COUNT(*) FROM reports", as: :array).first.first
  end

  def test_a_fenced_write_joins_the_applications_transaction_and_rolls_back_with_it
    store = open_store
    lease = granted(store.acquire(resource: R, owner: 7, ttl: 30.0, now: 0.0))
    app = client
    app.query("CREATE TABLE reports (id INT PRIMARY KEY, body TEXT)")
    fence = open_store(app, clock: -> { 1.0 })
    app.query("START TRANSACTION")
    fence.fenced(resource: R, token: lease.token) { |c| c.query("INSERT INTO reports VALUES (1, 'kept?')") }
    app.query("ROLLBACK")
    assert_equal 0, app.query("SELECT COUNT(*) FROM reports", as: :array).first.first
    assert_nil store.fence_highest(resource: R), "the mark rolled back with the write"
    app.query("START TRANSACTION")
    fence.fenced(resource: R, token: lease.token) { |c| c.query("INSERT INTO reports VALUES (2, 'kept')") }
    app.query("COMMIT")
    assert_equal [[2]], app.query("SELECT id FROM reports", as: :array).to_a
    assert_equal lease.token, store.fence_highest(resource: R)
  end

  # ActiveRecord's mysql2 adapter opens its connections without MULTI_STATEMENTS: a fenced write on one switches it
  # on for its round trips and off again.
  def test_a_fenced_write_on_a_connection_without_multi_statements_leaves_it_without
    store = open_store
    lease = granted(store.acquire(resource: R, owner: 7, ttl: 30.0))
    app = counted(@server.connect(database: @database).tap { @clients << _1 })
    app.query("CREATE TABLE reports (id INT PRIMARY KEY)")
    app.round_trips = 0
    fence = open_store(app)
    app.query("START TRANSACTION")
    fence.fenced(resource: R, token: lease.token) { |c| c.query("INSERT INTO reports VALUES (1)") }
    app.query("COMMIT")
    assert_equal [[1]], app.query("SELECT id FROM reports", as: :array).to_a
    assert_equal lease.token, store.fence_highest(resource: R)
    assert_raises(Mysql2::Error) { app.query("SELECT 1; SELECT 2") }
  end

  def test_no_session_state_is_left_on_an_applications_connection
    app = client
    app.query("SET SESSION innodb_lock_wait_timeout = 17")
    app.query("SET SESSION TRANSACTION ISOLATION LEVEL SERIALIZABLE")
    store = open_store(app, busy_timeout: 3.0)
    lease = granted(store.acquire(resource: R, owner: 7, ttl: 30.0))
    store.fenced(resource: R, token: lease.token) { nil }
    app.query("START TRANSACTION")
    store.fenced(resource: R, token: lease.token) { nil }
    app.query("COMMIT")
    store.release(resource: R, owner: 7, token: lease.token)
    state = app.query("SELECT @@innodb_lock_wait_timeout, @@tx_isolation, @lease_machines_wait, @@in_transaction",
                      as: :array).first
    assert_equal [17, "SERIALIZABLE", nil, 0], state
    app.query("SELECT 1; SELECT 2") # opened with MULTI_STATEMENTS, and still taking several statements
    app.store_result while app.next_result
  end

  def test_a_lock_wait_is_bounded_by_the_busy_timeout
    store = open_store(busy_timeout: 1.0)
    granted(store.acquire(resource: R, owner: 7, ttl: 30.0))
    holder = client
    holder.query("START TRANSACTION")
    holder.query("SELECT * FROM lease_machines_leases WHERE resource = 'nightly-report' FOR UPDATE")
    started = Process.clock_gettime(Process::CLOCK_MONOTONIC)
    error = assert_raises(LeaseMachines::StoreError) { store.acquire(resource: R, owner: 9, ttl: 5.0) }
    waited = Process.clock_gettime(Process::CLOCK_MONOTONIC) - started
    assert_includes error.message, "Lock wait timeout"
    assert_operator waited, :<, 5.0
    holder.query("ROLLBACK")
    assert_equal [:rejected, :occupied], store.acquire(resource: R, owner: 9, ttl: 5.0).then { [_1.status, _1.reason] }
  end

  # A holder frozen between a decision's two round trips (SIGSTOP, a paused VM) holds the resource's row lock: MariaDB
  # ends its session after the idle limit, and another process's request goes through.
  def test_a_holder_frozen_inside_a_decision_is_cut_off_by_the_server
    frozen = open_store
    granted(frozen.acquire(resource: R, owner: 7, ttl: 30.0))
    adapter = frozen.instance_variable_get(:@adapter)
    adapter.open_request(R, clock: true) # the first round trip: the row locked; the second never comes
    started = Process.clock_gettime(Process::CLOCK_MONOTONIC)
    decision = open_store(busy_timeout: 10.0).acquire(resource: R, owner: 9, ttl: 10.0)
    waited = Process.clock_gettime(Process::CLOCK_MONOTONIC) - started
    assert_equal [:rejected, :occupied], [decision.status, decision.reason], "7's committed lease still stands"
    assert_operator waited, :<, 6.0, "the lock was freed by the server's idle limit (2 s), not held"
    assert_operator waited, :>=, 1.5
    assert_raises(LeaseMachines::StoreError) { adapter.close_request(R, nil, ["refused", 0.0] + [nil] * 8) }
    assert_equal :renewed, frozen.renew(resource: R, owner: 7, token: 1, ttl: 30.0).status, "connected again"
  end

  # A fenced write's block may take longer than the idle limit: its transaction is not cut off.
  def test_a_slow_fenced_write_outlives_the_idle_limit
    store = open_store
    lease = granted(store.acquire(resource: R, owner: 7, ttl: 30.0))
    done = store.fenced(resource: R, token: lease.token) do
      sleep 2.5
      :done
    end
    assert_equal :done, done
    assert_equal lease.token, store.fence_highest(resource: R)
    assert_equal [[2]], store.database.query("SELECT @@idle_transaction_timeout", as: :array).to_a
  end

  def test_a_lost_connection_raises_store_error_and_the_next_request_connects_again
    store = open_store
    granted(store.acquire(resource: R, owner: 7, ttl: 30.0))
    client.query("KILL #{store.database.thread_id}")
    assert_raises(LeaseMachines::StoreError) { store.renew(resource: R, owner: 7, token: 1, ttl: 30.0) }
    assert_equal :renewed, store.renew(resource: R, owner: 7, token: 1, ttl: 30.0).status
  end

  # A database that lost a grant (a replica promoted before it received it, a backup restored) would issue its token
  # again. Another server's history moves the token epoch: the lost grant's holder is refused as stale, and the next
  # grant's token is above every token of the old history.
  def test_a_new_server_history_moves_the_token_epoch_above_a_lost_grant
    store = open_store
    assert_equal 1, granted(store.acquire(resource: R, owner: 7, ttl: 1.0, now: 0.0)).token
    assert_equal 2, granted(store.acquire(resource: R, owner: 8, ttl: 10.0, now: 2.0)).token
    app = client
    assert_equal [[0, "mariadb:1"]], app.query("SELECT epoch, history FROM lease_machines_history", as: :array).to_a
    # The grant of token 2 lost, and another server's history (what a restored backup must be told: README).
    app.query("UPDATE lease_machines_leases SET owner = 7, token = 1, expires_at = 1, last_issued = 1, revision = 1")
    app.query("UPDATE lease_machines_history SET history = ''")
    error = assert_raises(LeaseMachines::Fenced) { store.fenced(resource: R, token: 2, now: 3.0) { flunk "stale" } }
    assert_equal :stale_token, error.reason
    lease = granted(store.acquire(resource: R, owner: 9, ttl: 1.0, now: 3.0))
    assert_equal (1 << LeaseMachines::TOKEN_EPOCH_BITS) + 1, lease.token
    assert_equal [[1, "mariadb:1"]], app.query("SELECT epoch, history FROM lease_machines_history", as: :array).to_a
    assert_raises(LeaseMachines::Fenced) { store.fenced(resource: R, token: 2, now: 3.5) { flunk "stale" } }
  end

  def test_a_password_never_shows
    url = "mysql2://root:s3cret-pw@127.0.0.1:1/#{@database}"
    error = assert_raises(LeaseMachines::StoreError) { LeaseMachines::Store.new(url) }
    refute_includes error.message, "s3cret-pw"
    assert_includes error.message, "mysql2://root@127.0.0.1:1/#{@database}"
    refute_includes open_store(@url.sub("root@", "root:@")).inspect, "s3cret"
  end

  def test_a_url_parameter_it_does_not_take_is_refused
    error = assert_raises(ArgumentError) { LeaseMachines::Store.new("#{@url}?pool=5") }
    assert_includes error.message, "\"pool\""
    assert_equal :mysql, open_store(@server.socket_url(@database)).adapter_name
  end

  def test_tables_of_another_shape_are_refused
    client.query("CREATE TABLE lease_machines_fences (resource VARCHAR(10) PRIMARY KEY, highest INT)")
    error = assert_raises(LeaseMachines::StoreError) { LeaseMachines::Store.new(@url) }
    assert_includes error.message, "lease_machines_fences is not the lease store's table"
  end

  def test_a_store_that_may_not_migrate_refuses_an_empty_database
    error = assert_raises(LeaseMachines::StoreError) { LeaseMachines::Store.new(@url, migrate: false) }
    assert_includes error.message, "migrate: false"
    open_store
    assert_equal :mysql, open_store(migrate: false).adapter_name
  end
end
