# frozen_string_literal: true

module LeaseMachines
  # What LeaseMachines.simulate runs. Every member has a default (lease-machines-sim's SimulationConfig::default: a
  # mixed contention run), so +SimulationConfig.new(cycles: 1_000)+ changes only what it names.
  #
  # - +seed+: the seed of the ChaCha8 generator every random choice comes from, an Integer in 0..2**64-1.
  # - +cycles+: how many cycles to run, 0..2**64-1 (see +simulate+ in lease-machines-sim for what one cycle is).
  # - +workers+: how many workers contend, 2..1024 (owner ids 1..workers).
  # - +resources+: how many resources they contend for, 1..1024 (named "0", "1", ... in the event log).
  # - +ttl+: the TTL every worker asks for, Float seconds, at least 1e-6; the simulated time, at most
  #   +(cycles + 8) * 2 * ttl+, must fit 2**64 - 1 nanoseconds (about 584 years).
  # - +scenario+: +:contention+ (workers acquire, renew, pause past their TTL, step their clocks back, rotate,
  #   transfer, release and reap at random) or +:failover+ (moonleasekit's benchmark: every cycle one holder's lease
  #   expires, another worker takes over and writes, and the old holder's delayed write is refused).
  # - +clock_policy+: the table's, +:clamp+ or +:reject+.
  # - +restore_every+: checkpoint the table and restore it after every this many cycles (0: never).
  # - +fence+: +:enforced+, or +:disabled+ to simulate storage that accepts every write unchecked (the oracle then
  #   reports the stale writes a fence would have refused as violations).
  #
  # The values are checked when a Simulation is made from the configuration (natively, ffi/src/simulation.rs): a
  # wrong type raises TypeError, a number outside 0..2**64-1 RangeError, anything else (an unknown Symbol, a value
  # outside its range) ArgumentError.
  SimulationConfig = Data.define(:seed, :cycles, :workers, :resources, :ttl, :scenario, :clock_policy,
                                 :restore_every, :fence) do
    # moonleasekit's failover benchmark: seed 0, 50,000 failover cycles on one resource between two workers, a 10.0 s TTL,
    # +:clamp+, restored every 10,000 cycles, the fence enforced.
    def self.failover_preset = _failover_preset

    # Fills in the members not given from the extension's default configuration; checks nothing (see above).
    # Configurations the extension builds skip it.
    def initialize(**members) = super(**_default_config.to_h, **members)
  end
end
