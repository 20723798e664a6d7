# frozen_string_literal: true

require "pathname"
require "socket"
require "test_helper"
require "lease_machines/store" if LeaseMachines::TestSupport::SQLITE3

# Every argument of the store checked as the contract says, rows read whatever the connection's settings, rows no
# history can produce refused with StoreError, and the application's own transactions left alone or joined.
class StoreInputsTest < Minitest::Test
  R = "nightly-report"

  def setup
    requires_sqlite3!
    @dir = scratch_dir("lease-store-inputs")
    @path = File.join(@dir, "leases.sqlite3")
    @store = LeaseMachines::Store.new(@path, clock: STILL_CLOCK)
  end

  def teardown
    @store&.close
  end

  def write(conn, token) = conn.execute("INSERT INTO report VALUES (?)", [token])

  def test_a_made_up_token_on_a_resource_never_granted_is_refused_and_sets_no_mark
    error = assert_raises(ArgumentError) { @store.fenced(resource: R, token: 1_000_000) { flunk "must not run" } }
    assert_equal "nightly-report: token 1000000 was never issued (no lease was ever granted on it)", error.message
    assert_nil @store.fence_highest(resource: R)
    lease = granted(@store.acquire(resource: R, owner: 7, ttl: 5.0, now: 0.0))
    assert_equal :ok, @store.fenced(resource: R, token: lease.token) { :ok }, "a real token is still accepted"
  end

  def test_a_connection_with_results_as_hash_works_for_every_call
    db = SQLite3::Database.new(File.join(@dir, "hash.sqlite3"), results_as_hash: true)
    store = LeaseMachines::Store.new(db, clock: STILL_CLOCK)
    lease = granted(store.acquire(resource: R, owner: 7, ttl: 5.0, now: 0.0))
    assert_equal :renewed, store.renew(resource: R, owner: 7, token: lease.token, ttl: 5.0, now: 1.0).status
    assert_equal :occupied, store.acquire(resource: R, owner: 8, ttl: 5.0, now: 2.0).reason
    assert_equal 2, store.revision(resource: R)
    assert_equal 6.0, store.checkpoint(resource: R).lease.expires_at
    assert_equal :written, store.fenced(resource: R, token: 1) { :written }
    assert_equal 1, store.fence_highest(resource: R)
    assert_equal :released, store.release(resource: R, owner: 7, token: 1, now: 3.0).status
    db.close
  end

  def test_resources_are_non_empty_utf8_strings_of_bounded_size
    ill_typed!
    [123, ["123"], :nightly, nil, BasicObject.new].each do |resource|
      error = assert_raises(TypeError) { @store.acquire(resource: resource, owner: 1, ttl: 1.0, now: 0.0) }
      assert_match(/\Aresource must be a String, got /, error.message)
    end
    assert_equal "resource must not be empty", assert_raises(ArgumentError) { @store.checkpoint(resource: "") }.message
    assert_match(/\Aresource must be valid UTF-8, got /,
                 assert_raises(ArgumentError) { @store.revision(resource: "\xff".b) }.message)
    long = "x" * (LeaseMachines::MAX_RESOURCE_BYTES + 1)
    assert_equal "resource must be at most 1024 bytes of UTF-8, got 1025 bytes",
                 assert_raises(ArgumentError) { @store.fenced(resource: long, token: 1) { flunk } }.message
    assert_equal 0, @store.database.get_first_value("SELECT count(*) FROM lease_machines_leases")
  end

  def test_the_same_utf8_bytes_name_the_same_lease_whatever_the_strings_encoding
    lease = granted(@store.acquire(resource: "relevé", owner: 7, ttl: 5.0, now: 0.0))
    assert_equal lease, @store.checkpoint(resource: "relevé".b).lease
    name = @store.database.get_first_value("SELECT resource FROM lease_machines_leases")
    assert_equal ["relevé", Encoding::UTF_8], [name, name.encoding]
    assert_equal "text", @store.database.get_first_value("SELECT typeof(resource) FROM lease_machines_leases")
  end

  def test_a_name_with_a_nul_byte_is_kept_by_sqlite_byte_for_byte
    lease = granted(@store.acquire(resource: "a\0b", owner: 7, ttl: 5.0, now: 0.0))
    granted(@store.acquire(resource: "a\0c", owner: 8, ttl: 5.0, now: 0.0))
    assert_equal :ok, @store.fenced(resource: "a\0b", token: lease.token, now: 1.0) { :ok }
    assert_equal [lease.token, nil], [@store.fence_highest(resource: "a\0b"), @store.fence_highest(resource: "a")]
    assert_equal ["a\0b", "a\0c"], @store.resources(prefix: "a\0").map(&:resource)
    stored = @store.database.execute("SELECT resource, length(CAST(resource AS BLOB)) FROM lease_machines_leases")
    assert_equal [["a\0b", 3], ["a\0c", 3]], stored.sort
    assert_predicate @store.audit, :valid?
  end

  def test_now_false_is_refused_not_read_as_the_wall_clock
    ill_typed!
    error = assert_raises(TypeError) { @store.acquire(resource: R, owner: 1, ttl: 1.0, now: false) }
    assert_equal "now must be seconds as a Float or an Integer, got FalseClass false", error.message
    assert_equal 0, @store.revision(resource: R)
  end

  def test_busy_timeout_takes_seconds_in_its_range
    ill_typed!
    assert_raises(TypeError) { LeaseMachines::Store.new(@path, busy_timeout: "5") }
    LeaseMachines::Store.new(@path, busy_timeout: nil).close # the default: 5 seconds for a path
    [Float::NAN, -1, -0.001, Float::INFINITY, 3e6].each do |seconds|
      error = assert_raises(ArgumentError) { LeaseMachines::Store.new(@path, busy_timeout: seconds) }
      assert_match(/\Abusy_timeout must be between 0 and 2147483\.647 seconds, got /, error.message)
    end
    LeaseMachines::Store.new(@path, busy_timeout: 0).close
  end

  def test_a_database_that_is_not_a_path_or_a_connection_is_refused_and_creates_no_file
    ill_typed!
    Dir.chdir(@dir) do
      before = Dir.children(".")
      [Object.new, BasicObject.new, 42, nil].each do |database|
        error = assert_raises(TypeError) { LeaseMachines::Store.new(database) }
        assert_match(/\Adatabase must be a path \(String or Pathname\), an SQLite3::Database, a postgresql:\/\/ URL or a PG::Connection, got /,
                     error.message)
      end
      assert_raises(ArgumentError) { LeaseMachines::Store.new("") }
      assert_equal before, Dir.children(".")
    end
    LeaseMachines::Store.new(Pathname(@path)).close
  end

  def test_a_libpq_keyword_string_is_a_postgresql_database_named_without_its_password_never_a_file
    begin
      require "pg"
    rescue LoadError
      skip "the pg gem is not installed for this Ruby"
    end
    port = TCPServer.open("127.0.0.1", 0).then { |server| server.addr[1].tap { server.close } }
    Dir.chdir(@dir) do
      before = Dir.children(".")
      { "host=127.0.0.1 port=#{port} dbname=app user=worker password=hunter2" => " user=worker",
        "host = 127.0.0.1 port=#{port}  password = 'hunter2 \\' it' dbname=app sslpassword=hunter2" => "" }
        .each do |database, user|
          error = assert_raises(LeaseMachines::StoreError) { LeaseMachines::Store.new(database) }
          assert_match(/\Acannot open the lease store at host=127\.0\.0\.1 port=#{port} dbname=app#{user}: \S/,
                       error.message)
          refute_includes error.message, "hunter2"
        end
      assert_equal before, Dir.children(".")
    end
  end

  def test_a_clock_that_cannot_be_called_is_refused
    ill_typed!
    error = assert_raises(TypeError) { LeaseMachines::Store.new(@path, clock: 12.0) }
    assert_equal "clock must respond to call, got 12.0", error.message
  end

  def test_a_clock_that_calls_the_store_back_is_refused_and_nothing_is_half_written
    store = nil
    clock = lambda do
      store.acquire(resource: "other", owner: 1, ttl: 1.0, now: 0.0)
      10.0
    end
    store = LeaseMachines::Store.new(@path, clock: clock)
    error = assert_raises(LeaseMachines::StoreError) { store.acquire(resource: R, owner: 7, ttl: 5.0) }
    assert_match(/called from inside one of its own requests/, error.message)
    refute_predicate store.database, :transaction_active?
    assert_equal [0, 0], [store.revision(resource: R), store.revision(resource: "other")]
    store.close
  end

  def test_transfer_checks_the_new_owner_even_when_the_release_is_refused
    ill_typed!
    @store.acquire(resource: R, owner: 7, ttl: 5.0, now: 0.0)
    error = assert_raises(RangeError) do
      @store.transfer(resource: R, owner: 7, token: 99, new_owner: -1, ttl: 5.0, now: 1.0)
    end
    assert_equal "new_owner must be in 0..2**64-1, got -1", error.message, "named as Table#transfer names it"
    refused = @store.transfer(resource: R, owner: 7, token: 99, new_owner: 8, ttl: 5.0, now: 1.0)
    assert_equal :stale_token, refused.reason
  end

  def test_corrupt_fence_marks_raise_store_error
    lease = granted(@store.acquire(resource: R, owner: 7, ttl: 5.0, now: 0.0))
    @store.database.execute("PRAGMA ignore_check_constraints = ON")
    [-5, 0, "hi", 2.5].each do |highest|
      @store.database.execute("DELETE FROM lease_machines_fences")
      @store.database.execute("INSERT INTO lease_machines_fences VALUES (?, ?)", [R, highest]) rescue next
      error = assert_raises(LeaseMachines::StoreError) { @store.fenced(resource: R, token: lease.token) { flunk } }
      assert_match(/\Acorrupt fence row for "nightly-report" in .*: highest .* is not a token\z/, error.message)
      assert_raises(LeaseMachines::StoreError) { @store.fence_highest(resource: R) }
      refute_predicate @store.database, :transaction_active?
    end
  end

  def test_corrupt_lease_rows_in_tables_without_strict_raise_store_error
    path = File.join(@dir, "loose.sqlite3")
    db = SQLite3::Database.new(path)
    db.execute(<<~SQL)
      CREATE TABLE lease_machines_leases (resource TEXT PRIMARY KEY, owner INTEGER, token INTEGER, expires_at REAL,
        last_issued INTEGER, observed REAL NOT NULL DEFAULT 0.0, revision INTEGER NOT NULL DEFAULT 0)
    SQL
    store = LeaseMachines::Store.new(db)
    [["revision", "'x'"], ["revision", "-1"], ["revision", "1.5"], ["owner", "'abc'"], ["token", "'t'"],
     ["expires_at", "'soon'"], ["observed", "'then'"], ["last_issued", "-3"]].each do |column, value|
      db.execute("DELETE FROM lease_machines_leases")
      db.execute("INSERT INTO lease_machines_leases VALUES ('r', 7, 1, 5.0, 1, 0.0, 1)")
      db.execute("UPDATE lease_machines_leases SET #{column} = #{value}")
      error = assert_raises(LeaseMachines::StoreError, "#{column} = #{value}") do
        store.acquire(resource: "r", owner: 8, ttl: 1.0, now: 1.0)
      end
      assert_match(/\Acorrupt lease row for "r" in /, error.message)
      assert_raises(LeaseMachines::StoreError) { store.revision(resource: "r") }
      refute_predicate db, :transaction_active?
    end
    db.close
  end

  def test_a_decision_inside_the_applications_transaction_is_refused_and_leaves_it_alone
    db = @store.database
    db.execute("CREATE TABLE report (body TEXT)")
    db.execute("BEGIN")
    db.execute("INSERT INTO report VALUES ('draft')")
    error = assert_raises(LeaseMachines::StoreError) { @store.acquire(resource: R, owner: 7, ttl: 5.0, now: 0.0) }
    assert_match(/a decision cannot commit inside an open transaction/, error.message)
    assert_predicate db, :transaction_active?
    db.execute("COMMIT")
    assert_equal [["draft"]], db.execute("SELECT body FROM report")
    assert_equal 0, @store.revision(resource: R)
  end

  def test_fenced_joins_the_applications_transaction_and_commits_or_rolls_back_with_it
    lease = granted(@store.acquire(resource: R, owner: 7, ttl: 5.0, now: 0.0))
    db = @store.database
    db.execute("CREATE TABLE report (token INTEGER)")
    db.execute("BEGIN")
    @store.fenced(resource: R, token: lease.token) { |conn| write(conn, lease.token) }
    assert_predicate db, :transaction_active?, "the application's transaction is still open"
    db.execute("ROLLBACK")
    assert_nil @store.fence_highest(resource: R), "the mark rolled back with the application's transaction"
    assert_empty db.execute("SELECT * FROM report")
    db.transaction do
      @store.fenced(resource: R, token: lease.token) { |conn| write(conn, lease.token) }
      assert_raises(LeaseMachines::Fenced) { @store.fenced(resource: R, token: 0) { flunk } }
      assert_predicate db, :transaction_active?, "a refusal rolls back to its savepoint, not the whole transaction"
    end
    assert_equal 1, @store.fence_highest(resource: R)
    assert_equal [[1]], db.execute("SELECT token FROM report")
  end

  def test_a_decision_from_inside_a_fenced_block_is_refused_and_the_block_rolls_back
    lease = granted(@store.acquire(resource: R, owner: 7, ttl: 5.0, now: 0.0))
    assert_raises(LeaseMachines::StoreError) do
      @store.fenced(resource: R, token: lease.token) do
        @store.renew(resource: R, owner: 7, token: 1, ttl: 5.0, now: 1.0)
      end
    end
    assert_nil @store.fence_highest(resource: R)
    assert_equal 5.0, @store.checkpoint(resource: R).lease.expires_at
    nested = @store.fenced(resource: R, token: 1) { @store.fenced(resource: "other", token: 1) { :inner } rescue $! }
    assert_kind_of ArgumentError, nested, "a nested fenced call joins, and refuses a token never issued"
  end

  def test_a_fiber_suspended_inside_a_fenced_block_keeps_others_out_until_it_finishes
    lease = granted(@store.acquire(resource: R, owner: 7, ttl: 5.0, now: 0.0))
    @store.database.execute("CREATE TABLE report (token INTEGER)")
    writer = Enumerator.new do |y|
      @store.fenced(resource: R, token: lease.token) do |db|
        y << :inside
        db.execute("INSERT INTO report VALUES (?)", [lease.token])
      end
      y << :committed
    end
    assert_equal :inside, writer.next
    error = assert_raises(LeaseMachines::StoreError) { @store.acquire(resource: "b", owner: 1, ttl: 1.0, now: 0.0) }
    assert_match(/another thread or fiber is inside a request of this store/, error.message)
    assert_equal :committed, writer.next
    assert_equal [[1]], @store.database.execute("SELECT token FROM report")
    assert_equal 1, granted(@store.acquire(resource: "b", owner: 1, ttl: 1.0, now: 0.0)).token
  end

  def test_a_transaction_left_open_by_a_collected_fiber_is_rolled_back_by_the_next_request
    lease = granted(@store.acquire(resource: R, owner: 7, ttl: 5.0, now: 0.0))
    @store.database.execute("CREATE TABLE report (token INTEGER)")
    abandon = lambda do
      writer = Enumerator.new do |y|
        @store.fenced(resource: R, token: lease.token) do |db|
          db.execute("INSERT INTO report VALUES (1)")
          y << :inside
        end
      end
      writer.next
    end
    abandon.call
    20.times do
      GC.start(full_mark: true, immediate_sweep: true)
      break unless @store.instance_variable_get(:@claim)&.weakref_alive?
    end
    skip "the abandoned fiber was not collected" if @store.instance_variable_get(:@claim)&.weakref_alive?

    assert_equal 1, granted(@store.acquire(resource: "b", owner: 1, ttl: 1.0, now: 0.0)).token
    assert_empty @store.database.execute("SELECT * FROM report"), "the abandoned write was rolled back"
    assert_nil @store.fence_highest(resource: R)
  end

  def test_a_name_changed_during_the_request_changes_nothing_the_request_does
    5.times { |i| @store.reacquire(resource: "B", owner: 1, ttl: 1.0, now: i * 2.0) }
    name = +"A"
    store = LeaseMachines::Store.new(@store.database, clock: -> { name.replace("B") && 100.0 })
    assert_equal 1, granted(store.acquire(resource: name, owner: 99, ttl: 1.0)).token
    assert_equal [1, 5], [store.checkpoint(resource: "A").last_issued, store.checkpoint(resource: "B").last_issued]
  end

  def test_two_threads_sharing_a_store_get_store_errors_and_every_returned_write_is_committed
    lease = granted(@store.acquire(resource: R, owner: 7, ttl: 1e9, now: 0.0))
    @store.database.execute("CREATE TABLE report (token INTEGER)")
    errors = Queue.new
    returned = Queue.new
    deadline = Process.clock_gettime(Process::CLOCK_MONOTONIC) + 1.5
    workers = [0, 1].map do |kind|
      Thread.new do
        while Process.clock_gettime(Process::CLOCK_MONOTONIC) < deadline
          begin
            if kind.zero?
              @store.acquire(resource: "other", owner: 1, ttl: 1.0, now: 0.0)
            else
              @store.fenced(resource: R, token: lease.token) { |db| write(db, lease.token) }
              returned << 1
            end
          rescue LeaseMachines::StoreError => e
            errors << e.message
          end
        end
      end
    end
    workers.each(&:join) # a NoMethodError or any other exception would surface here
    refute_predicate @store.database, :transaction_active?
    assert_equal returned.size, @store.database.get_first_value("SELECT count(*) FROM report")
    messages = Array.new(errors.size) { errors.pop }
    assert messages.all?(/another thread or fiber is inside a request of this store/), messages.uniq.first(3).inspect
  end

  def test_a_connection_the_store_cannot_set_up_raises_store_error
    db = SQLite3::Database.new(File.join(@dir, "busy.sqlite3"))
    db.execute("BEGIN")
    error = assert_raises(LeaseMachines::StoreError) { LeaseMachines::Store.new(db) }
    assert_match(/\A.*busy\.sqlite3 is not a lease store of this version: its tables \(lease_machines_schema, /,
                 error.message)
    assert_match(/a transaction is open on the connection/, error.message)
    db.close
  end

  def test_a_closed_store_raises_store_error
    @store.close
    %i[acquire checkpoint fenced].each do |call|
      error = assert_raises(LeaseMachines::StoreError, call.to_s) do
        case call
        when :acquire then @store.acquire(resource: R, owner: 1, ttl: 1.0, now: 0.0)
        when :checkpoint then @store.checkpoint(resource: R)
        else @store.fenced(resource: R, token: 1) { flunk }
        end
      end
      assert_match(/the store is closed/, error.message)
    end
    @store = nil
  end

  def test_a_block_that_ends_the_stores_transaction_raises_store_error
    lease = granted(@store.acquire(resource: R, owner: 7, ttl: 5.0, now: 0.0))
    error = assert_raises(LeaseMachines::StoreError) do
      @store.fenced(resource: R, token: lease.token) { |db| db.execute("COMMIT") }
    end
    assert_match(/the block of fenced ended the store's transaction/, error.message)
    assert_equal 1, granted(@store.reacquire(resource: R, owner: 7, ttl: 5.0, now: 1.0)).token - 1, "still usable"
  end

  def test_fenced_needs_a_block
    ill_typed!
    error = assert_raises(ArgumentError) { @store.fenced(resource: R, token: 1) }
    assert_equal "fenced needs a block (the write it protects) or statements:", error.message
  end

  def test_a_fence_mark_above_the_last_token_issued_and_tokens_ahead_of_revisions_are_corrupt
    lease = granted(@store.acquire(resource: R, owner: 7, ttl: 5.0, now: 0.0))
    @store.database.execute("INSERT INTO lease_machines_fences VALUES (?, 5)", [R])
    error = assert_raises(LeaseMachines::StoreError) { @store.fenced(resource: R, token: lease.token) { flunk } }
    assert_match(/\Acorrupt fence row for "nightly-report" in .*: highest 5 was never issued\z/, error.message)
    @store.database.execute("DELETE FROM lease_machines_fences")
    @store.database.execute("UPDATE lease_machines_leases SET revision = 0")
    error = assert_raises(LeaseMachines::StoreError) { @store.acquire(resource: R, owner: 8, ttl: 1.0, now: 9.0) }
    assert_match(/corrupt lease row for "nightly-report" .*: 1 tokens issued in 0 changes/, error.message)
  end
end
