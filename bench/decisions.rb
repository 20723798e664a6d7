# frozen_string_literal: true

# The Ruby-side cost of each decision, with benchmark-ips:
#
#   ruby -Ilib bench/decisions.rb          # YJIT off
#   ruby --yjit -Ilib bench/decisions.rb   # YJIT on
#   bin/rake bench                         # both, then a Markdown table of the two (rakelib/bench.rake)
#
# Each operation is timed four ways, in the same loop shape:
#
# - floor: LeaseMachines::BenchmarkFloor's empty native method, called with exactly the arguments the gem's Ruby
#   method hands to its native one (ffi/src/floor.rs). The least any call into the extension can cost.
# - keyword floor: the same empty native method behind a Ruby method with the gem's keywords (Bench::KeywordFloor,
#   below): what the keyword layer alone adds. Fence#accept has no Ruby layer, so it has no such row.
# - native: the gem's public method.
# - pure Ruby: the same rules in Ruby (bench/reference.rb), checked against the gem first (bench/agreement.rb).
#
# Every report runs its own `while` loop (benchmark-ips' manual-loop form): ns/call includes the loop itself, advancing
# `now` and keeping the answer, the same in every row (acquire's "loop alone" row shows what that costs). After timing,
# the run aborts unless each loop's last answer is the one its workload is meant to produce on every call.
#
# Targets (the issue's), against the floor: Authority#acquire granted at most 2.5x, refused at most 2x, renew at most
# 2.5x, Fence#accept at most 1.3x, Table#acquire at most 3x; and every one at least 3x faster than pure Ruby. Performance is measured here, never asserted in tests.
#
# BENCH_WARMUP and BENCH_TIME set benchmark-ips' warmup and time per report (default 1 s and 3 s); BENCH_RESULTS names
# a JSON file to write the figures to (bench/summary.rb turns such files into the README's table).

require_relative "support"
require_relative "agreement"

module Bench
  # The gem's keyword methods, over the floor's empty native methods (same shape as lib/lease_machines/authority.rb: a
  # keyword method calling the native one on self).
  module KeywordFloor
    def acquire(owner:, now:, ttl:) = _acquire(owner, now, ttl)
    def renew(owner:, token:, now:, ttl:) = _renew(owner, token, now, ttl)
    def release(owner:, token:, now:) = _release(owner, token, now)

    def table_acquire(resource:, owner:, now:, ttl:, expected_revision: nil)
      _table_acquire(resource, owner, now, ttl, expected_revision)
    end
  end

  LABELS = {
    loop: "loop alone (no call)",
    floor: "floor (empty native method)",
    keyword_floor: "floor behind keywords",
    native: "native (the gem)",
    ruby: "pure Ruby (bench/reference.rb)"
  }.freeze

  # One operation's figures (label => Figure) against its targets: +max_floor+, the most native may cost in floors;
  # +min_speedup+, the least native must beat pure Ruby by. +derived+ when the figures are differences of two reports.
  Operation = Data.define(:name, :workload, :figures, :max_floor, :min_speedup, :derived) do
    def floor_ratio = figures[:native].ns / figures[:floor].ns
    def keyword_ratio = figures[:keyword_floor] && (figures[:keyword_floor].ns / figures[:floor].ns)
    def speedup = figures[:ruby].ns / figures[:native].ns
    def floor_met? = max_floor.nil? || floor_ratio <= max_floor
    def speedup_met? = min_speedup.nil? || speedup >= min_speedup

    # The figures as JSON data (BENCH_RESULTS).
    def row
      { name:, workload:, derived:, max_floor:, min_speedup:, floor_ratio:, keyword_ratio:, speedup:,
        figures: figures.transform_values { |figure| { ns: figure.ns, ips: figure.ips, error: figure.error } } }
    end
  end

  # The operations, each timed in one benchmark-ips job.
  module Decisions
    TTL = 5.0

    module_function

    # Granted on every call: each call's +now+ is the previous lease's expires_at (now += ttl), so the lease has just
    # expired and the next token is issued.
    def acquire
      authority = LeaseMachines::Authority.new(clock_policy: :reject)
      reference = Reference::Authority.new
      floor = LeaseMachines::BenchmarkFloor.new
      ttl = TTL
      now_loop = now_floor = now_keyword = now_native = now_ruby = 0.0
      last_loop = last_floor = last_keyword = last_native = last_ruby = nil
      figures = Bench.ips do |job|
        job.report(:loop) do |times|
          i = 0
          while i < times
            now_loop += ttl
            last_loop = nil
            i += 1
          end
        end
        job.report(:floor) do |times|
          i = 0
          while i < times
            now_floor += ttl
            last_floor = floor._acquire(1, now_floor, ttl)
            i += 1
          end
        end
        job.report(:keyword_floor) do |times|
          i = 0
          while i < times
            now_keyword += ttl
            last_keyword = floor.acquire(owner: 1, now: now_keyword, ttl:)
            i += 1
          end
        end
        job.report(:native) do |times|
          i = 0
          while i < times
            now_native += ttl
            last_native = authority.acquire(owner: 1, now: now_native, ttl:)
            i += 1
          end
        end
        job.report(:ruby) do |times|
          i = 0
          while i < times
            now_ruby += ttl
            last_ruby = reference.acquire(owner: 1, now: now_ruby, ttl:)
            i += 1
          end
        end
      end
      Bench.expect!("Authority#acquire", [last_native.status, last_native.lease.expires_at],
                    [:granted, now_native + ttl])
      Bench.expect!("Reference::Authority#acquire", [last_ruby.status, last_ruby.lease.expires_at],
                    [:granted, now_ruby + ttl])
      Bench.expect!("the floor", [last_loop, last_floor, last_keyword], [nil, nil, nil])
      Operation.new("Authority#acquire", "granted, every call at the previous lease's expires_at", figures, 2.5, 3.0,
                    false)
    end

    # Refused on every call: owner 1 holds the lease for good, owner 2 asks at the same instant each time.
    def acquire_refused
      authority = LeaseMachines::Authority.new(clock_policy: :reject)
      reference = Reference::Authority.new
      [authority, reference].each { |subject| subject.acquire(owner: 1, now: 0.0, ttl: 1e9) }
      floor = LeaseMachines::BenchmarkFloor.new
      ttl = TTL
      last_floor = last_keyword = last_native = last_ruby = nil
      figures = Bench.ips do |job|
        job.report(:floor) do |times|
          i = 0
          while i < times
            last_floor = floor._acquire(2, 1.0, ttl)
            i += 1
          end
        end
        job.report(:keyword_floor) do |times|
          i = 0
          while i < times
            last_keyword = floor.acquire(owner: 2, now: 1.0, ttl:)
            i += 1
          end
        end
        job.report(:native) do |times|
          i = 0
          while i < times
            last_native = authority.acquire(owner: 2, now: 1.0, ttl:)
            i += 1
          end
        end
        job.report(:ruby) do |times|
          i = 0
          while i < times
            last_ruby = reference.acquire(owner: 2, now: 1.0, ttl:)
            i += 1
          end
        end
      end
      Bench.expect!("Authority#acquire, refused", last_native.reason, :occupied)
      Bench.expect!("Reference::Authority#acquire, refused", last_ruby.reason, :occupied)
      Bench.expect!("the floor", [last_floor, last_keyword], [nil, nil])
      Operation.new("Authority#acquire, refused", "occupied: another owner's lease is live", figures, 2.0, 3.0, false)
    end

    # Renewed on every call: owner 1 holds token 1 and renews it 1 s later each time, while it has 4 s left.
    def renew
      authority = LeaseMachines::Authority.new(clock_policy: :reject)
      reference = Reference::Authority.new
      [authority, reference].each { |subject| subject.acquire(owner: 1, now: 0.0, ttl: TTL) }
      floor = LeaseMachines::BenchmarkFloor.new
      ttl = TTL
      now_floor = now_keyword = now_native = now_ruby = 0.0
      last_floor = last_keyword = last_native = last_ruby = nil
      figures = Bench.ips do |job|
        job.report(:floor) do |times|
          i = 0
          while i < times
            now_floor += 1.0
            last_floor = floor._renew(1, 1, now_floor, ttl)
            i += 1
          end
        end
        job.report(:keyword_floor) do |times|
          i = 0
          while i < times
            now_keyword += 1.0
            last_keyword = floor.renew(owner: 1, token: 1, now: now_keyword, ttl:)
            i += 1
          end
        end
        job.report(:native) do |times|
          i = 0
          while i < times
            now_native += 1.0
            last_native = authority.renew(owner: 1, token: 1, now: now_native, ttl:)
            i += 1
          end
        end
        job.report(:ruby) do |times|
          i = 0
          while i < times
            now_ruby += 1.0
            last_ruby = reference.renew(owner: 1, token: 1, now: now_ruby, ttl:)
            i += 1
          end
        end
      end
      Bench.expect!("Authority#renew", [last_native.status, last_native.lease.expires_at],
                    [:renewed, now_native + ttl])
      Bench.expect!("Reference::Authority#renew", [last_ruby.status, last_ruby.lease.expires_at],
                    [:renewed, now_ruby + ttl])
      Bench.expect!("the floor", [last_floor, last_keyword], [nil, nil])
      Operation.new("Authority#renew", "renewed, every call 1 s after the last, with 4 s left", figures, 2.5, 3.0,
                    false)
    end

    # A release needs a lease to give back, so this times an acquire (granted, as in #acquire) followed by the release
    # of that fresh grant (its token counted in the loop). #release_alone subtracts #acquire from it.
    def acquire_release
      authority = LeaseMachines::Authority.new(clock_policy: :reject)
      reference = Reference::Authority.new
      floor = LeaseMachines::BenchmarkFloor.new
      ttl = TTL
      now_floor = now_keyword = now_native = now_ruby = 0.0
      token_floor = token_keyword = token_native = token_ruby = 0
      last_floor = last_keyword = last_native = last_ruby = nil
      figures = Bench.ips do |job|
        job.report(:floor) do |times|
          i = 0
          while i < times
            now_floor += ttl
            token_floor += 1
            floor._acquire(1, now_floor, ttl)
            last_floor = floor._release(1, token_floor, now_floor)
            i += 1
          end
        end
        job.report(:keyword_floor) do |times|
          i = 0
          while i < times
            now_keyword += ttl
            token_keyword += 1
            floor.acquire(owner: 1, now: now_keyword, ttl:)
            last_keyword = floor.release(owner: 1, token: token_keyword, now: now_keyword)
            i += 1
          end
        end
        job.report(:native) do |times|
          i = 0
          while i < times
            now_native += ttl
            token_native += 1
            authority.acquire(owner: 1, now: now_native, ttl:)
            last_native = authority.release(owner: 1, token: token_native, now: now_native)
            i += 1
          end
        end
        job.report(:ruby) do |times|
          i = 0
          while i < times
            now_ruby += ttl
            token_ruby += 1
            reference.acquire(owner: 1, now: now_ruby, ttl:)
            last_ruby = reference.release(owner: 1, token: token_ruby, now: now_ruby)
            i += 1
          end
        end
      end
      # Released with the loop's token: so that acquire was granted, with the token after the previous one.
      Bench.expect!("Authority#acquire + #release", [last_native.status, authority.last_issued],
                    [:released, token_native])
      Bench.expect!("Reference::Authority#acquire + #release", [last_ruby.status, reference.last_issued],
                    [:released, token_ruby])
      Bench.expect!("the floor", [last_floor, last_keyword], [nil, nil])
      Operation.new("Authority#acquire + #release", "a grant (as for acquire), then its release", figures, nil, nil,
                    false)
    end

    # Release alone, derived: the acquire + release pair minus acquire, row by row (a difference of two
    # measurements, so noisier than either).
    def release_alone(pair, acquire)
      figures = pair.figures.to_h do |label, figure|
        ns = figure.ns - acquire.figures.fetch(label).ns
        [label, Figure.new(label, 1e9 / ns, nil)]
      end
      Operation.new("Authority#release", "derived: (acquire + release) - acquire", figures, nil, nil, true)
    end

    # Accepted on every call: the fence's mark is token 1 and token 1 is presented again (one lease, many writes).
    def fence_accept
      fence = LeaseMachines::Fence.new(highest: 1)
      reference = Reference::Fence.new(highest: 1)
      floor = LeaseMachines::BenchmarkFloor.new
      last_floor = last_native = last_ruby = nil
      figures = Bench.ips do |job|
        job.report(:floor) do |times|
          i = 0
          while i < times
            last_floor = floor.accept(1)
            i += 1
          end
        end
        job.report(:native) do |times|
          i = 0
          while i < times
            last_native = fence.accept(1)
            i += 1
          end
        end
        job.report(:ruby) do |times|
          i = 0
          while i < times
            last_ruby = reference.accept(1)
            i += 1
          end
        end
      end
      Bench.expect!("Fence#accept", [last_floor, last_native, last_ruby], [nil, true, true])
      Operation.new("Fence#accept", "accepted, the current token again", figures, 1.3, 3.0, false)
    end

    # Granted on every call, on one resource of a table: as #acquire, each call at the previous lease's expires_at.
    # The table also raises the resource's revision and records an event each time (its log keeps the newest 4096).
    def table_acquire
      table = LeaseMachines::Table.new
      reference = Reference::Table.new
      floor = LeaseMachines::BenchmarkFloor.new
      resource = "reports/2026-11"
      ttl = TTL
      now_floor = now_keyword = now_native = now_ruby = 0.0
      last_floor = last_keyword = last_native = last_ruby = nil
      figures = Bench.ips do |job|
        job.report(:floor) do |times|
          i = 0
          while i < times
            now_floor += ttl
            last_floor = floor._table_acquire(resource, 1, now_floor, ttl, nil)
            i += 1
          end
        end
        job.report(:keyword_floor) do |times|
          i = 0
          while i < times
            now_keyword += ttl
            last_keyword = floor.table_acquire(resource:, owner: 1, now: now_keyword, ttl:)
            i += 1
          end
        end
        job.report(:native) do |times|
          i = 0
          while i < times
            now_native += ttl
            last_native = table.acquire(resource:, owner: 1, now: now_native, ttl:)
            i += 1
          end
        end
        job.report(:ruby) do |times|
          i = 0
          while i < times
            now_ruby += ttl
            last_ruby = reference.acquire(resource:, owner: 1, now: now_ruby, ttl:)
            i += 1
          end
        end
      end
      Bench.expect!("Table#acquire", [last_native.status, last_native.lease.revision, last_native.lease.expires_at],
                    [:granted, last_native.lease.token, now_native + ttl])
      Bench.expect!("Reference::Table#acquire", [last_ruby.status, last_ruby.lease.expires_at],
                    [:granted, now_ruby + ttl])
      Bench.expect!("the floor", [last_floor, last_keyword], [nil, nil])
      Operation.new("Table#acquire", "granted on one resource, every call at the previous lease's expires_at",
                    figures, 3.0, 3.0, false)
    end

    def print(operation)
      puts
      puts "## #{operation.name}: #{operation.workload}"
      puts format("  %-32s %11s %7s %10s %12s", "", "i/s", "±", "ns/call", "vs floor")
      operation.figures.each do |label, figure|
        error = figure.error ? format("%.1f%%", figure.error) : "-"
        puts format("  %-32s %11s %7s %10.1f %11.2fx", LABELS.fetch(label), Bench.si(figure.ips), error, figure.ns,
                    figure.ns / operation.figures[:floor].ns)
      end
      puts format("  native / floor: %.2fx%s", operation.floor_ratio, verdict(operation.max_floor, operation.floor_met?,
                                                                             "at most %.1fx"))
      puts format("  keyword layer alone / floor: %.2fx", operation.keyword_ratio) if operation.keyword_ratio
      puts format("  speed-up over pure Ruby: %.2fx%s", operation.speedup,
                  verdict(operation.min_speedup, operation.speedup_met?, "at least %.1fx"))
    end

    def verdict(target, met, wording)
      return "   (no target)" unless target

      "   target #{format(wording, target)}: #{met ? 'met' : 'MISSED'}"
    end
  end
end

LeaseMachines::BenchmarkFloor.include(Bench::KeywordFloor)

$stdout.sync = true
Bench.header("lease_machines: Ruby decisions vs the floor and pure Ruby")
puts "agreement: #{Agreement.check!}"

decisions = Bench::Decisions
operations = []
# Prints each operation's figures as soon as they are measured.
measured = ->(operation) { operations << operation.tap { decisions.print(operation) } }
acquire = measured.call(decisions.acquire).last
measured.call(decisions.acquire_refused)
measured.call(decisions.renew)
pair = measured.call(decisions.acquire_release).last
measured.call(decisions.release_alone(pair, acquire))
measured.call(decisions.fence_accept)
measured.call(decisions.table_acquire)

puts
puts "## Targets (YJIT #{Bench.yjit? ? 'on' : 'off'})"
operations.each do |operation|
  if operation.max_floor
    puts format("  %-20s native / floor %.2fx, target at most %.1fx: %s", operation.name, operation.floor_ratio,
                operation.max_floor, operation.floor_met? ? "met" : "MISSED")
  end
  next unless operation.min_speedup

  puts format("  %-20s speed-up over pure Ruby %.2fx, target at least %.1fx: %s", operation.name, operation.speedup,
              operation.min_speedup, operation.speedup_met? ? "met" : "MISSED")
end

if (path = ENV.fetch("BENCH_RESULTS", nil))
  File.write(path, JSON.pretty_generate({ ruby: RUBY_DESCRIPTION, yjit: Bench.yjit?, machine: Bench.machine,
                                          warmup: Bench::WARMUP, time: Bench::TIME,
                                          operations: operations.map(&:row) }))
  puts "figures written to #{path}"
end
