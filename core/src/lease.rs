//! One grant: who, which token, until when.

use core::time::Duration;

use crate::{FencingToken, OwnerId};

/// A granted lease: an owner, the fencing token of the grant, and the instant it expires.
///
/// `expires_at` is a [`Duration`] from the clock origin the caller chose for the authority's history (a monotonic
/// start, or the Unix epoch for a database's wall clock). The lease is live at every instant `now < expires_at` and
/// expired from `now >= expires_at` on: the expiry instant itself already belongs to the next owner.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Lease {
    owner: OwnerId,
    token: FencingToken,
    expires_at: Duration,
}

impl Lease {
    /// A lease record, as read back from storage. Building one grants nothing: only an authority grants, and
    /// [`Checkpoint::from_parts`](crate::Checkpoint::from_parts) refuses a lease whose token its history never issued.
    #[must_use]
    pub const fn new(owner: OwnerId, token: FencingToken, expires_at: Duration) -> Self {
        Self { owner, token, expires_at }
    }

    /// The owner the lease was granted to.
    #[must_use]
    pub const fn owner(&self) -> OwnerId {
        self.owner
    }

    /// The fencing token of the grant. Renewal keeps it; every new grant gets a greater one.
    #[must_use]
    pub const fn token(&self) -> FencingToken {
        self.token
    }

    /// The instant the lease expires, as a [`Duration`] from the history's clock origin.
    #[must_use]
    pub const fn expires_at(&self) -> Duration {
        self.expires_at
    }

    /// Whether the lease is live at `now`: `now < expires_at`.
    #[must_use]
    #[inline]
    pub fn is_live(&self, now: Duration) -> bool {
        crate::rules::before(now, self.expires_at)
    }

    /// The same lease expiring at `max(expires_at, deadline)`: a renewal, never shorter.
    #[inline]
    pub(crate) const fn extended(self, deadline: Duration) -> Self {
        Self { expires_at: crate::rules::later(self.expires_at, deadline), ..self }
    }

    /// Time left at `now`: `expires_at - now`, or [`Duration::ZERO`] once expired.
    #[must_use]
    pub fn remaining(&self, now: Duration) -> Duration {
        self.expires_at.saturating_sub(now)
    }
}
