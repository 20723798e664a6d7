//! The deterministic failover simulation of the `lease-machines` crate: workers contend for leases through a
//! [`LeaseTable`], write through a [`FenceGuard`], an independent oracle checks every write the storage accepted, and
//! the table's whole event log is audited. [`simulate`] runs a [`SimulationConfig`] and returns its
//! [`SimulationReport`]; [`Simulation`] runs one a few cycles at a time. The crate uses only the public API of
//! `lease-machines`; it is `#![no_std]` (with `alloc`), reads no clock and draws every random choice from one seeded
//! ChaCha8 generator. With the `serde` feature the report has a stable JSON document (format 1): it implements
//! `lease_machines::json::Json`.
//!
//! ```
//! use lease_machines_sim::{simulate, SimulationConfig};
//!
//! let report = simulate(&SimulationConfig { cycles: 1_000, ..SimulationConfig::failover_preset() })?;
//! assert_eq!((report.takeovers, report.stale_writes_rejected, report.final_token), (1_000, 1_000, 1_001));
//! assert!(report.is_safe());
//! # Ok::<(), lease_machines_sim::SimulationError>(())
//! ```
#![no_std]
#![forbid(unsafe_code)]
#![deny(missing_docs)]
// The workspace's lints (Cargo.toml), and unchecked arithmetic outside tests: every step of a decision is checked.
#![cfg_attr(not(test), deny(clippy::arithmetic_side_effects))]

extern crate alloc;

use core::fmt;

#[cfg(doc)]
use lease_machines::{
    audit, Cadence, EventKind, EventLog, FenceGuard, FencedWrite, Holder, LeaseTable, Rejection, TableLease,
};

// The public API: what to run, what a run found.
mod config;
mod report;
// One run: the world (true time, random source), the stage every scenario acts on, and the two scenarios.
mod contention;
mod failover;
mod run;
mod stage;
mod workers;
mod world;
// What checks a run: the storage's fence and the oracle, the audit ledger and its digest.
mod digest;
mod ledger;
mod oracle;
// The report's JSON document.
#[cfg(feature = "serde")]
mod json;

pub use config::{FenceMode, Scenario, SimulationConfig, SimulationError};
pub use report::SimulationReport;

use run::Run;

/// Runs the simulation `config` describes (refused with a [`SimulationError`] when [`SimulationConfig::validate`]
/// refuses it): workers contend for resources through a [`LeaseTable`], write through a [`FenceGuard`], and an
/// independent oracle checks every accepted write. Costs O(cycles × workers × log resources) time and
/// O(workers + resources) memory.
///
/// # Determinism
///
/// Everything random is drawn from one ChaCha8 generator seeded with [`SimulationConfig::seed`]
/// (`ChaCha8Rng::seed_from_u64` of `rand_chacha`), and nothing reads a clock, so the same configuration always gives
/// the same report (and, with the `serde` feature, byte for byte the same JSON).
///
/// # What the workers do
///
/// Time is a simulated `Duration` from zero (the "true" time). Each worker holds at most one lease at a time and keeps
/// a [`Holder`] for it on the true time, with a [`Cadence`] derived from the TTL: renew every `ttl / 3`, at risk from
/// `ttl / 4` before the end. Writes are [`FencedWrite`]s built with [`TableLease::fenced_write`]; the storage runs them
/// through a [`FenceGuard`] (unless [`FenceMode::Disabled`]). What the storage says never changes what a worker does
/// next (a refused write is dropped; the worker learns that its lease is gone from the table at its next renewal), so
/// one seed makes exactly the same commands whatever the fence does: that is what lets the tests compare the two modes.
///
/// [`Scenario::Contention`] (the default): every cycle the clock moves forward by `ttl / 16 + [0, ttl / 8]`, then every
/// worker takes one turn, starting at a random worker. On its turn an awake worker first delivers the write it had in
/// flight, if any; its clock may step backwards (by up to `ttl / 2`, decaying by half every turn): the table is given
/// that earlier time, under [`SimulationConfig::clock_policy`] (a [`Rejection::ClockRegressed`] refusal leaves the
/// worker to retry). A worker holding a lease renews it when its `Holder` says a renewal is due (a refusal other than
/// `ClockRegressed` expires the `Holder` and drops the lease), then does one of:
///
/// - pause, with a write built while the lease was live in flight, for a random span in `(ttl, 4 ttl]`: the classic
///   stale writer; the write is delivered when it wakes (4.7% of a holder's turns);
/// - rotate its lease to a new token ([`LeaseTable::reacquire`], [`Holder::reacquire`]), write with the new token, and
///   re-deliver its last write with the old token on its next turn (1.6%);
/// - transfer the lease to an idle, awake worker ([`LeaseTable::transfer`]), its last write with the old token still in
///   flight (2.3%);
/// - release the lease (1.6%);
/// - otherwise write, when its `Holder` is not at risk and the lease is live on its own clock.
///
/// An idle worker asks for a random resource ([`LeaseTable::acquire`], half of its turns) or reaps a random resource's
/// expired record ([`LeaseTable::reap`], 1 in 16).
///
/// [`Scenario::Failover`] (moonleasekit's failover mode, [`SimulationConfig::failover_preset`]): every cycle picks a random
/// resource (the first time, a random worker acquires it and writes); its holder started a second write when its
/// lease was granted, and stalled; the clock moves to the lease's expiry plus up to `ttl / 2`; a random other worker
/// acquires the resource (a takeover, with a new token) and writes; the old holder's delayed write arrives and must be
/// refused; the old holder wakes, its renewal is refused and its `Holder` expires. Then the clock moves forward by up
/// to `ttl / 4`.
///
/// In both scenarios the table is checkpointed and restored ([`LeaseTable::checkpoint`], [`LeaseTable::restored`])
/// after every [`SimulationConfig::restore_every`] cycles; a restored table decides as the original would, so this
/// changes no decision and no event.
///
/// # The oracle
///
/// Independently of the `FenceGuard`, the simulation keeps, per resource, the token and owner of the newest write the
/// storage accepted. An accepted write is a **violation** when its token is lower than that token (a stale holder
/// wrote after a newer holder did: the two holders' writes interleave after a takeover), or equal to it from another
/// owner (two holders under one token). Every accepted write is checked. With the fence enforced there must be none;
/// with it disabled, every write the fence would have refused is one.
///
/// # The audit and the digest
///
/// The table's [`EventLog`] (capacity 4096) is drained at the end of any cycle that leaves it nearly full, before each
/// restore and at the end, and every event is audited with [`audit`]. Each drained batch is audited after a context
/// of at most two earlier events per resource (its last grant and its last event), which give the auditor exactly the
/// state the whole history before them would; findings in that context are not counted again. So the whole history
/// is audited, in bounded memory.
/// [`SimulationReport::audit_valid`] is true when there was no finding and no event was dropped.
///
/// [`SimulationReport::event_digest`] is a 64-bit FNV-1a hash taken over 64-bit words instead of bytes: starting from
/// `0xcbf29ce484222325`, for each word `hash = (hash ^ word) * 0x100000001b3` (wrapping). For every event, oldest
/// first, the words are: the resource index; the kind's position in [`EventKind::ALL`]; `at` in nanoseconds (low 64
/// bits, then high 64 bits); the owner; the token; the revision; `expires_at` in nanoseconds (low, high); the term
/// (`0` for none, else `1` then the term); the replaced lease (`0` for none, else `1`, its owner, its token, its
/// `expires_at` in nanoseconds low and high).
pub fn simulate(config: &SimulationConfig) -> Result<SimulationReport, SimulationError> {
    Simulation::new(*config).map(Simulation::finish)
}

/// A [`simulate`] run that can be taken a few cycles at a time, to show progress or to stop early: [`step`] runs
/// cycles, [`finish`] runs whatever is left and returns the report. However the cycles are split into steps, the
/// report is the one [`simulate`] returns for the same configuration.
///
/// ```
/// use lease_machines_sim::{simulate, Simulation, SimulationConfig};
///
/// let config = SimulationConfig { cycles: 1_000, ..SimulationConfig::failover_preset() };
/// let mut simulation = Simulation::new(config)?;
/// while !simulation.is_finished() {
///     let ran = simulation.step(300); // 300, 300, 300, then 100
///     assert!(ran > 0);
/// }
/// assert_eq!(simulation.cycles_run(), 1_000);
/// let report = simulation.finish();
/// assert_eq!(report, simulate(&config)?);
/// assert!(report.is_safe());
/// # Ok::<(), lease_machines_sim::SimulationError>(())
/// ```
///
/// [`step`]: Self::step
/// [`finish`]: Self::finish
pub struct Simulation {
    run: Run,
}

impl Simulation {
    /// A simulation of `config`, no cycle run yet; refused with the [`SimulationError`] that
    /// [`SimulationConfig::validate`] returns.
    pub fn new(config: SimulationConfig) -> Result<Self, SimulationError> {
        config.validate()?;
        Ok(Self { run: Run::new(config)? })
    }

    /// The configuration being run.
    #[must_use]
    pub const fn config(&self) -> &SimulationConfig {
        self.run.config()
    }

    /// Cycles run so far, `0..=config().cycles`.
    #[must_use]
    pub const fn cycles_run(&self) -> u64 {
        self.run.cycles_run()
    }

    /// Whether every configured cycle has run.
    #[must_use]
    pub const fn is_finished(&self) -> bool {
        self.cycles_run() >= self.config().cycles
    }

    /// Runs up to `cycles` more cycles (fewer when fewer are left) and returns how many ran: `0` once
    /// [finished](Self::is_finished).
    pub fn step(&mut self, cycles: u64) -> u64 {
        let left = self.config().cycles.saturating_sub(self.cycles_run());
        let count = cycles.min(left);
        for _ in 0..count {
            self.run.cycle();
        }
        count
    }

    /// Runs the cycles left, audits the rest of the event log and returns the report.
    #[must_use]
    pub fn finish(mut self) -> SimulationReport {
        self.step(u64::MAX);
        self.run.finish()
    }
}

impl fmt::Debug for Simulation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Simulation")
            .field("config", self.config())
            .field("cycles_run", &self.cycles_run())
            .finish_non_exhaustive()
    }
}
