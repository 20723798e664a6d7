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
