# frozen_string_literal: true

# The Ruby-side cost of each decision, with benchmark-ips:
#
#   ruby -Ilib bench/decisions.rb          # YJIT off
#   ruby --yjit -Ilib bench/decisions.rb   # YJIT on
#   bin/rake bench                         # both, then a Markdown table of the two (rakelib/bench.rake)
#
# Each operation is timed up to five ways, in the same loop shape:
#
# - floor: LeaseMachines::BenchmarkFloor's empty native method, called with exactly the arguments the gem's Ruby
#   method hands to its native one (ffi/src/floor.rs). The least any call into the extension can cost.
# - keyword floor: the same empty native method behind a Ruby method with the gem's keywords (Bench::KeywordFloor,
#   bench/support.rb): what the keyword layer alone adds. Fence#accept has no Ruby layer, so it has no such row.
# - records floor, for a grant or a renewal: the keyword floor over a native method that also builds the answer's
#   two frozen records, the Decision and its Lease (a TableLease for a table), with the extension's own builders
#   (ffi/src/data.rs). The least such an answer can cost. A refusal returns a Decision built once and kept, so its
#   floor is the keyword floor.
# - native: the gem's public method.
# - pure Ruby: the same rules in Ruby (bench/reference.rb), checked against the gem first (bench/agreement.rb).
#
# Every report runs its own `while` loop (benchmark-ips' manual-loop form, each written out from one template by
# Bench.timed, bench/support.rb): ns/call includes the loop itself, advancing `now` and keeping the answer, the same in
# every row (acquire's "loop alone" row shows what that costs). After timing, the run aborts unless each loop's last
# answer is the one its workload is meant to produce on every call.
#
# Targets, YJIT off and on: a grant (Authority#acquire granted, Authority#renew, Table#acquire) at most 1.3x its
# records floor; a refusal (Authority#acquire refused) at most 1.3x its keyword floor;
# Fence#accept at most 1.3x the floor. The other ratios to the floors, and the speed-up over pure Ruby, are figures
# with no target. Performance is measured here, never asserted in tests.
#
# BENCH_WARMUP and BENCH_TIME set benchmark-ips' warmup and time per report (default 1 s and 3 s); BENCH_RESULTS names
# a JSON file to write the figures to (bench/summary.rb turns such files into docs/performance.md's table).

require_relative "support"
require_relative "agreement"

module Bench
  LABELS = {
    loop: "loop alone (no call)",
    floor: "floor (empty native method)",
    keyword_floor: "floor behind keywords",
    records_floor: "records floor (builds the answer)",
    native: "native (the gem)",
    ruby: "pure Ruby (bench/reference.rb)"
  }.freeze

  # The floors native is measured against, by label, as the ratios and targets name them.
  FLOORS = { floor: "floor", keyword_floor: "keyword floor", records_floor: "records floor" }.freeze

  # One operation's figures (label => Figure) against its +targets+ (a floor's label => the most native may cost in
  # that floor). +derived+ when the figures are differences of two reports.
  Operation = Data.define(:name, :workload, :figures, :targets, :derived) do
    # Native's time over the +floor+ row's; nil without that row.
    def ratio(floor) = figures[floor] && (figures[:native].ns / figures[floor].ns)
    def keyword_ratio = figures[:keyword_floor] && (figures[:keyword_floor].ns / figures[:floor].ns)
    def speedup = figures[:ruby].ns / figures[:native].ns
    def met?(floor) = ratio(floor) <= targets.fetch(floor)

    # The figures as JSON data (BENCH_RESULTS).
    def row
      { name:, workload:, derived:, floor_ratio: ratio(:floor), keyword_ratio:, speedup:,
        ratios: FLOORS.keys.to_h { |floor| [floor, ratio(floor)] }.compact,
        targets: targets.map { |floor, at_most| { floor:, at_most:, ratio: ratio(floor), met: met?(floor) } },
        figures: figures.transform_values { |figure| { ns: figure.ns, ips: figure.ips, error: figure.error } } }
    end
  end

  # The operations, each timed in one benchmark-ips job.
  module Decisions
    TTL = 5.0

    module_function

    # Times the operation +name+ (+workload+, against +targets+), one report per row, each its own loop (Bench.timed)
    # of +step+ and a call on `subject`: +floor+ on the floor's empty native method; the gem's +call+ on the keyword
    # floor (+keyword+ where its method is named otherwise, no row for nil), on +native+ (the gem) and on +ruby+ (the
    # reference); +records+ on the records floor, for a grant. +alone+ adds the loop alone. +locals+ are the loops'
    # other variables. Yields each row's loop (label => loop) to the operation's checks, then checks the floors.
    def measure(name, workload, targets, call:, native:, ruby:, floor:, keyword: call, records: nil, alone: false,
                step: nil, **locals)
      base = LeaseMachines::BenchmarkFloor.new
      rows = { loop: ([nil, "nil"] if alone), floor: [base, floor], keyword_floor: ([base, keyword] if keyword),
               records_floor: ([base, records] if records), native: [native, call], ruby: [ruby, call] }.compact
      loops = rows.transform_values { |(subject, text)| Bench.timed(text, step:, subject:, ttl: TTL, **locals) }
      figures = Bench.ips { |job| loops.each { |label, loop| job.report(label, &loop) } }
      yield loops
      check_floors!(loops)
      Operation.new(name, workload, figures, targets, false)
    end

    # Aborts unless the floors took their path: nil from the empty methods and the loop alone, and from the records
    # floor an answer of the kind native's last one is (a Decision and its lease of the same classes, both frozen, and
    # the same status).
    def check_floors!(loops)
      last = loops.transform_values { |loop| Bench.local(loop) }
      empty = last.slice(:loop, :floor, :keyword_floor).values
      Bench.expect!("the floor", empty, [nil] * empty.size)
      return unless last.key?(:records_floor)

      kind = ->(answer) { [answer, answer.lease].flat_map { |record| [record.class, record.frozen?] } << answer.status }
      Bench.expect!("the records floor", kind.call(last[:records_floor]), kind.call(last[:native]))
    end

    # Aborts unless native (+name+) and pure Ruby (Reference::+name+) last answered +status+ with a lease until their
    # loop's now + TTL: the call was granted or renewed, every time.
    def leased!(name, loops, status)
      { name => loops[:native], "Reference::#{name}" => loops[:ruby] }.each do |what, loop|
        answer = Bench.local(loop)
        Bench.expect!(what, [answer.status, answer.lease&.expires_at], [status, Bench.local(loop, :now) + TTL])
      end
    end

    # A new authority and its pure-Ruby twin; owner 1 holds a lease from 0.0 on both for +held_for+ seconds, if given.
    def authorities(held_for = nil)
      [LeaseMachines::Authority.new(clock_policy: :reject), Reference::Authority.new].each do |subject|
        subject.acquire(owner: 1, now: 0.0, ttl: held_for) if held_for
      end
    end

    # Granted on every call: each call's +now+ is the previous lease's expires_at (now += ttl), so the lease has just
    # expired and the next token is issued.
    def acquire
      authority, reference = authorities
      measure("Authority#acquire", "granted, every call at the previous lease's expires_at", { records_floor: 1.3 },
              alone: true, step: "now += ttl", now: 0.0, floor: "subject._acquire(1, now, ttl)",
              records: "subject.granted(owner: 1, now:, ttl:)", call: "subject.acquire(owner: 1, now:, ttl:)",
              native: authority, ruby: reference) do |loops|
        leased!("Authority#acquire", loops, :granted)
      end
    end

    # Refused on every call: owner 1 holds the lease for good, owner 2 asks at the same instant each time.
    def acquire_refused
      authority, reference = authorities(1e9)
      measure("Authority#acquire, refused", "occupied: another owner's lease is live",
              { keyword_floor: 1.3 }, floor: "subject._acquire(2, 1.0, ttl)",
              call: "subject.acquire(owner: 2, now: 1.0, ttl:)", native: authority, ruby: reference) do |loops|
        reasons = loops.values_at(:native, :ruby).map { |loop| Bench.local(loop).reason }
        Bench.expect!("Authority#acquire, refused (native, pure Ruby)", reasons, %i[occupied occupied])
      end
    end

    # Renewed on every call: owner 1 holds token 1 and renews it 1 s later each time, while it has 4 s left.
    def renew
      authority, reference = authorities(TTL)
      measure("Authority#renew", "renewed, every call 1 s after the last, with 4 s left", { records_floor: 1.3 },
              step: "now += 1.0", now: 0.0, floor: "subject._renew(1, 1, now, ttl)",
              records: "subject.renewed(owner: 1, token: 1, now:, ttl:)",
              call: "subject.renew(owner: 1, token: 1, now:, ttl:)", native: authority, ruby: reference) do |loops|
        leased!("Authority#renew", loops, :renewed)
      end
    end

    # A release needs a lease to give back, so this times an acquire (granted, as in #acquire) followed by the release
    # of that fresh grant (its token counted in the loop). #release_alone subtracts #acquire from it.
    def acquire_release
      authority, reference = authorities
      measure("Authority#acquire + #release", "a grant (as for acquire), then its release", {},
              step: "now += ttl; token += 1", now: 0.0, token: 0,
              floor: "(subject._acquire(1, now, ttl); subject._release(1, token, now))",
              call: "(subject.acquire(owner: 1, now:, ttl:); subject.release(owner: 1, token:, now:))",
              native: authority, ruby: reference) do |loops|
        # Released with the loop's token: so that acquire was granted, with the token after the previous one.
        { "Authority#acquire + #release" => [loops[:native], authority],
          "Reference::Authority#acquire + #release" => [loops[:ruby], reference] }.each do |what, (loop, subject)|
          Bench.expect!(what, [Bench.local(loop).status, subject.last_issued], [:released, Bench.local(loop, :token)])
        end
      end
    end

    # Release alone, derived: the acquire + release pair minus acquire, row by row (a difference of two
    # measurements, so noisier than either).
    def release_alone(pair, acquire)
      figures = pair.figures.to_h do |label, figure|
        ns = figure.ns - acquire.figures.fetch(label).ns
        [label, Figure.new(label, 1e9 / ns, nil)]
      end
      Operation.new("Authority#release", "derived: (acquire + release) - acquire", figures, {}, true)
    end

    # Accepted on every call: the fence's mark is token 1 and token 1 is presented again (one lease, many writes).
    def fence_accept
      measure("Fence#accept", "accepted, the current token again", { floor: 1.3 },
              floor: "subject.accept(1)", keyword: nil, call: "subject.accept(1)",
              native: LeaseMachines::Fence.new(highest: 1), ruby: Reference::Fence.new(highest: 1)) do |loops|
        answers = loops.values_at(:native, :ruby).map { |loop| Bench.local(loop) }
        Bench.expect!("Fence#accept (native, pure Ruby)", answers, [true, true])
      end
    end

    # Granted on every call, on one resource of a table: as #acquire, each call at the previous lease's expires_at.
    # The table also raises the resource's revision and records an event each time (its log keeps the newest 4096).
    def table_acquire
      measure("Table#acquire", "granted on one resource, every call at the previous lease's expires_at",
              { records_floor: 1.3 }, step: "now += ttl", now: 0.0, resource: "reports/2026-11",
              floor: "subject._table_acquire(resource, 1, now, ttl, nil)",
              keyword: "subject.table_acquire(resource:, owner: 1, now:, ttl:)",
              records: "subject.table_granted(resource:, owner: 1, now:, ttl:)",
              call: "subject.acquire(resource:, owner: 1, now:, ttl:)",
              native: LeaseMachines::Table.new, ruby: Reference::Table.new) do |loops|
        leased!("Table#acquire", loops, :granted)
        lease = Bench.local(loops[:native]).lease
        Bench.expect!("Table#acquire's revision", lease.revision, lease.token)
      end
    end

    def print(operation)
      puts
      puts "## #{operation.name}: #{operation.workload}"
      puts format("  %-34s %11s %7s %10s %12s", "", "i/s", "±", "ns/call", "vs floor")
      operation.figures.each do |label, figure|
        error = figure.error ? format("%.1f%%", figure.error) : "-"
        puts format("  %-34s %11s %7s %10.1f %11.2fx", LABELS.fetch(label), Bench.si(figure.ips), error, figure.ns,
                    figure.ns / operation.figures[:floor].ns)
      end
      FLOORS.each do |floor, name|
        next unless (ratio = operation.ratio(floor))

        puts format("  native / %s: %.2fx%s", name, ratio, verdict(operation, floor))
      end
      puts format("  keyword layer alone / floor: %.2fx", operation.keyword_ratio) if operation.keyword_ratio
      puts format("  speed-up over pure Ruby: %.2fx", operation.speedup)
    end

    def verdict(operation, floor)
      return "   (no target)" unless (target = operation.targets[floor])

      "   target at most #{format('%.1fx', target)}: #{operation.met?(floor) ? 'met' : 'MISSED'}"
    end
  end
end

$stdout.sync = true
Bench.header("lease_machines: Ruby decisions vs the floors and pure Ruby")
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
  operation.targets.each do |floor, at_most|
    puts format("  %-26s native / %-13s %.2fx, target at most %.1fx: %s", operation.name, Bench::FLOORS.fetch(floor),
                operation.ratio(floor), at_most, operation.met?(floor) ? "met" : "MISSED")
  end
end

if (path = ENV.fetch("BENCH_RESULTS", nil))
  File.write(path, JSON.pretty_generate({ ruby: RUBY_DESCRIPTION, yjit: Bench.yjit?, machine: Bench.machine,
                                          warmup: Bench::WARMUP, time: Bench::TIME,
                                          operations: operations.map(&:row) }))
  puts "figures written to #{path}"
end
