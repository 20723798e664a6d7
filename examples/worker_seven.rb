# frozen_string_literal: true

# Worker 7, for real. N worker processes share one SQLite lease store and take turns writing the nightly report.
# Each holds the lease with a Holder (renewing on its cadence, stopping when at risk) and writes every report line
# through Store#fenced. Worker 7 stalls right after it decided it was safe to write: it stops itself with SIGSTOP
# (a stop-the-world pause), the parent resumes it with SIGCONT after longer than the TTL, and worker 7, unaware,
# writes with its old token. The fence refuses it.
#
# The run prints a timeline and a verdict read back from the database, and exits 1 if a stale write landed or two
# holders' writes interleaved, 2 for a usage error (one line on stderr).
require_relative "support/command_line"

def usage_error(message) = CommandLine.usage_error("worker-seven", message)
def number(text, range, must) = CommandLine.number(text, range, must)

# The longest TTL, run and pause: a story that ends within minutes.
MAX_TTL = 60.0
MAX_SECONDS = 600.0

options = { workers: 3, ttl: 1.0, duration: 6.0, pause: nil, database: nil, fence: true }
# Without OptionParser's own --version and --*-completion-* options (which print and exit with status 1 or 0).
parser = OptionParser.new.tap { _1.base.long.clear }
parser.banner = "Usage: bin/worker-seven [options]"
parser.separator ""
parser.separator "Worker processes take turns writing the nightly report through the fence; worker 7 stalls"
parser.separator "(SIGSTOP) longer than its TTL and its late write meets the fence."
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
parser.on("--database PATH", "SQLite file (default: a fresh temporary file)") { options[:database] = _1 }
parser.on("--without-fence", "write without the fence, to see the stale write land (the verdict fails)") do
  options[:fence] = false
end
CommandLine.parse("worker-seven", parser, ARGV)
options[:pause] ||= options[:ttl] * 2.5
unless options[:pause] > options[:ttl]
  usage_error("--pause #{options[:pause]} must exceed --ttl #{options[:ttl]}, or nothing happens")
end

require "tmpdir"
require "lease_machines/store"

RESOURCE = "nightly-report"
WORKER_IDS = [7, 12, 19, 23, 31, 42, 55, 64].first(options[:workers])
database = options[:database] || File.join(Dir.mktmpdir("worker-seven"), "leases.sqlite3")
run = format("%<time>d-%<pid>d", time: Time.now.to_i, pid: Process.pid)
started = Process.clock_gettime(Process::CLOCK_MONOTONIC)

say = lambda do |who, message|
  elapsed = Process.clock_gettime(Process::CLOCK_MONOTONIC) - started
  $stdout.write(format("%6.2fs  %-10s %s\n", elapsed, who, message))
  $stdout.flush
end

setup = LeaseMachines::Store.new(database)
setup.database.execute_batch(<<~SQL)
  CREATE TABLE IF NOT EXISTS nightly_report (
    id INTEGER PRIMARY KEY, run TEXT NOT NULL, worker INTEGER NOT NULL, token INTEGER NOT NULL, line INTEGER NOT NULL
  );
  CREATE TABLE IF NOT EXISTS refused_writes (
    run TEXT NOT NULL, worker INTEGER NOT NULL, token INTEGER NOT NULL, highest INTEGER NOT NULL
  );
SQL
setup.close
say.call("run", "#{options[:workers]} workers, ttl #{options[:ttl]}s, worker 7 stalls #{options[:pause]}s; #{database}")

# One worker's life: take the lease, write report lines through the fence while the Holder says it is safe,
# give the lease back, repeat until the deadline.
work = lambda do |id|
  store = LeaseMachines::Store.new(database)
  me = "worker #{id}"
  clock = -> { Process.clock_gettime(Process::CLOCK_MONOTONIC) }
  ttl = options[:ttl]
  cadence = LeaseMachines::Cadence.new(ttl: ttl, renew_every: ttl / 3, warn_before: ttl / 4)
  deadline = started + options[:duration]
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
    say.call(me, "acquired the lease: token #{token}")
    (1..6).each do |line|
      if holder.renewal_due?(now: clock.call)
        holder.refresh(now: clock.call)
        renewal = store.renew(resource: RESOURCE, owner: id, token: token, ttl: ttl)
        if renewal.renewed?
          holder.confirm(token: token, at: clock.call)
        else
          holder.expire
          say.call(me, "renewal refused (#{renewal.reason}); stops writing")
          break
        end
      end
      if holder.at_risk?(now: clock.call)
        say.call(me, "lease at risk; stops writing")
        break
      end
      if id == 7 && line == 3 && !stalled
        # The holder just said it is safe to write. Then the world stops.
        stalled = true
        say.call(me, "stalls before writing line #{line} (SIGSTOP), still holding token #{token}")
        Process.kill(:STOP, Process.pid)
        say.call(me, "resumes (SIGCONT), unaware, and writes line #{line} with token #{token}")
      end
      begin
        write = ->(db) { db.execute("INSERT INTO nightly_report VALUES (NULL, ?, ?, ?, ?)", [run, id, token, line]) }
        options[:fence] ? store.fenced(resource: RESOURCE, token: token, &write) : write.call(store.database)
        say.call(me, "wrote line #{line} with token #{token}")
      rescue LeaseMachines::Fenced => e
        store.database.execute("INSERT INTO refused_writes VALUES (?, ?, ?, ?)", [run, id, token, e.highest])
        say.call(me, "REFUSED: token #{token} is older than the fence's #{e.highest}; its write never landed")
        holder.fence
        break
      end
      sleep 0.1
    end
    break if holder.state == :fenced

    if holder.state == :confirmed || holder.state == :unconfirmed
      store.release(resource: RESOURCE, owner: id, token: token)
      say.call(me, "released token #{token}")
    end
    sleep(0.1 + (rand * 0.1))
  end
  store.close
end

pids = WORKER_IDS.map.with_index do |id, index|
  sleep 0.3 if index == 1 # worker 7 starts first and takes token 1, as in the story
  fork { work.call(id) }
end

# Resume worker 7 after its stall.
seven = pids.first
_, status = Process.waitpid2(seven, Process::WUNTRACED)
if status&.stopped?
  say.call("run", "worker 7 is stopped; resuming it in #{options[:pause]}s")
  sleep options[:pause]
  Process.kill(:CONT, seven)
  Process.waitpid(seven)
end
pids.drop(1).each { |pid| Process.waitpid(pid) }

# The verdict, from what the database committed.
db = LeaseMachines::Store.new(database).database
tokens = db.execute("SELECT token FROM nightly_report WHERE run = ? ORDER BY id", [run]).flatten
refused = db.execute("SELECT worker, token, highest FROM refused_writes WHERE run = ?", [run])
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
