//! `LeaseMachines::Simulation`: the core's deterministic failover simulation, run a step at a time so that the Ruby
//! layer can show progress and stay interruptible; and the report's JSON document.
//!
//! A configuration travels as the Array of `LeaseMachines::SimulationConfig`'s members, a report as the Array of
//! `LeaseMachines::SimulationReport`'s members (its first element the configuration's Array).

use std::cell::RefCell;

use lease_machines::json::Json;
use lease_machines_sim::{Simulation, SimulationConfig, SimulationReport};
use magnus::{prelude::*, typed_data::Obj, Error, IntoValue, RArray, RModule, RString, Ruby, Value};

use crate::convert::{array_arg, entry, seconds, seconds_arg, u64_arg};
use crate::json::read;
use crate::symbols::SymbolEnum;

/// The members of `LeaseMachines::SimulationConfig`, in order.
const CONFIG_FIELDS: [&str; 9] =
    ["seed", "cycles", "workers", "resources", "ttl", "scenario", "clock_policy", "restore_every", "fence"];

fn config(ruby: &Ruby, config: &SimulationConfig) -> RArray {
    let values: [Value; 9] = [
        config.seed.into_value_with(ruby),
        config.cycles.into_value_with(ruby),
        config.workers.into_value_with(ruby),
        config.resources.into_value_with(ruby),
        seconds(config.ttl).into_value_with(ruby),
        config.scenario.symbol(ruby).into_value_with(ruby),
        config.clock_policy.symbol(ruby).into_value_with(ruby),
        config.restore_every.into_value_with(ruby),
        config.fence.symbol(ruby).into_value_with(ruby),
    ];
    ruby.ary_new_from_values(&values)
}

/// A configuration as [`config`] shapes it. Each field is checked for its type here; whether the values make a
/// runnable simulation is [`SimulationConfig::validate`]'s call (an `ArgumentError` with its message).
fn config_arg(ruby: &Ruby, value: Value) -> Result<SimulationConfig, Error> {
    let fields = array_arg(ruby, "config", value)?;
    if fields.len() != CONFIG_FIELDS.len() {
        return Err(Error::new(
            ruby.exception_arg_error(),
            format!("config must have {} fields, got {}", CONFIG_FIELDS.len(), fields.len()),
        ));
    }
    let field = |index: usize| {
        let name = CONFIG_FIELDS.get(index).copied().unwrap_or("config");
        entry(ruby, fields, index, name).map(|value| (name, value))
    };
    let count = |index: usize| field(index).and_then(|(name, value)| u64_arg(ruby, name, value));
    let config = SimulationConfig {
        seed: count(0)?,
        cycles: count(1)?,
        workers: count(2)?,
        resources: count(3)?,
        ttl: field(4).and_then(|(name, value)| seconds_arg(ruby, name, value))?,
        scenario: SymbolEnum::arg(ruby, field(5)?.1)?,
        clock_policy: SymbolEnum::arg(ruby, field(6)?.1)?,
        restore_every: count(7)?,
        fence: SymbolEnum::arg(ruby, field(8)?.1)?,
    };
    config.validate().map_err(|error| Error::new(ruby.exception_arg_error(), error.to_string()))?;
    Ok(config)
}

/// The counts of a report, in `LeaseMachines::SimulationReport`'s member order after `config`.
fn counts(report: &SimulationReport) -> [u64; 21] {
    [
        report.cycles,
        report.leases_acquired,
        report.rotations,
        report.transfers,
        report.renewals,
        report.releases,
        report.reaps,
        report.takeovers,
        report.leases_lost,
        report.pauses,
        report.clock_steps_back,
        report.clock_rejections,
        report.restores,
        report.writes_accepted,
        report.stale_writes_rejected,
        report.late_writes_accepted,
        report.final_token,
        report.events,
        report.audit_findings,
        report.violations,
        report.event_digest,
    ]
}

/// `[config, cycles, leases_acquired, ..., audit_valid, audit_findings, violations, event_digest]`.
fn report(ruby: &Ruby, report: &SimulationReport) -> RArray {
    let counts = counts(report);
    let (before, after) = counts.split_at(18);
    let fields = ruby.ary_new_capa(23);
    let _ = fields.push(config(ruby, &report.config));
    for count in before {
        let _ = fields.push(*count);
    }
    let _ = fields.push(report.audit_valid);
    for count in after {
        let _ = fields.push(*count);
    }
    fields
}

/// A report as [`report`] shapes it.
fn report_arg(ruby: &Ruby, value: Value) -> Result<SimulationReport, Error> {
    const NAMES: [&str; 23] = [
        "config",
        "cycles",
        "leases_acquired",
        "rotations",
        "transfers",
        "renewals",
        "releases",
        "reaps",
        "takeovers",
        "leases_lost",
        "pauses",
        "clock_steps_back",
        "clock_rejections",
        "restores",
        "writes_accepted",
        "stale_writes_rejected",
        "late_writes_accepted",
        "final_token",
        "events",
        "audit_valid",
        "audit_findings",
        "violations",
        "event_digest",
    ];
    let fields = array_arg(ruby, "report", value)?;
    if fields.len() != NAMES.len() {
        return Err(Error::new(
            ruby.exception_arg_error(),
            format!("report must have {} fields, got {}", NAMES.len(), fields.len()),
        ));
    }
    let field = |index: usize| entry(ruby, fields, index, NAMES.get(index).copied().unwrap_or("report"));
    let count = |index: usize| u64_arg(ruby, NAMES.get(index).copied().unwrap_or("report"), field(index)?);
    let audit_valid = field(19)?;
    let audit_valid = if audit_valid.is_kind_of(ruby.class_true_class()) {
        true
    } else if audit_valid.is_kind_of(ruby.class_false_class()) {
        false
    } else {
        return Err(Error::new(ruby.exception_type_error(), "audit_valid must be true or false"));
    };
    Ok(SimulationReport {
        config: config_arg(ruby, field(0)?)?,
        cycles: count(1)?,
        leases_acquired: count(2)?,
        rotations: count(3)?,
        transfers: count(4)?,
        renewals: count(5)?,
        releases: count(6)?,
        reaps: count(7)?,
        takeovers: count(8)?,
        leases_lost: count(9)?,
        pauses: count(10)?,
        clock_steps_back: count(11)?,
        clock_rejections: count(12)?,
        restores: count(13)?,
        writes_accepted: count(14)?,
        stale_writes_rejected: count(15)?,
        late_writes_accepted: count(16)?,
        final_token: count(17)?,
        events: count(18)?,
        audit_valid,
        audit_findings: count(20)?,
        violations: count(21)?,
        event_digest: count(22)?,
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

impl RbSimulation {
    fn new(ruby: &Ruby, config: Value) -> Result<Self, Error> {
        let config = config_arg(ruby, config)?;
        let simulation =
            Simulation::new(config).map_err(|error| Error::new(ruby.exception_arg_error(), error.to_string()))?;
        Ok(Self(RefCell::new(State::Running(Box::new(simulation)))))
    }

    fn busy(ruby: &Ruby) -> Error {
        Error::new(ruby.exception_runtime_error(), "LeaseMachines::Simulation is busy")
    }

    /// Runs up to `cycles` more cycles; returns how many ran (0 once finished).
    fn step(ruby: &Ruby, rb_self: Obj<Self>, cycles: Value) -> Result<u64, Error> {
        let cycles = u64_arg(ruby, "cycles", cycles)?;
        rb_self.check_frozen()?;
        let mut state = rb_self.0.try_borrow_mut().map_err(|_| Self::busy(ruby))?;
        Ok(match &mut *state {
            State::Running(simulation) => simulation.step(cycles),
            State::Finishing | State::Finished(_) => 0,
        })
    }

    /// Cycles run so far.
    fn cycles_run(ruby: &Ruby, rb_self: &Self) -> Result<u64, Error> {
        let state = rb_self.0.try_borrow().map_err(|_| Self::busy(ruby))?;
        match &*state {
            State::Running(simulation) => Ok(simulation.cycles_run()),
            State::Finished(report) => Ok(report.cycles),
            State::Finishing => Err(Self::busy(ruby)),
        }
    }

    /// Runs what is left (the Ruby layer steps first, so this is only the final audit) and returns the report's
    /// Array, the same on every call.
    fn finish(ruby: &Ruby, rb_self: Obj<Self>) -> Result<RArray, Error> {
        let mut state = rb_self.0.try_borrow_mut().map_err(|_| Self::busy(ruby))?;
        if let State::Running(_) = &*state {
            rb_self.check_frozen()?;
            if let State::Running(simulation) = std::mem::replace(&mut *state, State::Finishing) {
                *state = State::Finished(Box::new((*simulation).finish()));
            }
        }
        match &*state {
            State::Finished(done) => Ok(report(ruby, done)),
            State::Running(_) | State::Finishing => Err(Self::busy(ruby)),
        }
    }
}

fn default_config(ruby: &Ruby) -> RArray {
    config(ruby, &SimulationConfig::default())
}

fn failover_preset(ruby: &Ruby) -> RArray {
    config(ruby, &SimulationConfig::failover_preset())
}

fn report_to_json(ruby: &Ruby, fields: Value) -> Result<String, Error> {
    Ok(report_arg(ruby, fields)?.to_json())
}

fn report_from_json(ruby: &Ruby, text: RString) -> Result<RArray, Error> {
    Ok(report(ruby, &read::<SimulationReport>(ruby, text)?))
}

pub fn define(ruby: &Ruby, module: RModule) -> Result<(), Error> {
    let class = module.define_class("Simulation", ruby.class_object())?;
    class.undef_default_alloc_func();
    class.define_singleton_method("_new", magnus::function!(RbSimulation::new, 1))?;
    class.define_singleton_method("_default_config", magnus::function!(default_config, 0))?;
    class.define_singleton_method("_failover_preset", magnus::function!(failover_preset, 0))?;
    class.define_singleton_method("_report_to_json", magnus::function!(report_to_json, 1))?;
    class.define_singleton_method("_report_from_json", magnus::function!(report_from_json, 1))?;
    class.define_method("_step", magnus::method!(RbSimulation::step, 1))?;
    class.define_method("_cycles_run", magnus::method!(RbSimulation::cycles_run, 0))?;
    class.define_method("_finish", magnus::method!(RbSimulation::finish, 0))?;
    Ok(())
}
