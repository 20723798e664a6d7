# frozen_string_literal: true

# Worker 7, for real. N worker processes share one SQLite lease store and take turns writing the nightly report.
# Each holds the lease with a Holder (renewing on its cadence, stopping when at risk) and writes every report line
# through Store#fenced. Worker 7 stalls right after it decided it was safe to write: it stops itself with SIGSTOP
# (a stop-the-world pause), the parent resumes it with SIGCONT after longer than the TTL, and worker 7, unaware,
# writes with its old token. The fence refuses it.
#
# The run prints a timeline and a verdict read back from the database, and exits 1 if a stale write landed or two
# holders' writes interleaved.
require "optparse"
require "tmpdir"
require "lease_machines/store"

options = { workers: 3, ttl: 1.0, duration: 6.0, pause: nil, database: nil, fence: true }
OptionParser.new do |parser|
  parser.banner = "Usage: bin/worker-seven [options]"
  parser.on("--workers N", Integer, "worker processes (2..8, default 3)") { |n| options[:workers] = n }
  parser.on("--ttl SECONDS", Float, "lease TTL (default 1.0)") { |s| options[:ttl] = s }
  parser.on("--duration SECONDS", Float, "how long the workers run (default 6.0)") { |s| options[:duration] = s }
  parser.on("--pause SECONDS", Float, "how long worker 7 stalls (default 2.5 x TTL)") { |s| options[:pause] = s }
  parser.on("--database PATH", "SQLite file (default: a fresh temporary file)") { |p| options[:database] = p }
  parser.on("--without-fence", "write without the fence, to see the stale write land (the verdict fails)") do
    options[:fence] = false
  end
end.parse!
abort "worker-seven: --workers must be 2..8" unless (2..8).cover?(options[:workers])
abort "worker-seven: --ttl must be positive" unless options[:ttl].positive?
options[:pause] ||= options[:ttl] * 2.5
abort "worker-seven: --pause must exceed --ttl, or nothing happens" unless options[:pause] > options[:ttl]

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
puts "report lines in commit order, by token: #{runs.zip(tokens.chunk_while { |a, b| a == b }.map(&:size)).map { |t, n| "#{t}x#{n}" }.join(' ')}"
refused.each { |worker, token, highest| puts "refused: worker #{worker} with token #{token} (the fence had seen #{highest})" }
puts "stale writes landed: #{stale}; holders interleaved: #{interleaved}"
if stale.zero? && interleaved.zero?
  puts "VERDICT: safe. #{refused.empty? ? 'No write was refused this time.' : "Worker 7's stale write was refused."}"
  exit 0
else
  puts "VERDICT: UNSAFE"
  exit 1
end
