# frozen_string_literal: true

require "test_helper"
require "etc"
require "lease_machines/store" if LeaseMachines::TestSupport::SQLITE3
require "support/store_contract_rules"

# The store's requests on every store (test/support/store_contract_rules.rb: StoreContractRules and
# StoreTransactionRules), and what only the SQLite store has: its files, their permissions and locks, its schema file.
class StoreTest < Minitest::Test
  R = "nightly-report"

  def setup
    requires_sqlite3!
    @dir = scratch_dir("lease-store")
    @path = File.join(@dir, "leases.sqlite3")
    @store = LeaseMachines::Store.new(@path, clock: STILL_CLOCK)
  end

  def teardown
    @store&.close
  end

  def reopen = LeaseMachines::Store.new(@path, clock: STILL_CLOCK)

  def test_reopen_opens_the_same_database_with_the_same_options_on_a_connection_of_its_own
    clock = -> { 50.0 }
    store = LeaseMachines::Store.new(Pathname(@path), clock: clock, keep_events: 2, busy_timeout: 0.25)
    store.acquire(resource: R, owner: 7, ttl: 30.0)
    assert_predicate store, :reopenable?
    again = store.reopen
    refute_same store.database, again.database
    assert_same clock, again.clock
    3.times { again.renew(resource: R, owner: 7, token: 1, ttl: 30.0) }
    assert_equal 2, again.events(resource: R).size, "keep_events: 2, as the store was opened"
    assert_equal "#<LeaseMachines::Store #{@path}>", again.inspect, "the options are not shown"
    store.close
    assert_equal :renewed, again.renew(resource: R, owner: 7, token: 1, ttl: 30.0).status, "closing one leaves the other"
    again.close
    given = LeaseMachines::Store.new(SQLite3::Database.new(@path))
    refute_predicate given, :reopenable?
    error = assert_raises(LeaseMachines::StoreError) { given.reopen }
    assert_match(/on a connection the application gave it, which cannot be opened again/, error.message)
  ensure
    given&.database&.close
  end

  def test_a_read_only_database_raises_store_error_and_grants_nothing
    @store.acquire(resource: R, owner: 7, ttl: 1.0, now: 0.0)
    @store.close
    @store = nil
    files = Dir[File.join(@dir, "*")] + [@dir]
    FileUtils.chmod("a-w", files)
    raised, message = raised_where_permissions_bind(files) do
      store = reopen
      store.acquire(resource: R, owner: 12, ttl: 1.0, now: 5.0)
    end
    assert_equal "LeaseMachines::StoreError", raised
    assert_match(/lease store/, message)
    FileUtils.chmod("u+w", files)
    assert_equal 1, reopen.tap { @store = _1 }.checkpoint(resource: R).last_issued, "nothing was granted"
  end

  # The class name and message of what the block raised (nil when it raised nothing), run where file permissions
  # bind: in this process, or, as root (whom they do not stop), in a child that gives root up for nobody, with
  # +files+ made readable to it.
  def raised_where_permissions_bind(files)
    return capture_raised { yield } unless Process.uid.zero?

    FileUtils.chmod("go+rX", files)
    reader, writer = IO.pipe
    pid = fork do
      reader.close
      nobody = Etc.getpwnam("nobody")
      Process::GID.change_privilege(nobody.gid)
      Process::UID.change_privilege(nobody.uid)
      writer.write(Marshal.dump(capture_raised { yield }))
      writer.close
      exit!(0)
    end
    writer.close
    Marshal.load(reader.read).tap { Process.wait(pid) }
  end

  def capture_raised
    yield
    nil
  rescue StandardError => e
    [e.class.name, e.message]
  end

  def test_a_read_only_connection_raises_store_error_and_grants_nothing
    @store.acquire(resource: R, owner: 7, ttl: 1.0, now: 0.0)
    read_only = LeaseMachines::Store.new(SQLite3::Database.new(@path, readonly: true))
    error = assert_raises(LeaseMachines::StoreError) { read_only.acquire(resource: R, owner: 12, ttl: 1.0, now: 5.0) }
    assert_match(/readonly/, error.message)
    assert_kind_of SQLite3::Exception, error.cause
    assert_equal 1, @store.checkpoint(resource: R).last_issued, "nothing was written"
    assert_equal 1, read_only.checkpoint(resource: R).last_issued, "reads still work"
    read_only.close
  end

  def test_a_store_over_the_applications_own_connection
    db = SQLite3::Database.new(@path)
    store = LeaseMachines::Store.new(db)
    assert_same db, store.database
    assert_equal @path, store.path
    db.close
  end

  def test_a_locked_database_past_the_busy_timeout_raises_store_error
    holder = SQLite3::Database.new(@path)
    holder.execute("BEGIN IMMEDIATE")
    impatient = LeaseMachines::Store.new(@path, busy_timeout: 0.2)
    started = Process.clock_gettime(Process::CLOCK_MONOTONIC)
    error = assert_raises(LeaseMachines::StoreError) { impatient.acquire(resource: R, owner: 1, ttl: 1.0, now: 0.0) }
    assert_operator Process.clock_gettime(Process::CLOCK_MONOTONIC) - started, :>=, 0.15
    assert_match(/locked|busy/i, error.message)
    holder.execute("ROLLBACK")
    assert_equal 1, granted(impatient.acquire(resource: R, owner: 1, ttl: 1.0, now: 0.0)).token, "nothing was left over"
    impatient.close
    holder.close
  end

  def test_a_corrupt_row_raises_store_error_and_changes_nothing
    @store.acquire(resource: R, owner: 7, ttl: 1.0, now: 0.0)
    # Bypass the table's checks the way a hand edit or a foreign writer might: a lease above its high-water.
    @store.database.execute("PRAGMA ignore_check_constraints = ON")
    @store.database.execute("UPDATE lease_machines_leases SET last_issued = 0 WHERE resource = ?", [R])
    error = assert_raises(LeaseMachines::StoreError) { @store.acquire(resource: R, owner: 12, ttl: 1.0, now: 5.0) }
    assert_match(/corrupt lease row for "nightly-report"/, error.message)
    assert_equal [[0]], @store.database.execute("SELECT last_issued FROM lease_machines_leases")
  end

  def test_an_unopenable_path_raises_store_error
    error = assert_raises(LeaseMachines::StoreError) { LeaseMachines::Store.new(File.join(@dir, "missing", "x.db")) }
    assert_match(/cannot open the lease store/, error.message)
  end

  def test_the_schema_file_is_what_the_store_applies
    tables = @store.database.execute("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name").flatten
    # sqlite_sequence is SQLite's own, for the event log's AUTOINCREMENT ids.
    assert_equal %w[lease_machines_events lease_machines_fences lease_machines_leases lease_machines_schema
                    lease_machines_slot_fences lease_machines_slots sqlite_sequence], tables
    assert_equal [[1, 2]], @store.database.execute("SELECT id, format FROM lease_machines_schema")
    assert_includes LeaseMachines::Store::SCHEMA, "CREATE TABLE IF NOT EXISTS lease_machines_leases"
  end

  def test_the_readme_shows_the_schema_as_it_is
    readme = File.read(File.expand_path("../../README.md", __dir__))
    assert_equal LeaseMachines::Store::SCHEMA.strip, readme[/^```sql\n(.*?)^```$/m, 1].strip
  end
end

class StoreContractTest < Minitest::Test
  include StoreContractRules
  include LeaseMachines::TestSupport::StoreRules::OnSQLite
end

class StoreContractPostgreSQLTest < Minitest::Test
  include StoreContractRules
  include LeaseMachines::TestSupport::StoreRules::OnPostgreSQL
end

class StoreContractMySQLTest < Minitest::Test
  include StoreContractRules
  include LeaseMachines::TestSupport::StoreRules::OnMySQL
end

# What leaves a fenced block other than a normal return rolls everything back (StoreTransactionRules), and on SQLite
# the block's own SQLite errors and a commit that fails.
class StoreTransactionTest < Minitest::Test
  include StoreTransactionRules
  include LeaseMachines::TestSupport::StoreRules::OnSQLite

  def test_the_blocks_own_sqlite_errors_go_on_unchanged
    error = assert_raises(SQLite3::ConstraintException) do
      store.fenced(resource: R, token: 5) do |db|
        db.execute("INSERT INTO report VALUES (5)")
        db.execute("INSERT INTO report VALUES (5)")
      end
    end
    assert_match(/UNIQUE/, error.message)
    assert_nothing_written_and_usable
  end

  def test_a_failed_commit_rolls_back_and_leaves_the_store_usable
    store.database.execute("PRAGMA foreign_keys = ON")
    store.database.execute("CREATE TABLE lines (report INTEGER REFERENCES report (token) " \
                           "DEFERRABLE INITIALLY DEFERRED)")
    error = assert_raises(LeaseMachines::StoreError) do
      store.fenced(resource: R, token: 5) { |db| db.execute("INSERT INTO lines VALUES (99)") }
    end
    assert_match(/FOREIGN KEY/, error.message)
    assert_empty store.database.execute("SELECT * FROM lines")
    assert_nothing_written_and_usable
  end
end

class StoreTransactionPostgreSQLTest < Minitest::Test
  include StoreTransactionRules
  include LeaseMachines::TestSupport::StoreRules::OnPostgreSQL
end

class StoreTransactionMySQLTest < Minitest::Test
  include StoreTransactionRules
  include LeaseMachines::TestSupport::StoreRules::OnMySQL
end
