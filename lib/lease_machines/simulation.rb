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
  # The values are checked when a Simulation is made from the configuration: a wrong type raises TypeError, a
  # number outside 0..2**64-1 RangeError, anything else (an unknown Symbol, a value outside its range) ArgumentError.
  SimulationConfig = Data.define(:seed, :cycles, :workers, :resources, :ttl, :scenario, :clock_policy,
                                 :restore_every, :fence) do
    # moonleasekit's failover benchmark: seed 0, 50,000 failover cycles on one resource between two workers, a 10.0 s TTL,
    # +:clamp+, restored every 10,000 cycles, the fence enforced.
    def self.failover_preset = new(*Simulation.send(:_failover_preset))

    def initialize(**members)
      super(**Simulation.send(:_default_config).then { |defaults| self.class.members.zip(defaults).to_h }, **members)
    end
  end

  # What a simulation did and found; every count is a total over the whole run (non-negative Integers).
  #
  # +config+ is the SimulationConfig run. +leases_acquired+ counts grants by +acquire+ (+rotations+ and
  # +transfers+ apart); +takeovers+, grants to an owner other than the resource's previous one; +leases_lost+,
  # holders that learned their lease was gone. +writes_accepted+ and +stale_writes_rejected+ are the storage's
  # verdicts; +late_writes_accepted+, accepted writes whose lease had already ended (safe while fenced: nothing
  # newer was written). +final_token+ is the highest fencing token issued on any one resource (#tokens_issued
  # counts them all). +events+ is the number of table events, all audited: +audit_valid+ is true when the auditor
  # found nothing and no event was lost, +audit_findings+ counts what it found. +violations+ counts accepted writes
  # the independent oracle refused (a token below one already accepted, or one token from two owners): 0 whenever
  # the fence is enforced. +event_digest+ is a 64-bit FNV-1a hash of the whole event log, identical for identical
  # runs.
  SimulationReport = Data.define(:config, :cycles, :leases_acquired, :rotations, :transfers, :renewals, :releases,
                                 :reaps, :takeovers, :leases_lost, :pauses, :clock_steps_back, :clock_rejections,
                                 :restores, :writes_accepted, :stale_writes_rejected, :late_writes_accepted,
                                 :final_token, :events, :audit_valid, :audit_findings, :violations, :event_digest) do
    # The report read from its JSON document (format 1). Raises InvalidDocument.
    def self.from_json(json) = build(Simulation.send(:_report_from_json, json))

    # @api private
    def self.build(fields) = new(SimulationConfig.new(*fields.first), *fields.drop(1))

    # True when no write broke the fencing rule and the audit found nothing.
    def safe? = violations.zero? && audit_valid

    # Fencing tokens issued over every resource: one per grant (acquisitions, rotations and transfers), as the
    # simulation crate's SimulationReport::tokens_issued counts them. Each resource numbers its own tokens from 1, so
    # with more than one resource this is more than +final_token+, the highest token of any one.
    def tokens_issued = leases_acquired + rotations + transfers

    # The report as a JSON document (format 1): the same bytes for the same configuration, on any machine.
    def to_json(*) = Simulation.send(:_report_to_json, [config.deconstruct, *deconstruct.drop(1)])
  end

  # A simulation in progress, for running one in steps (to show progress, or to stop early). Deterministic: however
  # it is stepped, #finish returns what LeaseMachines.simulate returns for the same configuration.
  class Simulation
    # A simulation of +config+ (a SimulationConfig), no cycle run yet. Raises TypeError, RangeError or
    # ArgumentError (with the configuration's fault) as SimulationConfig says.
    def self.new(config = SimulationConfig.new)
      raise TypeError, "config must be a LeaseMachines::SimulationConfig, got #{config.inspect}" unless config.is_a?(SimulationConfig)

      _new(config.deconstruct).tap { |simulation| simulation.instance_variable_set(:@config, config) }
    end

    # The SimulationConfig being run.
    attr_reader :config

    # Runs up to +cycles+ (an Integer in 0..2**64-1) more cycles; returns how many ran, 0 once finished.
    def step(cycles) = _step(cycles)

    # Cycles run so far.
    def cycles_run = _cycles_run

    # Whether every configured cycle has run.
    def finished? = cycles_run >= config.cycles

    # How many cycles #step runs at a time when a caller does not say: about STEP_WORK worker turns and resource
    # checks, a few milliseconds, so that a run stays interruptible (Ctrl-C, Timeout) between steps.
    def step_size = [STEP_WORK / (config.workers + config.resources), 1].max

    # Runs the cycles left (step by step) and returns the SimulationReport, the same one on every later call.
    def finish
      step(step_size) until finished?
      @report ||= SimulationReport.build(_finish)
    end

    def inspect = "#<LeaseMachines::Simulation cycles_run=#{cycles_run}/#{config.cycles}>"

    # Worker turns (plus resource checks) per default step; see #step_size.
    STEP_WORK = 200_000

    singleton_class.send(:private, :_new, :_default_config, :_failover_preset, :_report_to_json, :_report_from_json)
    private :_step, :_cycles_run, :_finish
  end

  # Runs a simulation and returns its SimulationReport. +config+ is a SimulationConfig; +members+, if any, replace
  # its members (+LeaseMachines.simulate(cycles: 1_000, seed: 7)+). With a block, yields +(cycles_run, cycles)+
  # after every step of Simulation#step_size cycles, for a progress display. Raises as SimulationConfig says.
  def self.simulate(config = SimulationConfig.new, **members)
    raise TypeError, "config must be a LeaseMachines::SimulationConfig, got #{config.inspect}" unless config.is_a?(SimulationConfig)

    simulation = Simulation.new(members.empty? ? config : config.with(**members))
    until simulation.finished?
      simulation.step(simulation.step_size)
      yield simulation.cycles_run, simulation.config.cycles if block_given?
    end
    simulation.finish
  end
end
