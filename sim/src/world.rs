//! What every scenario runs in: the true time, the one random source every choice is drawn from, and the spans of
//! time the scenarios draw, all fractions of the TTL.

use core::time::Duration;

use rand_chacha::rand_core::{RngCore, SeedableRng};
use rand_chacha::ChaCha8Rng;

/// The true time and the random source. Nothing else in a run moves time or draws a random number, so one seed
/// gives one run.
pub(crate) struct World {
    rng: ChaCha8Rng,
    now: Duration,
}

impl World {
    /// Time zero, the generator seeded with `seed` (`ChaCha8Rng::seed_from_u64`).
    pub(crate) fn new(seed: u64) -> Self {
        Self { rng: ChaCha8Rng::seed_from_u64(seed), now: Duration::ZERO }
    }

    /// The true time.
    pub(crate) const fn now(&self) -> Duration {
        self.now
    }

    /// Moves the true time forward by `span`.
    pub(crate) fn advance(&mut self, span: Duration) {
        self.now = self.now.saturating_add(span);
    }

    /// Moves the true time to `instant` if that is later, then forward by `span`.
    pub(crate) fn advance_past(&mut self, instant: Duration, span: Duration) {
        self.now = self.now.max(instant).saturating_add(span);
    }

    /// A uniform draw from `0..n`; `0`, drawing nothing, when `n` is `0` or `1`.
    pub(crate) fn below(&mut self, n: u64) -> u64 {
        if n <= 1 {
            return 0;
        }
        let wide = u128::from(self.rng.next_u64()).wrapping_mul(u128::from(n));
        wide.wrapping_shr(64) as u64
    }

    /// A uniform draw from `low..=high`.
    pub(crate) fn between(&mut self, low: u64, high: u64) -> u64 {
        let span = high.saturating_sub(low).saturating_add(1);
        low.saturating_add(self.below(span))
    }

    /// A span drawn uniformly from `low..=high`, to the nanosecond.
    pub(crate) fn span_between(&mut self, low: Duration, high: Duration) -> Duration {
        Duration::from_nanos(self.between(nanos(low), nanos(high)))
    }

    /// A span drawn uniformly from `0..=most`, to the nanosecond.
    pub(crate) fn span_up_to(&mut self, most: Duration) -> Duration {
        Duration::from_nanos(self.below(nanos(most).saturating_add(1)))
    }
}

/// The TTL every worker asks for, and the fractions of it the scenarios use, each rounded down to the nanosecond.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Spans {
    pub(crate) ttl: Duration,
    pub(crate) half: Duration,
    pub(crate) third: Duration,
    pub(crate) quarter: Duration,
    pub(crate) eighth: Duration,
    pub(crate) sixteenth: Duration,
}

impl Spans {
    /// The spans of `ttl`, which must be at most `u64::MAX` nanoseconds (as a valid configuration's is).
    pub(crate) fn of(ttl: Duration) -> Self {
        let part = |divisor: u64| Duration::from_nanos(nanos(ttl).checked_div(divisor).unwrap_or(0));
        Self { ttl, half: part(2), third: part(3), quarter: part(4), eighth: part(8), sixteenth: part(16) }
    }
}

/// `span` in whole nanoseconds; `u64::MAX` past that, which no valid configuration's run reaches.
fn nanos(span: Duration) -> u64 {
    u64::try_from(span.as_nanos()).unwrap_or(u64::MAX)
}
