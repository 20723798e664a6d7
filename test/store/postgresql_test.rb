# frozen_string_literal: true

require "test_helper"
require "securerandom"
require "socket"
require "lease_machines/store" if LeaseMachines::TestSupport::SQLITE3
require "support/store_authority_rules"

# The store on PostgreSQL, against a throwaway cluster the suite starts itself: the same decisions as the in-memory
# authority for the same random requests, the database's clock, the round trips each request costs (counted on the
# connection), bounded lock waits, the fence inside the application's transaction, and bad input.
class StorePostgreSQLTest < Minitest::Test
  include LeaseMachines::TestSupport::StoreAuthorityRules

  R = "nightly-report"

  # Counts the round trips a connection makes: each pipeline sync and each statement run on its own.
  module RoundTrips
    attr_accessor :round_trips

    %i[pipeline_sync send_query exec exec_params async_exec async_exec_params sync_exec sync_exec_params
       query].each do |name|
      define_method(name) do |*args, **kwargs, &block|
        self.round_trips = (round_trips || 0) + 1
        super(*args, **kwargs, &block)
      end
    end
  end

  def setup
    @cluster = require_postgres!
    require "pg"
    @schema = "t_#{SecureRandom.hex(6)}"
    admin.exec("CREATE SCHEMA #{@schema}")
    @url = "#{@cluster.url}?options=-csearch_path%3D#{@schema}"
    @stores = []
  end

  def teardown
    (@stores || []).each(&:close)
    @connections&.each { _1.finished? || _1.close }
    @admin&.close
  end

  def admin = @admin ||= PG.connect(@cluster.url)

  def connection
    (@connections ||= []) << PG.connect(@url)
    @connections.last
  end

  def open_store(database = @url, **options)
    LeaseMachines::Store.new(database, **options).tap { @stores << _1 }
  end

  # A connection of its own whose round trips are counted (RoundTrips), and a store on it: [connection, store].
  def counted_store(**options)
    conn = connection
    conn.singleton_class.prepend(RoundTrips)
    [conn, open_store(conn, **options)]
  end

  # Opens a transaction on +holder+ that holds the resource's row locked FOR UPDATE.
  def lock_row(holder)
    holder.exec("BEGIN")
    holder.exec_params("SELECT 1 FROM lease_machines_leases WHERE resource = $1 FOR UPDATE", [R])
  end

  # Waits until the backend +pid+ (a store's connection, asked before its request started on another thread) waits
  # for a lock: the request reached the row +lock_row+ holds. Flunks after 30 s.
  def until_waiting_for_a_lock(pid)
    waiting = eventually(30) do
      admin.exec_params("SELECT wait_event_type FROM pg_stat_activity WHERE pid = $1", [pid]).values == [["Lock"]]
    end
    assert waiting, "the request never waited for the row's lock"
  end

  def server_now = admin.exec("SELECT extract(epoch FROM clock_timestamp())::float8").getvalue(0, 0).to_f

  def test_it_is_the_postgresql_store_and_names_the_server_without_a_password
    store = open_store
    assert_equal :postgresql, store.adapter_name
    assert_equal "postgresql://postgres@127.0.0.1:#{@cluster.port}/postgres", store.path
    assert_kind_of PG::Connection, store.database
  end

  def test_the_same_random_requests_get_the_same_decisions_as_the_authority
    assert_same_decisions_as_the_authority([open_store, open_store(connection)]) # two connections, one history
  end

  def test_now_defaults_to_the_servers_clock_read_inside_the_request
    store = open_store
    before = server_now
    lease = store.acquire(resource: R, owner: 7, ttl: 30.0).lease
    after = server_now
    assert_operator lease.expires_at, :>=, before + 30.0
    assert_operator lease.expires_at, :<=, after + 30.0
    assert_nil store.clock, "the store's clock is the server's"
  end

  def test_the_servers_clock_is_read_after_the_rows_lock_was_granted
    store = open_store
    old = store.acquire(resource: R, owner: 7, ttl: 1.0).lease # live when the request starts waiting
    holder = connection
    lock_row(holder)
    pid = store.database.backend_pid
    waiter = Thread.new { store.acquire(resource: R, owner: 8, ttl: 30.0) }
    until_waiting_for_a_lock(pid)
    assert eventually(30) { server_now >= old.expires_at }, "the old lease ran out while the request waited"
    released = server_now
    holder.exec("COMMIT")
    decision = waiter.value
    assert_predicate decision, :granted?, "decided at a clock read before the wait, the old lease was still live"
    assert_operator decision.lease.expires_at, :>=, released + 30.0, "the clock was read once the lock was granted"
  end

  # A decision on a row this store's own last commit left is one round trip: the row is not read first, and the
  # commit (lease_machines_commit_known) writes only if the row is still that one. The first request on a resource
  # reads it (two); a fenced write is two (its check, then the block's writes with the mark and COMMIT).
  def test_a_decision_on_the_row_this_store_left_is_one_round_trip_and_a_fence_adds_none_of_its_own
    [true, false].each { |prepared| one_round_trip_on_known_rows(prepared) }
  end

  # Counts each request's round trips on an application's connection, its statements prepared (named, once per
  # session: the first request on a resource prepares its statements in the same round trip) or not.
  def one_round_trip_on_known_rows(prepared)
    resource = "#{R}-#{prepared ? "prepared" : "unprepared"}"
    admin.exec("DROP TABLE IF EXISTS #{@schema}.report")
    conn, store = counted_store(prepared_statements: prepared)
    conn.exec("CREATE TABLE report (token bigint)")
    counts = {}
    requests = {
      acquire: -> { store.acquire(resource: resource, owner: 7, ttl: 30.0) },
      renew: -> { store.renew(resource: resource, owner: 7, token: 1, ttl: 30.0) },
      release: -> { store.release(resource: resource, owner: 7, token: 1) },
      acquire_again: -> { store.acquire(resource: resource, owner: 7, ttl: 30.0) },
      reacquire: -> { store.reacquire(resource: resource, owner: 7, ttl: 30.0) },
      transfer: -> { store.transfer(resource: resource, owner: 7, token: 3, new_owner: 8, ttl: 30.0) },
      refused: -> { store.renew(resource: resource, owner: 7, token: 3, ttl: 30.0) }
    }
    decisions = requests.to_h do |kind, request|
      conn.round_trips = 0
      decision = request.call
      counts[kind] = conn.round_trips
      [kind, decision]
    end
    conn.round_trips = 0
    store.fenced(resource: resource, token: 4) { |db| db.exec_params("INSERT INTO report VALUES ($1)", [4]) }
    counts[:fenced] = conn.round_trips - 1 # the block's own statement
    conn.round_trips = 0
    conn.transaction do
      store.fenced(resource: resource, token: 4) { |db| db.exec_params("INSERT INTO report VALUES ($1)", [4]) }
      counts[:fenced_in_transaction] = conn.round_trips - 2 # BEGIN and the block's statement
    end
    assert_equal({ acquire: 2, renew: 1, release: 1, acquire_again: 1, reacquire: 1, transfer: 1, refused: 1,
                   fenced: 2, fenced_in_transaction: 2 }, counts, "prepared_statements: #{prepared}")
    names = conn.exec("SELECT name FROM pg_prepared_statements").column_values(0)
    if prepared
      assert_operator names.size, :>=, 8, "the decisions' and the fence's statements, each prepared once"
      assert(names.all? { _1.match?(/\Alease_machines_[0-9a-z]+_\h{16}\z/) }, "with the store's own prefix: #{names}")
    else
      assert_empty names
    end
    tokens = %i[acquire renew release acquire_again reacquire transfer].map { decisions[_1].lease&.token }
    assert_equal [1, 1, nil, 2, 3, 4], tokens
    assert_equal %i[rejected stale_token], [decisions[:refused].status, decisions[:refused].reason]
    assert_equal [["4"], ["4"]], conn.exec("SELECT token FROM report").values
    kinds = store.events(resource: resource).map(&:kind)
    assert_equal %i[acquired renewed released acquired reacquired transferred refused], kinds.first(7)
  end

  # A store's own connection runs its statements prepared (each parsed and planned once per session), unless
  # prepared_statements: false (a pooler in transaction mode that does not keep them); an application's connection
  # only when asked. When the session lost them (DISCARD ALL, a pooler's new server connection), or has one of the
  # store's names it did not know of, the round trip that opens a decision is rolled back and sent again, the store
  # having read what the session has: the request goes through.
  def test_prepared_statements_by_default_on_the_stores_own_connection_and_only_there
    names = ->(store) { store.database.exec("SELECT name FROM pg_prepared_statements").column_values(0).sort }
    cycle = lambda do |store, resource|
      token = store.acquire(resource: resource, owner: 7, ttl: 30.0).lease.token
      assert_predicate store.renew(resource: resource, owner: 7, token: token, ttl: 30.0), :renewed?
      store.fenced(resource: resource, token: token) { nil }
      assert_predicate store.release(resource: resource, owner: 7, token: token), :released?
    end
    owned = open_store
    cycle.call(owned, "owned")
    prepared = names.call(owned)
    assert_operator prepared.size, :>=, 8
    assert(prepared.all? { _1.match?(/\Alease_machines_\h{16}\z/) }, prepared.inspect)
    plain = open_store(prepared_statements: false)
    cycle.call(plain, "plain")
    assert_empty names.call(plain)
    given = connection
    cycle.call(open_store(given), "given")
    assert_empty names.call(Struct.new(:database).new(given)), "an application's connection: none unless asked"

    owned.database.exec("DEALLOCATE ALL")
    token = owned.acquire(resource: "owned", owner: 7, ttl: 30.0).lease.token
    assert_equal 2, token, "a request that prepares what it runs works on"
    # A fenced write too, in the store's own transaction or in the application's (whose transaction goes on).
    owned.database.exec("DEALLOCATE ALL")
    owned.fenced(resource: "owned", token: token) { nil }
    joined = open_store(given, prepared_statements: true)
    joined_token = joined.acquire(resource: "given", owner: 8, ttl: 30.0).lease.token
    given.exec("DEALLOCATE ALL")
    given.transaction do
      given.exec("CREATE TABLE joined_write (token bigint)")
      joined.fenced(resource: "given", token: joined_token) { given.exec("INSERT INTO joined_write VALUES (1)") }
    end
    assert_equal [["1"]], given.exec("SELECT token FROM joined_write").values
    # When the store reads what the session has, a name of its own that the session holds for other text is given
    # up: the store never runs another's statement.
    commit = LeaseMachines::Store::PostgreSQL.const_get(:COMMIT_KNOWN) # a renewal on a known row runs it
    victim = "lease_machines_#{Digest::SHA256.hexdigest(commit)[0, 16]}" # its name, a digest of its text
    owned.database.exec("DEALLOCATE ALL")
    owned.database.exec("PREPARE #{victim} AS SELECT 1")
    adapter = owned.instance_variable_get(:@adapter)
    adapter.instance_variable_set(:@prepared_names, [:unknown]) # as after a round trip that found the session otherwise
    assert_predicate owned.renew(resource: "owned", owner: 7, token: token, ttl: 30.0), :renewed?
    assert_predicate owned.release(resource: "owned", owner: 7, token: token), :released?
    statements = owned.database.exec("SELECT name, statement FROM pg_prepared_statements").values.to_h
    assert_equal "PREPARE #{victim} AS SELECT 1", statements[victim]
    assert_equal [commit], statements.filter_map { |name, sql| sql if name.start_with?("#{victim}_") },
                 "the statement it named so was prepared under another name"
    assert_equal [nil, 2], [owned.checkpoint(resource: "owned").lease, owned.checkpoint(resource: "owned").last_issued]
    assert_equal %i[acquired renewed write_accepted released acquired write_accepted renewed released],
                 owned.events(resource: "owned").map(&:kind), "each request once"

    assert_raises(TypeError) { open_store(prepared_statements: "yes") }
    error = assert_raises(ArgumentError) { LeaseMachines::Store.new(":memory:", prepared_statements: false) }
    assert_equal "only a PostgreSQL store takes prepared_statements:", error.message
    error = assert_raises(ArgumentError) do
      LeaseMachines::Store.new(":memory:", strict: :fsync, prepared_statements: 1)
    end
    assert_equal "only a Redis store takes strict:; only a PostgreSQL store takes prepared_statements:", error.message
    error = assert_raises(ArgumentError) { LeaseMachines::Store.new(":memory:", colour: 1, prepared_statements: 1) }
    assert_equal "unknown keyword: :colour", error.message
  end

  # Another store's commit moves the row: the first store's commit finds it moved, writes nothing and answers the row
  # as it is now, and the decision is made again on that answer (two round trips), as on a row it read.
  def test_a_row_another_store_moved_is_answered_by_the_commit_and_decided_again
    conn, mine = counted_store
    other = open_store
    token = mine.acquire(resource: R, owner: 7, ttl: 0.5).lease.token
    assert eventually(5) { server_now > mine.checkpoint(resource: R).lease.expires_at }
    taken = other.acquire(resource: R, owner: 8, ttl: 30.0)
    assert_predicate taken, :granted?
    conn.round_trips = 0
    renewal = mine.renew(resource: R, owner: 7, token: token, ttl: 30.0)
    assert_equal 2, conn.round_trips, "the commit's answer, then the commit of the decision made on it"
    assert_equal %i[rejected stale_token], [renewal.status, renewal.reason], "decided on the row as it is now"
    assert_equal [8, taken.lease.token], mine.checkpoint(resource: R).lease.then { [_1.owner, _1.token] }
    trips = 3.times.map do
      conn.round_trips = 0
      assert_predicate mine.renew(resource: R, owner: 8, token: taken.lease.token, ttl: 30.0), :renewed?
      conn.round_trips
    end
    assert_equal [2, 1, 1], trips, "read once under the lock (the row had moved), then quiet: as its commits left it"
  end

  # Where another store decides on the resource between this store's requests, each request reads the row under its
  # lock, two round trips: never a commit refused first (three or four).
  def test_a_resource_two_stores_take_turns_on_is_two_round_trips_a_decision_never_more
    connections, stores = Array.new(2) { counted_store }.transpose
    token = stores[0].acquire(resource: R, owner: 7, ttl: 30.0).lease.token
    trips = 6.times.map do |turn|
      conn = connections[turn % 2]
      conn.round_trips = 0
      decision = stores[turn % 2].renew(resource: R, owner: 7, token: token, ttl: 30.0)
      assert_predicate decision, :renewed?
      conn.round_trips
    end
    # The first renewal is on the row the acquire left (one); then each finds the other's commit: answered once (two),
    # then read under the lock (two).
    assert_equal [1, 2, 2, 2, 2, 2], trips
  end

  # The instant of a decision on a known row is the server's clock as the store last read it, carried forward by
  # this process's monotonic clock; the commit refuses one later than the server's clock, or more than a quarter
  # second before it (a process frozen between its decision and its commit): the decision is made again at the
  # server's clock as the commit read it.
  def test_a_carried_clock_the_server_disagrees_with_is_refused_and_the_decision_made_at_the_servers_clock
    conn, store = counted_store
    token = store.acquire(resource: R, owner: 7, ttl: 30.0).lease.token
    adapter = store.instance_variable_get(:@adapter)
    { "a minute ahead of the server" => 60.0, "ten seconds behind it" => -10.0 }.each do |off, seconds|
      read, at = adapter.instance_variable_get(:@server_clock)
      adapter.instance_variable_set(:@server_clock, [read + seconds, at])
      conn.round_trips = 0
      before = server_now
      renewed = store.renew(resource: R, owner: 7, token: token, ttl: 30.0)
      after = server_now
      assert_equal 2, conn.round_trips, off
      assert_operator renewed.lease.expires_at, :>=, before + 30.0, off
      assert_operator renewed.lease.expires_at, :<=, after + 30.0, "#{off}: decided at the server's clock"
    end
  end

  # What the store knew of rows is its session's: a connection that reconnected (an application's, which the store
  # does not reset itself) may have reached another server, so the next decision reads the row (and the server's
  # history) again.
  def test_what_the_store_knew_is_forgotten_when_its_connection_reconnects
    conn, store = counted_store
    token = store.acquire(resource: R, owner: 7, ttl: 30.0).lease.token
    conn.reset
    conn.round_trips = 0
    assert_predicate store.renew(resource: R, owner: 7, token: token, ttl: 30.0), :renewed?
    assert_equal 3, conn.round_trips, "the server's identity, then the row read and the commit"
  end

  # A decision that issues a token on a known row commits only in the server's own history as it is now: a database
  # restored or copied onto another server (its history row naming the old one) is decided on by reading, which
  # moves the token epoch, never in the old epoch.
  def test_a_token_on_a_known_row_is_issued_only_in_the_servers_own_history
    store = open_store
    token = store.acquire(resource: R, owner: 7, ttl: 30.0).lease.token
    assert_predicate store.release(resource: R, owner: 7, token: token), :released?
    copied = "7000000000000000001/00000001" # another server's history, as a copy of the database would carry it
    admin.exec_params("UPDATE #{@schema}.lease_machines_history SET history = $1", [copied])
    known = store.instance_variable_get(:@adapter).instance_variable_get(:@known).fetch(R)
    known.history = copied # as a store that learnt the row on that other server would know it
    granted = store.acquire(resource: R, owner: 8, ttl: 30.0).lease.token
    assert_operator granted, :>, 2**LeaseMachines::TOKEN_EPOCH_BITS, "a token of a new epoch, not #{token + 1}"
  end

  # A database whose schema an earlier version made has no lease_machines_commit_known: a store that may write its
  # schema creates it; one that may not (migrate: false) reads every row before deciding, two round trips.
  def test_without_the_commit_function_every_decision_reads_its_row_first
    open_store.close
    admin.exec("DROP FUNCTION #{@schema}.lease_machines_commit_known")
    conn, store = counted_store(migrate: false)
    token = store.acquire(resource: R, owner: 7, ttl: 30.0).lease.token
    conn.round_trips = 0
    assert_predicate store.renew(resource: R, owner: 7, token: token, ttl: 30.0), :renewed?
    assert_equal 2, conn.round_trips
    found = "SELECT count(*) FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace " \
            "WHERE proname = 'lease_machines_commit_known' AND nspname = '#{@schema}'"
    assert_equal "0", admin.exec(found).getvalue(0, 0)
    open_store(connection)
    assert_equal "1", admin.exec(found).getvalue(0, 0), "created by a store that may write the schema"
  end

  def test_statements_given_up_front_make_the_whole_fenced_write_two_round_trips
    conn, store = counted_store
    conn.exec("CREATE TABLE report (line text, token bigint)")
    token = store.acquire(resource: R, owner: 7, ttl: 30.0).lease.token
    conn.round_trips = 0
    statements = [["INSERT INTO report VALUES ($1, $2)", ["header", token]],
                  ["INSERT INTO report VALUES ($1, $2) RETURNING line", ["totals", token]]]
    assert_equal [[], [["totals"]]], store.fenced(resource: R, token: token, statements: statements)
    assert_equal 2, conn.round_trips
    assert_equal token, store.fence_highest(resource: R)
    store.acquire(resource: R, owner: 8, ttl: 30.0, now: server_now + 60)
    error = assert_raises(LeaseMachines::Fenced) { store.fenced(resource: R, token: token, statements: statements) }
    assert_equal :stale_token, error.reason
    assert_equal 2, conn.exec("SELECT count(*) FROM report").getvalue(0, 0).to_i, "the refused statements never ran"
  end

  def test_statements_that_are_not_sql_and_binds_pairs_are_refused
    ill_typed!
    store = open_store
    token = store.acquire(resource: R, owner: 7, ttl: 30.0).lease.token
    error = assert_raises(TypeError) { store.fenced(resource: R, token: token, statements: [["SELECT 1"]]) }
    assert_match(/statements must be an Array of \[sql, binds\] pairs/, error.message)
    assert_raises(TypeError) { store.fenced(resource: R, token: token, statements: [[:sql, []]]) }
    assert_raises(ArgumentError) { store.fenced(resource: R, token: token, statements: []) { nil } }
  end

  def test_each_request_makes_one_native_decision_call
    store = open_store
    store.acquire(resource: R, owner: 7, ttl: 30.0, now: 1.0)
    calls = native_calls { store.renew(resource: R, owner: 7, token: 1, ttl: 30.0, now: 2.0) }
    assert_equal %i[_resource_name _store_decide], calls
    calls = native_calls { store.fenced(resource: R, token: 1, now: 3.0) { nil } }
    assert_equal %i[_resource_name _store_check_write], calls
  end

  def test_a_lock_wait_is_bounded_and_raises_store_error_with_nothing_changed
    store = open_store(busy_timeout: 0.2)
    store.acquire(resource: R, owner: 7, ttl: 30.0, now: 1.0)
    holder = connection
    lock_row(holder)
    started = Process.clock_gettime(Process::CLOCK_MONOTONIC)
    error = assert_raises(LeaseMachines::StoreError) { store.acquire(resource: R, owner: 8, ttl: 30.0, now: 40.0) }
    waited = Process.clock_gettime(Process::CLOCK_MONOTONIC) - started
    assert_match(/lock timeout/, error.message)
    assert_operator waited, :<, 2.0
    holder.exec("ROLLBACK")
    assert_equal 1, store.revision(resource: R), "the refused request changed nothing"
    assert_equal PG::PQTRANS_IDLE, store.database.transaction_status
    assert_equal "0", store.database.exec("SHOW lock_timeout").getvalue(0, 0), "no session setting was left behind"
  end

  def test_a_fenced_write_joins_the_applications_transaction_and_rolls_back_with_it
    conn = connection
    store = open_store(conn)
    conn.exec("CREATE TABLE report (token bigint)")
    token = store.acquire(resource: R, owner: 7, ttl: 30.0).lease.token
    conn.exec("BEGIN")
    store.fenced(resource: R, token: token) { |db| db.exec_params("INSERT INTO report VALUES ($1)", [token]) }
    assert_equal PG::PQTRANS_INTRANS, conn.transaction_status, "the application's transaction is still open"
    conn.exec("ROLLBACK")
    assert_nil store.fence_highest(resource: R)
    assert_equal 0, conn.exec("SELECT count(*) FROM report").getvalue(0, 0).to_i
    conn.transaction do
      store.fenced(resource: R, token: token) { |db| db.exec_params("INSERT INTO report VALUES ($1)", [token]) }
    end
    assert_equal token, store.fence_highest(resource: R)
  end

  def test_a_stale_holder_is_refused_before_its_successor_writes
    store = open_store
    first = store.acquire(resource: R, owner: 7, ttl: 1.0, now: 10.0).lease
    store.acquire(resource: R, owner: 8, ttl: 30.0, now: 12.0)
    ran = false
    error = assert_raises(LeaseMachines::Fenced) { store.fenced(resource: R, token: first.token, now: 12.5) { ran = true } }
    assert_equal [:stale_token, 2], [error.reason, error.highest]
    refute ran
  end

  def test_tokens_above_the_bigint_range_are_refused_with_store_error
    store = open_store
    store.acquire(resource: R, owner: 7, ttl: 1.0, now: 1.0)
    max = LeaseMachines::Store::MAX_TOKEN
    admin.exec_params("UPDATE #{@schema}.lease_machines_leases SET token = $1, last_issued = $1, revision = $1",
                      [max])
    error = assert_raises(LeaseMachines::StoreError) { store.acquire(resource: R, owner: 8, ttl: 1.0, now: 5.0) }
    assert_match(/does not fit/, error.message)
    assert_equal max, store.checkpoint(resource: R).last_issued
  end

  def test_owners_across_the_whole_u64_range_round_trip
    store = open_store
    [0, 2**63 - 1, 2**63, 2**64 - 1].each_with_index do |owner, index|
      lease = store.acquire(resource: "r#{index}", owner: owner, ttl: 1.0, now: 1.0).lease
      assert_equal owner, lease.owner
      assert_equal owner, store.checkpoint(resource: "r#{index}").lease.owner
    end
  end

  def test_resource_names_are_bound_or_quoted_never_sql
    store = open_store
    names = ["it's; DROP TABLE lease_machines_leases; --", "a\\'; SELECT 1; --", "$1 \\0 \\1 %s", "ünïcode ☃",
             "a" * LeaseMachines::MAX_RESOURCE_BYTES]
    names.each do |name|
      assert_predicate store.acquire(resource: name, owner: 1, ttl: 1.0, now: 1.0), :granted?
      assert_equal 1, store.checkpoint(resource: name).last_issued
    end
    assert_equal names.sort, admin.exec("SELECT resource FROM #{@schema}.lease_machines_leases").column_values(0).sort
    error = assert_raises(ArgumentError) { store.acquire(resource: "a\0b", owner: 1, ttl: 1.0, now: 1.0) }
    assert_equal "resource \"a\\u0000b\" contains a NUL byte, which PostgreSQL's text cannot hold", error.message
    assert_raises(ArgumentError) { store.acquire(resource: "\xFF".b, owner: 1, ttl: 1.0, now: 1.0) }
    assert_raises(ArgumentError) { store.acquire(resource: "a" * 1_000_000, owner: 1, ttl: 1.0, now: 1.0) }
  end

  def test_an_unreachable_server_or_a_wrong_password_is_a_store_error_that_never_shows_the_password
    port = TCPServer.open("127.0.0.1", 0).then { |server| server.addr[1].tap { server.close } }
    error = assert_raises(LeaseMachines::StoreError) do
      LeaseMachines::Store.new("postgresql://postgres:s3cr3t-pw@127.0.0.1:#{port}/postgres?connect_timeout=2")
    end
    assert_match(/127\.0\.0\.1/, error.message)
    refute_match(/s3cr3t-pw/, error.message)
    admin.exec("DROP ROLE IF EXISTS lm_pw; CREATE ROLE lm_pw LOGIN PASSWORD 'right-pw'")
    hba = File.join(@cluster.dir, "data", "pg_hba.conf")
    original = File.read(hba)
    File.write(hba, "host all lm_pw 127.0.0.1/32 scram-sha-256\n#{original}")
    admin.exec("SELECT pg_reload_conf()")
    begin
      error = assert_raises(LeaseMachines::StoreError) do
        LeaseMachines::Store.new("postgresql://lm_pw:wr0ng-pw@127.0.0.1:#{@cluster.port}/postgres")
      end
      assert_match(/password authentication failed/, error.message)
      refute_match(/wr0ng-pw/, error.message)
      error = assert_raises(LeaseMachines::StoreError) do
        LeaseMachines::Store.new("host=127.0.0.1 port=#{@cluster.port} dbname=postgres user=lm_pw password='wr0ng pw'")
      end
      assert_match(/\Acannot open the lease store at host=127\.0\.0\.1 port=#{@cluster.port} dbname=postgres user=lm_pw: /,
                   error.message)
      assert_match(/password authentication failed/, error.message)
      refute_match(/wr0ng/, error.message)
      store = open_store("host=127.0.0.1 port=#{@cluster.port} dbname=postgres user=postgres password=unused-pw " \
                         "options='-csearch_path=#{@schema}'")
      assert_equal ["host=127.0.0.1 port=#{@cluster.port} dbname=postgres user=postgres", :postgresql],
                   [store.path, store.adapter_name]
      assert_predicate store.acquire(resource: R, owner: 7, ttl: 30.0), :granted?
    ensure
      File.write(hba, original)
      admin.exec("SELECT pg_reload_conf()")
    end
    error = assert_raises(TypeError) { LeaseMachines::Store.new(Object.new) }
    assert_match(/PG::Connection/, error.message)
  end

  def test_a_newer_schema_format_or_a_foreign_table_is_refused
    open_store.close
    admin.exec("UPDATE #{@schema}.lease_machines_schema SET format = 3")
    error = assert_raises(LeaseMachines::StoreError) { open_store }
    assert_match(/format 3; this lease_machines reads format 2 only/, error.message)
    other = "t_#{SecureRandom.hex(6)}"
    admin.exec("CREATE SCHEMA #{other}; CREATE TABLE #{other}.lease_machines_leases (resource text, holder text)")
    error = assert_raises(LeaseMachines::StoreError) do
      LeaseMachines::Store.new("#{@cluster.url}?options=-csearch_path%3D#{other}")
    end
    assert_match(/lease_machines_leases is not the lease store's table/, error.message)
  end

  def test_tables_without_their_format_row_are_taken_over_as_a_schema_dump_leaves_them
    open_store.acquire(resource: R, owner: 7, ttl: 30.0, now: 1.0)
    admin.exec("DELETE FROM #{@schema}.lease_machines_schema") # db:schema:load keeps no rows
    store = open_store
    assert_equal 1, store.checkpoint(resource: R).last_issued
    assert_equal [["2"]], admin.exec("SELECT format FROM #{@schema}.lease_machines_schema").values
    admin.exec("DELETE FROM #{@schema}.lease_machines_schema")
    conn = connection
    conn.exec("BEGIN")
    error = assert_raises(LeaseMachines::StoreError) { open_store(conn) }
    assert_match(/its format row is missing and a transaction is open/, error.message)
  end

  def test_a_row_deleted_while_a_request_waits_for_it_raises_store_error_and_grants_nothing
    store = open_store
    store.acquire(resource: R, owner: 7, ttl: 30.0, now: 1.0)
    holder = connection
    lock_row(holder)
    pid = store.database.backend_pid
    waiter = Thread.new { store.acquire(resource: R, owner: 8, ttl: 30.0, now: 40.0) }
    waiter.report_on_exception = false # its StoreError is the test's
    until_waiting_for_a_lock(pid)
    holder.exec_params("DELETE FROM lease_machines_leases WHERE resource = $1", [R])
    holder.exec("COMMIT")
    error = assert_raises(LeaseMachines::StoreError) { waiter.value }
    assert_match(/was deleted while the request waited/, error.message)
    assert_equal 0, admin.exec("SELECT count(*) FROM #{@schema}.lease_machines_leases").getvalue(0, 0).to_i
  end

  def test_a_row_deleted_between_requests_raises_store_error_once_and_the_next_request_starts_it_anew
    store = open_store
    assert_equal 1, store.acquire(resource: R, owner: 7, ttl: 30.0, now: 1.0).lease.token
    admin.exec_params("DELETE FROM #{@schema}.lease_machines_leases WHERE resource = $1", [R])
    error = assert_raises(LeaseMachines::StoreError) { store.acquire(resource: R, owner: 8, ttl: 30.0, now: 2.0) }
    assert_match(/was deleted .*nothing was decided/, error.message)
    assert_equal 0, admin.exec("SELECT count(*) FROM #{@schema}.lease_machines_leases").getvalue(0, 0).to_i
    assert_predicate store.acquire(resource: R, owner: 8, ttl: 30.0, now: 3.0), :granted?
    assert_equal 1, admin.exec("SELECT count(*) FROM #{@schema}.lease_machines_leases").getvalue(0, 0).to_i
  end

  def test_a_first_request_that_rolled_back_leaves_the_next_one_to_make_the_row_exist
    store = open_store
    assert_raises(ArgumentError) { store.acquire(resource: R, owner: 7, ttl: -5.0) } # after the row's INSERT
    assert_equal 0, admin.exec("SELECT count(*) FROM #{@schema}.lease_machines_leases").getvalue(0, 0).to_i
    assert_equal 1, store.acquire(resource: R, owner: 7, ttl: 5.0).lease.token
  end

  def test_the_connections_settings_change_no_decision_and_no_durability
    admin.exec("ALTER ROLE postgres SET extra_float_digits = -15; ALTER ROLE postgres SET synchronous_commit = off; " \
               "ALTER ROLE postgres SET bytea_output = escape")
    conn = connection
    conn.type_map_for_results = PG::BasicTypeMapForResults.new(conn)
    store = open_store(conn)
    first = store.acquire(resource: R, owner: 7, ttl: 30.0).lease
    assert_equal :occupied, store.acquire(resource: R, owner: 8, ttl: 30.0).reason, "read back exactly"
    assert_equal first, store.checkpoint(resource: R).lease
    store.fenced(resource: R, token: first.token) do |db|
      assert_equal "on", db.exec("SHOW synchronous_commit").getvalue(0, 0), "the store's own commits are durable"
    end
    # A store on its own connection (no savepoint mark), with doubles no short text holds exactly.
    owned = open_store
    now = 1.0 / 3
    lease = owned.acquire(resource: "exact", owner: 9, ttl: 0.1, now: now).lease
    assert_in_delta now + 0.1, lease.expires_at, 1e-9 # the core's nanoseconds
    assert_equal lease, owned.checkpoint(resource: "exact").lease
    stored = admin.exec("SELECT encode(float8send(expires_at), 'hex') FROM #{@schema}.lease_machines_leases " \
                        "WHERE resource = 'exact'").getvalue(0, 0)
    assert_equal [lease.expires_at].pack("G").unpack1("H*"), stored, "the double itself, stored"
    assert_equal :occupied, owned.acquire(resource: "exact", owner: 8, ttl: 0.1, now: lease.expires_at - 1e-9).reason
    assert_predicate owned.acquire(resource: "exact", owner: 8, ttl: 0.1, now: lease.expires_at), :granted?
  ensure
    admin.exec("ALTER ROLE postgres RESET extra_float_digits; ALTER ROLE postgres RESET synchronous_commit; " \
               "ALTER ROLE postgres RESET bytea_output")
  end

  def test_a_busy_timeout_of_zero_waits_the_shortest_time_not_forever
    store = open_store(busy_timeout: 0)
    store.acquire(resource: R, owner: 7, ttl: 30.0, now: 1.0)
    holder = connection
    lock_row(holder)
    started = Process.clock_gettime(Process::CLOCK_MONOTONIC)
    assert_raises(LeaseMachines::StoreError) { store.acquire(resource: R, owner: 8, ttl: 30.0, now: 40.0) }
    assert_operator Process.clock_gettime(Process::CLOCK_MONOTONIC) - started, :<, 1.0
  ensure
    holder&.exec("ROLLBACK")
  end

  def test_a_row_with_nan_or_infinity_is_corrupt
    store = open_store
    store.acquire(resource: R, owner: 7, ttl: 30.0, now: 1.0)
    admin.exec("UPDATE #{@schema}.lease_machines_leases SET observed = 'NaN'")
    error = assert_raises(LeaseMachines::StoreError) { store.checkpoint(resource: R) }
    assert_match(/corrupt lease row/, error.message)
    admin.exec("UPDATE #{@schema}.lease_machines_leases SET observed = 1, expires_at = 'Infinity'")
    assert_raises(LeaseMachines::StoreError) { store.acquire(resource: R, owner: 8, ttl: 30.0, now: 40.0) }
  end

  def test_statements_that_end_the_transaction_are_caught_before_the_mark
    store = open_store
    store.database.exec("CREATE TABLE report (token bigint)")
    token = store.acquire(resource: R, owner: 7, ttl: 30.0).lease.token
    error = assert_raises(LeaseMachines::StoreError) do
      store.fenced(resource: R, token: token, statements: [["COMMIT", []], ["INSERT INTO report VALUES ($1)", [token]]])
    end
    assert_match(/ended the store's transaction/, error.message)
    assert_nil store.fence_highest(resource: R)
    assert_raises(LeaseMachines::StoreError) { store.fenced(resource: R, token: token) { |db| db.exec("COMMIT; BEGIN") } }
    assert_nil store.fence_highest(resource: R)
  end

  def test_a_badly_encoded_password_is_masked_too
    error = assert_raises(LeaseMachines::StoreError) do
      LeaseMachines::Store.new("postgresql://postgres:s3cr%zzet@127.0.0.1:#{@cluster.port}/postgres")
    end
    refute_match(/s3cr/, error.full_message)
    error = assert_raises(LeaseMachines::StoreError) do
      LeaseMachines::Store.new("postgresql://127.0.0.1:#{@cluster.port}/postgres?password=s3cr%zzet")
    end
    refute_match(/s3cr/, error.full_message)
    store = open_store("postgresql://postgres:hidden-pw@127.0.0.1:#{@cluster.port}/postgres?options=-csearch_path%3D#{@schema}")
    refute_match(/hidden-pw/, store.inspect)
  end

  def test_a_connection_killed_mid_request_raises_store_error_and_the_next_request_reads_the_truth
    store = open_store(busy_timeout: 10.0)
    store.acquire(resource: R, owner: 7, ttl: 30.0, now: 1.0)
    holder = connection
    lock_row(holder)
    pid = store.database.backend_pid
    killer = Thread.new do
      until_waiting_for_a_lock(pid)
      admin.exec_params("SELECT pg_terminate_backend($1)", [pid])
    end
    assert_raises(LeaseMachines::StoreError) { store.acquire(resource: R, owner: 8, ttl: 30.0, now: 40.0) }
    killer.join
    holder.exec("ROLLBACK")
    assert_equal 7, store.checkpoint(resource: R).lease.owner, "the store reconnected and read what was committed"
    assert_equal :granted, store.acquire(resource: R, owner: 8, ttl: 30.0, now: 40.0).status
  end

  def test_a_store_opened_again_keeps_its_url_and_never_shows_its_password
    url = @url.sub("postgres@", "postgres:hunter2-secret@")
    store = open_store(url)
    again = store.reopen.tap { @stores << _1 }
    refute_equal store.database.backend_pid, again.database.backend_pid, "a connection of its own"
    again.acquire(resource: R, owner: 7, ttl: 30.0, now: 1.0)
    assert_equal 1, store.checkpoint(resource: R).last_issued, "the same database"
    [store, again].each { refute_includes _1.inspect, "hunter2" }
  end

  def test_a_database_of_the_version_before_token_epochs_gets_its_history_table_or_is_refused_naming_it
    open_store.acquire(resource: R, owner: 7, ttl: 30.0, now: 0.0)
    admin.exec("DROP TABLE #{@schema}.lease_machines_history") # as the version before token epochs left it
    error = assert_raises(LeaseMachines::StoreError) { LeaseMachines::Store.new(@url, migrate: false) }
    assert_match(/its tables \(lease_machines_history\) are missing, and this store may not write/, error.message)
    store = open_store
    assert_equal 2, store.acquire(resource: R, owner: 8, ttl: 30.0, now: 31.0).lease.token, "epoch 0: tokens go on"
    assert_equal [["0"]], admin.exec("SELECT epoch FROM #{@schema}.lease_machines_history").values
  end

  def test_a_lost_reply_to_commit_says_the_outcome_is_unknown_and_the_truth_is_read_next
    proxy = CommitCutter.new("127.0.0.1", @cluster.port)
    store = open_store("postgresql://postgres@127.0.0.1:#{proxy.port}/postgres?options=-csearch_path%3D#{@schema}")
    proxy.cut_after_commit!
    error = assert_raises(LeaseMachines::StoreError) { store.acquire(resource: R, owner: 7, ttl: 30.0, now: 1.0) }
    assert_match(/whether it committed is unknown/, error.message)
    truth = open_store.checkpoint(resource: R)
    assert_equal 1, truth.last_issued, "the server committed the grant whose reply was lost"
    assert_equal 8, store.acquire(resource: R, owner: 8, ttl: 30.0, now: 40.0).then { _1.lease.owner }
  ensure
    proxy&.close
  end

  # A TCP proxy to the server that, once armed, forwards the client's bytes up to and including a COMMIT, then
  # drops the connection before the server's reply reaches the client.
  class CommitCutter
    attr_reader :port

    def initialize(host, port)
      @server = TCPServer.new("127.0.0.1", 0)
      @port = @server.addr[1]
      @armed = false
      @thread = Thread.new do
        loop do
          client = @server.accept
          upstream = TCPSocket.new(host, port)
          Thread.new { pump(client, upstream, up: true) }
          Thread.new { pump(upstream, client, up: false) }
        end
      rescue IOError, SystemCallError
        nil
      end
    end

    def cut_after_commit! = @armed = true

    def close
      @thread.kill
      @server.close
    end

    private

    def pump(from, to, up:)
      loop do
        data = from.readpartial(65_536)
        if !up && @cut
          @cut = @armed = false # once: the client's next connection goes through
          [from, to].each(&:close)
          break
        end
        to.write(data)
        @cut = true if up && @armed && data.include?("COMMIT\0") # the statement, not READ COMMITTED
      end
    rescue IOError, SystemCallError
      [from, to].each { |socket| socket.close unless socket.closed? }
    end
  end
end
