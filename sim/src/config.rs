//! What to simulate: the [`SimulationConfig`] with its [`Scenario`] and [`FenceMode`], and the [`SimulationError`]
//! that refuses a configuration no run can take.

use core::fmt;
use core::time::Duration;

use lease_machines::ClockPolicy;

#[cfg(doc)]
use {crate::simulate, lease_machines::FenceGuard};

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
