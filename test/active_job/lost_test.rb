# frozen_string_literal: true

require "support/active_job_support"
require "stringio"

# holds_lease on_lost: what becomes of a job whose own lease was lost while it ran, once it lets the LeaseLost
# (lease.check!, lease.fenced) or the Fenced refusal of its write out: retried under a new lease (the default, for
# lost_attempts retries), discarded, or raised; a loss event says which. On SQLite and
# (ActiveJobLostPostgreSQLTest) PostgreSQL.
class ActiveJobLostTest < Minitest::Test
  include LeaseMachines::ActiveJobSupport
  include ActiveJob::TestHelper if LEASE_MACHINES_RAILS

  # The successor that takes the lease over once the job stalled past its TTL.
  SUCCESSOR = 999

  # A job whose body is the block, called with the job and the number of its run (1, 2, ...); every run is recorded
  # as [run, job_id, token].
  def lost_job(name = :LostJob, **options, &body)
    runs = @runs = []
    job_class(name) do
      holds_lease(key: ->(account) { account }, ttl: 30.0, renew_every: 10.0, **options)
      define_method(:perform) do |_account|
        runs << [runs.size + 1, job_id, lease.token]
        body.call(self, runs.size)
      end
    end
  end

  def resource(name = :LostJob) = "LeaseMachines::ActiveJobSupport::#{name}:acme"

  def losses = events_named(:loss).map { [_1[:action], _1[:losses], _1[:attempts], _1[:reason], _1[:token]] }

  def test_a_lost_lease_is_retried_by_default_after_wait_under_a_new_lease
    job = lost_job do |current, run|
      lose_lease(current) if run == 1
      current.lease.check!
    end
    declaration = LeaseMachines::Jobs::Declarations.declaration(job)
    assert_equal [:retry, 10.0, 3], [declaration.on_lost, declaration.lost_wait, declaration.lost_attempts]

    job.perform_later("acme")
    before = Time.now.to_f
    perform_enqueued_jobs
    after = Time.now.to_f
    retried = enqueued_jobs.last
    assert_equal job, retried[:job]
    assert_includes (before + 10.0)..(after + 10.0), retried[:at], "lost_wait: wait's 10 s after the loss"
    successor_gone
    perform_enqueued_jobs(at: Time.now + 60)

    job_id = @runs.first[1]
    assert_equal [[1, job_id, 1], [2, job_id, 3]], @runs, "the same job ran again, under token 3 (the successor had 2)"
    assert_equal [[:retry, 0, 3, :stale_token, 1]], losses
    assert_equal [1, 3], events_named(:release).map { _1[:token] }
    assert_empty enqueued_jobs.reject { _1[:at].nil? || _1[:at] > Time.now.to_f + 60 }, "nothing more to run"
  end

  def test_lost_wait_and_lost_attempts_bound_the_retries_then_the_lost_exception_is_raised
    raised = []
    job = lost_job(lost_wait: 1.5, lost_attempts: 2) do |current|
      lose_lease(current)
      successor_gone # the next run is granted at once
      current.lease.check!
    rescue LeaseMachines::LeaseLost => e
      raised << e
      raise
    end
    job.perform_later("acme")
    before = Time.now.to_f
    perform_enqueued_jobs
    assert_includes (before + 1.5)..(Time.now.to_f + 1.5), enqueued_jobs.last[:at], "1.5 s, exactly"
    perform_enqueued_jobs(at: Time.now + 60)
    error = assert_raises(LeaseMachines::LeaseLost) { perform_enqueued_jobs(at: Time.now + 120) }

    assert_same raised.last, error, "the job's own LeaseLost, raised once the retries were spent"
    assert_equal [1, 3, 5], @runs.map(&:last), "each run under a new token, a successor's between them"
    assert_equal [[:retry, 0, 2, :stale_token, 1], [:retry, 1, 2, :stale_token, 3], [:raise, 2, 2, :stale_token, 5]],
                 losses
    assert_equal 3, error.job.exception_executions[LeaseMachines::Jobs::Execution::LOSSES],
                 "counted in exception_executions, as retry_on counts"
  end

  # The job's own lost lease is an error of ActiveJob's kind: enqueue_retry, then retry_stopped once the retries are
  # spent, discard for on_lost: :discard (after_discard runs).
  def test_lost_leases_are_handled_by_retry_on_and_discard_on
    seen = []
    subscriber = ActiveSupport::Notifications.subscribe(/\A(enqueue_retry|retry_stopped|discard)\.active_job\z/) do
      |event| seen << [event.name.delete_suffix(".active_job"), event.payload[:error].class]
    end
    retried = lost_job(lost_attempts: 1) do |current|
      lose_lease(current)
      successor_gone
      current.lease.check!
    end
    retried.perform_later("acme")
    perform_enqueued_jobs
    assert_raises(LeaseMachines::LeaseLost) { perform_enqueued_jobs(at: Time.now + 60) }

    discarded = []
    dropped = lost_job(:DroppedJob, on_lost: :discard) do |current|
      lose_lease(current)
      current.lease.check!
    end
    dropped.after_discard { |_job, error| discarded << [error.class, error.token] }
    dropped.perform_now("acme")

    assert_equal [["enqueue_retry", LeaseMachines::Jobs::Lost], ["retry_stopped", LeaseMachines::Jobs::Lost],
                  ["discard", LeaseMachines::Jobs::Lost]], seen
    assert_equal [[LeaseMachines::Jobs::Lost, 1]], discarded
    assert_equal [[:discard, 0, 3, :stale_token, 1]], losses.last(1)
    assert_empty enqueued_jobs, "the discarded job is not enqueued again"
  ensure
    ActiveSupport::Notifications.unsubscribe(subscriber)
  end

  def test_raise_lets_the_lost_lease_through
    job = lost_job(on_lost: :raise) do |current|
      lose_lease(current)
      current.lease.check!
    end

    error = assert_raises(LeaseMachines::LeaseLost) { job.perform_now("acme") }
    assert_equal [LeaseMachines::Jobs::Lost, :lost, :stale_token, 1],
                 [error.class, error.state, error.reason, error.token]
    assert_equal [[:raise, 0, 3, :stale_token, 1]], losses
    assert_empty enqueued_jobs
  end

  # A write the fence refused (the job never heard its lease was lost: no renewal was due) is the job's lost lease
  # too: retried, and the retry writes under its new token.
  def test_a_fenced_refusal_is_retried_and_the_retry_writes_under_its_new_token
    job = lost_job do |current, run|
      if run == 1
        clock.advance(31.0) # stalled past its TTL; the successor takes over and writes
        successor = other_store.acquire(resource: current.lease.resource, owner: SUCCESSOR, ttl: 30.0)
        other_store.fenced(resource: current.lease.resource, token: successor.lease.token) do |db|
          insert_report(db, "successor", successor.lease.token)
        end
      end
      current.lease.fenced { Report.create!(body: "run #{run}", token: current.lease.token) }
    end
    job.perform_later("acme")
    perform_enqueued_jobs
    successor_gone
    perform_enqueued_jobs(at: Time.now + 60)

    assert_equal [["successor", 2], ["run 2", 3]], Report.order(:id).pluck(:body, :token)
    assert_equal [1, 3], @runs.map(&:last)
    assert_equal [[:retry, 0, 3, :stale_token, 1]], losses
    assert_equal [LeaseMachines::Jobs::Refused], events_named(:loss).map { _1[:error].class }
    assert_equal 2, events_named(:loss).first[:error].highest
  end

  def test_a_job_that_rescues_its_lost_lease_and_ends_normally_is_done
    job = lost_job do |current|
      lose_lease(current)
      current.lease.check!
    rescue LeaseMachines::LeaseLost
      nil # stops without writing more, as examples/nightly_report.rb does
    end
    job.perform_now("acme")

    assert_equal 1, @runs.size
    assert_empty events_named(:loss)
    assert_empty enqueued_jobs
  end

  # A job's body that performs another job inline, whose lease is lost, fails with a plain LeaseLost: the outer job
  # (its own lease held all along) is not retried as if its own lease had been lost.
  def test_another_jobs_lost_lease_is_raised_on_as_a_plain_lease_lost
    inner = lost_job(:InnerJob, on_lost: :raise) do |current|
      # Taken over while the outer job's lease is renewed: only the inner job's is lost.
      lease = current.lease
      other_store.transfer(resource: lease.resource, owner: lease.owner, token: lease.token, new_owner: SUCCESSOR,
                           ttl: 30.0)
      clock.advance(10.0)
      renewer.renew_due
      current.lease.check!
    end
    inner_runs = @runs
    outer_runs = []
    outer = job_class(:OuterJob) do
      holds_lease key: ->(account) { account }, ttl: 30.0, renew_every: 10.0
      define_method(:perform) do |account|
        outer_runs << lease.token
        inner.perform_now(account)
      end
    end

    error = assert_raises(LeaseMachines::LeaseLost) { outer.perform_now("acme") }
    assert_equal LeaseMachines::LeaseLost, error.class, "not the inner job's Jobs::Lost"
    assert_equal [resource(:InnerJob), 1, :lost], [error.resource, error.token, error.state]
    assert_nil error.cause
    assert_equal [1], outer_runs
    assert_equal [resource(:OuterJob)], events_named(:renew).map { _1[:resource] },
                 "the outer job's lease was renewed, and held all along"
    assert_equal 1, inner_runs.size
    assert_equal [[:raise, resource(:InnerJob)]], events_named(:loss).map { [_1[:action], _1[:resource]] },
                 "the inner job's own loss, and none of the outer job's"
    assert_empty enqueued_jobs
  end

  # A handler of the class's own for a broader error (declared after holds_lease, or in a subclass) does not take the
  # job's lost lease from the declaration.
  def test_the_declarations_handler_wins_over_the_classs_own
    swallowed = []
    job = lost_job(lost_attempts: 1) do |current|
      lose_lease(current)
      successor_gone
      current.lease.check!
    end
    job.rescue_from(StandardError) { |error| swallowed << error }
    GC.start # the declaration's handlers live as long as the class
    job.perform_now("acme")

    assert_empty swallowed
    assert_equal 1, enqueued_jobs.size, "retried by on_lost"
    assert_equal [[:retry, 0, 1, :stale_token, 1]], losses
  end

  def test_the_log_subscriber_logs_the_loss_at_warn
    log = StringIO.new
    logger = ActiveJob::Base.logger
    formatter = ->(severity, _, _, line) { "#{severity} #{line}\n" }
    ActiveJob::Base.logger = Logger.new(log, level: :info, formatter: formatter)
    lost_job(on_lost: :discard) do |current|
      lose_lease(current)
      current.lease.check!
    end.perform_now("acme")

    line = log.string.lines.grep(/\[lease_machines\].*while the job ran/).fetch(0)
    assert_equal "WARN [lease_machines] LeaseMachines::ActiveJobSupport::LostJob (#{@runs.first[1]}) #{resource} " \
                 "token 1: lost while the job ran (stale_token); discard\n", line
  ensure
    ActiveJob::Base.logger = logger
  end
end

LeaseMachines::ActiveJobSupport.on_postgresql(ActiveJobLostTest)

# On MySQL (MariaDB here), through ActiveRecord's mysql2 adapter.
LeaseMachines::ActiveJobSupport.on_mysql(ActiveJobLostTest)
