# frozen_string_literal: true

# The nightly report, with real Rails jobs. N worker processes each perform NightlyReportJob for the same account
# through ActiveJob (the :async adapter: real threads, retries scheduled) on one database, SQLite, PostgreSQL
# (--postgres: a throwaway server, or --database postgresql://...) or MySQL (--mysql: a throwaway MariaDB server, or
# --database mysql2://...), where the application's tables and the lease store's live side by side. The job declares
#
#   holds_lease key: ->(account, _worker) { account }, on_conflict: :retry, ...
#
# so one copy runs at a time and the others retry; with --limit N (holds_lease limit: N), up to N copies run at once,
# each in a slot of the account's semaphore with the slot's own token and fence. Worker 7's job (slot 0, token 1)
# stalls mid-report: its process stops itself with
# SIGSTOP (a stop-the-world pause; the renewer thread stops with it) right after the lease said it was held, and the
# parent resumes it with SIGCONT after longer than the TTL. Meanwhile the lease ran out and a successor took over and
# wrote (in worker 7's slot, under a limit). Worker 7, unaware, writes its next line with its old token: the fence
# refuses it, the transaction rolls back, and the job sees LeaseMachines::LeaseLost. On PostgreSQL and MySQL the fence
# runs in the job's own ActiveRecord transaction (the store's check under a savepoint), and the store decides on the
# server's clock.
#
# With --redis the jobs run on Sidekiq: each worker process runs Sidekiq 7's launcher (embedded, on a queue of its own)
# through ActiveJob's :sidekiq adapter, its retries scheduled in Redis; the leases are in Redis too (the Redis store,
# on Redis's clock), and the report with its fence stays in the SQL database, where the stale token is refused in
# the job's own ActiveRecord transaction. The Redis is a throwaway redis-server with appendfsync always, or the
# server of a redis:// URL.
#
# With --solid-queue the jobs run on Solid Queue's own processes, in a minimal Rails application
# (examples/nightly_report/solid_queue.rb): its supervisor in fork mode, a worker process per story worker, a
# dispatcher that brings the retries back. The lease store is one Store configured in an initializer, before Solid
# Queue forks, which every worker process opens again. With --queue-database Solid Queue's tables are in a database
# of their own (Rails 8's layout), the leases and the fence staying in the application's. With --compare the story is
# told twice, with holds_lease and with Solid Queue's own limits_concurrency (no lease, no fence), and a table
# compares them.
#
# The run prints a timeline and a verdict read back from the database, and exits 1 if a stale write landed (a line
# with an older token than one before it in its slot) or more jobs than the limit wrote at once (their first to last
# lines overlapping in commit order), 2 when inconclusive or for a usage error (one line on stderr).
require_relative "support/command_line"
require_relative "support/stall"

def usage_error(message) = CommandLine.usage_error("nightly-report", message)
def number(text, range, must) = CommandLine.number(text, range, must)

# The longest TTL and pause the story can wait for: the other workers retry 100 times, 0.1 s apart, so the lease must
# run out within seconds; and each worker waits 60 s for its job, worker 7's pause included.
MAX_TTL = 5.0
MAX_PAUSE = 30.0

# The most copies of the job --limit lets run at once.
MAX_LIMIT = 3

options = { workers: nil, limit: 1, ttl: 1.0, pause: nil, lines: 5, database: nil, fence: true, postgres: false,
            mysql: false, redis: nil, solid_queue: false, queue_database: false, compare: false }
# Without OptionParser's own --version and --*-completion-* options (which print and exit with status 1 or 0).
parser = OptionParser.new.tap { _1.base.long.clear }
parser.banner = "Usage: bin/nightly-report [options]"
parser.separator ""
parser.separator "Worker processes perform NightlyReportJob (holds_lease) for one account through ActiveJob;"
parser.separator "worker 7's job stalls (SIGSTOP) longer than its TTL and its late write meets the fence."
parser.separator "With --limit N, up to N jobs write at once, each in a slot of its own, and never N + 1."
parser.separator "With --redis the jobs run on Sidekiq, with their leases in Redis and the fence in the database."
parser.separator "With --solid-queue they run on Solid Queue's processes (fork mode), in a small Rails application;"
parser.separator "--compare tells it twice, holds_lease and Solid Queue's limits_concurrency, and tabulates both"
parser.separator "(exit 0 when holds_lease is safe and limits_concurrency unsafe, 1 when holds_lease is unsafe, else 2)."
parser.separator "Exit status: 0 safe, 1 unsafe, 2 inconclusive or a usage error."
parser.separator ""
parser.on("--workers N", "worker processes (2 to 8, more than the limit; default 3, or the limit + 2)") do
  options[:workers] = number(_1, 2..8, "a whole number from 2 to 8")
end
parser.on("--limit N", "copies of the job at once (holds_lease limit:, 1 to #{MAX_LIMIT}, default 1)") do
  options[:limit] = number(_1, 1..MAX_LIMIT, "a whole number from 1 to #{MAX_LIMIT}")
end
parser.on("--ttl SECONDS", "the lease's TTL (0.1 to #{MAX_TTL}, default 1.0)") do
  options[:ttl] = number(_1, 0.1..MAX_TTL, "a number of seconds from 0.1 to #{MAX_TTL}")
end
parser.on("--pause SECONDS", "how long worker 7 stalls (more than the TTL, at most #{MAX_PAUSE}; default 2.5 x TTL)") do
  options[:pause] = number(_1, 0.0..MAX_PAUSE, "a number of seconds, more than the TTL and at most #{MAX_PAUSE}")
end
parser.on("--lines N", "report lines each job writes (3 to 20, default 5)") do
  options[:lines] = number(_1, 3..20, "a whole number from 3 to 20")
end
parser.on("--database PATH|URL", "SQLite file, kept (default: a temporary file, removed after the run), or a " \
                                 "postgresql:// or mysql2:// URL") do
  options[:database] = _1
end
parser.on("--postgres", "on PostgreSQL (a throwaway server under tmp/, without a --database URL)") do
  options[:postgres] = true
end
parser.on("--mysql", "on MySQL (a throwaway MariaDB server under tmp/, without a --database URL)") do
  options[:mysql] = true
end
parser.on("--redis [URL]", "the jobs on Sidekiq and the leases in Redis: a throwaway redis-server (appendfsync",
          "always), or the server at a redis:// URL; the report and its fence stay in the --database") do
  options[:redis] = _1 || true
end
parser.on("--solid-queue", "the jobs on Solid Queue: its supervisor in fork mode, a worker process per worker and a",
          "dispatcher, in a Rails application whose initializer configures the lease store") do
  options[:solid_queue] = true
end
parser.on("--queue-database", "with --solid-queue: Solid Queue's tables in a database of their own (a second SQLite",
          "file, or a second database on the throwaway server), the leases and their fence staying",
          "in the application's") do
  options[:queue_database] = true
end
parser.on("--compare", "with --solid-queue: the story with holds_lease, then with Solid Queue's limits_concurrency",
          "(no lease, no fence), and a table of both") do
  options[:compare] = true
end
parser.on("--without-fence", "write without lease.fenced, to see the stale write land (the verdict fails)") do
  options[:fence] = false
end
CommandLine.parse("nightly-report", parser, ARGV)
options[:pause] ||= options[:ttl] * 2.5
options[:workers] ||= [3, options[:limit] + 2].max
unless options[:workers] > options[:limit]
  usage_error("--workers #{options[:workers]} must exceed --limit #{options[:limit]}, or no job waits for a slot")
end
unless options[:pause] > options[:ttl]
  usage_error("--pause #{options[:pause]} must exceed --ttl #{options[:ttl]}, or nothing happens")
end
if String === options[:redis] && !options[:redis].match?(%r{\Arediss?://}i)
  usage_error("--redis takes a redis:// URL, not #{options[:redis].inspect}")
end
{ queue_database: "--queue-database", compare: "--compare" }.each do |option, name|
  usage_error("#{name} applies to --solid-queue only") if options[option] && !options[:solid_queue]
end
if options[:solid_queue]
  usage_error("--solid-queue and --redis are two job backends: choose one") if options[:redis]
  usage_error("--solid-queue tells the story one job at a time: leave out --limit") if options[:limit] > 1
  if options[:queue_database] && options[:database]
    usage_error("--queue-database makes a queue database beside a throwaway one: leave out --database")
  end
  if options[:compare] && !options[:fence]
    usage_error("--compare tells holds_lease's story with its fence: leave out --without-fence")
  end
end
server, url = CommandLine.database("nightly-report", options)
POSTGRES = server == :postgresql
MYSQL = server == :mysql
usage_error("--solid-queue runs on SQLite and PostgreSQL here: leave out --mysql") if MYSQL && options[:solid_queue]
SOLID_QUEUE = options[:solid_queue]
# Rails before lease_machines, as Bundler.require loads a Rails application's gems: the gem's Railtie comes with it.
if SOLID_QUEUE
  begin
    require "rails"
    require "active_record/railtie"
    require "active_job/railtie"
    require "solid_queue"
  rescue LoadError => e
    usage_error("--solid-queue needs Rails and the solid_queue gem: #{e.message}")
  end
end

require "fileutils"
require "tmpdir"
require "active_record"
require "global_id"
require "lease_machines/jobs"

WORKER_IDS = [7, 12, 19, 23, 31, 42, 55, 64].first(options[:workers])
LIMIT = options[:limit]
STALLED_LINE = 3
OPTIONS = options.freeze
PARENT = Process.pid
STARTED = Process.clock_gettime(Process::CLOCK_MONOTONIC)
# The database: the --database the user named (kept), a throwaway PostgreSQL server under the checkout's tmp/, or a
# temporary SQLite file; the last two are removed at the end.
if POSTGRES && !url
  cluster = PostgresCluster.new.start(dir: File.expand_path("../tmp/nightly-report-#{PARENT}", __dir__))
  at_exit { cluster.destroy if Process.pid == PARENT }
  url = cluster.url
end
if MYSQL && !url
  mysql = MySQLServer.new.start(dir: File.expand_path("../tmp/nightly-report-mysql-#{PARENT}", __dir__))
  at_exit { mysql.destroy if Process.pid == PARENT }
  url = mysql.url
end
SCRATCH = options[:database] || server ? nil : Dir.mktmpdir("nightly-report")
at_exit { FileUtils.remove_entry(SCRATCH) if SCRATCH && Process.pid == PARENT }
DATABASE = url || options[:database] || File.join(SCRATCH, "app.sqlite3")
# The leases' Redis (--redis): the URL given, or a throwaway server under the checkout's tmp/ that keeps every grant.
redis = options[:redis]
if redis
  begin
    require "sidekiq"
    require "active_job"
    require "active_job/queue_adapters/sidekiq_adapter"
  rescue LoadError => e
    usage_error("--redis needs the sidekiq gem: #{e.message}")
  end
end
if redis == true
  require_relative "support/redis_server"
  redis_server = RedisServer.new(File.expand_path("../tmp/nightly-report-redis-#{PARENT}", __dir__),
                                 args: ["--appendonly", "yes", "--appendfsync", "always"])
  begin
    redis_server.start
  rescue RedisServer::Error, LoadError => e
    usage_error("--redis needs a redis-server and the redis-client gem: #{e.message}")
  end
  at_exit { redis_server.destroy if Process.pid == PARENT }
  redis = redis_server.url
end
REDIS = redis

def now = Process.clock_gettime(Process::CLOCK_MONOTONIC)

# Prints a timeline line (held back while the thread's :held_lines collects them: see NightlyReportJob#perform).
def say(who, message, at: now)
  line = format("%6.2fs  %-10s %s\n", at - STARTED, who, message)
  return Thread.current[:held_lines] << line if Thread.current[:held_lines]

  $stdout.write(line)
  $stdout.flush
end

# The application's database as ActiveRecord is given it. Fenced writes take SQLite's write lock at BEGIN
# (default_transaction_mode: :immediate), so that a transaction that read first never fails to write later.
# PostgreSQL and MySQL lock rows: a URL is all ActiveRecord needs.
DATABASE_CONFIG = if server
                    { url: DATABASE }
                  else
                    { adapter: "sqlite3", database: DATABASE, timeout: 5_000, default_transaction_mode: :immediate }
                  end

# Under Solid Queue the Rails application connected ActiveRecord, from its config/database.yml.
def connect = SOLID_QUEUE ? nil : ActiveRecord::Base.establish_connection(DATABASE_CONFIG)

# What a Rails application's railties do: records are job arguments by their GlobalID
# ("gid://nightly-report/Account/1").
GlobalID.app = "nightly-report"
ActiveRecord::Base.include(GlobalID::Identification)

class Account < ActiveRecord::Base; end
class ReportLine < ActiveRecord::Base; end
class RefusedWrite < ActiveRecord::Base; end

# A perform of a worker's job, recorded as it starts: its process (which, under Solid Queue, this script finds
# stopped and resumes), and its run's number in start order for the account.
class JobRun < ActiveRecord::Base
  # Returns the run's number: one more than the account's runs so far, counted under the account's row lock (or
  # SQLite's write lock, taken at BEGIN), so that two performs starting at once never share one.
  def self.start(account, worker)
    transaction do
      Account.lock.find(account.id)
      create!(account_id: account.id, worker: worker, pid: Process.pid,
              run: where(account_id: account.id).count + 1).run
    end
  end
end

class NightlyReportJob < ActiveJob::Base
  include LeaseMachines::HoldsLease
  holds_lease key: ->(account, _worker) { account }, ttl: OPTIONS[:ttl], renew_every: OPTIONS[:ttl] / 3,
              limit: LIMIT, on_conflict: :retry, wait: 0.1, attempts: 100

  DONE = Thread::Queue.new

  def perform(account, worker)
    me = "worker #{worker}"
    JobRun.start(account, worker)
    (1..OPTIONS[:lines]).each do |line|
      lease.check! # the cooperative stop point: raises LeaseLost unless the lease is held
      if worker == 7 && line == STALLED_LINE
        resumed = stall(me, line)
        # Printing lets the other threads run, its renewer's among them: the job writes first and tells after.
        Thread.current[:held_lines] = []
        say(me, "resumes (SIGCONT), unaware, and writes line #{line} with token #{lease.token}#{in_slot}",
            at: resumed)
      end
      begin
        write(account, worker, line)
      ensure
        $stdout.write(Thread.current[:held_lines].join).tap { $stdout.flush } if Thread.current[:held_lines]
        Thread.current[:held_lines] = nil
      end
      say(me, "wrote line #{line} with token #{lease.token}#{in_slot}")
      sleep 0.1
    rescue LeaseMachines::Fenced => e
      RefusedWrite.create!(account_id: account.id, worker: worker, slot: lease.slot, token: e.token,
                           highest: e.highest, line: line)
      say(me, "REFUSED#{in_slot}: token #{e.token} is older than the fence's #{e.highest}; line #{line} rolled back")
      lease.check! # lost now: raises LeaseLost
    end
  rescue LeaseMachines::LeaseLost => e
    # Also when its renewer, resumed with it, heard the authority's refusal before the job wrote: then lease.fenced
    # raised LeaseLost without writing. Either way nothing stale lands.
    say(me, "LeaseLost (#{e.state}): stops without writing more")
  ensure
    DONE << worker
  end

  private

  # " in slot N" under a limit (the slot's own token), nothing for the plain lease.
  def in_slot = LIMIT > 1 ? " in slot #{lease.slot}" : ""

  def write(account, worker, line)
    row = { account_id: account.id, worker: worker, slot: lease.slot, token: lease.token, line: line }
    OPTIONS[:fence] ? lease.fenced { ReportLine.create!(row) } : ReportLine.create!(row)
  end

  # The lease was just found held. Then the world stops, the renewer thread with it (see Stall.stop_the_world).
  def stall(me, line)
    say(me, "stalls before writing line #{line} (SIGSTOP), still holding token #{lease.token}")
    Stall.stop_the_world
  end
end

# The lease store: in the application's database, where the fence checks the tokens the store issued; or in Redis,
# with its fence (and its tables) in the application's database. A database the store cannot open (no server there,
# tables of another kind) is a usage error.
def open_store = REDIS ? LeaseMachines::Store.new(REDIS, fence: DATABASE) : LeaseMachines::Store.new(DATABASE)

begin
  setup = open_store
rescue LeaseMachines::StoreError, LoadError => e
  usage_error(e.message)
end
shown = setup.path # a PostgreSQL URL without its password
shown += " (a throwaway server)" if cluster
shown += ", Sidekiq #{Sidekiq::VERSION}" if REDIS
shown = shown.sub(" (its fence: ", " (a throwaway redis-server, appendfsync always; its fence: ") if redis_server
setup.close
# Under Solid Queue: the Rails application, initialized (its lease store configured), with Solid Queue's tables.
if SOLID_QUEUE
  require_relative "nightly_report/solid_queue"
  shown += ", #{SolidQueueStory.described}"
end
connect
ActiveRecord::Migration.verbose = false
ActiveRecord::Schema.define do
  create_table(:accounts, if_not_exists: true) { |t| t.string :name }
  create_table(:report_lines, if_not_exists: true) do |t|
    t.integer :account_id, null: false
    t.integer :worker, null: false
    t.integer :slot, null: false
    t.integer :token, null: false
    t.integer :line, null: false
  end
  create_table(:refused_writes, if_not_exists: true) do |t|
    t.integer :account_id, null: false
    t.integer :worker, null: false
    t.integer :slot, null: false
    t.integer :token, null: false
    t.integer :highest, null: false
    t.integer :line, null: false
  end
  create_table(:job_runs, if_not_exists: true) do |t|
    t.integer :account_id, null: false
    t.integer :worker, null: false
    t.integer :pid, null: false
    t.integer :run, null: false
  end
end
account = Account.create!(name: "Acme")
ActiveRecord::Base.connection_handler.clear_all_connections! # no SQLite or PostgreSQL connection crosses a fork
limited = LIMIT > 1 ? ", up to #{LIMIT} jobs at once" : ""
say("run", "#{options[:workers]} workers#{limited}, ttl #{options[:ttl]}s, worker 7 stalls #{options[:pause]}s; " \
           "#{shown}")

# The lease's events on the timeline, each said by the worker whose job it is (+who+, of the event's payload).
def tell_lease_events(&who)
  ActiveSupport::Notifications.subscribe(/\.lease_machines\z/) do |event|
    payload = event.payload
    me = who.call(payload)
    case event.name.delete_suffix(".lease_machines")
    when "acquire"
      slot = LIMIT > 1 ? "slot #{payload[:slot]} of " : ""
      say(me, "acquired #{slot}#{payload[:resource]}: token #{payload[:token]}")
    when "conflict"
      say(me, "#{payload[:resource]} is held elsewhere: retry later") if payload[:conflicts].zero?
    when "lost" then say(me, "lease lost (#{payload[:reason]})")
    when "release"
      say(me, "released token #{payload[:token]}#{" in slot #{payload[:slot]}" if LIMIT > 1} (#{payload[:status]})")
    end
  end
end

# A story's verdict: its exit status (0 safe, 1 unsafe, 2 inconclusive), as a word, and what it counted.
Verdict = Data.define(:status, :word, :stale, :at_once)

# How many of a slot's lines, numbered in commit order (+numbers+: tokens, or runs), are stale writes. Under Solid
# Queue, every line committed after a line of a later number; otherwise each place the numbers fall back (a stale
# job's lines in a row count once).
def stale_writes(numbers)
  return numbers.each_cons(2).count { |earlier, later| later < earlier } unless SOLID_QUEUE

  numbers.each_index.count { |at| at.positive? && numbers[at] < numbers.first(at).max }
end

# The verdict, from what the database committed for +account+: each slot's lines in commit order (one slot without a
# limit), numbered by their lease's token, or by their run under limits_concurrency (+numbered_by+ "run"). Printed;
# returns a Verdict. +stalled+: whether worker 7 stalled; +failed+: how many workers failed; +expected_unsafe+: a safe
# verdict is inconclusive (limits_concurrency, which fences nothing, was meant to show the stale write land).
def verdict(account, stalled:, failed:, numbered_by: "token", expected_unsafe: false)
  connect
  lines = ReportLine.where(account_id: account.id).order(:id).pluck(:slot, :token, :worker, :line)
  by_slot = lines.group_by(&:first).sort.to_h { |slot, rows| [slot, rows.map { _1[1] }] }
  stale = by_slot.values.sum { stale_writes(_1) }
  # Each job (a slot's token) wrote from its first line to its last; the most jobs whose lines overlap.
  spans = lines.each_index.group_by { lines[_1].first(2) }.values.map(&:minmax)
  at_once = lines.each_index.map { |at| spans.count { |first, last| first <= at && at <= last } }.max || 0
  refused = RefusedWrite.where(account_id: account.id).order(:id).pluck(:worker, :slot, :token, :highest, :line)
  # The story happened: worker 7 stalled, and every other job wrote its whole report; under a limit, as many jobs as
  # it allows wrote at once, and worker 7's slot went to a successor.
  short = WORKER_IDS.drop(1).reject { |worker| lines.count { _3 == worker } == OPTIONS[:lines] }
  why = if !stalled then "worker 7 never stalled"
        elsif short.any? then "workers #{short.join(", ")} did not write their whole report"
        elsif LIMIT > 1 && at_once < LIMIT then "at most #{at_once} jobs wrote at once, not #{LIMIT}"
        elsif LIMIT > 1 && by_slot.fetch(0, []).none? { _1 > 1 } then "no job took worker 7's slot after it"
        elsif expected_unsafe then "no stale write landed, though nothing fenced worker 7's"
        end

  runs = ->(tokens) { tokens.chunk_while { _1 == _2 }.map { "#{_1.first}x#{_1.size}" }.join(" ") }
  puts
  if LIMIT == 1
    puts "report lines in commit order, by #{numbered_by}: #{runs.call(by_slot.fetch(0, []))}"
  else
    puts "report lines in commit order, by slot and token: " \
         "#{by_slot.map { |slot, tokens| "slot #{slot}: #{runs.call(tokens)}" }.join("; ")}"
  end
  refused.each do |worker, slot, token, highest, line|
    puts "refused: worker #{worker}'s line #{line} with token #{token}#{" in slot #{slot}" if LIMIT > 1} (the fence " \
         "had seen #{highest}); in the report: #{lines.include?([slot, token, worker, line]) ? "yes" : "no"}"
  end
  together = LIMIT == 1 ? "jobs interleaved: #{at_once > 1 ? 1 : 0}" : "most jobs writing at once: #{at_once}"
  puts "stale writes landed: #{stale}; #{together}; workers failed: #{failed}"
  if stale.zero? && at_once <= LIMIT && failed.zero?
    if why
      puts "VERDICT: inconclusive: #{why}"
      return Verdict.new(2, "inconclusive", stale, at_once)
    end
    limited = LIMIT > 1 ? "Never more than #{LIMIT} jobs wrote at once. " : ""
    puts "VERDICT: safe. #{limited}" \
         "#{refused.empty? ? "No write was refused this time." : "Worker 7's stale write was refused."}"
    Verdict.new(0, "safe", stale, at_once)
  else
    puts "VERDICT: UNSAFE"
    Verdict.new(1, "unsafe", stale, at_once)
  end
end

exit SolidQueueStory.tell_story(account) if SOLID_QUEUE

# A Sidekiq process's launcher, embedded in the worker process: it fetches the jobs of the worker's own queue (so
# that worker 7's job runs in the process that stalls), and its scheduler moves the retries that are due back to their
# queues every 0.1 s or so (Sidekiq's default is 5 s, for production). The scheduler's first poll comes at a random
# moment of its first SIDEKIQ_WARMUP seconds: the worker waits that out before its job is enqueued, so that the other
# workers' retries run on time and a successor takes over while worker 7 is stopped.
SIDEKIQ_WARMUP = 5.0

def start_sidekiq(worker)
  ActiveJob::Base.queue_adapter = :sidekiq
  Sidekiq.configure_client { |config| config.redis = { url: REDIS } }
  Sidekiq.configure_embed do |config|
    config.redis = { url: REDIS }
    config.queues = ["worker-#{worker}"]
    config.concurrency = 1
    config[:poll_interval_average] = 0.1
    config.logger.level = Logger::WARN
  end.tap(&:run).tap { sleep SIDEKIQ_WARMUP }
end

# One worker process: a Rails job worker with its own connections and lease renewer (started again after fork).
work = lambda do |worker|
  connect
  ActiveJob::Base.logger = Logger.new(nil)
  LeaseMachines::Jobs.store = -> { open_store } # one Store per thread
  sidekiq = start_sidekiq(worker) if REDIS
  ActiveJob::Base.queue_adapter = :async unless sidekiq
  me = "worker #{worker}"
  tell_lease_events { me }
  NightlyReportJob.set(queue: "worker-#{worker}").perform_later(account, worker)
  finished = NightlyReportJob::DONE.pop(timeout: 60)
  say(me, "gave up waiting for its job") unless finished
  sidekiq&.stop
  ActiveJob::Base.queue_adapter.shutdown(wait: true) if ActiveJob::Base.queue_adapter.respond_to?(:shutdown)
  exit!(finished ? 0 : 1)
end

pids = WORKER_IDS.map.with_index do |worker, index|
  sleep 0.3 if index == 1 # worker 7 starts first and takes token 1
  fork { work.call(worker) }
end

# Resume worker 7 after its stall (at once, should this script be interrupted while it waits).
seven = pids.first
_, status = Process.waitpid2(seven, Process::WUNTRACED)
stalled = status&.stopped?
if stalled
  say("run", "worker 7 is stopped; resuming it in #{options[:pause]}s")
  begin
    sleep options[:pause]
  ensure
    Process.kill(:CONT, seven)
  end
  _, status = Process.waitpid2(seven)
end
statuses = [status] + pids.drop(1).map { Process.waitpid2(_1).last }
exit verdict(account, stalled: stalled, failed: statuses.count { !_1.success? }).status
