# frozen_string_literal: true

# test/integration/solid_queue_lost_test.rb's Rails application, run as a child Ruby in the lane's bundle:
#
#   bin/ruby test/support/solid_queue_lost_app.rb SCENARIO ROOT DATABASE
#
# SCENARIO is retry, discard or continuable; ROOT a scratch directory (the application's root); DATABASE a SQLite
# file (made there) or the postgresql:// URL of an empty database. The application and Solid Queue's processes are
# bin/nightly-report --solid-queue's (examples/support/solid_queue_app.rb): one lease store configured in an
# initializer before Solid Queue forks, a worker process for the queue "stalls" and one for "takeover" (one thread
# each), a dispatcher that brings the retries back.
#
# The scenario's job (holds_lease key: the account, ttl 1 s) writes LINES report lines through the fence. Its first
# execution in "stalls" stops its own process (SIGSTOP) before line STALLED_LINE, still holding token 1. Once it is
# stopped, another job of the same key (for continuable, a second copy of the same job: the queue ran it again) is
# enqueued in "takeover": it takes the lease over once the TTL ran out (token 2) and writes. Once the successor
# finished, and PAUSE after the stall at the soonest, this script resumes the stalled process (SIGCONT): its write is
# refused by the fence, and the job lets that out, for holds_lease (on_lost:) or Continuable to handle. Every job is
# then waited for (Solid Queue's jobs table), and Solid Queue stopped.
#
# Every perform records its run (job_runs: its job, queue, process, token, executions, resumptions), every line its
# token (report_lines, in commit order), and each process the lease events that tell the story (lease_events: the
# loss events, refused fenced writes, Continuable's interrupts and resumptions). The test reads them back. Exits 0
# once every job finished or failed, 1 with a line on stderr when a wait ran out (each wait is bounded).
require "rails"
require "active_record/railtie"
require "active_job/railtie"
require "solid_queue"
require "lease_machines"
require "tmpdir"
require_relative "../../examples/support/solid_queue_app"
require_relative "../../examples/support/stall"

SCENARIO, ROOT, DATABASE = ARGV
POSTGRES = DATABASE.to_s.start_with?("postgresql://")
STARTED = Stall.now
TTL = 1.0
PAUSE = 2.5
LINES = 5
STALLED_LINE = 2
# How long the stalled job may take to start and stop its process (Solid Queue's processes booting included), and
# the jobs to finish.
START_TIMEOUT = SolidQueueApp::START_TIMEOUT
FINISH_TIMEOUT = 60

def say(message) = puts(format("%6.2fs  %s", Stall.now - STARTED, message)).tap { $stdout.flush }

def give_up(message)
  warn "solid_queue_lost_app: #{SCENARIO}: #{message}"
  exit 1
end

class SolidQueueLostApplication < Rails::Application; end
# SQLite's writes take the write lock at BEGIN (a fenced write's transaction must); PostgreSQL locks rows.
database = POSTGRES ? { url: DATABASE } : { adapter: "sqlite3", database: DATABASE, timeout: 5_000,
                                            default_transaction_mode: :immediate }
SolidQueueApp.boot(SolidQueueLostApplication, root: ROOT, database: database, postgres: POSTGRES) do
  LeaseMachines::Store.new(DATABASE)
end

ActiveRecord::Schema.define do
  create_table(:report_lines) do |t|
    t.string :job_id, null: false
    t.integer :line, null: false
    t.integer :token, null: false
  end
  create_table(:job_runs) do |t|
    t.string :job_id, null: false
    t.string :queue, null: false
    t.integer :pid, null: false
    t.integer :token, null: false
    t.integer :executions, null: false
    t.integer :resumptions
  end
  create_table(:lease_events) do |t|
    t.string :name, null: false
    t.string :job_id, null: false
    t.integer :token
    t.string :action
    t.string :reason
    t.string :error
  end
end

class ReportLine < ActiveRecord::Base; end
class JobRun < ActiveRecord::Base; end
class LeaseEvent < ActiveRecord::Base; end

# The lease events, each recorded by the process it happened in (the subscription is inherited by Solid Queue's
# forked processes): the job's loss (the action its on_lost took), a write the fence refused, and Continuable's
# interrupts and resumptions.
ActiveSupport::Notifications.subscribe(/\A(loss|fenced_write)\.lease_machines\z|\A(interrupt|resume)\.active_job\z/) do
  |event|
  payload = event.payload
  next if payload.key?(:outcome) && payload[:outcome] != :refused

  LeaseEvent.create!(name: event.name.sub(/\..*/, ""), job_id: payload[:job].job_id, token: payload[:token],
                     action: payload[:action], reason: payload[:reason], error: payload[:error]&.class&.name)
end

# What the scenarios' jobs do: each perform records its run, then writes its lines 0 to LINES - 1 through the fence
# (each with the cursor past it, for a continuable job's +step+), one every 100 ms. The job's first execution in the
# queue "stalls" stops its process before STALLED_LINE; resumed, it writes at once.
module ReportLines
  def record_run
    JobRun.create!(job_id: job_id, queue: queue_name, pid: Process.pid, token: lease.token, executions: executions,
                   resumptions: respond_to?(:resumptions) ? resumptions : nil)
  end

  def write(line, step = nil)
    Stall.stop_the_world if line == STALLED_LINE && queue_name == "stalls" && executions == 1
    row = proc { ReportLine.create!(job_id: job_id, line: line, token: lease.token) }
    step ? lease.fenced(step, to: line + 1, &row) : lease.fenced(&row)
    sleep 0.1
  end
end

# The lease every scenario's job holds: the account's, a TTL of 1 s; a job that finds it held elsewhere retries every
# 100 ms.
LEASE = { key: ->(account) { account }, ttl: TTL, wait: 0.1, attempts: 100 }.freeze

# A plain job (not continuable) that lets its lost lease out of its body.
class ReportJob < ActiveJob::Base
  include ReportLines

  def perform(_account)
    record_run
    (0...LINES).each { write(_1) }
  end
end

# on_lost: :retry (the default): retried after lost_wait under a new lease, and writes its whole report again.
class RetriedReportJob < ReportJob
  holds_lease(**LEASE, lost_wait: 0.2)
end

# on_lost: :discard: discarded, its work not done again.
class DiscardedReportJob < ReportJob
  holds_lease(**LEASE, on_lost: :discard)
end

if defined?(ActiveJob::Continuable)
  # Continuable (Rails 8.1), its progress kept through the fence: one step, each line written with the cursor past it.
  class ImportJob < ActiveJob::Base
    include ActiveJob::Continuable
    include ReportLines
    holds_lease(**LEASE, progress: :fenced)
    self.resume_options = { wait: 0.2 }

    def perform(_account)
      record_run
      step :lines, start: 0 do |step|
        (step.cursor...LINES).each { write(_1, step) }
      end
    end
  end
end

job_class = { "retry" => "RetriedReportJob", "discard" => "DiscardedReportJob", "continuable" => "ImportJob" }
            .fetch(SCENARIO) { give_up("no such scenario (retry, discard, continuable)") }
job_class = Object.const_get(job_class)
stalled = nil
SolidQueueApp.supervise(SolidQueueApp.processes(%w[stalls takeover])) do |_supervisor, up|
  give_up("Solid Queue's processes did not all start within #{START_TIMEOUT}s") unless up
  say("Solid Queue is up: Rails #{Rails.version}, Solid Queue #{SolidQueue::VERSION}; #{job_class.name}")
  first = job_class.set(queue: "stalls").perform_later("acme")
  pid = SolidQueueApp.wait_for(START_TIMEOUT) { JobRun.find_by(job_id: first.job_id)&.pid }
  give_up("the first job never ran") unless pid
  stalled = pid # resumed in the ensure, stopped or not
  SolidQueueApp.wait_for(START_TIMEOUT) { Stall.stopped?(pid) || SolidQueueApp.unfinished.none? }
  give_up("the first job's process never stopped (it finished, failed or hung)") unless Stall.stopped?(pid)
  stopped_at = Stall.now
  say("the first job stopped its process #{pid}")
  # The successor: another job of the key, or (continuable) the same job run again by the queue.
  SCENARIO == "continuable" ? first.enqueue(queue: "takeover") : job_class.set(queue: "takeover").perform_later("acme")
  takeover = SolidQueue::Job.where(queue_name: "takeover")
  finished = SolidQueueApp.wait_for(FINISH_TIMEOUT) { SolidQueueApp.unfinished(takeover).none? }
  give_up("the successor did not finish within #{FINISH_TIMEOUT}s") unless finished
  sleep [PAUSE - (Stall.now - stopped_at), 0.0].max
  Stall.resume(pid)
  say("the successor finished; the first job's process resumed")
  unless SolidQueueApp.wait_for(FINISH_TIMEOUT) { SolidQueueApp.unfinished.none? }
    give_up("the jobs did not all finish within #{FINISH_TIMEOUT}s")
  end
  say("every job finished or failed")
ensure
  Stall.resume(stalled) if stalled # a stopped process would not hear the supervisor's SIGTERM
end
