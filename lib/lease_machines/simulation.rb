# frozen_string_literal: true

module LeaseMachines
  # A simulation in progress, for running one in steps (to show progress, or to stop early). Deterministic: however
  # it is stepped, #finish returns what LeaseMachines.simulate returns for the same configuration.
  class Simulation
    # A simulation of +config+ (a SimulationConfig), no cycle run yet. Raises TypeError, RangeError or
    # ArgumentError (with the configuration's fault) as SimulationConfig says.
    def self.new(config = SimulationConfig.new)
      _new(config).tap { |simulation| simulation.instance_variable_set(:@config, config) }
    end

    # The SimulationConfig being run.
    attr_reader :config

    # Runs up to +cycles+ (an Integer in 0..2**64-1) more cycles; returns how many ran, 0 once finished.
    def step(cycles) = _step(cycles)

    # Cycles run so far.
    def cycles_run = _cycles_run

    # Whether every configured cycle has run (natively: by the configuration as the extension read it).
    def finished? = _finished

    # How many cycles #step runs at a time when a caller does not say: about STEP_WORK worker turns and resource
    # checks, a few milliseconds, so that a run stays interruptible (Ctrl-C, Timeout) between steps.
    def step_size = [STEP_WORK / (config.workers + config.resources), 1].max

    # Runs the cycles left (step by step) and returns the SimulationReport, the same one on every later call.
    def finish
      step(step_size) until finished?
      @report ||= _finish
    end

    def inspect = "#<LeaseMachines::Simulation cycles_run=#{cycles_run}/#{config.cycles}>"

    # Worker turns (plus resource checks) per default step; see #step_size.
    STEP_WORK = 200_000
  end

  # Runs a simulation and returns its SimulationReport. +config+ is a SimulationConfig; +members+, if any, replace
  # its members (+LeaseMachines.simulate(cycles: 1_000, seed: 7)+). With a block, yields +(cycles_run, cycles)+
  # after every step of Simulation#step_size cycles, for a progress display. Raises as SimulationConfig says.
  def self.simulate(config = SimulationConfig.new, **members)
    # Module#=== rather than config.is_a?, which a BasicObject lacks; shown (native) bounds the value shown.
    raise TypeError, "config must be a LeaseMachines::SimulationConfig, got #{LeaseMachines.shown(config)}" unless SimulationConfig === config

    simulation = Simulation.new(members.empty? ? config : config.with(**members))
    until simulation.finished?
      simulation.step(simulation.step_size)
      yield simulation.cycles_run, simulation.config.cycles if block_given?
    end
    simulation.finish
  end
end
