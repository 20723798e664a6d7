//! The whole state of one authority, for storage and restore.

use core::time::Duration;

use crate::{FencingToken, Lease};

/// Everything a [`LeaseAuthority`](crate::LeaseAuthority) knows: the greatest token it ever issued, the current lease
/// record, and the clock watermark.
///
/// A checkpoint is how an authority survives a restart: store its three parts in the same transaction as the decision
/// that produced them, and rebuild with [`LeaseAuthority::restore`](crate::LeaseAuthority::restore). The restored
/// authority decides every later request exactly as the original would have. The clock policy is configuration, not
/// state, and is not part of a checkpoint.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct Checkpoint {
    last_issued: Option<FencingToken>,
    lease: Option<Lease>,
    observed: Duration,
}

impl Checkpoint {
    /// A checkpoint rebuilt from stored parts, or `None` when the parts cannot come from one history.
    ///
    /// - `last_issued`: the token high-water, the greatest token ever issued (`None` if none was). Keep it after the
    ///   lease is released; it is what makes the next token greater.
    /// - `lease`: the current lease record, live or expired, or `None` when vacant.
    /// - `observed`: the clock watermark, a [`Duration`] from the history's origin. [`Duration::ZERO`] when storage
    ///   keeps none: the authority then accepts whatever `now` the next request brings.
    ///
    /// Refused (returns `None`): a lease whose token the history never issued, that is a lease with no `last_issued`,
    /// or with a token greater than `last_issued`.
    #[must_use]
    pub const fn from_parts(
        last_issued: Option<FencingToken>,
        lease: Option<Lease>,
        observed: Duration,
    ) -> Option<Self> {
        if let Some(lease) = lease {
            match last_issued {
                Some(high_water) if lease.token().value() <= high_water.value() => {}
                _ => return None,
            }
        }
        Some(Self { last_issued, lease, observed })
    }

    /// A checkpoint of a running authority, whose parts are consistent by construction.
    pub(crate) const fn from_state(
        last_issued: Option<FencingToken>,
        lease: Option<Lease>,
        observed: Duration,
    ) -> Self {
        Self { last_issued, lease, observed }
    }

    /// The same lease record and watermark with the high-water `floor`: a token epoch's floor, above this one's
    /// (see [`LeaseRow::in_epoch`](crate::LeaseRow::in_epoch)); the lease's token stays at most the high-water.
    pub(crate) const fn raised_to(self, floor: FencingToken) -> Self {
        Self { last_issued: Some(floor), ..self }
    }

    /// The greatest token ever issued, or `None` when the history has issued none.
    #[must_use]
    pub const fn last_issued(&self) -> Option<FencingToken> {
        self.last_issued
    }

    /// Whether this history issued `token`: true iff some token was issued and `token` is at most the high-water
    /// (tokens are issued 1, 2, 3, ... with none skipped). A token above it was never granted by this history: made
    /// up, or from another one.
    #[must_use]
    pub const fn issued(&self, token: FencingToken) -> bool {
        match self.last_issued {
            Some(high_water) => token.value() <= high_water.value(),
            None => false,
        }
    }

    /// The current lease record (live or expired), or `None` when vacant.
    #[must_use]
    pub const fn lease(&self) -> Option<Lease> {
        self.lease
    }

    /// The clock watermark: the latest `now` the authority observed, as a [`Duration`] from the history's origin.
    #[must_use]
    pub const fn observed(&self) -> Duration {
        self.observed
    }
}
