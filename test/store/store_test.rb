# frozen_string_literal: true

require "test_helper"
require "etc"
require "lease_machines/store" if LeaseMachines::TestSupport::SQLITE3

# The SQLite store: every decision, durably, and every error path with nothing half-applied.
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

  # Issues tokens 1 to +count+ on +resource+ (to owner 1, leases of 1 s from t = 0, 1, ...).
  def issue(count, resource: R)
    count.times { |i| @store.reacquire(resource: resource, owner: 1, ttl: 1.0, now: i.to_f) }
  end

  def test_acquire_commits_the_grant
    decision = @store.acquire(resource: R, owner: 7, ttl: 30.0, now: 100.0)
    assert_equal [:granted, 1, 130.0], [decision.status, decision.lease.token, decision.lease.expires_at]
    other = reopen
    assert_equal LeaseMachines::Checkpoint.new(last_issued: 1, lease: decision.lease, observed: 100.0),
                 other.checkpoint(resource: R)
    assert_equal 1, other.revision(resource: R)
    other.close
  end

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

  def test_each_request_makes_one_native_decision_call
    @store.acquire(resource: R, owner: 7, ttl: 30.0, now: 1.0)
    assert_equal %i[_resource_name _store_decide],
                 native_calls { @store.renew(resource: R, owner: 7, token: 1, ttl: 30.0, now: 2.0) }
    assert_equal %i[_resource_name _store_decide],
                 native_calls { @store.transfer(resource: R, owner: 7, token: 1, new_owner: 8, ttl: 30.0, now: 2.0) }
    assert_equal %i[_resource_name _store_check_write], native_calls { @store.fenced(resource: R, token: 2) { nil } }
  end

  def test_every_decision_is_durable_and_revisions_rise_on_accepted_changes
    assert_equal :granted, @store.acquire(resource: R, owner: 7, ttl: 30.0, now: 0.0).status
    assert_equal :occupied, @store.acquire(resource: R, owner: 12, ttl: 30.0, now: 1.0).reason
    assert_equal 1, @store.revision(resource: R), "a refusal is no change"
    assert_equal 40.0, @store.renew(resource: R, owner: 7, token: 1, ttl: 30.0, now: 10.0).lease.expires_at
    assert_equal 2, granted(@store.reacquire(resource: R, owner: 7, ttl: 30.0, now: 11.0)).token
    assert_equal :stale_token, @store.release(resource: R, owner: 7, token: 1, now: 12.0).reason
    assert_equal :released, @store.release(resource: R, owner: 7, token: 2, now: 12.0).status
    assert_equal 4, @store.revision(resource: R)
    assert_equal 12.0, @store.checkpoint(resource: R).observed
  end

  def test_resources_are_independent
    assert_equal 1, granted(@store.acquire(resource: "a", owner: 1, ttl: 5.0, now: 0.0)).token
    assert_equal 1, granted(@store.acquire(resource: "b", owner: 2, ttl: 5.0, now: 0.0)).token
  end

  def test_transfer_hands_the_lease_over_with_a_greater_token
    @store.acquire(resource: R, owner: 7, ttl: 30.0, now: 0.0)
    decision = @store.transfer(resource: R, owner: 7, token: 1, new_owner: 12, ttl: 30.0, now: 5.0)
    assert_equal :transferred, decision.status
    assert_equal [12, 2, 35.0], [decision.lease.owner, decision.lease.token, decision.lease.expires_at]
    assert_equal :stale_token, @store.renew(resource: R, owner: 7, token: 1, ttl: 30.0, now: 6.0).reason
  end

  def test_a_refused_transfer_changes_nothing
    @store.acquire(resource: R, owner: 7, ttl: 30.0, now: 0.0)
    before = @store.checkpoint(resource: R)
    assert_equal :invalid_ttl, @store.transfer(resource: R, owner: 7, token: 1, new_owner: 12, ttl: 0.0, now: 5.0).reason
    after = @store.checkpoint(resource: R)
    assert_equal [before.last_issued, before.lease, 5.0], [after.last_issued, after.lease, after.observed]
  end

  def test_a_restart_loses_nothing_and_tokens_keep_rising
    @store.acquire(resource: R, owner: 7, ttl: 1.0, now: 0.0)
    @store.close
    @store = reopen
    assert_equal 2, granted(@store.acquire(resource: R, owner: 12, ttl: 1.0, now: 1.0)).token
  end

  def test_the_default_clock_is_the_wall_clock_with_clamp
    before = Process.clock_gettime(Process::CLOCK_REALTIME)
    @store.close
    @store = LeaseMachines::Store.new(@path)
    lease = granted(@store.acquire(resource: R, owner: 7, ttl: 30.0))
    assert_in_delta before + 30.0, lease.expires_at, 5.0
    # A clock that steps back is evaluated at the latest instant recorded: the lease is not shortened.
    stepped_back = LeaseMachines::Store.new(@path, clock: -> { before - 3600.0 })
    assert_equal :occupied, stepped_back.acquire(resource: R, owner: 12, ttl: 30.0).reason
    renewed = stepped_back.renew(resource: R, owner: 7, token: 1, ttl: 1.0)
    assert_equal lease.expires_at, renewed.lease.expires_at
    stepped_back.close
  end

  def test_fenced_runs_the_block_and_raises_the_mark_in_one_transaction
    issue(2)
    @store.database.execute("CREATE TABLE report (token INTEGER)")
    assert_equal :ok, @store.fenced(resource: R, token: 2) { |db| db.execute("INSERT INTO report VALUES (2)") && :ok }
    assert_equal 2, @store.fence_highest(resource: R)
    @store.fenced(resource: R, token: 2) { |db| db.execute("INSERT INTO report VALUES (2)") }
    error = assert_raises(LeaseMachines::Fenced) do
      @store.fenced(resource: R, token: 1) { flunk "the block must not run for a stale token" }
    end
    assert_equal [R, 1, 2], [error.resource, error.token, error.highest]
    assert_equal :stale_token, error.reason
    assert_equal "nightly-report: token 1 is older than the newest issued (2); the write was refused", error.message
    assert_equal [[2], [2]], @store.database.execute("SELECT token FROM report")
  end

  def test_an_exception_in_the_block_rolls_back_the_write_and_the_mark
    issue(5)
    @store.database.execute("CREATE TABLE report (token INTEGER)")
    assert_raises(RuntimeError) do
      @store.fenced(resource: R, token: 5) do |db|
        db.execute("INSERT INTO report VALUES (5)")
        raise "disk full, say"
      end
    end
    assert_nil @store.fence_highest(resource: R)
    assert_empty @store.database.execute("SELECT token FROM report")
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

  def test_owners_above_2_63_round_trip
    lease = granted(@store.acquire(resource: R, owner: 2**64 - 1, ttl: 1.0, now: 0.0))
    assert_equal 2**64 - 1, @store.checkpoint(resource: R).lease.owner
    assert_equal lease, @store.checkpoint(resource: R).lease
  end
end

# What leaves a fenced block or a decision other than a normal return rolls everything back, and the store stays
# usable afterwards.
class StoreTransactionTest < Minitest::Test
  R = "nightly-report"

  def setup
    requires_sqlite3!
    @store = LeaseMachines::Store.new(File.join(scratch_dir("lease-store"), "leases.sqlite3"), clock: STILL_CLOCK)
    @store.database.execute("CREATE TABLE report (token INTEGER UNIQUE)")
    5.times { |i| @store.reacquire(resource: R, owner: 1, ttl: 1.0, now: i.to_f) } # tokens 1 to 5 issued
  end

  def teardown
    @store.close
  end

  def rows = @store.database.execute("SELECT token FROM report").flatten

  def assert_nothing_written_and_usable
    assert_empty rows
    assert_nil @store.fence_highest(resource: R)
    refute_predicate @store.database, :transaction_active?
    assert_equal 6, granted(@store.reacquire(resource: R, owner: 1, ttl: 1.0, now: 5.0)).token, "the store still works"
  end

  def test_a_throw_out_of_the_block_rolls_back
    catch(:out) do
      @store.fenced(resource: R, token: 5) do |db|
        db.execute("INSERT INTO report VALUES (5)")
        throw :out
      end
    end
    assert_nothing_written_and_usable
  end

  def test_a_non_standard_error_out_of_the_block_rolls_back
    interrupt = Class.new(Exception) # rubocop:disable Lint/InheritException
    assert_raises(interrupt) do
      @store.fenced(resource: R, token: 5) do |db|
        db.execute("INSERT INTO report VALUES (5)")
        raise interrupt
      end
    end
    assert_nothing_written_and_usable
  end

  def test_the_blocks_own_sqlite_errors_go_on_unchanged
    error = assert_raises(SQLite3::ConstraintException) do
      @store.fenced(resource: R, token: 5) do |db|
        db.execute("INSERT INTO report VALUES (5)")
        db.execute("INSERT INTO report VALUES (5)")
      end
    end
    assert_match(/UNIQUE/, error.message)
    assert_nothing_written_and_usable
  end

  def test_a_failed_commit_rolls_back_and_leaves_the_store_usable
    @store.database.execute("PRAGMA foreign_keys = ON")
    @store.database.execute("CREATE TABLE lines (report INTEGER REFERENCES report (token) DEFERRABLE INITIALLY DEFERRED)")
    error = assert_raises(LeaseMachines::StoreError) do
      @store.fenced(resource: R, token: 5) { |db| db.execute("INSERT INTO lines VALUES (99)") }
    end
    assert_match(/FOREIGN KEY/, error.message)
    assert_empty @store.database.execute("SELECT * FROM lines")
    assert_nothing_written_and_usable
  end

  def test_a_token_never_issued_for_the_resource_is_refused
    error = assert_raises(ArgumentError) { @store.fenced(resource: R, token: 2**40) { flunk "must not run" } }
    assert_equal "nightly-report: token 1099511627776 was never issued (the last one was 5)", error.message
    assert_nil @store.fence_highest(resource: R), "the fence mark did not move"
  end

  def test_token_zero_is_refused_with_a_clear_message
    error = assert_raises(LeaseMachines::Fenced) { @store.fenced(resource: R, token: 0) { flunk "must not run" } }
    assert_equal "nightly-report: token 0 is never issued; the write was refused", error.message
  end

  def test_a_bad_clock_policy_is_refused_at_once
    ill_typed!
    assert_raises(ArgumentError) { LeaseMachines::Store.new(@store.path, clock_policy: :sometimes) }
  end
end
