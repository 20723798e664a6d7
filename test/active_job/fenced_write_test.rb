# frozen_string_literal: true

require "support/active_job_support"

# lease.fenced on ActiveRecord's own connection, SQLite's and (ActiveJobFencedWritePostgreSQLTest) PostgreSQL's: the
# fence raised as the transaction's first statement, through the store's rule; a stale token rolls the whole
# transaction back, jobs enqueued in it included.
class ActiveJobFencedWriteTest < Minitest::Test
  include LeaseMachines::ActiveJobSupport
  include ActiveJob::TestHelper if LEASE_MACHINES_RAILS

  def setup
    super
    job_class(:FollowUpJob) do
      include ActiveJob::EnqueueAfterTransactionCommit # what Rails' railtie does for every job
      self.enqueue_after_transaction_commit = :always
      def perform(*) = nil
    end
  end

  # A job whose body is the test's block, called with the job.
  def writer_job(&body)
    job_class(:WriterJob) do
      holds_lease key: ->(account) { account }, ttl: 30.0, renew_every: 10.0
      define_method(:perform) { |_account| body.call(self) }
    end
  end

  def resource = "LeaseMachines::ActiveJobSupport::WriterJob:acme"

  def test_a_fenced_write_commits_with_the_fence_raised_to_its_token
    writer_job do |job|
      job.lease.fenced { Report.create!(body: "nightly", token: job.lease.token) }
    end.perform_now("acme")

    assert_equal [["nightly", 1]], Report.pluck(:body, :token)
    assert_equal 1, other_store.fence_highest(resource: resource)
    assert_equal [[:written, 1]], events_named(:fenced_write).map { [_1[:outcome], _1[:token]] }
  end

  # One shared lease Store (configured as is, behind the pool's lock) busy with a long request on another thread: a
  # fenced write, on its own ActiveRecord connection's store, does not wait for that request.
  def test_a_fenced_write_does_not_wait_for_a_request_of_the_shared_lease_store
    LeaseMachines::Jobs.store = FlakyStore.new(path, clock: clock.to_proc).tap { @stores << _1 }
    inside = Thread::Queue.new
    done = Thread::Queue.new
    lease = during = nil
    writer = writer_job do |job|
      lease = job.lease
      # The request ends when told, or after 30 s: a fenced write that waited for it would find it ended.
      busy = Thread.new { LeaseMachines::Jobs.pool.with { inside << true && done.pop(timeout: 30) } }
      inside.pop
      job.lease.fenced do
        during = busy.alive?
        Report.create!(body: "nightly", token: job.lease.token)
      end
      done << true
      busy.join
    end
    writer.perform_now("acme")

    assert during, "the fenced write waited for the lease store's request"
    assert_equal [["nightly", lease.token]], Report.pluck(:body, :token)
  end

  def test_a_lease_lost_mid_job_has_its_fenced_write_rolled_back_with_everything_in_its_transaction
    refused = nil
    writer_job do |job|
      clock.advance(31.0) # the job stalls past its TTL; a successor takes over and writes through the fence
      successor = other_store.acquire(resource: resource, owner: 999, ttl: 30.0)
      other_store.fenced(resource: resource, token: successor.lease.token) do |db|
        insert_report(db, "successor", successor.lease.token)
      end
      refused = assert_raises(LeaseMachines::Fenced) do
        Report.transaction do
          Report.create!(body: "stale summary", token: job.lease.token)
          LeaseMachines::ActiveJobSupport::FollowUpJob.perform_later
          job.lease.fenced { Report.create!(body: "stale", token: job.lease.token) }
        end
      end
      assert_equal :lost, job.lease.state
    end.perform_now("acme")

    assert_equal [1, 2], [refused.token, refused.highest]
    assert_equal [["successor", 2]], Report.pluck(:body, :token), "nothing of the stale transaction landed"
    assert_empty enqueued_jobs, "the job enqueued in the rolled-back transaction was dropped with it"
    assert_equal 2, other_store.fence_highest(resource: resource)
    assert_equal [[:refused, 2]], events_named(:fenced_write).map { [_1[:outcome], _1[:highest]] }
    assert_equal [:fenced], events_named(:lost).map { _1[:reason] }
    # The refusal rolled back with the job's transaction, and is logged once it has: the dashboard shows it.
    refusals = other_store.events(resource: resource).select { _1.kind == :write_refused }
    assert_equal [[1, :stale_token, 2]], refusals.map { [_1.token, _1.reason, _1.highest] }
  end

  def test_a_refused_write_without_a_transaction_of_the_applications_is_logged_once
    writer_job do |job|
      clock.advance(31.0)
      other_store.acquire(resource: resource, owner: 999, ttl: 30.0)
      assert_raises(LeaseMachines::Fenced) { job.lease.fenced { Report.create!(body: "stale") } }
    end.perform_now("acme")

    assert_empty Report.all
    kinds = other_store.events(resource: resource).map(&:kind)
    assert_equal 1, kinds.count(:write_refused), kinds.inspect
  end

  def test_a_refusal_the_application_rescues_and_commits_past_is_logged_once
    writer_job do |job|
      clock.advance(31.0)
      other_store.acquire(resource: resource, owner: 999, ttl: 30.0)
      Report.transaction do
        Report.create!(body: "kept")
        job.lease.fenced { Report.create!(body: "stale") }
      rescue LeaseMachines::Fenced
        nil # the application goes on, and commits what it wrote outside the fence
      end
    end.perform_now("acme")

    assert_equal ["kept"], Report.pluck(:body)
    assert_equal 1, other_store.events(resource: resource).count { _1.kind == :write_refused }
  end

  def test_a_committed_fenced_transaction_enqueues_its_jobs
    writer_job do |job|
      Report.transaction do
        LeaseMachines::ActiveJobSupport::FollowUpJob.perform_later
        job.lease.fenced { Report.create!(body: "ok") }
      end
    end.perform_now("acme")

    assert_equal 1, enqueued_jobs.size
    assert_equal ["ok"], Report.pluck(:body)
  end

  def test_a_lease_known_lost_writes_nothing_and_raises_lease_lost
    writer_job do |job|
      clock.advance(31.0)
      other_store.acquire(resource: resource, owner: 999, ttl: 30.0)
      renewer.renew_due
      error = assert_raises(LeaseMachines::LeaseLost) { job.lease.fenced { Report.create!(body: "late") } }
      assert_equal :lost, error.state
    end.perform_now("acme")

    assert_equal 0, Report.count
    assert_nil other_store.fence_highest(resource: resource)
  end

  def test_fence_record_picks_the_database
    unless LeaseMachines::ActiveJobSupport.const_defined?(:OtherRecord)
      abstract = Class.new(ActiveRecord::Base) { self.abstract_class = true }
      LeaseMachines::ActiveJobSupport.const_set(:OtherRecord, abstract)
    end
    other = LeaseMachines::ActiveJobSupport::OtherRecord
    elsewhere = File.join(scratch_dir("lm-other-db"), "other.sqlite3")
    other.establish_connection(adapter: "sqlite3", database: elsewhere)
    LeaseMachines::Jobs.fence_record = other
    error = nil
    writer_job do |job|
      error = assert_raises(ArgumentError) { job.lease.fenced { nil } }
    end.perform_now("acme")

    # The other database's store never issued this token: the store refuses it, so a misconfigured fence is loud.
    assert_match(/token 1 was never issued/, error.message)
  ensure
    other&.remove_connection
  end

  def test_fenced_needs_a_block
    ill_typed!
    writer_job { |job| assert_raises(ArgumentError) { job.lease.fenced } }.perform_now("acme")
  end

  def test_the_block_gets_the_connection_and_whatever_leaves_it_rolls_the_write_and_the_mark_back
    writer_job do |job|
      assert_raises(IOError) do
        job.lease.fenced do |connection|
          connection.execute("INSERT INTO reports (body) VALUES ('partial')")
          raise IOError, "disk full"
        end
      end
    end.perform_now("acme")

    assert_equal 0, Report.count
    assert_nil other_store.fence_highest(resource: resource)
    event = events_named(:fenced_write).fetch(0)
    assert_equal [["IOError", "disk full"], nil], [event[:exception], event[:outcome]]
  end
end

LeaseMachines::ActiveJobSupport.on_postgresql(ActiveJobFencedWriteTest) do
  # Store#fenced joins the application's transaction under a savepoint: the check, the write and the mark are in it.
  def test_on_postgresql_the_fenced_write_is_in_the_applications_own_transaction
    inside = nil
    writer_job do |job|
      Report.transaction do
        Report.create!(body: "summary", token: job.lease.token)
        outside = Report.connection.select_value("SELECT txid_current()")
        job.lease.fenced do |connection|
          inside = [outside, connection.select_value("SELECT txid_current()"),
                    connection.raw_connection.transaction_status == PG::PQTRANS_INTRANS]
          Report.create!(body: "fenced", token: job.lease.token)
        end
        raise ActiveRecord::Rollback
      end
    end.perform_now("acme")

    assert_equal inside[0], inside[1], "one transaction"
    assert inside[2]
    assert_equal 0, Report.count, "the application's rollback took the fenced write with it"
    assert_nil other_store.fence_highest(resource: resource), "and the fence's mark"
  end

  # The fence's statements on ActiveRecord's connection are prepared as the connection's own are: by default (as
  # ActiveRecord does on PostgreSQL), and never with database.yml's prepared_statements: false (a pooler in
  # transaction mode).
  def test_on_postgresql_the_fence_prepares_its_statements_as_the_connection_does
    fence_statements = lambda do
      job = writer_job { |writer| writer.lease.fenced { Report.create!(body: "fenced", token: writer.lease.token) } }
      job.perform_now("acme")
      Report.connection.select_values("SELECT name FROM pg_prepared_statements WHERE name LIKE 'lease_machines_%'")
    end
    assert_operator fence_statements.call.size, :>=, 5, "the fence's check, mark and event, prepared"
    config = ActiveRecord::Base.connection_db_config.configuration_hash.merge(prepared_statements: false)
    ActiveRecord::Base.establish_connection(config)
    assert_empty fence_statements.call
    assert_equal 2, Report.count
  end
end

# With the leases in Redis, a fenced write's events (and its refusals) are in the fence's database, with the write, not
# in the Redis store's streams; and the fence is wherever the write goes (fence_record), the lease read from Redis.
LeaseMachines::ActiveJobSupport.on_redis(
  ActiveJobFencedWriteTest,
  except: %i[test_a_refusal_the_application_rescues_and_commits_past_is_logged_once
             test_a_refused_write_without_a_transaction_of_the_applications_is_logged_once
             test_a_lease_lost_mid_job_has_its_fenced_write_rolled_back_with_everything_in_its_transaction
             test_fence_record_picks_the_database]
) do
  # The fenced write's store on ActiveRecord's connection is a Redis store of its own (its own client, the connection
  # as its fence); a lease store on SQLite again replaces it, and ActiveRecord's connection stays open.
  def test_with_the_leases_in_redis_the_fenced_write_reads_the_lease_from_redis_and_a_new_store_keeps_the_connection
    writer_job { |job| job.lease.fenced { Report.create!(body: "nightly", token: job.lease.token) } }
      .perform_now("acme")
    raw = Report.connection.raw_connection
    store, client = LeaseMachines::Jobs.pool.fence_of(raw)
    assert_equal :redis, store.adapter_name
    assert_equal RedisStoreSupport.shared.port, client.config.port

    sqlite_path = path
    LeaseMachines::Jobs.store = -> { LeaseMachines::Store.new(sqlite_path, clock: clock.to_proc) }
    writer_job { |job| job.lease.fenced { Report.create!(body: "again", token: job.lease.token) } }.perform_now("beta")
    refute raw.closed?, "ActiveRecord's connection is still open"
    store, own_client = LeaseMachines::Jobs.pool.fence_of(raw)
    assert_equal [:sqlite, nil], [store.adapter_name, own_client]
    refute client.connected?, "the fence store's Redis client was closed with it"
    assert_equal [["nightly", 1], ["again", 1]], Report.pluck(:body, :token)
  end
end

# On MySQL (MariaDB here), through ActiveRecord's mysql2 adapter.
LeaseMachines::ActiveJobSupport.on_mysql(ActiveJobFencedWriteTest)
