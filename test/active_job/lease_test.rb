# frozen_string_literal: true

require "support/active_job_support"

# holds_lease with ActiveJob's :test adapter on SQLite and (ActiveJobLeasePostgreSQLTest) PostgreSQL: the lease a
# perform holds, what its body sees, and how it ends.
class ActiveJobLeaseTest < Minitest::Test
  include LeaseMachines::ActiveJobSupport
  include ActiveJob::TestHelper if LEASE_MACHINES_RAILS

  def report_job(**options, &body)
    seen = @seen = []
    job_class(:ReportJob) do
      holds_lease(key: ->(account) { account }, ttl: 30.0, renew_every: 10.0, **options)
      define_method(:perform) do |account|
        seen << lease
        body&.call(self, account)
      end
    end
  end

  def test_a_job_class_gains_only_holds_lease_and_lease
    plain = Class.new(ActiveJob::Base)
    leased = Class.new(ActiveJob::Base) { include LeaseMachines::HoldsLease }

    added = ->(after, before) { (after - before).reject { _1.to_s.include?("__RBS_TEST_") } } # rake test:rbs's hooks
    assert_equal [:holds_lease], added.(leased.methods, plain.methods)
    assert_equal [:lease], added.(leased.instance_methods, plain.instance_methods)
  end

  def test_a_record_key_names_the_resource_after_the_group_and_the_record
    Account.create!(name: "first")
    account = Account.create!(name: "Acme")
    report_job.perform_now(account)

    lease = @seen.fetch(0)
    assert_equal "LeaseMachines::ActiveJobSupport::ReportJob:Account/2", lease.resource
    assert_equal 1, lease.token
  end

  def test_group_prefixes_the_key
    report_job(group: "nightly").perform_now("acme")

    assert_equal "nightly:acme", @seen.fetch(0).resource
  end

  def test_the_body_sees_a_held_lease_that_is_released_when_the_job_ends
    states = []
    report_job do |job|
      states << [job.lease.state, job.lease.held?, job.lease.remaining, job.lease.expires_at]
    end.perform_now("acme")

    lease = @seen.fetch(0)
    assert_equal [[:held, true, 20.0, 1_030.0]], states
    assert_equal [1], events_named(:acquire).map { _1[:token] }
    assert_equal [[:released, nil]], events_named(:release).map { [_1[:status], _1[:reason]] }
    assert_equal "LeaseMachines::ActiveJobSupport::ReportJob:acme", lease.resource
    assert_nil other_store.checkpoint(resource: lease.resource).lease
    assert_equal 2, other_store.revision(resource: lease.resource), "granted, then released"
    assert_equal lease.owner, events_named(:release).first[:owner]
    assert_same lease.job, events_named(:release).first[:job]
  end

  def test_the_lease_is_released_even_when_the_job_raises
    job = report_job { raise IOError, "disk full" }

    assert_raises(IOError) { job.perform_now("acme") }
    assert_equal [:released], events_named(:release).map { _1[:status] }
    assert_nil other_store.checkpoint(resource: @seen.fetch(0).resource).lease
  end

  def test_the_lease_is_released_when_a_subscriber_of_acquire_raises
    failing = ActiveSupport::Notifications.subscribe("acquire.lease_machines") { raise KeyError, "subscriber broke" }
    job = report_job
    begin
      assert_raises(KeyError) { job.perform_now("acme") }
    ensure
      ActiveSupport::Notifications.unsubscribe(failing)
    end

    resource = "LeaseMachines::ActiveJobSupport::ReportJob:acme"
    assert_empty @seen, "the body never ran"
    assert_equal [[:released, 1]], events_named(:release).map { [_1[:status], _1[:token]] }
    assert_nil other_store.checkpoint(resource: resource).lease
    assert other_store.acquire(resource: resource, owner: 999, ttl: 30.0).granted?, "the key is free at once"
  end

  def test_renewal_confirms_the_lease_and_pushes_its_expiry
    report_job do
      clock.advance(10.0)
      renewer.renew_due
      clock.advance(15.0)
    end.perform_now("acme")

    lease = @seen.fetch(0)
    assert_equal [1_040.0], events_named(:renew).map { _1[:expires_at] }
    assert_equal 1_040.0, lease.expires_at
    assert_empty events_named(:at_risk)
    assert_empty renewer.leases, "renewal stops when the job ends"
  end

  def test_a_conflict_is_retried_after_wait_and_runs_once_the_lease_is_free
    job = report_job(on_conflict: :retry, wait: 15.0, attempts: 3)
    resource = "#{job.name}:acme"
    held = held_elsewhere(resource)

    job.perform_later("acme")
    before = Time.now.to_f
    perform_enqueued_jobs
    after = Time.now.to_f

    assert_empty @seen, "the body did not run while another owner held the lease"
    assert_equal [[:retry, 0]], events_named(:conflict).map { [_1[:action], _1[:conflicts]] }
    retried = enqueued_jobs.last
    assert_equal job, retried[:job]
    assert_includes (before + 15.0)..(after + 15.0), retried[:at], "15 s after the conflict"

    other_store.release(resource: resource, owner: 999, token: held.lease.token)
    perform_enqueued_jobs(at: Time.now + 60)
    assert_equal 1, @seen.size, "the retried job ran, not dropped"
    assert_equal 2, @seen.first.token
    assert_equal [1], events_named(:conflict).map { _1[:conflicts] + 1 }, "one conflict, one retry"
  end

  def test_a_conflict_retried_attempts_times_then_raises_lease_busy
    job = report_job(on_conflict: :retry, wait: 1.0, attempts: 2)
    held_elsewhere("#{job.name}:acme")
    job.perform_later("acme")

    error = assert_raises(LeaseMachines::LeaseBusy) do
      3.times { perform_enqueued_jobs(at: Time.now + 3600) }
    end
    assert_kind_of LeaseMachines::Error, error
    assert_equal "#{job.name}:acme", error.resource
    assert_equal 2, error.attempts
    assert_equal %i[retry retry raise], events_named(:conflict).map { _1[:action] }
    assert_empty @seen
  end

  # A conflict is an error of ActiveJob's own kind: its retries are retry_on's (enqueue_retry, then retry_stopped
  # once the attempts are spent), a discard is discard_on's (the job's after_discard runs), and the wait is exact
  # to the fraction of a second (retry_on truncates a number of seconds to whole ones).
  def test_conflicts_are_handled_by_retry_on_and_discard_on
    seen = []
    subscriber = ActiveSupport::Notifications.subscribe(/\A(enqueue_retry|retry_stopped|discard)\.active_job\z/) do
      |event| seen << [event.name, event.payload[:error].class]
    end
    retried = report_job(on_conflict: :retry, wait: 1.5, attempts: 1)
    held_elsewhere("#{retried.name}:acme")
    retried.perform_later("acme")
    before = Time.now.to_f
    perform_enqueued_jobs
    assert_includes (before + 1.5)..(Time.now.to_f + 1.5), enqueued_jobs.last[:at], "1.5 s after the conflict"
    assert_raises(LeaseMachines::LeaseBusy) { perform_enqueued_jobs(at: Time.now + 3600) }

    discarded = []
    dropped = job_class(:DroppedJob) do
      holds_lease key: ->(account) { account }, ttl: 30.0, on_conflict: :discard
      after_discard { |_job, error| discarded << error.class }
      define_method(:perform) { |_account| flunk "the job ran while another owner held its lease" }
    end
    held_elsewhere("#{dropped.name}:acme")
    dropped.perform_now("acme")

    # Jobs::Conflict: the LeaseBusy of the perform's own grant.
    assert_equal [["enqueue_retry.active_job", LeaseMachines::Jobs::Conflict],
                  ["retry_stopped.active_job", LeaseMachines::Jobs::Conflict],
                  ["discard.active_job", LeaseMachines::Jobs::Conflict]], seen
    assert_equal [LeaseMachines::Jobs::Conflict], discarded
    assert_operator LeaseMachines::Jobs::Conflict, :<, LeaseMachines::LeaseBusy
    assert_equal %i[retry raise discard], events_named(:conflict).map { _1[:action] }
  ensure
    ActiveSupport::Notifications.unsubscribe(subscriber)
  end

  # A handler of the class's own for a broader error (declared after holds_lease, or in a subclass) does not take a
  # conflict from the declaration: it is still retried for its attempts.
  def test_the_declarations_handler_wins_over_the_classs_own
    swallowed = []
    job = report_job(on_conflict: :retry, wait: 1.0, attempts: 2)
    job.retry_on(StandardError, attempts: 1) # retried never: raised at once
    child = Class.new(job) { rescue_from(StandardError) { |error| swallowed << error } }
    LeaseMachines::ActiveJobSupport.const_set(:ChildReportJob, child) unless LeaseMachines::ActiveJobSupport.const_defined?(:ChildReportJob, false)
    held_elsewhere("#{job.name}:acme")
    job.perform_later("acme")
    error = assert_raises(LeaseMachines::LeaseBusy) { 3.times { perform_enqueued_jobs(at: Time.now + 3600) } }
    assert_equal 2, error.attempts
    assert_equal %i[retry retry raise], events_named(:conflict).map { _1[:action] }
    held_elsewhere("#{child.name}:acme")
    child.perform_now("acme")
    assert_empty swallowed, "the subclass's rescue_from did not swallow the conflict"
    assert_equal 1, enqueued_jobs.size, "the child's conflict was retried"
  ensure
    support = LeaseMachines::ActiveJobSupport
    support.send(:remove_const, :ChildReportJob) if support.const_defined?(:ChildReportJob, false)
  end

  # A job's body that performs another job inline, which is busy, fails with a plain LeaseBusy: the outer job is not
  # retried as if its own grant had been refused (its body already ran).
  def test_a_conflict_out_of_the_body_is_not_the_jobs_own
    inner = job_class(:InnerJob) { holds_lease key: ->(a) { a }, ttl: 30.0, on_conflict: :raise }
    inner.define_method(:perform) { |_a| flunk "the busy inner job ran" }
    runs = 0
    outer = report_job(on_conflict: :retry, wait: 1.0, attempts: 3) do |_job, account|
      runs += 1
      inner.perform_now(account)
    end
    held_elsewhere("#{inner.name}:acme")
    error = assert_raises(LeaseMachines::LeaseBusy) { outer.perform_now("acme") }
    refute_kind_of LeaseMachines::Jobs::Conflict, error
    assert_equal 1, runs
    assert_empty enqueued_jobs
  end

  def test_a_job_enqueued_by_an_earlier_version_keeps_its_count_of_conflicts
    job = report_job(on_conflict: :retry, wait: 1.0, attempts: 3)
    held_elsewhere("#{job.name}:acme")
    queued = job.new("acme")
    queued.exception_executions = { "lease_machines.conflicts" => 3 }
    assert_raises(LeaseMachines::LeaseBusy) { queued.perform_now }
    assert_equal [[:raise, 3]], events_named(:conflict).map { [_1[:action], _1[:conflicts]] }
  end

  def test_discard_emits_its_event_and_runs_nothing
    job = report_job(on_conflict: :discard)
    held_elsewhere("#{job.name}:acme")

    job.perform_now("acme")

    assert_empty @seen
    assert_equal [[:discard, "#{job.name}:acme", nil]],
                 events_named(:conflict).map { [_1[:action], _1[:resource], _1[:token]] }
    assert_kind_of job, events_named(:conflict).first[:job]
    assert_empty enqueued_jobs
  end

  def test_raise_raises_lease_busy
    job = report_job(on_conflict: :raise)
    held_elsewhere("#{job.name}:acme")

    assert_raises(LeaseMachines::LeaseBusy) { job.perform_now("acme") }
    assert_empty @seen
  end

  def test_a_release_after_the_lease_was_lost_does_not_free_the_successor
    successor = nil
    job = report_job do |current, account|
      clock.advance(31.0) # the job stalled past its TTL
      successor = other_store.acquire(resource: "#{current.class.name}:#{account}", owner: 999, ttl: 30.0)
    end
    job.perform_now("acme")

    assert_equal :granted, successor.status
    assert_equal 2, successor.lease.token
    release = events_named(:release).fetch(0)
    assert_equal [:rejected, 1], [release[:status], release[:token]]
    assert_includes %i[wrong_owner stale_token expired], release[:reason]
    assert_equal successor.lease, other_store.checkpoint(resource: "#{job.name}:acme").lease
  end

  def test_check_raises_lease_lost_once_the_authority_refused_the_renewal
    raised = nil
    report_job do |job, account|
      clock.advance(31.0)
      other_store.acquire(resource: "#{job.class.name}:#{account}", owner: 999, ttl: 30.0)
      renewer.renew_due
      raised = assert_raises(LeaseMachines::LeaseLost) { job.lease.check! }
    end.perform_now("acme")

    assert_equal [:lost, 1], [raised.state, raised.token]
    assert_kind_of LeaseMachines::Error, raised
    assert_equal [:stale_token], events_named(:lost).map { _1[:reason] }
    assert @seen.fetch(0).lost?
  end

  def test_the_lease_reader_is_nil_before_a_perform
    assert_nil report_job.new("acme").lease
  end
end

LeaseMachines::ActiveJobSupport.on_postgresql(ActiveJobLeaseTest)

# On MySQL (MariaDB here), through ActiveRecord's mysql2 adapter.
LeaseMachines::ActiveJobSupport.on_mysql(ActiveJobLeaseTest)
