# frozen_string_literal: true

# The dashboard's pages at 100,000 resources (LeaseMachines::Web over a SQLite store), each timed through Rack with
# benchmark-ips, beside what an offset pager would cost for the same deep page. Run: bin/rake bench:web.
require "benchmark/ips"
require "rack/mock"
require "tmpdir"
require "lease_machines/web"

RESOURCES = Integer(ENV.fetch("BENCH_RESOURCES", "100000"))
WARMUP = Float(ENV.fetch("BENCH_WARMUP", "1"))
TIME = Float(ENV.fetch("BENCH_TIME", "3"))

Dir.mktmpdir("lease_machines-bench-web") do |dir|
  path = File.join(dir, "leases.sqlite3")
  store = LeaseMachines::Store.new(path)
  now = store.now
  # The rows as the store writes them (each resource granted once, a third of them still live), written in one
  # transaction: timing 100,000 committed grants is bench:stores' business, not this one's.
  store.database.transaction do |db|
    insert = db.prepare("INSERT INTO lease_machines_leases (resource, owner, token, expires_at, last_issued, " \
                        "observed, revision) VALUES (?, ?, 1, ?, 1, ?, 1)")
    RESOURCES.times do |i|
      insert.execute(format("job/%06d", i), i % 50, now + (i % 3 == 0 ? 3600.0 : -1.0), now - 10.0)
    end
    insert.close
  end
  store.acquire(resource: "nightly-report", owner: 7, ttl: 30.0)
  dashboard = LeaseMachines::Web.new(store: store)
  get = ->(url) { Rack::MockRequest.new(dashboard).get(url).tap { |r| raise "#{url}: #{r.status}" unless r.ok? } }
  deep = format("job/%06d", RESOURCES - 1000)
  offset = "SELECT resource, owner, token, expires_at FROM lease_machines_leases ORDER BY resource LIMIT 50 " \
           "OFFSET #{RESOURCES - 1000}"

  puts "# the dashboard at #{RESOURCES} resources (bench/web.rb): CRuby #{RUBY_VERSION}, SQLite " \
       "#{SQLite3::SQLITE_VERSION}, #{Etc.nprocessors} cores"
  report = Benchmark.ips(quiet: true) do |x|
    x.config(warmup: WARMUP, time: TIME)
    x.report("GET / (the first page, 50 rows)") { get.call("/") }
    x.report("GET /?after=... (a page #{RESOURCES - 1000} rows in, by key)") { get.call("/?after=0%3A#{deep.sub("/", "%2F")}") }
    x.report("the same page by key (Store#resources alone)") { store.resources(after: [deep, 0], limit: 51) }
    x.report("the same page by OFFSET (the query alone)") { store.database.execute(offset) }
    x.report("the page's count (Store#resource_count)") { store.resource_count }
    x.report("GET /?prefix=job/09 (a filtered page)") { get.call("/?prefix=job%2F09") }
    x.report("GET /resource (a timeline)") { get.call("/resource?name=nightly-report&slot=0") }
    x.report("GET /metrics") { get.call("/metrics") }
  end
  puts "| request | ms | ±% |", "|---|---:|---:|"
  report.entries.each do |entry|
    puts format("| %s | %.2f | %.0f%% |", entry.label, 1000.0 / entry.stats.central_tendency,
                entry.stats.error_percentage)
  end
  dashboard.close
  store.close
end
