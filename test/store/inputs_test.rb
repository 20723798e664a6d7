# frozen_string_literal: true

require "pathname"
require "socket"
require "test_helper"
require "lease_machines/store" if LeaseMachines::TestSupport::SQLITE3
require "support/store_input_rules"

# Every argument of the store checked as the contract says (test/support/store_input_rules.rb) on SQLite,
# PostgreSQL and MySQL (on Redis in test/store/redis_test.rb).
class StoreInputsTest < Minitest::Test
  include StoreInputRules
  include LeaseMachines::TestSupport::StoreRules::OnSQLite
end

class StoreInputsPostgreSQLTest < Minitest::Test
  include StoreInputRules
  include LeaseMachines::TestSupport::StoreRules::OnPostgreSQL
end

class StoreInputsMySQLTest < Minitest::Test
  include StoreInputRules
  include LeaseMachines::TestSupport::StoreRules::OnMySQL
end

# What only SQLite has: rows read whatever the connection's settings, names kept byte for byte, what a database
# argument may be, rows no history can produce (written by hand past SQLite's checks) refused with StoreError.
class StoreInputsSQLiteTest < Minitest::Test
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

  def test_a_name_is_kept_as_utf8_text
    granted(@store.acquire(resource: "relevé".b, owner: 7, ttl: 5.0, now: 0.0))
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

  def test_a_connection_the_store_cannot_set_up_raises_store_error
    db = SQLite3::Database.new(File.join(@dir, "busy.sqlite3"))
    db.execute("BEGIN")
    error = assert_raises(LeaseMachines::StoreError) { LeaseMachines::Store.new(db) }
    assert_match(/\A.*busy\.sqlite3 is not a lease store of this version: its tables \(lease_machines_schema, /,
                 error.message)
    assert_match(/a transaction is open on the connection/, error.message)
    db.close
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
