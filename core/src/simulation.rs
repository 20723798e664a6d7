//! The deterministic failover simulation (feature `simulation`): [`simulate`] and what it takes and returns.

use alloc::vec::Vec;
use core::fmt;
use core::time::Duration;

use rand_chacha::rand_core::{RngCore, SeedableRng};
use rand_chacha::ChaCha8Rng;

use crate::{
    audit, Cadence, ClockPolicy, Event, EventKind, EventLog, FenceGuard, FencedWrite, Holder, LeaseTable, OwnerId,
    Rejection, TableDecision, TableLease,
};

/// What the workers of a simulation do; see [`simulate`] for the details.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub enum Scenario {
    /// Workers contend for the resources at random: they acquire, renew, write, pause past their TTL, see their clocks
    /// step back, rotate, transfer, release and reap.
    #[default]
    Contention,
    /// moonleasekit's failover benchmark: every cycle one holder's lease expires, another worker takes over and writes, and
    /// the old holder's delayed write is refused.
    Failover,
}

impl Scenario {
    /// Every scenario, in declaration order.
    pub const ALL: [Self; 2] = [Self::Contention, Self::Failover];

    /// The scenario's stable snake_case name (`"contention"`, `"failover"`), used in JSON.
    #[must_use]
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Contention => "contention",
            Self::Failover => "failover",
        }
    }

    /// The scenario named `name`, as [`as_str`](Self::as_str) spells it.
    #[must_use]
    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|scenario| scenario.as_str() == name)
    }
}

/// Whether the simulated storage checks writes with its [`FenceGuard`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub enum FenceMode {
    /// Every write goes through the guard; a refused write does not happen.
    #[default]
    Enforced,
    /// The storage accepts every write unchecked: the broken storage the tests use to show that the oracle finds
    /// the stale writes a fence would have refused.
    Disabled,
}

impl FenceMode {
    /// Every mode, in declaration order.
    pub const ALL: [Self; 2] = [Self::Enforced, Self::Disabled];

    /// The mode's stable snake_case name (`"enforced"`, `"disabled"`), used in JSON.
    #[must_use]
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Enforced => "enforced",
            Self::Disabled => "disabled",
        }
    }

    /// The mode named `name`, as [`as_str`](Self::as_str) spells it.
    #[must_use]
    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|mode| mode.as_str() == name)
    }
}

/// What to simulate. [`Default`] is a mixed contention run; [`failover_preset`](Self::failover_preset) is
/// moonleasekit's failover benchmark. [`simulate`] refuses a configuration that [`validate`](Self::validate) refuses.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct SimulationConfig {
    /// The seed of the ChaCha8 generator every random choice comes from. Any value.
    pub seed: u64,
    /// How many cycles to run, `0..`: see [`Scenario`] for what one cycle is.
    pub cycles: u64,
    /// How many workers contend, [`MIN_WORKERS`](Self::MIN_WORKERS)`..=`[`MAX_WORKERS`](Self::MAX_WORKERS). Owner ids
    /// are `1..=workers`.
    pub workers: u64,
    /// How many resources they contend for, `1..=`[`MAX_RESOURCES`](Self::MAX_RESOURCES). Resource keys are
    /// `0..resources`.
    pub resources: u64,
    /// The TTL every worker asks for, at least [`MIN_TTL`](Self::MIN_TTL). `cycles` times `ttl` must stay well within
    /// `u64` nanoseconds of simulated time: `(cycles + 8) * 2 * ttl` at most `u64::MAX` nanoseconds (about 584 years).
    pub ttl: Duration,
    /// What the workers do.
    pub scenario: Scenario,
    /// The table's [`ClockPolicy`]: with [`ClockPolicy::Clamp`] a worker whose clock stepped back is decided at the
    /// table's watermark; with [`ClockPolicy::Reject`] it is refused and retries.
    pub clock_policy: ClockPolicy,
    /// Checkpoint the table and restore it from the checkpoint after every this many cycles, except after the last
    /// (`0`: never).
    pub restore_every: u64,
    /// Whether the storage enforces the fence.
    pub fence: FenceMode,
}

impl SimulationConfig {
    /// The fewest workers: a failover needs somebody to fail over to.
    pub const MIN_WORKERS: u64 = 2;
    /// The most workers.
    pub const MAX_WORKERS: u64 = 1024;
    /// The most resources.
    pub const MAX_RESOURCES: u64 = 1024;
    /// The shortest TTL: one microsecond, so that the fractions of it the simulation uses are distinct.
    pub const MIN_TTL: Duration = Duration::from_micros(1);

    /// moonleasekit's failover benchmark: seed 0, 50,000 cycles of [`Scenario::Failover`] on one resource between two workers,
    /// a 10 s TTL, [`ClockPolicy::Clamp`], the table restored from a checkpoint every 10,000 cycles, the fence
    /// enforced. Every cycle is one expiry, one takeover and one stale write refused.
    #[must_use]
    pub const fn failover_preset() -> Self {
        Self {
            seed: 0,
            cycles: 50_000,
            workers: 2,
            resources: 1,
            ttl: Duration::from_secs(10),
            scenario: Scenario::Failover,
            clock_policy: ClockPolicy::Clamp,
            restore_every: 10_000,
            fence: FenceMode::Enforced,
        }
    }

    /// Checks the configuration: `Ok` when [`simulate`] can run it, else the first problem found (workers, then
    /// resources, then the TTL, then the simulated time span).
    pub fn validate(&self) -> Result<(), SimulationError> {
        if !(Self::MIN_WORKERS..=Self::MAX_WORKERS).contains(&self.workers) {
            return Err(SimulationError::Workers(self.workers));
        }
        if !(1..=Self::MAX_RESOURCES).contains(&self.resources) {
            return Err(SimulationError::Resources(self.resources));
        }
        if self.ttl < Self::MIN_TTL {
            return Err(SimulationError::Ttl(self.ttl));
        }
        let ttl_ns = u64::try_from(self.ttl.as_nanos()).map_err(|_| SimulationError::TooLong)?;
        self.cycles
            .checked_add(8)
            .and_then(|cycles| cycles.checked_mul(2))
            .and_then(|span| span.checked_mul(ttl_ns))
            .map(|_| ())
            .ok_or(SimulationError::TooLong)
    }
}

impl Default for SimulationConfig {
    /// Seed 0, 10,000 cycles of [`Scenario::Contention`], 4 workers, 2 resources, a 1 s TTL, [`ClockPolicy::Clamp`],
    /// the table restored from a checkpoint every 1,000 cycles, the fence enforced.
    fn default() -> Self {
        Self {
            seed: 0,
            cycles: 10_000,
            workers: 4,
            resources: 2,
            ttl: Duration::from_secs(1),
            scenario: Scenario::Contention,
            clock_policy: ClockPolicy::Clamp,
            restore_every: 1_000,
            fence: FenceMode::Enforced,
        }
    }
}

/// Why [`simulate`] refused a [`SimulationConfig`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SimulationError {
    /// `workers` (the value given) is outside
    /// [`MIN_WORKERS`](SimulationConfig::MIN_WORKERS)`..=`[`MAX_WORKERS`](SimulationConfig::MAX_WORKERS).
    Workers(u64),
    /// `resources` (the value given) is outside `1..=`[`MAX_RESOURCES`](SimulationConfig::MAX_RESOURCES).
    Resources(u64),
    /// `ttl` (the value given) is shorter than [`MIN_TTL`](SimulationConfig::MIN_TTL).
    Ttl(Duration),
    /// `cycles` times `ttl` is more simulated time than `u64` nanoseconds hold.
    TooLong,
}

impl SimulationError {
    /// The configuration field at fault: `"workers"`, `"resources"`, `"ttl"` or, for [`TooLong`](Self::TooLong),
    /// `"cycles"`.
    #[must_use]
    pub const fn field(&self) -> &'static str {
        match self {
            Self::Workers(_) => "workers",
            Self::Resources(_) => "resources",
            Self::Ttl(_) => "ttl",
            Self::TooLong => "cycles",
        }
    }
}

impl fmt::Display for SimulationError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Workers(workers) => write!(
                f,
                "workers must be between {} and {}, not {workers}",
                SimulationConfig::MIN_WORKERS,
                SimulationConfig::MAX_WORKERS
            ),
            Self::Resources(resources) => {
                write!(f, "resources must be between 1 and {}, not {resources}", SimulationConfig::MAX_RESOURCES)
            }
            Self::Ttl(ttl) => write!(f, "ttl must be at least {:?}, not {ttl:?}", SimulationConfig::MIN_TTL),
            Self::TooLong => f.write_str(
                "cycles are too many for the ttl: (cycles + 8) * 2 * ttl must stay within 2**64 - 1 nanoseconds",
            ),
        }
    }
}

impl core::error::Error for SimulationError {}

/// What a simulation did and found. Counts are totals over the whole run.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct SimulationReport {
    /// The configuration run.
    pub config: SimulationConfig,
    /// Cycles run (the configuration's `cycles`).
    pub cycles: u64,
    /// Leases granted by [`LeaseTable::acquire`] (rotations and transfers are counted apart).
    pub leases_acquired: u64,
    /// Leases rotated to a new token by their holder ([`LeaseTable::reacquire`]).
    pub rotations: u64,
    /// Leases handed to another worker ([`LeaseTable::transfer`]).
    pub transfers: u64,
    /// Renewals the table accepted.
    pub renewals: u64,
    /// Leases given back.
    pub releases: u64,
    /// Expired lease records reaped.
    pub reaps: u64,
    /// Grants (acquisitions and transfers) to another owner than the resource's previous grant's.
    pub takeovers: u64,
    /// Holders that learnt from a refused renewal that their lease was gone, and expired their [`Holder`].
    pub leases_lost: u64,
    /// Pauses longer than the TTL, each with a write in flight.
    pub pauses: u64,
    /// Times a worker's clock stepped backwards.
    pub clock_steps_back: u64,
    /// Commands refused with [`Rejection::ClockRegressed`] (only under [`ClockPolicy::Reject`]).
    pub clock_rejections: u64,
    /// Times the table was checkpointed and restored.
    pub restores: u64,
    /// Writes the storage accepted.
    pub writes_accepted: u64,
    /// Writes the storage's fence refused (always `0` with [`FenceMode::Disabled`]).
    pub stale_writes_rejected: u64,
    /// Accepted writes, not violations, whose lease was no longer the live one when they arrived: a fence cannot
    /// refuse a stale holder before a newer holder has written (see the crate's "Fencing" section). Information, not
    /// a failure.
    pub late_writes_accepted: u64,
    /// The greatest token issued on any resource; `0` when none was (`0` is never a token).
    pub final_token: u64,
    /// Events the table recorded, all audited.
    pub events: u64,
    /// Whether the audit of every event found nothing and no event was lost.
    pub audit_valid: bool,
    /// How many findings the audit made.
    pub audit_findings: u64,
    /// Accepted writes the oracle found unsafe: `0` whenever the fence is enforced.
    pub violations: u64,
    /// The word-wise FNV-1a digest of every event, in order (see [`simulate`]).
    pub event_digest: u64,
}

impl SimulationReport {
    /// Whether the run was safe: no violation and a valid audit.
    #[must_use]
    pub const fn is_safe(&self) -> bool {
        self.violations == 0 && self.audit_valid
    }

    /// How many tokens were issued in all: acquisitions, rotations and transfers.
    #[must_use]
    pub const fn tokens_issued(&self) -> u64 {
        self.leases_acquired.saturating_add(self.rotations).saturating_add(self.transfers)
    }
}

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
/// restore and at the end, and every event is audited with [`audit`]. Each drained batch is audited after a context of at most two earlier events per
/// resource (its last grant and its last event), which give the auditor exactly the state the whole history before
/// them would; findings in that context are not counted again. So the whole history is audited, in bounded memory.
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
/// use lease_machines::{simulate, Simulation, SimulationConfig};
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
/// # Ok::<(), lease_machines::SimulationError>(())
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
        &self.run.config
    }

    /// Cycles run so far, `0..=config().cycles`.
    #[must_use]
    pub const fn cycles_run(&self) -> u64 {
        self.run.report.cycles
    }

    /// Whether every configured cycle has run.
    #[must_use]
    pub const fn is_finished(&self) -> bool {
        self.run.report.cycles >= self.run.config.cycles
    }

    /// Runs up to `cycles` more cycles (fewer when fewer are left) and returns how many ran: `0` once
    /// [finished](Self::is_finished).
    pub fn step(&mut self, cycles: u64) -> u64 {
        let left = self.run.config.cycles.saturating_sub(self.run.report.cycles);
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

/// How many events the table's log holds before they are audited.
const AUDIT_BATCH: usize = EventLog::<u64>::DEFAULT_CAPACITY;

/// Probabilities, in 1024ths, of a holder's actions on its turn (cumulative thresholds), and of an idle worker's.
const PAUSE: u64 = 48;
const ROTATE: u64 = PAUSE + 16;
const TRANSFER: u64 = ROTATE + 24;
const RELEASE: u64 = TRANSFER + 16;
const ACQUIRE: u64 = 512;
const REAP: u64 = ACQUIRE + 64;
/// The probability, in 1024ths, that a worker's clock steps back on its turn.
const CLOCK_STEP: u64 = 24;

/// A lease as its worker holds it.
#[derive(Debug, Clone)]
struct Hold {
    lease: TableLease<u64>,
    holder: Holder,
}

/// One contending worker.
#[derive(Debug, Clone)]
struct Worker {
    owner: OwnerId,
    hold: Option<Hold>,
    /// Paused until this instant (true time, nanoseconds).
    asleep_until: u64,
    /// A write to deliver at the start of the worker's next turn.
    in_flight: Option<FencedWrite<u64, u64>>,
    /// The last write the worker made, re-delivered after a rotation or a transfer.
    last_write: Option<FencedWrite<u64, u64>>,
    /// How far behind the true time the worker's clock is, in nanoseconds.
    lag: u64,
}

impl Worker {
    const fn new(owner: OwnerId) -> Self {
        Self { owner, hold: None, asleep_until: 0, in_flight: None, last_write: None, lag: 0 }
    }
}

/// In the failover scenario: who holds a resource.
#[derive(Debug, Clone)]
struct Incumbent {
    worker: u64,
    hold: Hold,
}

/// Per resource: what the oracle and the takeover count need.
#[derive(Debug, Clone, Copy, Default)]
struct ResourceView {
    /// The token and owner of the newest write the storage accepted.
    newest_write: Option<(u64, u64)>,
    /// The owner of the resource's last grant.
    last_grantee: Option<OwnerId>,
}

/// What the auditor needs of one resource's past to audit what follows: its last grant and its last event, each with
/// its position in the history.
#[derive(Debug, Clone, Default)]
struct Context {
    last_grant: Option<(u64, Event<u64>)>,
    last: Option<(u64, Event<u64>)>,
}

/// Audits and digests the event history batch by batch.
#[derive(Debug)]
struct Ledger {
    context: Vec<Context>,
    /// Scratch: per resource, whether its last grant and its last event in the batch were carried.
    seen: Vec<(bool, bool)>,
    events: u64,
    findings: u64,
    lost: bool,
    digest: u64,
}

const FNV_OFFSET: u64 = 0xcbf2_9ce4_8422_2325;
const FNV_PRIME: u64 = 0x0000_0100_0000_01b3;

fn fold(hash: u64, word: u64) -> u64 {
    (hash ^ word).wrapping_mul(FNV_PRIME)
}

fn fold_nanos(hash: u64, instant: Duration) -> u64 {
    let nanos = instant.as_nanos();
    fold(fold(hash, nanos as u64), nanos.wrapping_shr(64) as u64)
}

fn kind_index(kind: EventKind) -> u64 {
    EventKind::ALL.iter().position(|each| *each == kind).map_or(u64::MAX, |index| index as u64)
}

fn fold_event(mut hash: u64, event: &Event<u64>) -> u64 {
    hash = fold(hash, event.resource);
    hash = fold(hash, kind_index(event.kind));
    hash = fold_nanos(hash, event.at);
    hash = fold(hash, event.owner.value());
    hash = fold(hash, event.token.value());
    hash = fold(hash, event.revision);
    hash = fold_nanos(hash, event.expires_at);
    hash = match event.term {
        None => fold(hash, 0),
        Some(term) => fold(fold(hash, 1), term),
    };
    match event.replaced {
        None => fold(hash, 0),
        Some(lease) => {
            let hash = fold(fold(fold(hash, 1), lease.owner().value()), lease.token().value());
            fold_nanos(hash, lease.expires_at())
        }
    }
}

impl Ledger {
    fn new(resources: usize) -> Self {
        let mut context = Vec::with_capacity(resources);
        context.resize(resources, Context::default());
        Self { context, seen: Vec::with_capacity(resources), events: 0, findings: 0, lost: false, digest: FNV_OFFSET }
    }

    /// Audits and digests everything in `log`, leaving it empty.
    fn absorb(&mut self, log: &mut EventLog<u64>) {
        if log.dropped() > 0 {
            self.lost = true;
        }
        if log.is_empty() {
            return;
        }
        let mut prefix: Vec<&(u64, Event<u64>)> = Vec::new();
        for context in &self.context {
            if let Some(grant) = &context.last_grant {
                prefix.push(grant);
            }
            if let Some(last) = &context.last {
                if context.last_grant.as_ref().map_or(true, |grant| grant.0 != last.0) {
                    prefix.push(last);
                }
            }
        }
        prefix.sort_unstable_by_key(|(position, _)| *position);
        let skip = prefix.len() as u64;
        let report = audit(prefix.iter().map(|(_, event)| event).chain(log.events()));
        let new_findings = report.findings.iter().filter(|finding| finding.event_index >= skip).count();
        self.findings = self.findings.saturating_add(new_findings as u64);
        drop(prefix);
        for event in log.events() {
            self.digest = fold_event(self.digest, event);
        }
        // Carry each resource's last grant and last event into the next batch's context, newest first.
        self.seen.clear();
        self.seen.resize(self.context.len(), (false, false));
        let count = log.len() as u64;
        for (back, event) in log.events().rev().enumerate() {
            let position = self.events.saturating_add(count).saturating_sub(1).saturating_sub(back as u64);
            let index = usize::try_from(event.resource).ok();
            let (Some(seen), Some(context)) =
                (index.and_then(|index| self.seen.get_mut(index)), index.and_then(|index| self.context.get_mut(index)))
            else {
                // Resources are 0..resources; anything else is a broken history.
                self.findings = self.findings.saturating_add(1);
                continue;
            };
            if !seen.1 {
                seen.1 = true;
                context.last = Some((position, event.clone()));
            }
            if !seen.0 && event.kind.grants() {
                seen.0 = true;
                context.last_grant = Some((position, event.clone()));
            }
        }
        self.events = self.events.saturating_add(log.len() as u64);
        log.drain().for_each(drop);
    }
}

/// One simulation in progress.
struct Run {
    config: SimulationConfig,
    ttl: Duration,
    ttl_ns: u64,
    cadence: Cadence,
    rng: ChaCha8Rng,
    /// The true time, in nanoseconds.
    now: u64,
    table: LeaseTable<u64>,
    storage: FenceGuard<u64>,
    resources: Vec<ResourceView>,
    workers: Vec<Worker>,
    /// In the failover scenario: each resource's holder.
    incumbents: Vec<Option<Incumbent>>,
    ledger: Ledger,
    writes: u64,
    report: SimulationReport,
}

const fn at(nanos: u64) -> Duration {
    Duration::from_nanos(nanos)
}

impl Run {
    fn new(config: SimulationConfig) -> Result<Self, SimulationError> {
        let ttl_ns = u64::try_from(config.ttl.as_nanos()).map_err(|_| SimulationError::TooLong)?;
        let ttl = at(ttl_ns);
        let renew_every = at(ttl_ns.checked_div(3).unwrap_or(0));
        let warn_before = at(ttl_ns.checked_div(4).unwrap_or(0));
        let cadence = Cadence::new(ttl, renew_every, warn_before).ok_or(SimulationError::Ttl(config.ttl))?;
        let resource_count =
            usize::try_from(config.resources).map_err(|_| SimulationError::Resources(config.resources))?;
        let worker_count = usize::try_from(config.workers).map_err(|_| SimulationError::Workers(config.workers))?;
        let mut resources = Vec::with_capacity(resource_count);
        resources.resize(resource_count, ResourceView::default());
        let mut workers = Vec::with_capacity(worker_count);
        for owner in 1..=config.workers {
            workers.push(Worker::new(OwnerId::new(owner)));
        }
        let mut incumbents = Vec::new();
        if config.scenario == Scenario::Failover {
            incumbents.resize(resource_count, None);
        }
        Ok(Self {
            config,
            ttl,
            ttl_ns,
            cadence,
            rng: ChaCha8Rng::seed_from_u64(config.seed),
            now: 0,
            table: Self::table(config.clock_policy),
            storage: FenceGuard::new(),
            resources,
            workers,
            incumbents,
            ledger: Ledger::new(resource_count),
            writes: 0,
            report: SimulationReport {
                config,
                cycles: 0,
                leases_acquired: 0,
                rotations: 0,
                transfers: 0,
                renewals: 0,
                releases: 0,
                reaps: 0,
                takeovers: 0,
                leases_lost: 0,
                pauses: 0,
                clock_steps_back: 0,
                clock_rejections: 0,
                restores: 0,
                writes_accepted: 0,
                stale_writes_rejected: 0,
                late_writes_accepted: 0,
                final_token: 0,
                events: 0,
                audit_valid: false,
                audit_findings: 0,
                violations: 0,
                event_digest: FNV_OFFSET,
            },
        })
    }

    fn table(policy: ClockPolicy) -> LeaseTable<u64> {
        LeaseTable::with_event_capacity(AUDIT_BATCH).with_clock_policy(policy)
    }

    /// A uniform draw from `0..n`; `0`, drawing nothing, when `n` is `0` or `1`.
    fn below(&mut self, n: u64) -> u64 {
        if n <= 1 {
            return 0;
        }
        let wide = u128::from(self.rng.next_u64()).wrapping_mul(u128::from(n));
        wide.wrapping_shr(64) as u64
    }

    /// A uniform draw from `low..=high`.
    fn between(&mut self, low: u64, high: u64) -> u64 {
        let span = high.saturating_sub(low).saturating_add(1);
        low.saturating_add(self.below(span))
    }

    /// `ttl / divisor` in nanoseconds.
    fn ttl_part(&self, divisor: u64) -> u64 {
        self.ttl_ns.checked_div(divisor).unwrap_or(0)
    }

    fn advance(&mut self, nanos: u64) {
        self.now = self.now.saturating_add(nanos);
    }

    fn view(&mut self, resource: u64) -> Option<&mut ResourceView> {
        usize::try_from(resource).ok().and_then(|index| self.resources.get_mut(index))
    }

    /// Audits the events once enough have gathered for one batch (with room for what one cycle can add).
    fn end_cycle(&mut self) {
        self.report.cycles = self.report.cycles.saturating_add(1);
        let room = AUDIT_BATCH.saturating_sub(self.table.sink().len());
        if room <= self.workers.len().saturating_mul(2).saturating_add(4) {
            self.ledger.absorb(self.table.sink_mut());
        }
        let mid_run = self.report.cycles < self.config.cycles;
        if mid_run
            && self.config.restore_every > 0
            && self.report.cycles.checked_rem(self.config.restore_every) == Some(0)
        {
            self.restore();
        }
    }

    /// Checkpoints the table and carries on with a table restored from the checkpoint.
    fn restore(&mut self) {
        self.ledger.absorb(self.table.sink_mut());
        let checkpoint = self.table.checkpoint();
        self.table = Self::table(self.config.clock_policy).restored(checkpoint);
        self.report.restores = self.report.restores.saturating_add(1);
    }

    /// Counts a grant to `owner` on `resource`, and whether it is a takeover.
    fn granted(&mut self, resource: u64, owner: OwnerId) {
        if let Some(view) = self.view(resource) {
            let takeover = view.last_grantee.is_some_and(|previous| previous != owner);
            view.last_grantee = Some(owner);
            if takeover {
                self.report.takeovers = self.report.takeovers.saturating_add(1);
            }
        }
    }

    /// A write request numbered in the run's order.
    fn write_for(&mut self, lease: &TableLease<u64>, clock: u64) -> Option<FencedWrite<u64, u64>> {
        let write = lease.fenced_write(self.writes, at(clock))?;
        self.writes = self.writes.saturating_add(1);
        Some(write)
    }

    /// The storage receives `write`: the fence (unless disabled) decides, and the oracle checks what was accepted.
    fn deliver(&mut self, write: &FencedWrite<u64, u64>) {
        let accepted = match self.config.fence {
            FenceMode::Enforced => self.storage.check(write),
            FenceMode::Disabled => true,
        };
        if !accepted {
            self.report.stale_writes_rejected = self.report.stale_writes_rejected.saturating_add(1);
            return;
        }
        self.report.writes_accepted = self.report.writes_accepted.saturating_add(1);
        let (token, owner) = (write.token().value(), write.owner().value());
        let resource = *write.resource();
        let violation = match self.view(resource) {
            None => true,
            Some(view) => match view.newest_write {
                Some((newest, by)) if token < newest || (token == newest && owner != by) => true,
                _ => {
                    view.newest_write = Some((token, owner));
                    false
                }
            },
        };
        if violation {
            self.report.violations = self.report.violations.saturating_add(1);
        } else if self.table.live_lease(&resource, at(self.now)).map_or(true, |lease| lease.token() != write.token()) {
            self.report.late_writes_accepted = self.report.late_writes_accepted.saturating_add(1);
        }
    }

    /// Runs one cycle of the configured scenario.
    fn cycle(&mut self) {
        match self.config.scenario {
            Scenario::Contention => self.contention_cycle(),
            Scenario::Failover => self.failover_cycle(),
        }
        self.end_cycle();
    }

    fn contention_cycle(&mut self) {
        let step = self.between(self.ttl_part(16), self.ttl_part(16).saturating_add(self.ttl_part(8)));
        self.advance(step);
        let first = self.below(self.config.workers);
        for offset in 0..self.config.workers {
            let index = first.wrapping_add(offset).checked_rem(self.config.workers).unwrap_or(0);
            self.take_turn(index);
        }
    }

    /// Worker `index` takes its turn (with the worker taken out of the crowd meanwhile, so that a transfer can reach
    /// the others).
    fn take_turn(&mut self, index: u64) {
        let Some(slot) = usize::try_from(index).ok().and_then(|index| self.workers.get_mut(index)) else {
            return;
        };
        let placeholder = Worker::new(slot.owner);
        let mut worker = core::mem::replace(slot, placeholder);
        self.turn(&mut worker, index);
        if let Some(slot) = usize::try_from(index).ok().and_then(|index| self.workers.get_mut(index)) {
            *slot = worker;
        }
    }

    fn turn(&mut self, worker: &mut Worker, index: u64) {
        if self.now < worker.asleep_until {
            return;
        }
        if let Some(write) = worker.in_flight.take() {
            self.deliver(&write);
        }
        worker.lag = worker.lag.wrapping_shr(1);
        if self.below(1024) < CLOCK_STEP {
            worker.lag = self.between(1, self.ttl_part(2));
            self.report.clock_steps_back = self.report.clock_steps_back.saturating_add(1);
        }
        let clock = self.now.saturating_sub(worker.lag);
        match worker.hold.take() {
            Some(hold) => self.hold_turn(worker, hold, index, clock),
            None => self.idle_turn(worker, clock),
        }
    }

    /// A refusal seen by a worker: `ClockRegressed` is counted (the worker retries); any other means the lease is gone.
    fn refused(&mut self, rejection: Rejection) -> bool {
        if rejection == Rejection::ClockRegressed {
            self.report.clock_rejections = self.report.clock_rejections.saturating_add(1);
            false
        } else {
            true
        }
    }

    fn lost(&mut self, mut hold: Hold) {
        hold.holder.expire();
        self.report.leases_lost = self.report.leases_lost.saturating_add(1);
    }

    fn hold_turn(&mut self, worker: &mut Worker, mut hold: Hold, index: u64, clock: u64) {
        let resource = *hold.lease.resource();
        let token = hold.lease.token();
        if hold.holder.renewal_due(at(self.now)) {
            hold.holder.refresh(at(self.now));
            match self.table.renew(&resource, worker.owner, token, at(clock), self.ttl) {
                TableDecision::Renewed(lease) => {
                    hold.holder.confirm(lease.token(), at(self.now));
                    hold.lease = lease;
                    self.report.renewals = self.report.renewals.saturating_add(1);
                }
                // Clock regressed: the renewal stays outstanding and is retried on the next turn.
                TableDecision::Rejected(rejection) if !self.refused(rejection) => {}
                _ => {
                    self.lost(hold);
                    return;
                }
            }
        }
        let roll = self.below(1024);
        if roll < PAUSE {
            if !hold.holder.at_risk(at(self.now)) {
                worker.in_flight = self.write_for(&hold.lease, clock);
            }
            let span = self.between(self.ttl_ns.saturating_add(1), self.ttl_ns.saturating_mul(4));
            worker.asleep_until = self.now.saturating_add(span);
            self.report.pauses = self.report.pauses.saturating_add(1);
        } else if roll < ROTATE {
            match self.table.reacquire(&resource, worker.owner, at(clock), self.ttl) {
                TableDecision::Granted(lease) => {
                    hold.holder.reacquire(lease.token(), at(self.now));
                    self.report.rotations = self.report.rotations.saturating_add(1);
                    self.granted(resource, worker.owner);
                    worker.in_flight = worker.last_write.take();
                    hold.lease = lease;
                    self.write(worker, &hold, clock);
                }
                TableDecision::Rejected(rejection) if self.refused(rejection) => {
                    self.lost(hold);
                    return;
                }
                _ => {}
            }
        } else if roll < TRANSFER {
            let target = self.between(1, self.config.workers.saturating_sub(1));
            let target = index.wrapping_add(target).checked_rem(self.config.workers).unwrap_or(0);
            let now = self.now;
            let ready = usize::try_from(target)
                .ok()
                .and_then(|target| self.workers.get(target))
                .is_some_and(|other| other.hold.is_none() && other.asleep_until <= now);
            if ready {
                let new_owner = OwnerId::new(target.saturating_add(1));
                match self.table.transfer(&resource, worker.owner, token, new_owner, at(clock), self.ttl) {
                    TableDecision::Transferred(lease) => {
                        self.report.transfers = self.report.transfers.saturating_add(1);
                        self.granted(resource, new_owner);
                        let handed = Hold { holder: Holder::new(lease.token(), at(now), self.cadence), lease };
                        if let Some(other) =
                            usize::try_from(target).ok().and_then(|target| self.workers.get_mut(target))
                        {
                            other.hold = Some(handed);
                            other.last_write = None;
                        }
                        worker.in_flight = worker.last_write.take();
                        hold.holder.expire();
                        return;
                    }
                    TableDecision::Rejected(rejection) if self.refused(rejection) => {
                        self.lost(hold);
                        return;
                    }
                    _ => {}
                }
            }
        } else if roll < RELEASE {
            match self.table.release(&resource, worker.owner, token, at(clock)) {
                TableDecision::Released => {
                    self.report.releases = self.report.releases.saturating_add(1);
                    hold.holder.expire();
                    return;
                }
                TableDecision::Rejected(rejection) if self.refused(rejection) => {
                    self.lost(hold);
                    return;
                }
                _ => {}
            }
        } else {
            self.write(worker, &hold, clock);
        }
        worker.hold = Some(hold);
    }

    /// The worker writes now, if its `Holder` is not at risk and its lease is live on its own clock.
    fn write(&mut self, worker: &mut Worker, hold: &Hold, clock: u64) {
        if hold.holder.at_risk(at(self.now)) {
            return;
        }
        if let Some(write) = self.write_for(&hold.lease, clock) {
            self.deliver(&write);
            worker.last_write = Some(write);
        }
    }

    fn idle_turn(&mut self, worker: &mut Worker, clock: u64) {
        let roll = self.below(1024);
        let resource = self.below(self.config.resources);
        if roll < ACQUIRE {
            match self.table.acquire(&resource, worker.owner, at(clock), self.ttl) {
                TableDecision::Granted(lease) => {
                    self.report.leases_acquired = self.report.leases_acquired.saturating_add(1);
                    self.granted(resource, worker.owner);
                    let holder = Holder::new(lease.token(), at(self.now), self.cadence);
                    worker.last_write = None;
                    worker.hold = Some(Hold { lease, holder });
                }
                TableDecision::Rejected(rejection) => {
                    self.refused(rejection);
                }
                _ => {}
            }
        } else if roll < REAP {
            match self.table.reap(&resource, at(clock)) {
                TableDecision::Reaped => self.report.reaps = self.report.reaps.saturating_add(1),
                TableDecision::Rejected(rejection) => {
                    self.refused(rejection);
                }
                _ => {}
            }
        }
    }

    fn failover_cycle(&mut self) {
        let resource = self.below(self.config.resources);
        let Some(slot) = usize::try_from(resource).ok().and_then(|index| self.incumbents.get_mut(index)) else {
            return;
        };
        let current = match slot.take() {
            Some(incumbent) => Some(incumbent),
            None => {
                let worker = self.below(self.config.workers);
                self.take_over(resource, worker)
            }
        };
        let next = match current {
            Some(incumbent) => self.fail_over(resource, incumbent),
            None => None,
        };
        if let Some(slot) = usize::try_from(resource).ok().and_then(|index| self.incumbents.get_mut(index)) {
            *slot = next;
        }
        let step = self.below(self.ttl_part(4).saturating_add(1));
        self.advance(step);
    }

    /// `worker` acquires `resource` at the true time and writes.
    fn take_over(&mut self, resource: u64, worker: u64) -> Option<Incumbent> {
        let owner = OwnerId::new(worker.saturating_add(1));
        let lease = match self.table.acquire(&resource, owner, at(self.now), self.ttl) {
            TableDecision::Granted(lease) => lease,
            TableDecision::Rejected(rejection) => {
                self.refused(rejection);
                return None;
            }
            _ => return None,
        };
        self.report.leases_acquired = self.report.leases_acquired.saturating_add(1);
        self.granted(resource, owner);
        if let Some(write) = self.write_for(&lease, self.now) {
            self.deliver(&write);
        }
        Some(Incumbent { worker, hold: Hold { holder: Holder::new(lease.token(), at(self.now), self.cadence), lease } })
    }

    /// One failover: the incumbent's delayed write, expiry, a takeover by another worker, the stale write refused.
    fn fail_over(&mut self, resource: u64, mut incumbent: Incumbent) -> Option<Incumbent> {
        // The write started at the grant (or renewal) and stalled: with several resources, the lease may have
        // expired already while other resources failed over.
        let started = u64::try_from(incumbent.hold.lease.issued_at().as_nanos()).unwrap_or(u64::MAX);
        let delayed = self.write_for(&incumbent.hold.lease, started);
        let expires_at = u64::try_from(incumbent.hold.lease.expires_at().as_nanos()).unwrap_or(u64::MAX);
        let jitter = self.below(self.ttl_part(2).saturating_add(1));
        self.now = self.now.max(expires_at).saturating_add(jitter);
        let others = self.config.workers.saturating_sub(1);
        let pick = self.between(1, others);
        let successor = incumbent.worker.wrapping_add(pick).checked_rem(self.config.workers).unwrap_or(0);
        let next = self.take_over(resource, successor);
        if let Some(write) = delayed {
            self.deliver(&write);
        }
        let owner = OwnerId::new(incumbent.worker.saturating_add(1));
        if incumbent.hold.holder.renewal_due(at(self.now)) {
            incumbent.hold.holder.refresh(at(self.now));
            let token = incumbent.hold.lease.token();
            match self.table.renew(&resource, owner, token, at(self.now), self.ttl) {
                TableDecision::Renewed(lease) => {
                    incumbent.hold.holder.confirm(lease.token(), at(self.now));
                    self.report.renewals = self.report.renewals.saturating_add(1);
                }
                TableDecision::Rejected(rejection) => {
                    if self.refused(rejection) {
                        self.lost(incumbent.hold);
                    }
                }
                _ => self.lost(incumbent.hold),
            }
        }
        next
    }

    fn finish(mut self) -> SimulationReport {
        self.ledger.absorb(self.table.sink_mut());
        for resource in 0..self.config.resources {
            let last = self.table.last_issued(&resource).map_or(0, |token| token.value());
            self.report.final_token = self.report.final_token.max(last);
        }
        self.report.events = self.ledger.events;
        self.report.audit_findings = self.ledger.findings;
        self.report.audit_valid = self.ledger.findings == 0 && !self.ledger.lost;
        self.report.event_digest = self.ledger.digest;
        self.report
    }
}

#[cfg(feature = "serde")]
mod json {
    //! The report's stable JSON document (format 1).

    use alloc::string::{String, ToString};
    use core::time::Duration;

    use serde::{Deserialize, Serialize};

    use super::{FenceMode, Scenario, SimulationConfig, SimulationReport};
    use crate::json::{Json, JsonError, FORMAT};
    use crate::ClockPolicy;

    #[derive(Serialize, Deserialize)]
    #[serde(deny_unknown_fields)]
    struct ConfigWire {
        seed: u64,
        cycles: u64,
        workers: u64,
        resources: u64,
        ttl_ns: u128,
        scenario: String,
        clock_policy: String,
        restore_every: u64,
        fence: String,
    }

    #[derive(Serialize, Deserialize)]
    #[serde(deny_unknown_fields)]
    struct ReportWire {
        format: u64,
        config: ConfigWire,
        cycles: u64,
        leases_acquired: u64,
        rotations: u64,
        transfers: u64,
        renewals: u64,
        releases: u64,
        reaps: u64,
        takeovers: u64,
        leases_lost: u64,
        pauses: u64,
        clock_steps_back: u64,
        clock_rejections: u64,
        restores: u64,
        writes_accepted: u64,
        stale_writes_rejected: u64,
        late_writes_accepted: u64,
        final_token: u64,
        events: u64,
        audit_valid: bool,
        audit_findings: u64,
        violations: u64,
        event_digest: u64,
    }

    #[derive(Deserialize)]
    struct Version {
        format: u64,
    }

    const fn policy_name(policy: ClockPolicy) -> &'static str {
        match policy {
            ClockPolicy::Reject => "reject",
            ClockPolicy::Clamp => "clamp",
        }
    }

    fn policy_named(name: &str) -> Option<ClockPolicy> {
        [ClockPolicy::Reject, ClockPolicy::Clamp].into_iter().find(|policy| policy_name(*policy) == name)
    }

    fn invalid(message: &str, name: &str) -> JsonError {
        JsonError::Invalid(alloc::format!("{message} {name:?}"))
    }

    /// The document `{"format": 1, "config": {...}, "cycles": ..., ..., "event_digest": ...}`: every field of the
    /// report in declaration order, the configuration's `ttl` as `ttl_ns` (integer nanoseconds) and its scenario,
    /// clock policy and fence mode by their snake_case names. A reader refuses a configuration
    /// [`SimulationConfig::validate`] refuses, and an `audit_valid` of true with findings.
    impl Json for SimulationReport {
        fn to_json(&self) -> String {
            let config = &self.config;
            let wire = ReportWire {
                format: FORMAT,
                config: ConfigWire {
                    seed: config.seed,
                    cycles: config.cycles,
                    workers: config.workers,
                    resources: config.resources,
                    ttl_ns: config.ttl.as_nanos(),
                    scenario: config.scenario.as_str().into(),
                    clock_policy: policy_name(config.clock_policy).into(),
                    restore_every: config.restore_every,
                    fence: config.fence.as_str().into(),
                },
                cycles: self.cycles,
                leases_acquired: self.leases_acquired,
                rotations: self.rotations,
                transfers: self.transfers,
                renewals: self.renewals,
                releases: self.releases,
                reaps: self.reaps,
                takeovers: self.takeovers,
                leases_lost: self.leases_lost,
                pauses: self.pauses,
                clock_steps_back: self.clock_steps_back,
                clock_rejections: self.clock_rejections,
                restores: self.restores,
                writes_accepted: self.writes_accepted,
                stale_writes_rejected: self.stale_writes_rejected,
                late_writes_accepted: self.late_writes_accepted,
                final_token: self.final_token,
                events: self.events,
                audit_valid: self.audit_valid,
                audit_findings: self.audit_findings,
                violations: self.violations,
                event_digest: self.event_digest,
            };
            // Serialising this plain struct into a String cannot fail.
            serde_json::to_string(&wire).unwrap_or_default()
        }

        fn from_json(text: &str) -> Result<Self, JsonError> {
            let version: Version = serde_json::from_str(text).map_err(|error| JsonError::Syntax(error.to_string()))?;
            if version.format != FORMAT {
                return Err(JsonError::UnsupportedFormat(version.format));
            }
            let wire: ReportWire = serde_json::from_str(text).map_err(|error| JsonError::Syntax(error.to_string()))?;
            let ttl_ns = u64::try_from(wire.config.ttl_ns)
                .map_err(|_| JsonError::Invalid("ttl_ns is beyond 2^64 nanoseconds".into()))?;
            let config = SimulationConfig {
                seed: wire.config.seed,
                cycles: wire.config.cycles,
                workers: wire.config.workers,
                resources: wire.config.resources,
                ttl: Duration::from_nanos(ttl_ns),
                scenario: Scenario::from_name(&wire.config.scenario)
                    .ok_or_else(|| invalid("unknown scenario", &wire.config.scenario))?,
                clock_policy: policy_named(&wire.config.clock_policy)
                    .ok_or_else(|| invalid("unknown clock policy", &wire.config.clock_policy))?,
                restore_every: wire.config.restore_every,
                fence: FenceMode::from_name(&wire.config.fence)
                    .ok_or_else(|| invalid("unknown fence mode", &wire.config.fence))?,
            };
            config.validate().map_err(|error| JsonError::Invalid(error.to_string()))?;
            if wire.audit_valid && wire.audit_findings > 0 {
                return Err(JsonError::Invalid("\"audit_valid\" cannot be true with audit findings".into()));
            }
            Ok(SimulationReport {
                config,
                cycles: wire.cycles,
                leases_acquired: wire.leases_acquired,
                rotations: wire.rotations,
                transfers: wire.transfers,
                renewals: wire.renewals,
                releases: wire.releases,
                reaps: wire.reaps,
                takeovers: wire.takeovers,
                leases_lost: wire.leases_lost,
                pauses: wire.pauses,
                clock_steps_back: wire.clock_steps_back,
                clock_rejections: wire.clock_rejections,
                restores: wire.restores,
                writes_accepted: wire.writes_accepted,
                stale_writes_rejected: wire.stale_writes_rejected,
                late_writes_accepted: wire.late_writes_accepted,
                final_token: wire.final_token,
                events: wire.events,
                audit_valid: wire.audit_valid,
                audit_findings: wire.audit_findings,
                violations: wire.violations,
                event_digest: wire.event_digest,
            })
        }
    }
}

#[cfg(test)]
mod tests {
    use alloc::vec;
    use alloc::vec::Vec;
    use core::time::Duration;

    use super::Ledger;
    use crate::{audit, Event, EventKind, EventLog, EventSink, FencingToken, OwnerId};

    fn event(
        resource: u64,
        kind: EventKind,
        at: u64,
        owner: u64,
        token: u64,
        revision: u64,
        expires: u64,
    ) -> Event<u64> {
        Event {
            resource,
            kind,
            at: Duration::from_secs(at),
            owner: OwnerId::new(owner),
            token: FencingToken::new(token).expect("test tokens are non-zero"),
            revision,
            expires_at: Duration::from_secs(expires),
            term: None,
            replaced: None,
        }
    }

    /// Findings and digest of `events` absorbed in two batches split at `split`.
    fn in_two_batches(events: &[Event<u64>], split: usize) -> (u64, u64) {
        let mut ledger = Ledger::new(2);
        let mut log = EventLog::new(events.len());
        for (index, event) in events.iter().enumerate() {
            if index == split {
                ledger.absorb(&mut log);
            }
            log.record(event.clone());
        }
        ledger.absorb(&mut log);
        assert_eq!(ledger.events, events.len() as u64);
        (ledger.findings, ledger.digest)
    }

    /// A valid history, then one more event: audited batch by batch, wherever the batches split, the ledger finds
    /// what one audit of the whole history finds.
    #[test]
    fn batches_are_audited_as_one_history() {
        use EventKind::{Acquired, Reaped, Released, Renewed};
        let valid = vec![
            event(0, Acquired, 0, 1, 1, 1, 10),
            event(1, Acquired, 1, 2, 1, 1, 11),
            event(0, Renewed, 2, 1, 1, 2, 12),
            event(0, Released, 3, 1, 1, 3, 12),
            event(1, Renewed, 4, 2, 1, 2, 14),
        ];
        let last = [
            (event(0, Acquired, 5, 2, 2, 4, 15), 0),
            (event(0, Acquired, 5, 2, 1, 4, 15), 1), // token not rising after a release
            (event(1, Acquired, 5, 3, 2, 3, 15), 1), // granted while live
            (event(0, Acquired, 2, 2, 2, 4, 12), 1), // time backwards
            (event(1, Reaped, 5, 2, 1, 3, 14), 1),   // reaped before expiry
            (event(1, Renewed, 5, 2, 1, 2, 20), 1),  // revision not rising
            (event(1, Renewed, 5, 2, 1, 3, 13), 1),  // renewal shortened
            (event(1, Released, 5, 3, 1, 3, 14), 1), // another owner's lease released
        ];
        for (extra, expected) in last {
            let mut events = valid.clone();
            events.push(extra);
            let whole = audit(&events).findings.len() as u64;
            assert_eq!(whole, expected, "{events:?}");
            let (_, digest) = in_two_batches(&events, 0);
            for split in 0..=events.len() {
                assert_eq!(in_two_batches(&events, split), (whole, digest), "split at {split}: {events:?}");
            }
        }
        let other: Vec<Event<u64>> = valid.iter().rev().cloned().collect();
        assert_ne!(in_two_batches(&other, 0).1, in_two_batches(&valid, 0).1);
    }
}
