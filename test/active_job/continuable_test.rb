# frozen_string_literal: true

require "support/active_job_support"

# ActiveJob::Continuable (Rails 8.1) and holds_lease: a lease lost while a step runs stops the job at its next
# checkpoint, and Continuable resumes it from its cursor under a new lease; a lost lease at a fenced write after
# progress resumes it too. With progress: :fenced the progress is saved only through the fence and read back under
# each new lease, so a stalled holder can neither move its successor's cursor nor make a later resume skip or redo
# what was committed. On SQLite and (ActiveJobContinuablePostgreSQLTest) PostgreSQL; skipped where ActiveJob has no
# Continuable (the Rails 7.2 lane).
class ActiveJobContinuableTest < Minitest::Test
  include LeaseMachines::ActiveJobSupport
  include ActiveJob::TestHelper if LEASE_MACHINES_RAILS

  LINES = 5

  def setup
    super
    return if defined?(ActiveJob::Continuable)

    skip "ActiveJob::Continuable is Rails 8.1's: ActiveJob #{ActiveJob.version} (this lane) has none"
  end

  def teardown
    ActiveSupport::Notifications.unsubscribe(@subscription_of_active_job) if @subscription_of_active_job
    super
  end

  # A continuable job that writes LINES report lines in one step :lines, each through the fence, its cursor the next
  # line: moved by the write itself (+through: :step+, lease.fenced(step, to:)) or by step.advance! after it
  # (+through: :advance+). +before+ and +after+ run around each line's write (given the job, the line and the step).
  # Every line attempted is recorded as [line, token]. +first+: Continuable included before holds_lease (its
  # around_perform outside the lease's) or after it (+:lease+).
  def lines_job(first: :continuable, through: :advance, before: nil, after: nil, **options)
    tried = @tried = []
    job_class(:LinesJob) do
      include ActiveJob::Continuable if first == :continuable
      holds_lease(key: ->(account) { account }, ttl: 30.0, renew_every: 10.0, **options)
      include ActiveJob::Continuable if first == :lease
      define_method(:perform) do |_account|
        step :lines, start: 0 do |step|
          (step.cursor...LINES).each do |line|
            before&.call(self, line, step)
            tried << [line, lease.token]
            write = -> { Report.create!(body: "line #{line}", token: lease.token) }
            if through == :step
              lease.fenced(step, to: line + 1) { write.call }
              after&.call(self, line, step)
            else
              lease.fenced { write.call }
              after&.call(self, line, step)
              step.advance!
            end
          end
        end
      end
    end
  end

  def resource = "LeaseMachines::ActiveJobSupport::LinesJob:acme"

  # A hook of lines_job's that runs the block (given the job and the step) at +line+ of the first holder (token 1).
  def at_line(line, &block) = ->(job, at, step) { block.call(job, step) if at == line && job.lease.token == 1 }

  # The first holder stalls past its TTL, and a successor takes the lease over (its renewer never runs: it is at
  # risk, and hears of it from the fence).
  def stall_and_take_over
    clock.advance(31.0)
    held_elsewhere(resource)
  end

  # A continuable job named +name+ (progress: :fenced, and +options+) whose step :lines is the block, run in the job
  # and given the step and a stall: called with the job, it stalls past its TTL and another owner takes the lease.
  def fenced_lines_job(name, **options, &lines)
    clock = self.clock
    store = other_store
    stall = lambda do |job|
      clock.advance(31.0)
      store.acquire(resource: job.lease.resource, owner: 999, ttl: 30.0)
    end
    job_class(name) do
      include ActiveJob::Continuable
      holds_lease(key: ->(account) { account }, ttl: 30.0, renew_every: 10.0, progress: :fenced, **options)
      define_method(:perform) { |_account| step(:lines, start: 0) { |step| instance_exec(step, stall, &lines) } }
    end
  end

  def report = Report.order(:id).pluck(:body, :token)

  def lines(*pairs) = pairs.map { |line, token| ["line #{line}", token] }

  def losses = events_named(:loss).map { [_1[:action], _1[:reason], _1[:token]] }

  # The progress rows: [job_id, progress, token].
  def progress_rows = ActiveRecord::Base.connection.select_rows("SELECT job_id, progress, token FROM " \
                                                                 "lease_machines_progress ORDER BY job_id")

  # ActiveJob's own events (interrupt, resume, enqueue_retry, ...) from now on: [name, payload].
  def record_active_job_events
    @active_job_events = []
    @subscription_of_active_job = ActiveSupport::Notifications.subscribe(/\.active_job\z/) do |event|
      @active_job_events << [event.name.delete_suffix(".active_job"), event.payload]
    end
  end

  def active_job_events(name) = @active_job_events.select { _1.first == name }.map(&:last)

  def interrupts = active_job_events("interrupt").map { _1[:reason] }

  # The continuation the job was enqueued again with, to resume from.
  def enqueued_continuation = enqueued_jobs.last.fetch("continuation")

  # The job's lease is lost after line 1 is written (a successor granted it, the job's renewal refused): the
  # checkpoint of step.advance! stops it (an interrupt, reason :lease_lost, with its cursor at line 2), and the job,
  # enqueued again, resumes there under a new lease (token 3: the successor had 2).
  def assert_lost_mid_step_resumes_from_the_cursor(first)
    record_active_job_events
    lines_job(first: first, after: at_line(1) { |current| lose_lease(current) }).perform_later("acme")
    perform_enqueued_jobs
    assert_equal lines([0, 1], [1, 1]), report, "stopped at the checkpoint after line 1"
    assert_equal [:lease_lost], interrupts
    assert_equal({ "completed" => [], "current" => ["lines", 2] }, enqueued_continuation, "to resume at line 2")
    assert_equal [[:resume, :stale_token, 1]], losses

    successor_gone
    perform_enqueued_jobs(at: Time.now + 60)

    assert_equal lines([0, 1], [1, 1], [2, 3], [3, 3], [4, 3]), report, "resumed at line 2 under token 3"
    assert_equal [[0, 1], [1, 1], [2, 3], [3, 3], [4, 3]], @tried, "nothing done twice, nothing skipped"
    assert_equal [1], active_job_events("resume").map { _1[:job].resumptions }
    assert_equal [1, 3], events_named(:release).map { _1[:token] }
    assert_empty enqueued_jobs
  end

  def test_a_lease_lost_mid_step_stops_the_job_at_its_next_checkpoint_and_it_resumes_from_its_cursor
    assert_lost_mid_step_resumes_from_the_cursor(:continuable)
  end

  # Continuable's around_perform inside the lease's: the same story.
  def test_the_same_when_holds_lease_is_declared_before_continuable_is_included
    assert_lost_mid_step_resumes_from_the_cursor(:lease)
  end

  # Stalled between its checkpoint and its next write, the job hears of its lost lease from the fence: the Fenced
  # refusal after progress resumes it from its cursor too (Continuable's resume_errors_after_advancing, the default),
  # nothing written of the refused line.
  def test_a_write_refused_after_progress_resumes_the_job_from_its_cursor
    record_active_job_events
    lines_job(before: at_line(2) { stall_and_take_over }).perform_later("acme")
    perform_enqueued_jobs
    assert_equal lines([0, 1], [1, 1]), report
    assert_equal({ "completed" => [], "current" => ["lines", 2] }, enqueued_continuation)
    assert_equal 1, active_job_events("enqueue_retry").size, "resumed by Continuable, as an error after progress"
    assert_empty interrupts
    assert_empty losses, "Continuable's own resumption: on_lost was not asked"

    successor_gone
    perform_enqueued_jobs(at: Time.now + 60)

    assert_equal lines([0, 1], [1, 1], [2, 3], [3, 3], [4, 3]), report
    assert_equal [[0, 1], [1, 1], [2, 1], [2, 3], [3, 3], [4, 3]], @tried,
                 "line 2, refused under token 1, written under 3"
  end

  # Under progress: :fenced a job that saved progress in this execution advanced, to Continuable too: when its lease is
  # lost at a checkpoint and its on_lost is not :retry, the error leaves the step, and Continuable resumes it from the
  # progress it saved (resume_errors_after_advancing), whatever on_lost says, as without :fenced.
  def test_with_fenced_progress_a_job_that_saved_progress_is_resumed_by_continuable_whatever_on_lost_says
    record_active_job_events
    lines_job(progress: :fenced, on_lost: :discard, after: at_line(1) { stall_and_take_over }).perform_later("acme")
    perform_enqueued_jobs

    assert_equal lines([0, 1], [1, 1]), report
    assert_equal 1, enqueued_jobs.size, "resumed, not discarded"
    assert_equal({ "completed" => [], "current" => ["lines", 1] }, enqueued_continuation, "what the fence accepted")
    assert_equal 1, active_job_events("enqueue_retry").size, "Continuable's own resumption"
    assert_empty losses, "on_lost was not asked"
  end

  # Without resume_errors_after_advancing, the refusal goes to on_lost: retried (counted, after lost_wait), and the
  # retry resumes from the cursor as well, since retry_job enqueues the job with its progress.
  def test_without_resume_errors_after_advancing_on_lost_retries_it_from_its_cursor
    job = lines_job(before: at_line(2) { stall_and_take_over }, lost_wait: 2.0)
    job.resume_errors_after_advancing = false
    job.perform_later("acme")
    perform_enqueued_jobs
    assert_equal({ "completed" => [], "current" => ["lines", 2] }, enqueued_continuation)
    assert_equal 1, enqueued_jobs.last.fetch("exception_executions")[LeaseMachines::Jobs::Execution::LOSSES]
    successor_gone
    perform_enqueued_jobs(at: Time.now + 60)

    assert_equal lines([0, 1], [1, 1], [2, 3], [3, 3], [4, 3]), report
    assert_equal [[:retry, :stale_token, 1]], losses
  end

  # A lease lost before the execution made any progress is no resumption but a lost lease like any other, counted
  # against lost_attempts: a job that keeps losing it before it advances stops with its LeaseLost.
  def test_a_lease_lost_before_any_progress_spends_a_lost_attempt
    stall = lambda do |current, line, step|
      next unless line.zero?

      lose_lease(current)
      successor_gone
      step.checkpoint!
    end
    lines_job(before: stall, lost_attempts: 1).perform_later("acme")
    perform_enqueued_jobs
    error = assert_raises(LeaseMachines::LeaseLost) { perform_enqueued_jobs(at: Time.now + 60) }

    assert_equal [3, :lost], [error.token, error.state]
    assert_equal [[:retry, :stale_token, 1], [:raise, :stale_token, 3]], losses
    assert_empty report
  end

  # progress: :fenced. Worker A (token 1) stalls after line 1; the queue runs a second copy of the job from its
  # enqueued data (the same job_id), which takes the lease over (token 2), reads A's committed progress back and
  # finishes the step. A wakes, unaware: its next write, which would also move the cursor, is refused, and so is a
  # plain step.set! of its own. Its resumption (token 3) reads the successor's progress back: nothing done twice,
  # nothing skipped.
  def test_with_fenced_progress_a_stalled_holder_can_neither_move_the_cursor_nor_make_a_resume_redo_work
    record_active_job_events
    copy = nil
    refused_set = nil
    stall = at_line(1) do |_, step|
      clock.advance(31.0) # A stalls past its TTL
      copy.call # ...and the queue runs the job again meanwhile
      refused_set = begin
        step.set!(99) # A, unaware, moves its cursor: the save is refused at the checkpoint
        nil
      rescue ActiveJob::Continuation::Interrupt => e
        e
      end
      raise refused_set if refused_set
    end
    job = lines_job(through: :step, progress: :fenced, after: stall)
    job.perform_later("acme")
    enqueued = enqueued_jobs.first
    copy = -> { instantiate_job(enqueued).perform_now }
    perform_enqueued_jobs

    job_id = enqueued.fetch("job_id")
    assert_equal lines([0, 1], [1, 1], [2, 2], [3, 2], [4, 2]), report, "the copy resumed at line 2, A's progress"
    assert_equal [[0, 1], [1, 1], [2, 2], [3, 2], [4, 2]], @tried
    assert_instance_of ActiveJob::Continuation::Interrupt, refused_set
    assert_equal [:lease_lost], interrupts
    assert_equal [[job_id, '{"completed":["lines"]}', 2]], progress_rows, "the copy's, not A's cursor 99"
    assert_equal({ "completed" => [], "current" => ["lines", 2] }, enqueued_continuation,
                 "A's own data: the cursor it last saved, not its refused 99")

    successor_gone
    perform_enqueued_jobs(at: Time.now + 60)

    assert_equal 5, report.size, "the resumption (token 3) read the finished progress back: nothing written again"
    assert_equal 5, @tried.size
    assert_equal [3], events_named(:acquire).map { _1[:token] }.last(1)
    assert_equal [[job_id, '{"completed":["lines"]}', 2]], progress_rows
  end

  # progress: :fenced. The holder stalls before its first save, which the fence refuses (no progress row yet): it
  # is enqueued again with the progress it started from, not the refused cursor, and the resumption does every line.
  def test_a_refused_first_cursor_update_is_not_resumed_from
    tried = []
    job = fenced_lines_job(:NoRowJob) do |step, stall|
      if lease.token == 1
        stall.call(self)
        step.set!(99) # refused at its checkpoint
      end
      (step.cursor...LINES).each do |line|
        tried << line
        lease.fenced(step, to: line + 1) { Report.create!(body: "line #{line}", token: lease.token) }
      end
    end
    job.perform_later("acme")
    perform_enqueued_jobs
    refute_equal ["lines", 99], enqueued_continuation["current"], "enqueued with what the fence accepted"
    clock.advance(31.0)
    perform_enqueued_jobs(at: Time.now + 60)

    assert_equal [0, 1, 2, 3, 4], tried
    assert_equal 5, report.size
  end

  # progress: :fenced. Every line after the first outlasts the TTL (another owner takes the lease meanwhile), so
  # each cursor update after it is refused: a resumption that saved nothing has not advanced, and spends one of
  # lost_attempts, instead of being resumed again and again from the same cursor.
  def test_with_fenced_progress_losses_that_save_nothing_spend_lost_attempts
    tried = []
    job = fenced_lines_job(:SlowLinesJob, lost_attempts: 2) do |step, stall|
      (step.cursor...3).each do |line|
        tried << [line, lease.token]
        stall.call(self) if line.positive? # the line outlasts the TTL
        step.advance!
      end
    end
    job.perform_later("acme")
    error = nil
    passes = 0
    until enqueued_jobs.empty? || error || passes == 20
      passes += 1
      clock.advance(31.0)
      begin
        perform_enqueued_jobs(at: Time.now + 600)
      rescue LeaseMachines::Fenced, LeaseMachines::LeaseLost => e
        error = e
      end
    end

    assert_instance_of LeaseMachines::Jobs::Refused, error
    assert_equal [0, 1, 1, 1, 1], tried.map(&:first), "resumed once after saving line 0, then 2 lost attempts"
    assert_equal %i[resume retry retry raise], losses.map(&:first)
    assert_empty enqueued_jobs
  end

  # A write that would move the cursor under a lost lease is refused whole: neither the line nor the cursor moves.
  def test_a_refused_fenced_step_write_moves_nothing
    refused = nil
    stall = at_line(1) do |current, step|
      stall_and_take_over
      refused = assert_raises(LeaseMachines::Fenced) do
        current.lease.fenced(step, to: 42) { Report.create!(body: "stale", token: 1) }
      end
      raise refused
    end
    lines_job(through: :step, progress: :fenced, after: stall).perform_later("acme")
    perform_enqueued_jobs

    assert_equal [LeaseMachines::Jobs::Refused, 2], [refused.class, refused.highest]
    assert_equal lines([0, 1], [1, 1]), report
    assert_equal [["lines", 2]], [enqueued_continuation["current"]], "the cursor is where the last write left it"
    assert_equal [[enqueued_jobs.last.fetch("job_id"), '{"completed":[],"current":["lines",2]}', 1]], progress_rows
  end

  # Without progress: :fenced the cursor is the job's own data: a second copy of the job starts from what it was
  # enqueued with, and does again what the first committed (the fence still refuses the stalled one's writes).
  def test_without_fenced_progress_a_second_copy_starts_from_its_own_data
    copy = nil
    stall = at_line(1) do
      clock.advance(31.0)
      copy.call
    end
    lines_job(through: :step, after: stall).perform_later("acme")
    enqueued = enqueued_jobs.first
    copy = -> { instantiate_job(enqueued).perform_now }
    perform_enqueued_jobs

    assert_equal lines([0, 1], [1, 1], [0, 2], [1, 2], [2, 2], [3, 2], [4, 2]), report
    refute ActiveRecord::Base.connection.table_exists?("lease_machines_progress"), "no progress kept but the job's"
  end

  # The progress saved at the end of a perform fails (its table is gone), and a thread_error subscriber raises while
  # the failure is reported: the lease is released and unregistered from the renewer all the same.
  def test_a_failing_settle_still_releases_the_lease
    subscription = ActiveSupport::Notifications.subscribe("thread_error.lease_machines") do
      raise "alerting subscriber broke"
    end
    job = job_class(:SettleJob) do
      include ActiveJob::Continuable
      holds_lease key: ->(account) { account }, ttl: 30.0, renew_every: 10.0, progress: :fenced
      define_method(:perform) do |_account|
        step(:one) { |step| step.set!(1) }
        ActiveRecord::Base.connection.drop_table(:lease_machines_progress) # the end-of-perform save fails
      end
    end
    _, warned = capture_io { job.perform_now("acme") }

    assert_equal [:released], events_named(:release).map { _1[:status] }
    assert_empty renewer.leases
    assert_match(/progress: reporting .* raised RuntimeError: alerting subscriber broke/m, warned)
  ensure
    ActiveSupport::Notifications.unsubscribe(subscription) if subscription
  end

  def test_fenced_with_a_step_needs_a_cursor_and_a_step
    errors = []
    caught = lambda do |&call|
      call.call
    rescue StandardError => e
      errors << [e.class, e.message]
    end
    job_class(:StepArgumentsJob) do
      include ActiveJob::Continuable
      holds_lease key: ->(account) { account }, ttl: 30.0
      define_method(:perform) do |_account|
        step :one do |step|
          wrote = -> { raise "the write ran" }
          caught.call { lease.fenced(step, &wrote) }
          caught.call { lease.fenced(:one, to: 1, &wrote) }
          caught.call { lease.fenced(to: 1, &wrote) }
          caught.call { lease.fenced(step, to: 1, record: Report, &wrote) }
        end
      end
    end.perform_now("acme")

    assert_equal [[ArgumentError, "fenced: to: is required with a step (the cursor the write moves it to)"],
                  [TypeError, "fenced: the step must be a continuable job's step (the block's argument), got :one"],
                  [ArgumentError, "fenced: to: is for a step's cursor (fenced(step, to: ...))"],
                  [ArgumentError, "fenced: record: is the fence record's own with a step"]], errors
    assert_empty report
  end

  def test_fenced_progress_needs_a_continuable_job
    job = job_class(:PlainJob) do
      holds_lease key: ->(account) { account }, ttl: 30.0, progress: :fenced
      define_method(:perform) { |_account| raise "ran" }
    end

    error = assert_raises(ArgumentError) { job.perform_now("acme") }
    assert_equal "holds_lease progress: :fenced: LeaseMachines::ActiveJobSupport::PlainJob does not include " \
                 "ActiveJob::Continuable", error.message
    assert_equal [:released], events_named(:release).map { _1[:status] }
  end
end

LeaseMachines::ActiveJobSupport.on_postgresql(ActiveJobContinuableTest)

# On MySQL (MariaDB here): the progress table in its own dialect.
LeaseMachines::ActiveJobSupport.on_mysql(ActiveJobContinuableTest)
