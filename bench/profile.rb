# frozen_string_literal: true

# Where a granted Authority#acquire and Table#acquire spend their time: each layer of the call timed alone (with
# benchmark-ips, in the loop shape of bench/decisions.rb: Bench.timed's, bench/support.rb) and its Ruby objects counted
# per call (GC.stat(:total_allocated_objects) over 100,000 calls, and the bytes Ruby's malloc took); then what the
# answer, a Data Decision, costs against other kinds of value object (bench-only classes, to size what a change to the
# gem could save).
#
#   ruby -Ilib bench/profile.rb           # YJIT off
#   ruby --yjit -Ilib bench/profile.rb    # YJIT on
#   bin/rake bench:profile                # both
#
# The gem's Ruby methods are keyword methods over `_acquire(...)` (lib/lease_machines/authority.rb,
# lib/lease_machines/table.rb), which returns the frozen Decision and its Lease, both Data built in the extension
# (ffi/src/data.rs). To time the native method without its Ruby wrapper, this script makes the private `_acquire`
# methods public in its own process; nothing else is changed. The `Data.new` rows show what building the same answer
# in Ruby would cost instead.

require_relative "support"

LeaseMachines::Authority.send(:public, :_acquire)
LeaseMachines::Table.send(:public, :_acquire)

module Bench
  # A Decision as a frozen Struct.
  StructDecision = Struct.new(:status, :lease, :reason)

  # A Decision as a plain frozen object.
  class PlainDecision
    attr_reader :status, :lease, :reason

    def initialize(status, lease, reason)
      @status = status
      @lease = lease
      @reason = reason
      freeze
    end
  end

  # The layers, key => [label, loop]: each a loop (Bench.timed) that runs +times+ calls and keeps its last answer.
  module Profile
    TTL = 5.0
    CALLS = 100_000

    module_function

    # One layer's loop: +call+ (on `subject`), each time after `now += ttl` unless +still+ (+now+ the first value).
    def layer(call, subject = nil, still: false, now: 0.0, **locals)
      Bench.timed(call, step: ("now += ttl" unless still), subject:, now:, ttl: TTL, **locals)
    end

    def authority_layers
      # Owner 1 holds this one for ever, so owner 2 is refused (:occupied): the native path without a Lease.
      occupied = LeaseMachines::Authority.new.tap { |held| held.acquire(owner: 1, now: 0.0, ttl: 1e12) }
      tuple = [:granted, LeaseMachines::Lease.new(owner: 1, token: 1, expires_at: 5.0), nil]
      floor = LeaseMachines::BenchmarkFloor.new
      {
        loop: ["loop alone", layer(nil)],
        floor: ["floor: floor._acquire(1, now, ttl)", layer("subject._acquire(1, now, ttl)", floor)],
        keyword: ["keyword method over the floor", layer("subject.acquire(owner: 1, now:, ttl:)", floor)],
        occupied: ["native _acquire, :occupied (Decision)", layer("subject._acquire(2, now, ttl)", occupied)],
        native: ["native _acquire, :granted (Decision, Lease)",
                 layer("subject._acquire(1, now, ttl)", LeaseMachines::Authority.new)],
        lease: ["Lease.new(owner: 1, token: 1, expires_at: 5.0), checked",
                layer("LeaseMachines::Lease.new(owner: 1, token: 1, expires_at: 5.0)", still: true)],
        decision: ["Decision.new(*tuple) (Data.new in Ruby, for comparison)",
                   layer("LeaseMachines::Decision.new(*subject)", tuple, still: true)],
        gem: ["Authority#acquire (the gem)",
              layer("subject.acquire(owner: 1, now:, ttl:)", LeaseMachines::Authority.new)]
      }
    end

    def check_authority!(last)
      Bench.expect!("floor", [last[:floor], last[:keyword]], [nil, nil])
      Bench.expect!("_acquire, occupied", last[:occupied].deconstruct, [:rejected, nil, :occupied])
      Bench.expect!("_acquire, granted", last[:native].status, :granted)
      Bench.expect!("Decision.new", last[:decision].status, :granted)
      Bench.expect!("Authority#acquire", last[:gem].status, :granted)
    end

    def table_layers
      resource = "reports/2026-11"
      floor = LeaseMachines::BenchmarkFloor.new
      table = LeaseMachines::Table.new
      lease = table._acquire(resource, 1, 1.0, TTL, nil).lease
      {
        floor: ["floor: floor._table_acquire(resource, 1, now, ttl, nil)",
                layer("subject._table_acquire(resource, 1, now, ttl, nil)", floor, now: 1.0, resource:)],
        keyword: ["keyword method over the floor",
                  layer("subject.table_acquire(resource:, owner: 1, now:, ttl:)", floor, now: 1.0, resource:)],
        native: ["native _acquire, :granted (Decision, TableLease, String)",
                 layer("subject._acquire(resource, 1, now, ttl, nil)", table, now: 1.0, resource:)],
        lease: ["TableLease.new(*row) (Data.new in Ruby, for comparison)",
                layer("LeaseMachines::TableLease.new(*subject)", lease.deconstruct, still: true)],
        decision: ["Decision.new(status, lease, reason) (Data.new in Ruby, for comparison)",
                   layer("LeaseMachines::Decision.new(:granted, subject, nil)", lease, still: true)],
        gem: ["Table#acquire (the gem)", layer("subject.acquire(resource:, owner: 1, now:, ttl:)",
                                               LeaseMachines::Table.new, now: 1.0, resource:)]
      }
    end

    # What building the answer in Ruby costs with other kinds of value object than the gem's Data Decision
    # (bench-only classes; the gem is unchanged), against the ~40 ns the extension's native build of it adds.
    def decision_layers
      lease = LeaseMachines::Lease.new(owner: 1, token: 1, expires_at: 5.0)
      tuple = [:granted, lease, nil]
      {
        data: ["Data: Decision.new(*tuple)", layer("LeaseMachines::Decision.new(*subject)", tuple, still: true)],
        keywords: ["Data: Decision.new(status:, lease:, reason:)",
                   layer("LeaseMachines::Decision.new(status: :granted, lease:, reason: nil)", still: true, lease:)],
        struct: ["Struct, positional, frozen", layer("StructDecision.new(*subject).freeze", tuple, still: true)],
        plain: ["plain class, positional initialize, frozen", layer("PlainDecision.new(*subject)", tuple, still: true)],
        cached: ["one frozen Decision per reason, reused",
                 layer("subject", LeaseMachines::Decision.new(:rejected, nil, :occupied), still: true)]
      }
    end

    def check_table!(last)
      Bench.expect!("floor", [last[:floor], last[:keyword]], [nil, nil])
      Bench.expect!("Table#_acquire", last[:native].status, :granted)
      Bench.expect!("Table#acquire", last[:gem].status, :granted)
    end

    # Ruby objects allocated and bytes Ruby malloc'ed (its xmalloc: object bodies too large for their slot, Hashes,
    # ...) per call by +layer+, over CALLS calls with the garbage collector held off (a collection resets the count).
    def allocations(layer)
      GC.disable
      objects = GC.stat(:total_allocated_objects)
      bytes = GC.stat(:malloc_increase_bytes)
      layer.call(CALLS)
      [(GC.stat(:total_allocated_objects) - objects).fdiv(CALLS), (GC.stat(:malloc_increase_bytes) - bytes).fdiv(CALLS)]
    ensure
      GC.enable
    end

    # Counts and times the +layers+, prints their figures, and returns each one's last answer (key => answer).
    def run(title, layers)
      loops = layers.values.to_h
      counts = loops.transform_values { |layer| allocations(layer) }
      figures = Bench.ips { |job| loops.each { |label, layer| job.report(label, &layer) } }
      puts
      puts "## #{title}"
      puts format("  %-56s %10s %8s %14s %16s", "", "ns/call", "±", "objects/call", "malloc B/call")
      figures.each do |label, figure|
        objects, bytes = counts.fetch(label)
        puts format("  %-56s %10.1f %7.1f%% %14.2f %16.1f", label, figure.ns, figure.error, objects, bytes)
      end
      layers.transform_values { |(_, layer)| Bench.local(layer) }
    end
  end
end

$stdout.sync = true
Bench.header("lease_machines: where acquire's time goes")
Bench::Profile.check_authority!(Bench::Profile.run("Authority#acquire, granted", Bench::Profile.authority_layers))
Bench::Profile.check_table!(Bench::Profile.run("Table#acquire, granted", Bench::Profile.table_layers))
last = Bench::Profile.run("The answer alone: the gem's Data Decision against other kinds of value",
                          Bench::Profile.decision_layers)
Bench.expect!("Decision kinds", last.values_at(:data, :keywords, :struct, :plain).map(&:status), [:granted] * 4)
puts
puts "GC: #{GC.count} runs so far, #{GC.stat(:total_allocated_objects)} objects allocated in the whole run"
