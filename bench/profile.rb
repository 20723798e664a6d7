# frozen_string_literal: true

# Where a granted Authority#acquire and Table#acquire spend their time: each layer of the call timed alone (with
# benchmark-ips, in the loop shape of bench/decisions.rb) and its Ruby objects counted per call
# (GC.stat(:total_allocated_objects) over 100,000 calls, and the bytes Ruby's malloc took); then what the answer, a Data Decision, costs against other
# kinds of value object (bench-only classes, to size what a change to the gem could save).
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
  # Keyword methods of the gem's shape over the floor's empty native methods (as in bench/decisions.rb).
  module KeywordFloor
    def acquire(owner:, now:, ttl:) = _acquire(owner, now, ttl)

    def table_acquire(resource:, owner:, now:, ttl:, expected_revision: nil)
      _table_acquire(resource, owner, now, ttl, expected_revision)
    end
  end

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

  # The layers, each a lambda that runs +times+ calls and keeps its last answer in +last+ (label => answer).
  module Profile
    TTL = 5.0
    CALLS = 100_000

    module_function

    def authority_layers(last)
      ttl = TTL
      floor = LeaseMachines::BenchmarkFloor.new
      authority = LeaseMachines::Authority.new
      gem = LeaseMachines::Authority.new
      # Owner 1 holds this one for ever, so owner 2 is refused (:occupied): the native path without a Lease.
      occupied = LeaseMachines::Authority.new.tap { |held| held.acquire(owner: 1, now: 0.0, ttl: 1e12) }
      tuple = [:granted, LeaseMachines::Lease.new(owner: 1, token: 1, expires_at: 5.0), nil]
      now = Hash.new(0.0)
      {
        "loop alone" => lambda do |times|
          t = now[:loop]
          i = 0
          while i < times
            t += ttl
            i += 1
          end
          now[:loop] = t
        end,
        "floor: floor._acquire(1, now, ttl)" => lambda do |times|
          t = now[:floor]
          answer = nil
          i = 0
          while i < times
            t += ttl
            answer = floor._acquire(1, t, ttl)
            i += 1
          end
          last[:floor] = answer
          now[:floor] = t
        end,
        "keyword method over the floor" => lambda do |times|
          t = now[:keyword]
          answer = nil
          i = 0
          while i < times
            t += ttl
            answer = floor.acquire(owner: 1, now: t, ttl:)
            i += 1
          end
          last[:keyword] = answer
          now[:keyword] = t
        end,
        "native _acquire, :occupied (Decision)" => lambda do |times|
          t = now[:occupied]
          answer = nil
          i = 0
          while i < times
            t += ttl
            answer = occupied._acquire(2, t, ttl)
            i += 1
          end
          last[:occupied] = answer
          now[:occupied] = t
        end,
        "native _acquire, :granted (Decision, Lease)" => lambda do |times|
          t = now[:native]
          answer = nil
          i = 0
          while i < times
            t += ttl
            answer = authority._acquire(1, t, ttl)
            i += 1
          end
          last[:native] = answer
          now[:native] = t
        end,
        "Lease.new(owner: 1, token: 1, expires_at: 5.0), checked" => lambda do |times|
          answer = nil
          i = 0
          while i < times
            answer = LeaseMachines::Lease.new(owner: 1, token: 1, expires_at: 5.0)
            i += 1
          end
          last[:lease] = answer
        end,
        "Decision.new(*tuple) (Data.new in Ruby, for comparison)" => lambda do |times|
          answer = nil
          i = 0
          while i < times
            answer = LeaseMachines::Decision.new(*tuple)
            i += 1
          end
          last[:decision] = answer
        end,
        "Authority#acquire (the gem)" => lambda do |times|
          t = now[:gem]
          answer = nil
          i = 0
          while i < times
            t += ttl
            answer = gem.acquire(owner: 1, now: t, ttl:)
            i += 1
          end
          last[:gem] = answer
          now[:gem] = t
        end
      }
    end

    def check_authority!(last)
      Bench.expect!("floor", [last[:floor], last[:keyword]], [nil, nil])
      Bench.expect!("_acquire, occupied", last[:occupied].deconstruct, [:rejected, nil, :occupied])
      Bench.expect!("_acquire, granted", last[:native].status, :granted)
      Bench.expect!("Decision.new", last[:decision].status, :granted)
      Bench.expect!("Authority#acquire", last[:gem].status, :granted)
    end

    def table_layers(last)
      ttl = TTL
      resource = "reports/2026-11"
      floor = LeaseMachines::BenchmarkFloor.new
      table = LeaseMachines::Table.new
      gem = LeaseMachines::Table.new
      lease = table._acquire(resource, 1, 1.0, ttl, nil).lease
      row = lease.deconstruct
      now = Hash.new(1.0)
      {
        "floor: floor._table_acquire(resource, 1, now, ttl, nil)" => lambda do |times|
          t = now[:floor]
          answer = nil
          i = 0
          while i < times
            t += ttl
            answer = floor._table_acquire(resource, 1, t, ttl, nil)
            i += 1
          end
          last[:floor] = answer
          now[:floor] = t
        end,
        "keyword method over the floor" => lambda do |times|
          t = now[:keyword]
          answer = nil
          i = 0
          while i < times
            t += ttl
            answer = floor.table_acquire(resource:, owner: 1, now: t, ttl:)
            i += 1
          end
          last[:keyword] = answer
          now[:keyword] = t
        end,
        "native _acquire, :granted (Decision, TableLease, String)" => lambda do |times|
          t = now[:native]
          answer = nil
          i = 0
          while i < times
            t += ttl
            answer = table._acquire(resource, 1, t, ttl, nil)
            i += 1
          end
          last[:native] = answer
          now[:native] = t
        end,
        "TableLease.new(*row) (Data.new in Ruby, for comparison)" => lambda do |times|
          answer = nil
          i = 0
          while i < times
            answer = LeaseMachines::TableLease.new(*row)
            i += 1
          end
          last[:lease] = answer
        end,
        "Decision.new(status, lease, reason) (Data.new in Ruby, for comparison)" => lambda do |times|
          answer = nil
          i = 0
          while i < times
            answer = LeaseMachines::Decision.new(:granted, lease, nil)
            i += 1
          end
          last[:decision] = answer
        end,
        "Table#acquire (the gem)" => lambda do |times|
          t = now[:gem]
          answer = nil
          i = 0
          while i < times
            t += ttl
            answer = gem.acquire(resource:, owner: 1, now: t, ttl:)
            i += 1
          end
          last[:gem] = answer
          now[:gem] = t
        end
      }
    end

    # What building the answer in Ruby costs with other kinds of value object than the gem's Data Decision
    # (bench-only classes; the gem is unchanged), against the ~40 ns the extension's native build of it adds.
    def decision_layers(last)
      lease = LeaseMachines::Lease.new(owner: 1, token: 1, expires_at: 5.0)
      tuple = [:granted, lease, nil]
      rejection = LeaseMachines::Decision.new(:rejected, nil, :occupied)
      {
        "Data: Decision.new(*tuple)" => lambda do |times|
          answer = nil
          i = 0
          while i < times
            answer = LeaseMachines::Decision.new(*tuple)
            i += 1
          end
          last[:data] = answer
        end,
        "Data: Decision.new(status:, lease:, reason:)" => lambda do |times|
          answer = nil
          i = 0
          while i < times
            answer = LeaseMachines::Decision.new(status: :granted, lease:, reason: nil)
            i += 1
          end
          last[:keywords] = answer
        end,
        "Struct, positional, frozen" => lambda do |times|
          answer = nil
          i = 0
          while i < times
            answer = StructDecision.new(*tuple).freeze
            i += 1
          end
          last[:struct] = answer
        end,
        "plain class, positional initialize, frozen" => lambda do |times|
          answer = nil
          i = 0
          while i < times
            answer = PlainDecision.new(*tuple)
            i += 1
          end
          last[:plain] = answer
        end,
        "one frozen Decision per reason, reused" => lambda do |times|
          answer = nil
          i = 0
          while i < times
            answer = rejection
            i += 1
          end
          last[:cached] = answer
        end
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

    def run(title, layers)
      counts = layers.transform_values { |layer| allocations(layer) }
      figures = Bench.ips { |job| layers.each { |label, layer| job.report(label, &layer) } }
      puts
      puts "## #{title}"
      puts format("  %-56s %10s %8s %14s %16s", "", "ns/call", "±", "objects/call", "malloc B/call")
      figures.each do |label, figure|
        objects, bytes = counts.fetch(label)
        puts format("  %-56s %10.1f %7.1f%% %14.2f %16.1f", label, figure.ns, figure.error, objects, bytes)
      end
      figures
    end
  end
end

LeaseMachines::BenchmarkFloor.include(Bench::KeywordFloor)

$stdout.sync = true
Bench.header("lease_machines: where acquire's time goes")
last = {}
Bench::Profile.run("Authority#acquire, granted", Bench::Profile.authority_layers(last))
Bench::Profile.check_authority!(last)
last = {}
Bench::Profile.run("Table#acquire, granted", Bench::Profile.table_layers(last))
Bench::Profile.check_table!(last)
last = {}
Bench::Profile.run("The answer alone: the gem's Data Decision against other kinds of value",
                   Bench::Profile.decision_layers(last))
Bench.expect!("Decision kinds", last.values_at(:data, :keywords, :struct, :plain).map(&:status), [:granted] * 4)
puts
puts "GC: #{GC.count} runs so far, #{GC.stat(:total_allocated_objects)} objects allocated in the whole run"
