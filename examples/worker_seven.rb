# frozen_string_literal: true

# Worker 7, for real. N worker processes share one lease store and take turns writing the nightly report. Each
# holds the lease with a Holder (renewing on its cadence, stopping when at risk) and writes every report line
# through Store#fenced. Worker 7 stalls right after it decided it was safe to write: it stops itself with SIGSTOP
# (a stop-the-world pause), the parent resumes it with SIGCONT after longer than the TTL, and worker 7, unaware,
# writes with its old token. The fence refuses it.
#
# On SQLite the workers are forks of this process. On PostgreSQL (--postgres, or --database postgresql://...) each
# worker is a Ruby process of its own, on a simulated host (a network namespace, examples/support/hosts.rb) that
# reaches the server over TCP, with its wall clock set off from the others' by up to MAX_SKEW seconds (libfaketime):
# the store decides on the server's clock, so the skew changes nothing. Without namespaces (not root, ...) the
# workers run as local processes, clocks still skewed.
#
# On MySQL (--mysql: a throwaway MariaDB server, or --database mysql2://...) the workers are forks of this process,
# and the server's clock decides.
#
# With --redis the leases are in Redis (a throwaway redis-server with appendfsync always, or the server of a redis://
# URL) and the report with its fence in the SQL database: the Redis store issues the tokens, on Redis's clock, and
# Store#fenced checks them in the SQL transaction that writes the line.
#
# The run prints a timeline and a verdict read back from the database, and exits 1 if a stale write landed or two
# holders' writes interleaved, 2 for a usage error (one line on stderr).
require_relative "support/command_line"
require "json"
require "rbconfig"

RESOURCE = "nightly-report"
# A spawned worker's orders (JSON), in its environment.
WORKER = "WORKER_SEVEN_WORKER"
# The child's file descriptor it reports on once it is ready to start.
READY_FD = 3
# libfaketime (Debian 12's faketime package): FAKETIME="+90s" moves a process's wall clock, not its monotonic one.
FAKETIME = "/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1"
# The workers' clocks are spread over -MAX_SKEW..+MAX_SKEW seconds on PostgreSQL.
MAX_SKEW = 90.0

def usage_error(message) = CommandLine.usage_error("worker-seven", message)
def number(text, range, must) = CommandLine.number(text, range, must)

# The longest TTL, run and pause: a story that ends within minutes.
MAX_TTL = 60.0
MAX_SECONDS = 600.0

options = { workers: 3, ttl: 1.0, duration: 6.0, pause: nil, database: nil, fence: true, postgres: false,
            mysql: false, redis: nil }
# Without OptionParser's own --version and --*-completion-* options (which print and exit with status 1 or 0).
parser = OptionParser.new.tap { _1.base.long.clear }
parser.banner = "Usage: bin/worker-seven [options]"
parser.separator ""
parser.separator "Worker processes take turns writing the nightly report through the fence; worker 7 stalls"
parser.separator "(SIGSTOP) longer than its TTL and its late write meets the fence."
parser.separator "On PostgreSQL every worker's wall clock is off by up to #{MAX_SKEW.to_i}s, and on a throwaway server"
parser.separator "each runs on a simulated host of its own (a network namespace, as root); the server's clock decides."
parser.separator "With --redis the leases are in Redis, on its clock, and the fence in the SQL database."
parser.separator "Exit status: 0 safe, 1 unsafe, 2 a usage error."
parser.separator ""
parser.on("--workers N", "worker processes (2 to 8, default 3)") do
  options[:workers] = number(_1, 2..8, "a whole number from 2 to 8")
end
parser.on("--ttl SECONDS", "lease TTL (0.1 to #{MAX_TTL}, default 1.0)") do
  options[:ttl] = number(_1, 0.1..MAX_TTL, "a number of seconds from 0.1 to #{MAX_TTL}")
end
parser.on("--duration SECONDS", "how long the workers run (0.1 to #{MAX_SECONDS}, default 6.0)") do
  options[:duration] = number(_1, 0.1..MAX_SECONDS, "a number of seconds from 0.1 to #{MAX_SECONDS}")
end
parser.on("--pause SECONDS", "how long worker 7 stalls (more than the TTL, at most #{MAX_SECONDS}; " \
                             "default 2.5 x TTL)") do
  options[:pause] = number(_1, 0.0..MAX_SECONDS, "a number of seconds, more than the TTL and at most #{MAX_SECONDS}")
end
parser.on("--database PATH|URL", "SQLite file (default: a fresh temporary file), a postgresql:// or a mysql2:// URL") do
  options[:database] = _1
end
parser.on("--postgres", "on PostgreSQL (a throwaway server, without a --database URL)") { options[:postgres] = true }
parser.on("--mysql", "on MySQL (a throwaway MariaDB server, without a --database URL)") { options[:mysql] = true }
parser.on("--redis [URL]", "the leases in Redis: a throwaway redis-server (appendfsync always), or the server at a",
          "redis:// URL; the report and its fence stay in the --database") do
  options[:redis] = _1 || true
end
parser.on("--without-fence", "write without the fence, to see the stale write land (the verdict fails)") do
  options[:fence] = false
end
# A spawned worker (below) takes its orders from its environment, not its arguments.
CommandLine.parse("worker-seven", parser, ENV.key?(WORKER) ? [] : ARGV)
options[:pause] ||= options[:ttl] * 2.5
unless options[:pause] > options[:ttl]
  usage_error("--pause #{options[:pause]} must exceed --ttl #{options[:ttl]}, or nothing happens")
end
if String === options[:redis] && !options[:redis].match?(%r{\Arediss?://}i)
  usage_error("--redis takes a redis:// URL, not #{options[:redis].inspect}")
end

# The worker's lease store: on the SQL +database+, or in Redis at +redis+ with its fence in +database+.
def open_store(database, redis)
  redis ? LeaseMachines::Store.new(redis, fence: database) : LeaseMachines::Store.new(database)
end

# One timeline for every process of a run: seconds on the machine's monotonic clock since the run started.
module Timeline
  module_function

  def now = Process.clock_gettime(Process::CLOCK_MONOTONIC)
  # Unbuffered: a failed write (a reader gone) leaves nothing behind for the next spawn to fail on.
  def start(at = now)
    $stdout.sync = true
    @started = at
  end
  def started = @started

  def say(who, message)
    $stdout.write(format("%6.2fs  %-10s %s\n", now - @started, who, message))
    $stdout.flush
  end
end

# The report's two tables and the statements on them, written once for SQLite, PostgreSQL (whose placeholders are
# numbered, and whose values come back as Strings) and MySQL (prepared statements, closed after use).
module Report
  module_function

  def postgresql?(db) = defined?(PG::Connection) && PG::Connection === db
  def mysql?(db) = defined?(Mysql2::Client) && Mysql2::Client === db

  def execute(db, sql, params = [])
    return mysql(db, sql, params) if mysql?(db)
    return db.execute(sql, params) unless postgresql?(db)

    number = 0
    db.exec_params(sql.gsub("?") { "$#{number += 1}" }, params).values
  end

  def mysql(db, sql, params)
    statement = db.prepare(sql)
    statement.execute(*params, as: :array)&.to_a || []
  ensure
    statement&.close
  end

  def create(db)
    id = { postgresql?(db) => "BIGSERIAL PRIMARY KEY", mysql?(db) => "BIGINT AUTO_INCREMENT PRIMARY KEY" }
         .fetch(true, "INTEGER PRIMARY KEY")
    sql = <<~SQL
      CREATE TABLE IF NOT EXISTS nightly_report (
        id #{id}, run TEXT NOT NULL, worker INTEGER NOT NULL, token BIGINT NOT NULL, line INTEGER NOT NULL
      );
      CREATE TABLE IF NOT EXISTS refused_writes (
        run TEXT NOT NULL, worker INTEGER NOT NULL, token BIGINT NOT NULL, highest BIGINT NOT NULL
      );
    SQL
    return sql.split(";").map(&:strip).reject(&:empty?).each { db.query(_1) } if mysql?(db)

    postgresql?(db) ? db.exec("SET client_min_messages TO warning; #{sql}") : db.execute_batch(sql)
  end

end

# One worker's life: take the lease, write report lines through the fence while the Holder says it is safe,
# give the lease back, repeat until the deadline. +job+: id, run, ttl, fence, and (spawned) offset, injected.
def work(store, job, deadline)
  id = job.fetch(:id)
  me = "worker #{id}"
  clock = -> { Process.clock_gettime(Process::CLOCK_MONOTONIC) }
  ttl = job.fetch(:ttl)
  cadence = LeaseMachines::Cadence.new(ttl: ttl, renew_every: ttl / 3, warn_before: ttl / 4)
  stalled = false

  while clock.call < deadline
    sent = clock.call
    grant = store.acquire(resource: RESOURCE, owner: id, ttl: ttl)
    unless grant.granted?
      sleep(0.05 + (rand * 0.05))
      next
    end
    token = grant.lease.token
    holder = LeaseMachines::Holder.new(token: token, at: sent, cadence: cadence)
    Timeline.say(me, "acquired the lease: token #{token}")
    (1..6).each do |line|
      if holder.renewal_due?(now: clock.call)
        holder.refresh(now: clock.call)
        renewal = store.renew(resource: RESOURCE, owner: id, token: token, ttl: ttl)
        if renewal.renewed?
          holder.confirm(token: token, at: clock.call)
        else
          holder.expire
          Timeline.say(me, "renewal refused (#{renewal.reason}); stops writing")
          break
        end
      end
      if holder.at_risk?(now: clock.call)
        Timeline.say(me, "lease at risk; stops writing")
        break
      end
      if id == 7 && line == 3 && !stalled
        # The holder just said it is safe to write. Then the world stops.
        stalled = true
        Timeline.say(me, "stalls before writing line #{line} (SIGSTOP), still holding token #{token}")
        Process.kill(:STOP, Process.pid)
        Timeline.say(me, "resumes (SIGCONT), unaware, and writes line #{line} with token #{token}")
        own_clock_says(store, job, grant.lease) if job[:offset]
      end
      begin
        write = lambda do |db|
          Report.execute(db, "INSERT INTO nightly_report (run, worker, token, line) VALUES (?, ?, ?, ?)",
                         [job.fetch(:run), id, token, line])
        end
        job.fetch(:fence) ? store.fenced(resource: RESOURCE, token: token, &write) : write.call(store.database)
        Timeline.say(me, "wrote line #{line} with token #{token}")
      rescue LeaseMachines::Fenced => e
        Report.execute(store.database, "INSERT INTO refused_writes VALUES (?, ?, ?, ?)",
                       [job.fetch(:run), id, token, e.highest])
        Timeline.say(me, "REFUSED: token #{token} is older than the fence's #{e.highest}; its write never landed")
        holder.fence
        break
      end
      sleep 0.1
    end
    break if holder.state == :fenced

    if holder.state == :confirmed || holder.state == :unconfirmed
      store.release(resource: RESOURCE, owner: id, token: token)
      Timeline.say(me, "released token #{token}")
    end
    sleep(0.1 + (rand * 0.1))
  end
  store.close
end

# The worker's own wall clock (libfaketime's, or the real one plus the injected offset), Float seconds.
def own_clock(job) = Process.clock_gettime(Process::CLOCK_REALTIME) + job.fetch(:injected)

# What the lease's expiry looks like by the worker's own, skewed clock, and by the server's, which decides.
def own_clock_says(store, job, lease)
  own = lease.expires_at - own_clock(job)
  server = lease.expires_at - store.now
  by_own = own.positive? ? format("has %.1fs to run", own) : format("ran out %.1fs ago", -own)
  Timeline.say("worker #{job.fetch(:id)}", format("by its own clock (%+.1fs) the lease %s; by the server's, which " \
                                                  "decides, it ran out %.1fs ago", job.fetch(:offset), by_own, -server))
end

# A spawned worker (PostgreSQL): opens its store, says where it runs and how far its clock is from the server's,
# waits for the deadline on its standard input, works.
if (orders = ENV.delete(WORKER))
  job = JSON.parse(orders, symbolize_names: true)
  require "lease_machines/store"
  Timeline.start(job.fetch(:started))
  store = open_store(job.fetch(:database), job[:redis])
  skew = (own_clock(job) - store.now).round(2).then { _1.zero? ? 0.0 : _1 }
  IO.for_fd(READY_FD).tap do |ready|
    ready.puts(format("on %s, clock %+.1fs (%s; measured against the server's: %+.2fs)", job.fetch(:host),
                      job.fetch(:offset), job.fetch(:injected).zero? ? "libfaketime" : "injected", skew))
    ready.close
  end
  deadline = $stdin.gets or exit 1
  work(store, job, Float(deadline))
  exit
end

server, url = CommandLine.database("worker-seven", options)
postgres = server == :postgresql

require "tmpdir"
require "lease_machines/store"

WORKER_IDS = [7, 12, 19, 23, 31, 42, 55, 64].first(options[:workers])
here = File.expand_path("..", __dir__)
run = format("%<time>d-%<pid>d", time: Time.now.to_i, pid: Process.pid)
Timeline.start

# The database: a SQLite file, the user's server, or a throwaway one, whose workers run on hosts of their own.
hosts = nil
local = nil
if postgres && !url
  require_relative "support/hosts"
  begin
    hosts = TestHosts.new(WORKER_IDS.size, prefix: "lmw#{Process.pid}")
  rescue TestHosts::Error => e
    local = "no network namespaces (#{e.message})"
  end
  cluster = PostgresCluster.new
  cluster.start(dir: File.join(here, "tmp", "worker-seven-#{Process.pid}"),
                listen: hosts ? [hosts.server_address] : [], trust: hosts ? [hosts.network] : [])
  at_exit { cluster.destroy }
  database = cluster.url
elsif server == :mysql && !url
  mysql = MySQLServer.new.start(dir: File.join(here, "tmp", "worker-seven-mysql-#{Process.pid}"))
  parent = Process.pid
  at_exit { mysql.destroy if Process.pid == parent } # not in a forked worker
  database = mysql.url
elsif postgres && url
  local = "hosts of their own reach only the throwaway server of --postgres without a URL"
  database = url
elsif url
  database = url
else
  database = options[:database] || File.join(Dir.mktmpdir("worker-seven"), "leases.sqlite3")
end

# The leases' Redis: the --redis URL, or a throwaway server (reached by the hosts too) that keeps every grant.
redis = options[:redis]
if redis == true
  require_relative "support/redis_server"
  bind = hosts ? ["--bind", "127.0.0.1 #{hosts.server_address}", "--protected-mode", "no"] : []
  redis_server = RedisServer.new(File.join(here, "tmp", "worker-seven-redis-#{Process.pid}"),
                                 args: ["--appendonly", "yes", "--appendfsync", "always", *bind])
  begin
    redis_server.start
  rescue RedisServer::Error, LoadError => e
    usage_error("--redis needs a redis-server and the redis-client gem: #{e.message}")
  end
  parent = Process.pid
  at_exit { redis_server.destroy if Process.pid == parent } # not in a forked worker
  redis = redis_server.url
end

begin
  setup = open_store(database, redis)
rescue LeaseMachines::StoreError, LoadError => e
  usage_error(e.message)
end
Report.create(setup.database)
setup.close
Timeline.say("run", "#{local}: the workers run as local processes") if local
shown = { postgresql: LeaseMachines::Store::PostgreSQL, mysql: LeaseMachines::Store::MySQL }[server]
        &.describe(database) || database
shown += " (a throwaway MariaDB server; the server's clock decides)" if mysql
shown += " (a throwaway server; the hosts reach it at #{hosts.server_address})" if hosts
if redis
  kept = redis_server ? " (a throwaway redis-server, appendfsync always)" : ""
  shown = "leases in #{LeaseMachines::Store::Redis.describe(redis)}#{kept}; the report and its fence in #{shown}"
end
Timeline.say("run", "#{options[:workers]} workers, ttl #{options[:ttl]}s, worker 7 stalls #{options[:pause]}s; " \
                    "#{shown}")
job = { run: run, ttl: options[:ttl], fence: options[:fence] }

# The workers still running when this process exits (a failure, an interrupt) are killed: none is left stopped.
workers = []
owner = Process.pid
at_exit do
  next unless Process.pid == owner

  workers.each do |pid|
    next if Process.waitpid(pid, Process::WNOHANG)

    Process.kill(:KILL, pid)
    Process.waitpid(pid)
  rescue Errno::ECHILD, Errno::ESRCH
    nil
  end
end

# How each worker is started once the run's deadline is known: returns its pid.
launchers = WORKER_IDS.each_with_index.map do |id, index|
  unless postgres
    next lambda do |deadline|
      fork { work(open_store(database, redis), job.merge(id: id), deadline) }.tap { workers << _1 }
    end
  end

  host = hosts&.[](index)
  offset = (-MAX_SKEW + (2 * MAX_SKEW * index / (WORKER_IDS.size - 1))).round(1)
  faked = File.file?(FAKETIME)
  orders = job.merge(id: id, started: Timeline.started, offset: offset, injected: faked ? 0.0 : offset,
                     host: host ? "host #{host.address} (namespace #{host.namespace})" : "this machine",
                     database: host ? "postgresql://postgres@#{hosts.server_address}:#{cluster.port}/postgres" \
                                    : database,
                     redis: host && redis_server ? redis.sub("127.0.0.1", hosts.server_address) : redis)
  env = { WORKER => JSON.generate(orders) }
  env.merge!("LD_PRELOAD" => FAKETIME, "FAKETIME" => format("%+.1fs", offset), "FAKETIME_DONT_FAKE_MONOTONIC" => "1") \
    if faked
  go, ready = IO.pipe, IO.pipe
  argv = [RbConfig.ruby, "-I", File.join(here, "lib"), "-rbundler/setup", File.expand_path(__FILE__)]
  spawn_options = { in: go.first, READY_FD => ready.last }
  pid = host ? host.spawn(env, *argv, **spawn_options) : Process.spawn(env, *argv, **spawn_options)
  workers << pid
  go.first.close
  ready.last.close
  line = ready.first.wait_readable(60) && ready.first.gets
  raise "worker #{id} did not start (see its error above)" unless line

  Timeline.say("worker #{id}", line.chomp)
  lambda do |deadline|
    go.last.puts(deadline)
    go.last.close
    pid
  end
end

deadline = Timeline.now + options[:duration]
pids = launchers.map.with_index do |launch, index|
  sleep 0.3 if index == 1 # worker 7 starts first and takes token 1, as in the story
  launch.call(deadline)
end

# Resume worker 7 after its stall.
seven = pids.first
_, status = Process.waitpid2(seven, Process::WUNTRACED)
if status&.stopped?
  Timeline.say("run", "worker 7 is stopped; resuming it in #{options[:pause]}s")
  sleep options[:pause]
  Process.kill(:CONT, seven)
  Process.waitpid(seven)
end
pids.drop(1).each { |pid| Process.waitpid(pid) }

# The verdict, from what the database committed.
store = open_store(database, redis)
db = store.database
tokens = Report.execute(db, "SELECT token FROM nightly_report WHERE run = ? ORDER BY id", [run])
               .flatten.map { Integer(_1) }
refused = Report.execute(db, "SELECT worker, token, highest FROM refused_writes WHERE run = ?", [run])
                .map { |row| row.map { Integer(_1) } }
store.close
stale = tokens.each_cons(2).count { |earlier, later| later < earlier }
runs = tokens.chunk_while { |a, b| a == b }.map(&:first)
interleaved = runs.size - runs.uniq.size

puts
counts = tokens.chunk_while { |a, b| a == b }.map(&:size)
puts "report lines in commit order, by token: #{runs.zip(counts).map { |t, n| "#{t}x#{n}" }.join(' ')}"
refused.each do |worker, token, highest|
  puts "refused: worker #{worker} with token #{token} (the fence had seen #{highest})"
end
puts "stale writes landed: #{stale}; holders interleaved: #{interleaved}"
if stale.zero? && interleaved.zero?
  puts "VERDICT: safe. #{refused.empty? ? 'No write was refused this time.' : "Worker 7's stale write was refused."}"
  exit 0
else
  puts "VERDICT: UNSAFE"
  exit 1
end
