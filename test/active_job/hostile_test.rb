# frozen_string_literal: true

require "timeout"
require "support/active_job_support"

# What a hostile pass over holds_lease found, each shown through real jobs: stale writes refused as soon as another
# process committed a newer grant, a lease that ends with its job, no window between a grant and its release, and
# the application's connections left as the application set them.
class ActiveJobHostileTest < Minitest::Test
  include LeaseMachines::ActiveJobSupport

  # Sooner than this is at once, not after a wait for a lock: half the store's busy timeout (5 s), so that a loaded
  # machine's slow second does not read as a wait.
  PROMPT = 2.5

  # A job whose body is the test's block, called with the job.
  def body_job(name = :BodyJob, ttl: 30.0, &body)
    job_class(name) do
      holds_lease key: ->(account) { account }, ttl: ttl, renew_every: ttl / 3, on_conflict: :raise
      define_method(:perform) { |_account| body.call(self) }
    end
  end

  def resource(name = :BodyJob) = "LeaseMachines::ActiveJobSupport::#{name}:acme"

  # Another process takes +resource+ at the test clock's instant and commits, then exits: it has not written.
  def granted_in_another_process(resource)
    plain_suite_only!("a forked child process")
    now = clock.now
    pid = fork do
      store = LeaseMachines::Store.new(path, clock: -> { now })
      exit!(store.acquire(resource: resource, owner: 4242, ttl: 30.0).granted? ? 0 : 1)
    end
    Process.wait(pid)
    assert_predicate $CHILD_STATUS || $?, :success?
  end

  def test_a_stale_token_is_refused_once_another_process_committed_a_newer_grant_before_it_writes
    refused = nil
    body_job do |job|
      job.lease.fenced { Report.create!(body: "first", token: job.lease.token) }
      clock.advance(31.0) # paused past the TTL (a GC, a network stall); nobody renewed
      granted_in_another_process(resource)
      assert_equal 1, other_store.fence_highest(resource: resource), "the successor has not written yet"
      refused = assert_raises(LeaseMachines::Fenced) do
        job.lease.fenced { Report.create!(body: "stale", token: job.lease.token) }
      end
    end.perform_now("acme")

    assert_equal [:stale_token, 1, 2], [refused.reason, refused.token, refused.highest]
    assert_equal [["first", 1]], Report.pluck(:body, :token)
    assert_equal [:refused, :stale_token], events_named(:fenced_write).last.values_at(:outcome, :reason)
  end

  def test_a_lease_whose_job_ended_is_lost_for_every_reader_and_writes_nothing
    kept = nil
    body_job { |job| kept = job.lease }.perform_now("acme")
    granted_in_another_process(resource)

    assert_equal [:lost, false, :job_ended], [kept.state, kept.held?, kept.reason]
    lost = assert_raises(LeaseMachines::LeaseLost) { kept.check! }
    assert_equal "#{resource}: the lease with token 1 is lost (job_ended); stop before writing", lost.message
    assert_raises(LeaseMachines::LeaseLost) { kept.fenced { Report.create!(body: "late") } }
    thread = Thread.new do
      Thread.current.report_on_exception = false # its LeaseLost is the test's to see, not stderr's
      kept.fenced { Report.create!(body: "late, from a thread the job started") }
    end
    assert_raises(LeaseMachines::LeaseLost) { thread.value }
    # The store's fence refuses the token too, whoever presents it.
    error = assert_raises(LeaseMachines::Fenced) { other_store.fenced(resource: resource, token: 1) { flunk } }
    assert_equal :stale_token, error.reason
    assert_equal 0, Report.count
  end

  def test_an_interrupt_while_the_grant_commits_still_releases_the_lease
    plain_suite_only!("a forked child process holding the database's lock")
    ran = []
    job = body_job { |job| ran << job.lease.token }
    ready, hold = IO.pipe
    go, commit = IO.pipe
    pid = fork do # another process holds the write lock until told to commit: the grant waits for it, then commits
      ready.close
      commit.close
      db = SQLite3::Database.new(path)
      db.execute("BEGIN IMMEDIATE")
      hold.puts("locked")
      hold.flush
      go.gets
      db.execute("COMMIT")
      exit!(0)
    end
    hold.close
    go.close
    ready.gets
    runner = Thread.current
    ended = false
    # The lock is given up once the timeout has landed on the job's thread and waits there, deferred by the grant.
    teller = Thread.new do
      eventually(30) { runner.pending_interrupt? || ended }
      commit.puts("commit")
      commit.flush
    end
    assert_raises(Timeout::Error) { Timeout.timeout(1.0) { job.perform_now("acme") } }
    ended = true
    teller.join
    Process.wait(pid)

    assert_empty ran, "the interrupt acts as the job starts, before its body"
    assert_equal [:released], events_named(:release).map { _1[:status] }
    assert_nil other_store.checkpoint(resource: resource).lease, "the key is free at once, not after the TTL"
    assert_equal 1, other_store.checkpoint(resource: resource).last_issued
  ensure
    ready&.close
    commit&.close
  end

  def test_a_job_performed_inside_an_open_transaction_says_what_to_do_at_once
    job = body_job { flunk "the job must not run" }
    other_store # the lease store's tables exist, as the install generator's migration makes them
    started = Process.clock_gettime(Process::CLOCK_MONOTONIC)
    error = assert_raises(LeaseMachines::StoreError) do
      Report.transaction do
        Report.create!(body: "before the job")
        job.perform_now("acme")
      end
    end
    assert_operator Process.clock_gettime(Process::CLOCK_MONOTONIC) - started, :<, PROMPT, "no busy timeout first"
    assert_match(/this thread has a transaction open on the lease store's SQLite database, which holds its only /,
                 error.message)
    assert_match(/enqueue_after_transaction_commit/, error.message)
    assert_equal 0, Report.count
    assert_nil other_store.checkpoint(resource: resource).last_issued, "nothing was granted"
  end

  def test_a_fenced_write_inside_the_jobs_own_transaction_survives_a_garbage_collection
    body_job do |job|
      Report.transaction do
        Report.create!(body: "summary")
        GC.start(full_mark: true, immediate_sweep: true)
        job.lease.fenced { Report.create!(body: "fenced", token: job.lease.token) }
      end
      GC.start(full_mark: true, immediate_sweep: true)
      Report.transaction { job.lease.fenced { Report.create!(body: "again", token: job.lease.token) } }
    end.perform_now("acme")

    assert_equal %w[summary fenced again], Report.order(:id).pluck(:body)
  end

  def test_the_applications_connection_keeps_its_settings
    connection = ActiveRecord::Base.lease_connection
    before = %w[journal_mode synchronous].map { connection.select_value("PRAGMA #{_1}") }
    body_job { |job| job.lease.fenced { Report.create!(body: "x", token: job.lease.token) } }.perform_now("acme")
    assert_equal before, %w[journal_mode synchronous].map { connection.select_value("PRAGMA #{_1}") }
    assert_equal 1, before.last, "ActiveRecord's NORMAL, not the store's FULL"
  end

  def test_a_job_that_never_touches_the_database_leases_no_connection_and_needs_no_sqlite_fence
    leased = :unset
    untouchable = Class.new do # a database that is not SQLite, with no connection leased to this thread
      def self.with_connection = raise("the fence record's connection was used")
      def self.connection_pool = Struct.new(:active_connection?).new(nil)
    end
    LeaseMachines::Jobs.fence_record = untouchable
    ActiveRecord::Base.connection_handler.clear_active_connections!
    thread = Thread.new do
      body_job { leased = ActiveRecord::Base.connection_pool.active_connection? }.perform_now("acme")
    end
    thread.join
    assert_nil leased, "no ActiveRecord connection is leased for the job"
    assert_equal [:released], events_named(:release).map { _1[:status] }
  end

  def test_a_fence_record_that_is_not_an_active_record_class_is_a_type_error
    ill_typed!
    errors = []
    body_job do |job|
      ["Report", BasicObject.new].each do |record|
        errors << assert_raises(TypeError) { job.lease.fenced(record:) { flunk } }
      end
    end.perform_now("acme")
    assert_equal ['fenced: record: must be an ActiveRecord class, got "Report"',
                  "fenced: record: must be an ActiveRecord class, got BasicObject"], errors.map(&:message)
  end

  def test_commit_inside_a_fenced_write_raises_store_error
    error = nil
    body_job do |job|
      error = assert_raises(LeaseMachines::StoreError) do
        job.lease.fenced { |connection| connection.execute("COMMIT") }
      end
    end.perform_now("acme")
    assert_match(/the block of fenced ended the store's transaction/, error.message)
  end

  def test_an_after_commit_that_raises_is_logged_as_committed
    hooked = Class.new(Report) do
      def self.name = "HookedReport"
      after_commit { raise IOError, "the after_commit hook failed" }
    end
    body_job do |job|
      assert_raises(IOError) { job.lease.fenced { hooked.create!(body: "landed", token: job.lease.token) } }
    end.perform_now("acme")

    assert_equal ["landed"], Report.pluck(:body), "the write committed"
    event = events_named(:fenced_write).fetch(0)
    assert_equal [true, ["IOError", "the after_commit hook failed"]], event.values_at(:committed, :exception)
    log = StringIO.new
    logger = ActiveJob::Base.logger
    ActiveJob::Base.logger = Logger.new(log)
    LeaseMachines::Jobs::LogSubscriber.new.fenced_write(Struct.new(:payload, :duration).new(event, 1.0))
    assert_match(/fenced write committed, then raised \(an after_commit callback\?\): IOError: the after_commit/,
                 log.string)
  ensure
    ActiveJob::Base.logger = logger if logger
  end

  def test_a_release_subscriber_may_perform_the_next_job_on_a_shared_store
    LeaseMachines::Jobs.store = LeaseMachines::Store.new(path, clock: clock.to_proc)
    ran = []
    job = body_job { |j| ran << [j.arguments.first, j.lease.token] }
    chained = false
    subscription = ActiveSupport::Notifications.subscribe("release.lease_machines") do
      next if chained

      chained = true
      job.perform_now("acme")
    end
    job.perform_now("acme")

    assert_equal [["acme", 1], ["acme", 2]], ran
  ensure
    ActiveSupport::Notifications.unsubscribe(subscription) if subscription
    LeaseMachines::Jobs.store&.close if LeaseMachines::Jobs.store.is_a?(LeaseMachines::Store)
  end
end

# On PostgreSQL, but the tests of SQLite's own locking (one writer; its PRAGMAs).
LeaseMachines::ActiveJobSupport.on_postgresql(
  ActiveJobHostileTest, except: %i[test_an_interrupt_while_the_grant_commits_still_releases_the_lease
                                   test_a_job_performed_inside_an_open_transaction_says_what_to_do_at_once
                                   test_the_applications_connection_keeps_its_settings]
) do
  def fenced_job = body_job { |job| job.lease.fenced { Report.create!(body: "fenced", token: job.lease.token) } }

  def monotonic = Process.clock_gettime(Process::CLOCK_MONOTONIC)

  # PostgreSQL locks rows: the job runs beside the open transaction. Its fenced write joins it and holds the lease's
  # row until it commits, so the lease is released then (at once, not after a lock timeout), and the same key's next
  # job in that transaction is refused at once.
  def test_a_job_performed_inside_an_open_transaction_runs_and_its_lease_is_released_when_it_commits
    job = fenced_job
    started = monotonic
    Report.transaction do
      Report.create!(body: "before the job")
      job.perform_now("acme")
      assert_empty events_named(:release), "not while the transaction holds the lease's row"
      error = assert_raises(LeaseMachines::StoreError) { job.perform_now("acme") }
      assert_match(/#{resource}: this thread has a transaction open that holds the lease's row \(an earlier/,
                   error.message)
    end

    assert_operator monotonic - started, :<, ActiveJobHostileTest::PROMPT, "no lock timeout"
    assert_equal [[:released, 1]], events_named(:release).map { _1.values_at(:status, :token) }
    assert_nil other_store.checkpoint(resource: resource).lease
    assert_equal ["before the job", "fenced"], Report.order(:id).pluck(:body)
    assert_equal 1, other_store.fence_highest(resource: resource)
  end

  # A transactional test's transaction is not joinable: the fenced write runs in a savepoint under it, whose commit
  # callbacks ActiveRecord runs when it is released. The row stays locked until the test's transaction rolls back.
  def test_a_job_in_a_transactional_test_is_released_when_the_tests_transaction_rolls_back
    connection = ActiveRecord::Base.lease_connection
    connection.begin_transaction(joinable: false, _lazy: false) # as ActiveRecord::TestFixtures opens it
    started = monotonic
    fenced_job.perform_now("acme")
    assert_empty events_named(:release)
    assert_equal [true], events_named(:fenced_write).map { _1[:committed] }, "its savepoint was released"
    connection.rollback_transaction

    assert_operator monotonic - started, :<, ActiveJobHostileTest::PROMPT, "no lock timeout"
    assert_equal [:released], events_named(:release).map { _1[:status] }
    assert_nil other_store.checkpoint(resource: resource).lease
    assert_equal 0, Report.count
    assert_nil other_store.fence_highest(resource: resource), "the mark rolled back with the write"
  end

  # Without an open transaction around the job, nothing waits: the release is at the job's end.
  def test_a_job_released_at_its_end_when_its_fenced_write_committed
    fenced_job.perform_now("acme")

    assert_equal [:released], events_named(:release).map { _1[:status] }
    assert_equal ["fenced"], Report.pluck(:body)
  end
end
