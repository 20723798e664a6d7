# frozen_string_literal: true
# gc_stress: the extension's objects

require "test_helper"
require "lease_machines/store" if LeaseMachines::TestSupport::SQLITE3

# What the store checks about its database when it opens it and at each request: the schema's shape and format,
# the file still being the one at the path, and a connection it is given left as the application set it.
class StoreSchemaTest < Minitest::Test
  R = "nightly-report"

  def setup
    requires_sqlite3!
    @dir = scratch_dir("lease-schema")
    @path = File.join(@dir, "leases.sqlite3")
  end

  def refused_at_open(database)
    assert_raises(LeaseMachines::StoreError) { LeaseMachines::Store.new(database) }
  end

  def test_a_foreign_table_of_the_same_name_is_refused_before_anything_is_written
    db = SQLite3::Database.new(@path)
    db.execute("CREATE TABLE lease_machines_leases (resource TEXT PRIMARY KEY, owner REAL, token INTEGER, " \
               "expires_at REAL, last_issued INTEGER, observed REAL, revision INTEGER)")
    error = refused_at_open(@path)
    assert_match(/leases\.sqlite3 is not a lease store of this version: lease_machines_leases is not the lease /,
                 error.message)
    assert_match(/\(columns resource TEXT, owner REAL, token INTEGER, .*; format 2 has resource TEXT, owner INTEGER, /,
                 error.message)
    tables = db.execute("SELECT name FROM sqlite_master WHERE type = 'table'").flatten
    assert_equal ["lease_machines_leases"], tables, "nothing was created in a database of another shape"
    db.close
  end

  def test_another_format_is_refused
    LeaseMachines::Store.new(@path).close
    db = SQLite3::Database.new(@path)
    db.execute("UPDATE lease_machines_schema SET format = 3")
    db.close
    error = refused_at_open(@path)
    assert_match(/is not a lease store of this version: its schema is format 3; this lease_machines reads format 2 /,
                 error.message)
  end

  # A format 1 database (before the event log): its tables as that format made them, with a lease on record.
  def format_1_database
    db = SQLite3::Database.new(@path)
    db.execute_batch(LeaseMachines::Store::SCHEMA.sub(/-- The event log \(since format 2\).*\z/m, ""))
    db.execute("UPDATE lease_machines_schema SET format = 1")
    db.execute("INSERT INTO lease_machines_leases (resource, owner, token, expires_at, last_issued, observed, " \
               "revision) VALUES ('r', 7, 3, 10.0, 3, 2.0, 5)")
    db
  end

  def test_a_format_1_database_is_upgraded_on_open_keeping_every_lease
    format_1_database.close
    store = LeaseMachines::Store.new(@path)
    assert_equal [[2]], store.database.execute("SELECT format FROM lease_machines_schema")
    assert_equal LeaseMachines::Lease.new(owner: 7, token: 3, expires_at: 10.0), store.checkpoint(resource: "r").lease
    assert_equal 4, store.acquire(resource: "r", owner: 8, ttl: 1.0, now: 11.0).lease.token
    assert_equal %i[acquired], store.events(resource: "r").map(&:kind), "the log starts at the upgrade"
    store.close
  end

  # What only reads (the dashboard, lease_machines audit --database) never creates or upgrades the tables that
  # processes of another version use.
  def test_with_migrate_false_a_store_writes_nothing_to_the_schema
    format_1_database.close
    error = refused_at_open_with(@path, migrate: false)
    assert_match(/its schema is format 1, and this store may not write to its schema \(migrate: false\)/, error.message)
    assert_equal [[1]], SQLite3::Database.new(@path).execute("SELECT format FROM lease_machines_schema")
    empty = File.join(@dir, "empty.sqlite3")
    error = refused_at_open_with(empty, migrate: false)
    assert_match(/it has no lease store tables, and this store may not write/, error.message)
    assert_empty SQLite3::Database.new(empty).execute("SELECT name FROM sqlite_master")
    LeaseMachines::Store.new(@path).close # upgraded by one that may
    LeaseMachines::Store.new(@path, migrate: false).close
  end

  def test_migrate_is_true_or_false
    ill_typed!
    error = assert_raises(TypeError) { LeaseMachines::Store.new(@path, migrate: "no") }
    assert_equal 'migrate must be true or false, got "no"', error.message
  end

  # The event log's retention is a trigger of each store's own connection (TEMP): nothing of it is in the file, and
  # two stores on one file prune each by its own keep_events.
  def test_retention_lives_in_each_connection_not_in_the_file
    tight = LeaseMachines::Store.new(@path, keep_events: 2)
    loose = LeaseMachines::Store.new(@path, keep_events: 50)
    4.times { |n| tight.renew(resource: "t", owner: 1, token: 1, ttl: 1.0, now: n.to_f) }
    4.times { |n| loose.renew(resource: "l", owner: 1, token: 1, ttl: 1.0, now: n.to_f) }
    assert_equal [2, 4], [tight.events(resource: "t").size, tight.events(resource: "l").size]
    assert_empty tight.database.execute("SELECT name FROM sqlite_master WHERE type = 'trigger'")
    assert_equal [["lease_machines_prune_events"]],
                 tight.database.execute("SELECT name FROM sqlite_temp_master WHERE type = 'trigger'")
  ensure
    tight&.close
    loose&.close
  end

  def refused_at_open_with(database, **options)
    assert_raises(LeaseMachines::StoreError) { LeaseMachines::Store.new(database, **options) }
  end

  def test_a_format_1_database_is_not_upgraded_inside_the_applications_transaction
    db = format_1_database
    db.transaction do
      error = refused_at_open(db)
      assert_match(/its tables \(lease_machines_events\) are missing and a transaction is open/, error.message)
    end
    assert_equal [[1]], db.execute("SELECT format FROM lease_machines_schema"), "nothing was changed"
    db.close
  end

  def test_a_database_of_the_first_release_without_the_format_row_is_taken_over
    db = SQLite3::Database.new(@path)
    db.execute_batch(LeaseMachines::Store::SCHEMA.sub(/-- The schema's format.*?DO NOTHING;/m, "")
                                                 .sub(/^-- A format 1 database.*\z/m, ""))
    db.execute("INSERT INTO lease_machines_leases (resource, last_issued, observed, revision) VALUES ('r', 4, 0, 4)")
    db.close
    store = LeaseMachines::Store.new(@path)
    assert_equal 5, store.acquire(resource: "r", owner: 1, ttl: 1.0, now: 1.0).lease.token
    assert_equal [[2]], store.database.execute("SELECT format FROM lease_machines_schema")
    store.close
  end

  def test_a_deleted_database_file_is_refused_instead_of_granting_into_the_unlinked_file
    store = LeaseMachines::Store.new(@path)
    store.acquire(resource: R, owner: 7, ttl: 1.0, now: 0.0)
    Dir[File.join(@dir, "leases.sqlite3*")].each { File.delete(_1) }
    error = assert_raises(LeaseMachines::StoreError) { store.acquire(resource: R, owner: 8, ttl: 1.0, now: 5.0) }
    assert_match(/leases\.sqlite3: the database file was deleted or replaced while the store had it open; /,
                 error.message)
    assert_raises(LeaseMachines::StoreError) { store.checkpoint(resource: R) }
    store.close
    fresh = LeaseMachines::Store.new(@path)
    assert_nil fresh.checkpoint(resource: R).last_issued, "a new file: the store says so rather than reissuing"
    fresh.close
  end

  def test_a_replaced_database_file_is_refused
    store = LeaseMachines::Store.new(@path)
    other = File.join(@dir, "other.sqlite3")
    LeaseMachines::Store.new(other).close
    File.rename(other, @path)
    error = assert_raises(LeaseMachines::StoreError) { store.acquire(resource: R, owner: 8, ttl: 1.0, now: 5.0) }
    assert_match(/was deleted or replaced/, error.message)
    store.close
  end

  def test_a_given_connection_keeps_its_own_settings
    db = SQLite3::Database.new(@path)
    db.busy_timeout = 30_000
    db.execute("PRAGMA synchronous = NORMAL")
    before = [db.get_first_value("PRAGMA journal_mode"), db.get_first_value("PRAGMA synchronous")]
    store = LeaseMachines::Store.new(db)
    store.acquire(resource: R, owner: 7, ttl: 1.0, now: 0.0)
    assert_equal before, [db.get_first_value("PRAGMA journal_mode"), db.get_first_value("PRAGMA synchronous")]
    assert_equal %w[delete], [before.first], "SQLite's own default journal, not the store's WAL"
    store.close
    db.close
    opened = LeaseMachines::Store.new(@path)
    assert_equal ["wal", 2], [opened.database.get_first_value("PRAGMA journal_mode"),
                              opened.database.get_first_value("PRAGMA synchronous")]
    opened.close
  end
end
