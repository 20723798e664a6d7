# frozen_string_literal: true

require "test_helper"
require "json"

# What test/active_job/lost_test.rb and continuable_test.rb prove with ActiveJob's test adapter and a manual clock,
# proved on Solid Queue's own processes: a Rails application (test/support/solid_queue_lost_app.rb, on
# bin/nightly-report --solid-queue's examples/support/solid_queue_app.rb) whose worker processes, forked by Solid
# Queue's supervisor, run a job holding a lease (TTL 1 s) that stops its own process (SIGSTOP) mid-job, before its
# third line; a successor of the same key takes the lease over and writes; the stalled process is resumed (SIGCONT)
# 2.5 s after it stopped, once the successor finished. Its next write, with its old token, is refused by the fence,
# and the job lets that out: for holds_lease's on_lost (retried by Solid Queue under a new lease, or discarded), or for
# Continuable (resumed from its cursor, its progress kept through the fence). Everything asserted is read back from
# the database: the report's lines with their tokens in commit order, each perform's run, the lease events, the
# progress row and Solid Queue's own jobs and failed executions. On SQLite, and the continuable job on PostgreSQL too.
# rakelib/test.rake runs this file again on the Rails 7.2 lane, where the continuable cases skip.
class SolidQueueLostTest < Minitest::Test
  APP = File.expand_path("../support/solid_queue_lost_app.rb", __dir__)
  RUBY = File.expand_path("../../bin/ruby", __dir__)
  # The most a scenario may take, Rails's boot and Solid Queue's processes included (about 5 s here): a hang fails
  # the test, its processes killed, rather than block the suite.
  TIME_LIMIT = 120
  # The app's jobs write lines 0 to 4; the stalled one stops before line 2.
  LINES = (0..4).to_a
  REFUSED = ["fenced_write", :first, 1, nil, "stale_token", nil].freeze

  def setup
    requires_solid_queue!("Solid Queue application")
    require "active_job" # the lane's, whose version the app must run too
  end

  # on_lost: :retry (the default). The stalled job's refused write is its lost lease, which it does not rescue:
  # Solid Queue retries it (retry_on, lost_wait 0.2 s) in the same worker process, under token 3, and it writes its
  # whole report; nothing fails, and no stale line lands.
  def test_a_stalled_jobs_lost_lease_is_retried_by_solid_queue_under_a_new_lease_and_no_work_is_lost
    run_app("retry")

    assert_equal [[:first, 0, 1], [:first, 1, 1], *LINES.map { [:other, _1, 2] }, *LINES.map { [:first, _1, 3] }],
                 report, "line 2 of token 1 refused; the retry (token 3) wrote the whole report after the successor's"
    assert_tokens_never_go_down
    assert_equal [[:first, "stalls", 1, 1], [:other, "takeover", 2], [:first, "stalls", 3, 2]], runs,
                 "the first job's second execution, in the process that stalled, under token 3"
    assert_equal [REFUSED, ["loss", :first, 1, "retry", "stale_token", "LeaseMachines::Jobs::Refused"]], events
    assert_equal %w[stalls stalls], solid_queue_jobs(:first), "the job and its retry"
    assert_all_finished
  end

  # on_lost: :discard. The refused job is discarded: finished in Solid Queue, nothing failed, never run again.
  def test_with_on_lost_discard_the_stalled_job_is_discarded_and_its_work_not_redone
    run_app("discard")

    assert_equal [[:first, 0, 1], [:first, 1, 1], *LINES.map { [:other, _1, 2] }], report
    assert_tokens_never_go_down
    assert_equal [[:first, "stalls", 1, 1], [:other, "takeover", 2]], runs
    assert_equal [REFUSED, ["loss", :first, 1, "discard", "stale_token", "LeaseMachines::Jobs::Refused"]], events
    assert_equal %w[stalls], solid_queue_jobs(:first), "no retry"
    assert_all_finished
  end

  # Continuable (Rails 8.1), holds_lease progress: :fenced, each line written with lease.fenced(step, to: line + 1).
  # The queue runs a second copy of the stalled job (the same job_id): it takes the lease over (token 2), reads the
  # progress the stalled holder committed (the cursor at line 2) and finishes the step. The stalled holder's write and
  # cursor are refused; the refusal leaves the step after progress, so Continuable resumes the job from its own
  # cursor (line 2) under token 3, which reads the copy's progress back (the step completed) and writes nothing.
  def test_a_continuable_job_with_fenced_progress_resumes_under_a_new_lease_and_writes_each_line_once
    continuable!
    assert_continuable_story
  end

  def test_a_continuable_job_with_fenced_progress_on_postgresql
    continuable!
    assert_continuable_story(fresh_postgres_database_url("lm_solid_queue_lost"))
  end

  private

  # Runs +scenario+ of the app on +database+ (default: a SQLite file in a scratch directory), within TIME_LIMIT,
  # and asserts that it exited 0, on this lane's Rails.
  def run_app(scenario, database = nil)
    root = scratch_dir("solid-queue-lost")
    @database = database || File.join(root, "app.sqlite3")
    output = run_within(TIME_LIMIT, RUBY, APP, scenario, root, @database)
    assert_match(/Solid Queue is up: Rails #{Regexp.escape(ActiveJob.version.to_s)}, Solid Queue 1\.\d/, output)
  end

  def assert_continuable_story(database = nil)
    run_app("continuable", database)

    assert_equal [[:first, 0, 1], [:first, 1, 1], [:first, 2, 2], [:first, 3, 2], [:first, 4, 2]], report,
                 "each line once: 0 and 1 by the stalled holder, 2 to 4 by the copy; none by the resumption"
    assert_tokens_never_go_down
    assert_equal [[:first, "stalls", 1, 1, 0], [:first, "takeover", 2], [:first, "stalls", 3, 2, 1]],
                 runs(resumptions: true), "the resumption: its second execution, resumed once, under token 3"
    assert_equal [REFUSED, ["resume", :first, nil, nil, nil, nil]], events,
                 "Continuable's own resumption of an error after progress: no loss event"
    assert_equal [["ImportJob:acme", :first, '{"completed":["lines"]}', 2]],
                 rows("SELECT resource, job_id, progress, token FROM lease_machines_progress").map { named(_1, 1) },
                 "the copy's progress (token 2): the stalled holder's cursor update was refused"
    queues = solid_queue_jobs(:first)
    assert_equal ["stalls", *["takeover"] * (queues.size - 2), "stalls"], queues,
                 "the job, its copy (retried while the lease was held) and its resumption"
    resumption = JSON.parse(rows("SELECT arguments FROM solid_queue_jobs ORDER BY id DESC LIMIT 1").dig(0, 0))
    assert_equal [{ "completed" => [], "current" => ["lines", 2] }, 1],
                 resumption.values_at("continuation", "executions"), "resumed from the stalled holder's own cursor"
    assert_all_finished
  end

  def continuable!
    return if defined?(ActiveJob::Continuable)

    skip "ActiveJob::Continuable is Rails 8.1's: ActiveJob #{ActiveJob.version} (this lane) has none"
  end

  # The rows of +sql+ in the app's database, read by the test itself (Integers as Integers).
  def rows(sql)
    unless @database.start_with?("postgresql://")
      return SQLite3::Database.open(@database, readonly: true) { _1.execute(sql) }
    end

    PG.connect(@database) do |connection|
      connection.type_map_for_results = PG::BasicTypeMapForResults.new(connection)
      connection.exec(sql).values
    end
  end

  # +row+ with the job id at +at+ named: :first (the job that stalled) or :other (its successor, another job).
  def named(row, at = 0)
    @first ||= rows("SELECT job_id FROM job_runs ORDER BY id LIMIT 1").dig(0, 0)
    row.dup.tap { _1[at] = _1[at] == @first ? :first : :other }
  end

  # The report's lines in commit order: [job, line, token].
  def report = rows("SELECT job_id, line, token FROM report_lines ORDER BY id").map { named(_1) }

  # Each perform: [job, queue, token, and the first job's executions (and resumptions)], in start order. (The
  # successor's executions count its retries while the lease was held.)
  def runs(resumptions: false)
    rows("SELECT job_id, queue, token, executions, resumptions FROM job_runs ORDER BY id").map do |row|
      row = named(row)
      row.first == :first && row[1] == "stalls" ? row.first(resumptions ? 5 : 4) : row.first(3)
    end
  end

  # The lease events the app's processes recorded: [name, job, token, action, reason, error class].
  def events
    rows("SELECT name, job_id, token, action, reason, error FROM lease_events ORDER BY id").map { named(_1, 1) }
  end

  # The queues of Solid Queue's jobs of +job+ (:first, :other), in enqueue order.
  def solid_queue_jobs(job)
    rows("SELECT active_job_id, queue_name FROM solid_queue_jobs ORDER BY id").map { named(_1) }
                                                                              .select { _1.first == job }.map(&:last)
  end

  # No stale line: the tokens of the report's lines, in commit order, never go down.
  def assert_tokens_never_go_down
    tokens = report.map(&:last)
    assert tokens.each_cons(2).all? { _1 <= _2 }, "tokens in commit order: #{tokens}"
  end

  # Every job Solid Queue ran finished, and none failed.
  def assert_all_finished
    assert_equal [0, 0], rows("SELECT (SELECT COUNT(*) FROM solid_queue_jobs WHERE finished_at IS NULL), " \
                              "(SELECT COUNT(*) FROM solid_queue_failed_executions)").first
  end
end
