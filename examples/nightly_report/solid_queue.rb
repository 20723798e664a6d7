# frozen_string_literal: true

# bin/nightly-report --solid-queue: the worker-7 story on Solid Queue's own processes. examples/nightly_report.rb
# loads this file once it has read the options, chosen the database and checked that the lease store opens there
# (OPTIONS, DATABASE, DATABASE_CONFIG, POSTGRES, SCRATCH, WORKER_IDS, ...), with Rails and Solid Queue loaded before
# lease_machines (so its Railtie is there, as in an application).
#
# - A minimal Rails application and Solid Queue's processes (examples/support/solid_queue_app.rb, which the suite's
#   Solid Queue tests share): the application's database holds the report, the leases and their fence (with
#   --queue-database Solid Queue's tables are in a queue database besides, Rails 8's layout); its initializer
#   configures one LeaseMachines::Store, opened before Solid Queue forks, which each forked worker process opens
#   again. The supervisor (fork mode, in a child of this script) runs a worker process per story worker (a queue of
#   its own, one thread), so that worker 7's job stops the process it runs in and no other job, and a dispatcher that
#   brings the retries back.
# - The story: worker 7's job is enqueued first, the others' once it started. It records its process and stops it
#   (SIGSTOP: examples/support/stall.rb); this script finds the process stopped (its state in /proc/PID/stat, or
#   ps's where there is no /proc), resumes it after --pause (SIGCONT; at once, seen stopped or not, however the
#   wait ends), waits for every job to finish (Solid Queue's jobs table), and stops the supervisor (SIGTERM), which
#   stops its processes.
# - --compare: the story with NightlyReportJob (holds_lease), then with LimitedReportJob, which declares Solid
#   Queue's own limits_concurrency with the TTL as its duration: a semaphore taken when the job is enqueued, no
#   lease, no fence. Worker 7's job stalls past the duration; the dispatcher's concurrency maintenance deletes the
#   expired semaphore and releases the next job, and nothing tells worker 7's. A table compares the two.
require "pg" if POSTGRES
require_relative "../support/solid_queue_app"

module SolidQueueStory
  # The Rails application's root (config/database.yml), removed at the end.
  ROOT = Dir.mktmpdir("nightly-report-app")
  at_exit { FileUtils.remove_entry(ROOT) if Process.pid == PARENT }

  # Solid Queue's own database with --queue-database (nil: the application's): a second SQLite file beside the
  # application's, or a second database on the throwaway PostgreSQL server.
  QUEUE_DATABASE = if !OPTIONS[:queue_database] then nil
                   elsif POSTGRES
                     PG.connect(DATABASE) { _1.exec("CREATE DATABASE nightly_report_queue") }
                     DATABASE.sub(%r{/postgres\z}, "/nightly_report_queue")
                   else
                     File.join(SCRATCH, "queue.sqlite3")
                   end

  # The processes: a worker process per story worker, on a queue of its own, and a dispatcher.
  PROCESSES = SolidQueueApp.processes(WORKER_IDS.map { "worker-#{_1}" })

  # How long worker 7's job may take to start (Solid Queue's processes booting included), and to stop itself; how
  # long the jobs may take to finish.
  START_TIMEOUT = SolidQueueApp::START_TIMEOUT
  FINISH_TIMEOUT = 60
end

class NightlyReportApplication < Rails::Application; end
SolidQueueApp.boot(NightlyReportApplication, root: SolidQueueStory::ROOT, database: DATABASE_CONFIG,
                                             postgres: POSTGRES, queue_database: SolidQueueStory::QUEUE_DATABASE) do
  LeaseMachines::Store.new(DATABASE)
end

# The same report under Solid Queue's own concurrency control instead of a lease: one job of the account at a time,
# by a semaphore taken when the job is enqueued (or released from the blocked ones) and expiring +duration+ (the TTL)
# after. Nothing renews it while the job runs, nothing tells the job it expired, and no token fences its writes: the
# number of its run (in start order) stands in the token's column.
class LimitedReportJob < ActiveJob::Base
  limits_concurrency to: 1, key: ->(account, _worker) { account }, duration: OPTIONS[:ttl].seconds

  def perform(account, worker)
    me = "worker #{worker}"
    run = JobRun.start(account, worker)
    say(me, "starts run #{run}: no lease, no token (Solid Queue's semaphore let it through)")
    (1..OPTIONS[:lines]).each do |line|
      if worker == 7 && line == STALLED_LINE
        say(me, "stalls before writing line #{line} (SIGSTOP); its semaphore expires #{OPTIONS[:ttl]}s after it was " \
                "taken")
        resumed = Stall.stop_the_world
        say(me, "resumes (SIGCONT), unaware, and writes line #{line} (run #{run})", at: resumed)
      end
      ReportLine.create!(account_id: account.id, worker: worker, slot: 0, token: run, line: line)
      say(me, "wrote line #{line} (run #{run})")
      sleep 0.1
    end
  end
end

module SolidQueueStory
  # What each job declares, for the timeline.
  DECLARED = {
    NightlyReportJob => "holds_lease key: ->(account, _worker) { account }, ttl: #{OPTIONS[:ttl]}s, " \
                        "on_conflict: :retry",
    LimitedReportJob => "limits_concurrency to: 1, key: ->(account, _worker) { account }, " \
                        "duration: #{OPTIONS[:ttl]}s"
  }.freeze

  module_function

  # The run's line: Rails's and Solid Queue's versions, and where Solid Queue's tables are.
  def described
    where = QUEUE_DATABASE ? "a queue database of their own, #{QUEUE_DATABASE}" : "the application's database"
    "Rails #{Rails.version}, Solid Queue #{SolidQueue::VERSION} (its tables in #{where})"
  end

  # Tells the story with holds_lease (and with --compare, with limits_concurrency too, on a second account); returns
  # the exit status.
  def tell_story(account)
    tell_lease_events { "worker #{_1[:job].arguments.last}" }
    SolidQueue.on_dispatcher_start { tell_releases }
    return tell(NightlyReportJob, account).status unless OPTIONS[:compare]

    compare(account)
  end

  # The story with +job+ for +account+, and its verdict (a Verdict).
  def tell(job, account)
    say("run", "#{job.name}: #{DECLARED.fetch(job)}")
    stalled, failed = run(job, account)
    limited = job == LimitedReportJob
    verdict(account, stalled: stalled, failed: failed, numbered_by: limited ? "run" : "token", expected_unsafe: limited)
  end

  # Both stories, then a table of their verdicts. Returns 0 when holds_lease's is safe and limits_concurrency's unsafe
  # (a stale write landed, or two jobs wrote at once: what Solid Queue documents for a job that outlives its
  # duration), 1 when holds_lease's is unsafe, 2 otherwise.
  def compare(account)
    held = tell(NightlyReportJob, account)
    puts
    limited = tell(LimitedReportJob, Account.create!(name: "Acme"))
    puts
    puts "| mechanism | jobs writing at once (max) | stale writes landed | verdict |"
    puts "|---|---|---|---|"
    { "`holds_lease` (lease, fencing token)" => held,
      "Solid Queue `limits_concurrency` (semaphore, `duration`)" => limited }.each do |mechanism, row|
      puts "| #{mechanism} | #{row.at_once} | #{row.stale} | #{row.word} |"
    end
    return 1 if held.status == 1

    landed = limited.stale.positive? || limited.at_once > 1 # unsafe as expected, not for a failed worker
    held.status.zero? && landed ? 0 : 2
  end

  # Solid Queue's supervisor in a child process, the story's jobs enqueued once its processes are up, worker 7's
  # process resumed once it stopped itself, every job waited for; the supervisor stopped in any case. Returns
  # [stalled, failed]: whether worker 7's process stopped, and how many workers' jobs failed or never finished.
  def run(job, account)
    SolidQueueApp.supervise(PROCESSES) do |_supervisor, up|
      if up
        say("run", "Solid Queue is up: its supervisor (fork mode), #{WORKER_IDS.size} worker processes, a dispatcher")
      end
      enqueue(job, account, WORKER_IDS.first) # worker 7's job starts first, and takes token 1 (or the semaphore)
      seven = wait_for(START_TIMEOUT) { JobRun.find_by(account_id: account.id, worker: WORKER_IDS.first)&.pid }
      WORKER_IDS.drop(1).each { enqueue(job, account, _1) }
      stalled = seven ? resume(seven, job) : false
      wait_for(FINISH_TIMEOUT) { unfinished(job).empty? }
      [stalled, failures(job)]
    ensure
      Stall.resume(seven) if seven # stopped or not: a stopped process would not hear the supervisor's SIGTERM
      say("run", "stops Solid Queue (SIGTERM to its supervisor)")
    end
  end

  def enqueue(job, account, worker) = job.set(queue: "worker-#{worker}").perform_later(account, worker)

  # Waits for worker 7's process (+pid+) to stop, then resumes it after the pause; resumes it however the wait ends
  # (seen stopped or not, or this script interrupted). Returns whether it stopped: false when its job finished first,
  # or never stopped.
  def resume(pid, job)
    wait_for(START_TIMEOUT) { Stall.stopped?(pid) || !unfinished(job).include?("worker-7") }
    return false unless Stall.stopped?(pid)

    say("run", "worker 7 is stopped; resuming it in #{OPTIONS[:pause]}s")
    sleep OPTIONS[:pause]
    true
  ensure
    Stall.resume(pid)
  end

  # The queues (one a worker) of +job+'s jobs that are still to finish, failed ones aside.
  def unfinished(job) = SolidQueueApp.unfinished(SolidQueue::Job.where(class_name: job.name)).pluck(:queue_name)

  # Says which workers' jobs failed or never finished; returns how many.
  def failures(job)
    SolidQueue::Job.where(class_name: job.name, finished_at: nil).includes(:failed_execution).map do |row|
      failure = row.failed_execution
      say(row.queue_name.sub("-", " "),
          failure ? "its job failed: #{failure.exception_class}: #{failure.message}" : "gave up waiting for its job")
      row.queue_name
    end.uniq.size
  end

  # In the dispatcher: its concurrency maintenance releasing a blocked job (limits_concurrency's), on the timeline.
  def tell_releases
    ActiveSupport::Notifications.subscribe("release_blocked.solid_queue") do |event|
      next unless event.payload[:released]

      worker = SolidQueue::Job.find(event.payload[:job_id]).queue_name.delete_prefix("worker-")
      say("dispatcher", "concurrency maintenance releases worker #{worker}'s blocked job " \
                        "(#{event.payload[:concurrency_key]})")
    end
  end

  def wait_for(timeout, &) = SolidQueueApp.wait_for(timeout, &)
end
