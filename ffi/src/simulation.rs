//! `LeaseMachines::Simulation`: the `lease-machines-sim` crate's deterministic failover simulation, run a step at a
//! time so that the Ruby layer can show progress and stay interruptible; and its records,
//! `LeaseMachines::SimulationConfig` and `SimulationReport` (`lib/lease_machines/simulation_{config,report}.rb`),
//! built and read back by member name (see `data`), with the report's JSON document.
//!
//! A configuration is checked when it is read: each member for its type here, the whole for whether it makes a
//! runnable simulation by [`SimulationConfig::validate`]. `SimulationConfig.new` checks nothing (its `#initialize`
//! only fills in the defaults, [`default_config`]), so a configuration raises when a `Simulation` is made of it.

use std::cell::RefCell;

use lease_machines::json::Json;
use lease_machines_sim::{Simulation, SimulationConfig, SimulationReport};
use magnus::{prelude::*, typed_data::Obj, Error, IntoValue, RModule, Ruby, Value};

use crate::convert::{bool_arg, seconds, seconds_arg, u64_arg};
use crate::data::record_arg;
use crate::data::{SimulationConfigMembers, SimulationReportMembers, SIMULATION_CONFIG, SIMULATION_REPORT};
use crate::helpers::{borrowed, Borrowed};
use crate::json::read;
use crate::symbols::SymbolEnum;

fn config_members(ruby: &Ruby, config: &SimulationConfig) -> SimulationConfigMembers {
    SimulationConfigMembers {
        seed: config.seed.into_value_with(ruby),
        cycles: config.cycles.into_value_with(ruby),
        workers: config.workers.into_value_with(ruby),
        resources: config.resources.into_value_with(ruby),
        ttl: seconds(config.ttl).into_value_with(ruby),
        scenario: config.scenario.symbol(ruby).as_value(),
        clock_policy: config.clock_policy.symbol(ruby).as_value(),
        restore_every: config.restore_every.into_value_with(ruby),
        fence: config.fence.symbol(ruby).as_value(),
    }
}

/// A frozen `LeaseMachines::SimulationConfig`.
fn config(ruby: &Ruby, config: &SimulationConfig) -> Result<Value, Error> {
    SIMULATION_CONFIG.build(ruby, config_members(ruby, config))
}

/// The configuration a `SimulationConfig`'s members describe: a `TypeError` or `RangeError` for a member of the
/// wrong type or range, an `ArgumentError` with [`SimulationConfig::validate`]'s message when the values make no
/// runnable simulation.
fn config_of(ruby: &Ruby, members: SimulationConfigMembers) -> Result<SimulationConfig, Error> {
    let config = SimulationConfig {
        seed: u64_arg(ruby, "seed", members.seed)?,
        cycles: u64_arg(ruby, "cycles", members.cycles)?,
        workers: u64_arg(ruby, "workers", members.workers)?,
        resources: u64_arg(ruby, "resources", members.resources)?,
        ttl: seconds_arg(ruby, "ttl", members.ttl)?,
        scenario: SymbolEnum::arg(ruby, members.scenario)?,
        clock_policy: SymbolEnum::arg(ruby, members.clock_policy)?,
        restore_every: u64_arg(ruby, "restore_every", members.restore_every)?,
        fence: SymbolEnum::arg(ruby, members.fence)?,
    };
    config.validate().map_err(|error| Error::new(ruby.exception_arg_error(), error.to_string()))?;
    Ok(config)
}

/// A `SimulationConfig` argument (`Simulation.new`, a report's `config`).
fn config_arg(ruby: &Ruby, value: Value) -> Result<SimulationConfig, Error> {
    config_of(ruby, record_arg(ruby, "config", &SIMULATION_CONFIG, value)?)
}

/// A frozen `LeaseMachines::SimulationReport`, built with its frozen `SimulationConfig`.
fn report(ruby: &Ruby, report: &SimulationReport) -> Result<Value, Error> {
    let count = |count: u64| count.into_value_with(ruby);
    let members = SimulationReportMembers {
        config: ruby.qnil().as_value(),
        cycles: count(report.cycles),
        leases_acquired: count(report.leases_acquired),
        rotations: count(report.rotations),
        transfers: count(report.transfers),
        renewals: count(report.renewals),
        releases: count(report.releases),
        reaps: count(report.reaps),
        takeovers: count(report.takeovers),
        leases_lost: count(report.leases_lost),
        pauses: count(report.pauses),
        clock_steps_back: count(report.clock_steps_back),
        clock_rejections: count(report.clock_rejections),
        restores: count(report.restores),
        writes_accepted: count(report.writes_accepted),
        stale_writes_rejected: count(report.stale_writes_rejected),
        late_writes_accepted: count(report.late_writes_accepted),
        final_token: count(report.final_token),
        events: count(report.events),
        audit_valid: report.audit_valid.into_value_with(ruby),
        audit_findings: count(report.audit_findings),
        violations: count(report.violations),
        event_digest: count(report.event_digest),
    };
    SIMULATION_REPORT.build_around(ruby, &SIMULATION_CONFIG, config_members(ruby, &report.config), |config| {
        SimulationReportMembers { config, ..members }
    })
}

/// The report a `SimulationReport`'s members describe.
fn report_of(ruby: &Ruby, members: SimulationReportMembers) -> Result<SimulationReport, Error> {
    let count = |name: &str, value: Value| u64_arg(ruby, name, value);
    Ok(SimulationReport {
        config: config_arg(ruby, members.config)?,
        cycles: count("cycles", members.cycles)?,
        leases_acquired: count("leases_acquired", members.leases_acquired)?,
        rotations: count("rotations", members.rotations)?,
        transfers: count("transfers", members.transfers)?,
        renewals: count("renewals", members.renewals)?,
        releases: count("releases", members.releases)?,
        reaps: count("reaps", members.reaps)?,
        takeovers: count("takeovers", members.takeovers)?,
        leases_lost: count("leases_lost", members.leases_lost)?,
        pauses: count("pauses", members.pauses)?,
        clock_steps_back: count("clock_steps_back", members.clock_steps_back)?,
        clock_rejections: count("clock_rejections", members.clock_rejections)?,
        restores: count("restores", members.restores)?,
        writes_accepted: count("writes_accepted", members.writes_accepted)?,
        stale_writes_rejected: count("stale_writes_rejected", members.stale_writes_rejected)?,
        late_writes_accepted: count("late_writes_accepted", members.late_writes_accepted)?,
        final_token: count("final_token", members.final_token)?,
        events: count("events", members.events)?,
        audit_valid: bool_arg(ruby, "audit_valid", members.audit_valid)?,
        audit_findings: count("audit_findings", members.audit_findings)?,
        violations: count("violations", members.violations)?,
        event_digest: count("event_digest", members.event_digest)?,
    })
}

/// A simulation in progress, then its report. `Finishing` exists only inside `finish`, which holds the borrow and
/// calls no Ruby meanwhile, so no method ever sees it.
enum State {
    Running(Box<Simulation>),
    Finishing,
    Finished(Box<SimulationReport>),
}

#[magnus::wrap(class = "LeaseMachines::Simulation", free_immediately, size)]
struct RbSimulation(RefCell<State>);

borrowed!(RbSimulation, State, "LeaseMachines::Simulation");

impl RbSimulation {
    fn new(ruby: &Ruby, config: Value) -> Result<Self, Error> {
        let config = config_arg(ruby, config)?;
        let simulation =
            Simulation::new(config).map_err(|error| Error::new(ruby.exception_arg_error(), error.to_string()))?;
        Ok(Self(RefCell::new(State::Running(Box::new(simulation)))))
    }

    /// Runs up to `cycles` more cycles; returns how many ran (0 once finished).
    fn step(ruby: &Ruby, rb_self: Obj<Self>, cycles: Value) -> Result<u64, Error> {
        let cycles = u64_arg(ruby, "cycles", cycles)?;
        rb_self.check_frozen()?;
        let mut state = rb_self.borrowed_mut(ruby)?;
        Ok(match &mut *state {
            State::Running(simulation) => simulation.step(cycles),
            State::Finishing | State::Finished(_) => 0,
        })
    }

    /// Cycles run so far.
    fn cycles_run(ruby: &Ruby, rb_self: &Self) -> Result<u64, Error> {
        let state = rb_self.borrowed(ruby)?;
        match &*state {
            State::Running(simulation) => Ok(simulation.cycles_run()),
            State::Finished(report) => Ok(report.cycles),
            State::Finishing => Err(Self::busy(ruby)),
        }
    }

    /// Whether every configured cycle has run, by the configuration the extension read (not by the `cycles` of the
    /// `SimulationConfig` given, whose subclass may say otherwise).
    fn finished(ruby: &Ruby, rb_self: &Self) -> Result<bool, Error> {
        match &*rb_self.borrowed(ruby)? {
            State::Running(simulation) => Ok(simulation.is_finished()),
            State::Finished(_) => Ok(true),
            State::Finishing => Err(Self::busy(ruby)),
        }
    }

    /// Runs what is left (the Ruby layer steps first, so this is only the final audit) and returns a new frozen
    /// `SimulationReport`, equal on every call (the Ruby layer keeps the first).
    fn finish(ruby: &Ruby, rb_self: Obj<Self>) -> Result<Value, Error> {
        let mut state = rb_self.borrowed_mut(ruby)?;
        if let State::Running(_) = &*state {
            rb_self.check_frozen()?;
            if let State::Running(simulation) = std::mem::replace(&mut *state, State::Finishing) {
                *state = State::Finished(Box::new((*simulation).finish()));
            }
        }
        match &*state {
            State::Finished(done) => report(ruby, done),
            State::Running(_) | State::Finishing => Err(Self::busy(ruby)),
        }
    }
}

/// `SimulationConfig#_default_config`, what `#initialize` fills in: the simulation crate's default configuration.
fn default_config(ruby: &Ruby, _rb_self: Value) -> Result<Value, Error> {
    config(ruby, &SimulationConfig::default())
}

fn failover_preset(ruby: &Ruby) -> Result<Value, Error> {
    config(ruby, &SimulationConfig::failover_preset())
}

fn report_to_json(ruby: &Ruby, rb_self: Value) -> Result<String, Error> {
    Ok(report_of(ruby, record_arg(ruby, "report", &SIMULATION_REPORT, rb_self)?)?.to_json())
}

fn report_from_json(ruby: &Ruby, text: Value) -> Result<Value, Error> {
    report(ruby, &read::<SimulationReport>(ruby, text)?)
}

pub fn define(ruby: &Ruby, module: RModule) -> Result<(), Error> {
    let config = SIMULATION_CONFIG.class(ruby)?;
    config.define_private_method("_default_config", magnus::method!(default_config, 0))?;
    config.singleton_class()?.define_private_method("_failover_preset", magnus::function!(failover_preset, 0))?;

    let report = SIMULATION_REPORT.class(ruby)?;
    report.define_private_method("_to_json", magnus::method!(report_to_json, 0))?;
    report.singleton_class()?.define_private_method("_from_json", magnus::function!(report_from_json, 1))?;

    let (class, singleton) = crate::helpers::wrapped_class(ruby, module, "Simulation")?;
    crate::helpers::constructor!(singleton, "_new", RbSimulation::new, 1, config)?;
    class.define_private_method("_finished", magnus::method!(RbSimulation::finished, 0))?;
    class.define_private_method("_step", magnus::method!(RbSimulation::step, 1))?;
    class.define_private_method("_cycles_run", magnus::method!(RbSimulation::cycles_run, 0))?;
    class.define_private_method("_finish", magnus::method!(RbSimulation::finish, 0))?;
    Ok(())
}
