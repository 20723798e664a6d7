//! What the core's test files share: times in whole seconds, tokens and owners by number.
#![allow(dead_code, reason = "each test file uses some of these")]

use core::time::Duration;

use lease_machines::{FencingToken, OwnerId};

pub const A: OwnerId = OwnerId::new(1);
pub const B: OwnerId = OwnerId::new(2);
pub const C: OwnerId = OwnerId::new(3);

/// `secs` seconds.
pub fn s(secs: u64) -> Duration {
    Duration::from_secs(secs)
}

/// The token numbered `value` (never 0).
pub fn token(value: u64) -> FencingToken {
    FencingToken::new(value).expect("test tokens are non-zero")
}

// ---------------------------------------------------------------------------------------------------------------
// What the state-machine models (authority, fence, holder) share
// ---------------------------------------------------------------------------------------------------------------

/// The greatest `Duration`, in nanoseconds: model times saturate there.
pub const MAX_NS: u128 = Duration::MAX.as_nanos();

/// The most steps in one model sequence: `LEASE_MACHINES_MODEL_STEPS`, default 64. With CI's `PROPTEST_CASES=4000`
/// sequences of 1 to 64 steps, over 100,000 steps per test.
pub fn max_steps() -> usize {
    std::env::var("LEASE_MACHINES_MODEL_STEPS").ok().and_then(|steps| steps.parse().ok()).unwrap_or(64)
}

/// proptest's defaults (so `PROPTEST_CASES` applies), with failing cases kept in `regressions` (a path from `core/`,
/// such as `proptest-regressions/fence_model.txt`) and replayed first on every later run.
pub fn model_config(regressions: &'static str) -> proptest::test_runner::Config {
    proptest::test_runner::Config {
        failure_persistence: Some(Box::new(proptest::test_runner::FileFailurePersistence::Direct(regressions))),
        ..proptest::test_runner::Config::default()
    }
}

/// `duration` in whole nanoseconds.
pub fn ns(duration: Duration) -> u128 {
    duration.as_nanos()
}

/// The `Duration` of `nanos` nanoseconds (at most `MAX_NS`).
pub fn duration(nanos: u128) -> Duration {
    let secs = u64::try_from(nanos / 1_000_000_000).expect("model times stay within Duration");
    Duration::new(secs, u32::try_from(nanos % 1_000_000_000).expect("below one second"))
}
