# frozen_string_literal: true

require "test_helper"
require "timeout"

# LeaseMachines.simulate and Simulation: the deterministic simulation (the lease-machines-sim crate), as Ruby sees it.
class SimulationTest < Minitest::Test
  include LeaseMachines::TestSupport

  def test_the_failover_preset_refuses_every_old_writer
    config = LeaseMachines::SimulationConfig.failover_preset
    assert_equal [0, 50_000, 2, 1, 10.0, :failover, :clamp, 10_000, :enforced], config.deconstruct
    report = LeaseMachines.simulate(config)
    assert_equal 50_000, report.cycles
    assert_equal 50_000, report.takeovers
    assert_equal 50_000, report.stale_writes_rejected, "every cycle's old writer is refused"
    assert_equal 50_001, report.writes_accepted
    assert_equal 50_001, report.final_token
    assert_equal 50_001, report.tokens_issued
    assert_equal 4, report.restores
    assert_equal 0, report.violations
    assert report.audit_valid
    assert report.safe?
  end

  def test_the_default_is_a_safe_contention_run
    config = LeaseMachines::SimulationConfig.new
    assert_equal [0, 10_000, 4, 2, 1.0, :contention, :clamp, 1_000, :enforced], config.deconstruct
    report = LeaseMachines.simulate(cycles: 2_000)
    assert_equal 2_000, report.config.cycles
    assert_equal :contention, report.config.scenario
    assert_operator report.pauses, :>, 0
    assert_operator report.stale_writes_rejected, :>, 0
    assert_operator report.takeovers, :>, 0
    assert_equal 0, report.violations
    assert report.safe?
  end

  def test_without_the_fence_the_oracle_finds_violations
    report = LeaseMachines.simulate(cycles: 2_000, fence: :disabled)
    assert_equal 0, report.stale_writes_rejected
    assert_operator report.violations, :>, 0
    refute report.safe?
  end

  def test_one_seed_one_report_and_the_same_json
    first = LeaseMachines.simulate(cycles: 1_500, seed: 42, workers: 5, resources: 3)
    second = LeaseMachines.simulate(cycles: 1_500, seed: 42, workers: 5, resources: 3)
    assert_equal first, second
    assert_equal first.to_json, second.to_json
    refute_equal first.event_digest, LeaseMachines.simulate(cycles: 1_500, seed: 43, workers: 5, resources: 3).event_digest
  end

  def test_stepping_gives_the_report_of_one_run
    config = LeaseMachines::SimulationConfig.new(cycles: 1_000, seed: 9)
    simulation = LeaseMachines::Simulation.new(config)
    assert_same config, simulation.config
    assert_equal [300, 300, 300, 100, 0], Array.new(5) { simulation.step(300) }
    assert_equal 1_000, simulation.cycles_run
    assert simulation.finished?
    report = simulation.finish
    assert_same report, simulation.finish
    assert_equal 0, simulation.step(10)
    assert_equal LeaseMachines.simulate(config), report
  end

  def test_progress_is_yielded_every_step
    config = LeaseMachines::SimulationConfig.new(cycles: 125_000, workers: 2, resources: 2)
    assert_equal 50_000, LeaseMachines::Simulation.new(config).step_size, "200,000 / (2 workers + 2 resources)"
    seen = []
    LeaseMachines.simulate(config) { |cycles_run, cycles| seen << [cycles_run, cycles] }
    assert_equal [[50_000, 125_000], [100_000, 125_000], [125_000, 125_000]], seen
    assert_equal 195, LeaseMachines::Simulation.new(config.with(workers: 1024, resources: 1)).step_size
  end

  def test_finish_runs_in_interruptible_steps
    simulation = LeaseMachines::Simulation.new(LeaseMachines::SimulationConfig.new(cycles: 10_000_000))
    assert_raises(Timeout::Error) { Timeout.timeout(0.05) { simulation.finish } }
    refute simulation.finished?
    assert_operator simulation.cycles_run, :>, 0
  end

  def test_the_report_reads_and_writes_json_format_1
    report = LeaseMachines.simulate(cycles: 500, seed: 3)
    json = report.to_json
    assert_match(/\A\{"format":1,"config":\{"seed":3,"cycles":500,"workers":4,"resources":2,"ttl_ns":1000000000,/, json)
    assert_equal report, LeaseMachines::SimulationReport.from_json(json)
    assert_raises(LeaseMachines::InvalidDocument) { LeaseMachines::SimulationReport.from_json(json.sub('"format":1', '"format":2')) }
    assert_raises(LeaseMachines::InvalidDocument) { LeaseMachines::SimulationReport.from_json("{") }
  end

  def test_bad_configurations_raise_the_contracts_exceptions
    ill_typed!
    error = assert_raises(ArgumentError) { LeaseMachines.simulate(workers: 1) }
    assert_match(/workers must be between 2 and 1024, not 1/, error.message)
    assert_match(/resources must be between 1 and 1024, not 0/, assert_raises(ArgumentError) { LeaseMachines.simulate(resources: 0) }.message)
    assert_match(/unknown scenario :chaos \(valid: :contention, :failover\)/,
                 assert_raises(ArgumentError) { LeaseMachines.simulate(scenario: :chaos) }.message)
    assert_match(/unknown fence :off \(valid: :enforced, :disabled\)/,
                 assert_raises(ArgumentError) { LeaseMachines.simulate(fence: :off) }.message)
    assert_match(/ttl must be at least/, assert_raises(ArgumentError) { LeaseMachines.simulate(ttl: 1e-9) }.message)
    assert_match(/ttl must be finite/, assert_raises(ArgumentError) { LeaseMachines.simulate(ttl: Float::NAN) }.message)
    assert_match(/cycles are too many for the ttl: \(cycles \+ 8\) \* 2 \* ttl must stay within/, assert_raises(ArgumentError) { LeaseMachines.simulate(cycles: 2**63, ttl: 1.0) }.message)
    assert_match(/cycles must be in 0\.\.2\*\*64-1/, assert_raises(RangeError) { LeaseMachines.simulate(cycles: -1) }.message)
    assert_match(/seed must be an Integer/, assert_raises(TypeError) { LeaseMachines.simulate(seed: "7") }.message)
    assert_raises(TypeError) { LeaseMachines::Simulation.new({ cycles: 3 }) }
    assert_match(/config must be a LeaseMachines::SimulationConfig, got nil/,
                 assert_raises(TypeError) { LeaseMachines.simulate(nil, cycles: 1) }.message)
    assert_raises(ArgumentError) { LeaseMachines::SimulationConfig.new(cylces: 3) }
  end

  # A token is issued per grant and each resource counts its own from 1: over several resources tokens_issued is the
  # grants on all of them, final_token only the highest of any one; with one resource the two agree. The same runs
  # and figures as the simulation crate's test.
  def test_tokens_issued_counts_every_grant_on_every_resource
    failover = LeaseMachines::SimulationConfig.failover_preset.with(cycles: 3_000, resources: 3, workers: 5)
    runs = {
      failover => [[3_003, 0, 0], 3_003, 1_040],
      LeaseMachines::SimulationConfig.new(seed: 42, cycles: 1_500, workers: 5, resources: 3) => [[166, 39, 20], 225, 76],
      LeaseMachines::SimulationConfig.new(seed: 2, cycles: 3_000, resources: 1) => [[137, 31, 35], 203, 203]
    }
    runs.each do |config, (grants, tokens_issued, final_token)|
      report = LeaseMachines.simulate(config)
      assert_equal grants, [report.leases_acquired, report.rotations, report.transfers], config.inspect
      assert_equal [tokens_issued, final_token], [report.tokens_issued, report.final_token], config.inspect
    end
  end

  def test_zero_cycles_is_an_empty_safe_run
    report = LeaseMachines.simulate(cycles: 0)
    assert_equal [0, 0, 0, 0], [report.cycles, report.events, report.final_token, report.writes_accepted]
    assert report.safe?
  end
end
