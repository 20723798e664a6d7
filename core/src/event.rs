//! What an accepted change to a resource is, as the audit reads it: the record a lease table logs, and a store
//! writes to its event log, for every change it commits.

use core::fmt;
use core::time::Duration;

use crate::{FencingToken, Lease, OwnerId};

/// Which change an [`Event`] records.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum EventKind {
    /// A new lease was granted on a resource no lease was live on (any grant: a table's
    /// `acquire`, and its `reacquire` or `acquire_leadership` when nothing was live; a store's acquire, also the
    /// takeover of an expired lease, whose record is then the event's `replaced`).
    Acquired,
    /// The holder of the live lease rotated it to a new token (`reacquire`, or a table's
    /// `acquire_leadership` for a re-elected holder).
    Reacquired,
    /// The live lease was extended, same token (`renew`).
    Renewed,
    /// The holder gave the lease back (`release`; a store's `revoke` too, for the holder).
    Released,
    /// The holder handed the lease to another owner, who got a new token (`transfer`).
    Transferred,
    /// An expired lease record was dropped (a table's `reap`).
    Reaped,
}

impl EventKind {
    /// Every kind, in declaration order.
    pub const ALL: [Self; 6] =
        [Self::Acquired, Self::Reacquired, Self::Renewed, Self::Released, Self::Transferred, Self::Reaped];

    /// The kind's stable snake_case name (`"transferred"`), used in JSON and as a Ruby Symbol.
    #[must_use]
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Acquired => "acquired",
            Self::Reacquired => "reacquired",
            Self::Renewed => "renewed",
            Self::Released => "released",
            Self::Transferred => "transferred",
            Self::Reaped => "reaped",
        }
    }

    /// The kind named `name`, as [`as_str`](Self::as_str) spells it.
    #[must_use]
    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|kind| kind.as_str() == name)
    }

    /// Whether the change issues a new fencing token.
    #[must_use]
    pub const fn grants(self) -> bool {
        matches!(self, Self::Acquired | Self::Reacquired | Self::Transferred)
    }
}

impl fmt::Display for EventKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One accepted change to one resource of a lease table (feature `alloc`) or of a store's [`LeaseRow`](crate::LeaseRow):
/// the audit record.
///
/// For a grant, transfer or renewal, `owner`, `token`, `expires_at` and `term` describe the lease as it is after the
/// change; for a release or a reap, the lease that ended. `replaced` is the lease record the change replaced, if any:
/// the expired record a new grant took over from, the rotated or transferred lease, the renewed lease with its old
/// expiry. Times are [`Duration`]s from the clock origin; `at` is the instant the change was decided at (the watermark, when
/// the [`ClockPolicy::Clamp`](crate::ClockPolicy::Clamp) moved a late request forward).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Event<R> {
    /// The resource changed.
    pub resource: R,
    /// What happened.
    pub kind: EventKind,
    /// When it was decided.
    pub at: Duration,
    /// The lease's owner.
    pub owner: OwnerId,
    /// The lease's fencing token.
    pub token: FencingToken,
    /// The resource's revision after the change.
    pub revision: u64,
    /// When the lease expires (or expired).
    pub expires_at: Duration,
    /// The election term of a leadership lease; `None` otherwise.
    pub term: Option<u64>,
    /// The lease record the change replaced, if any (the event's detail).
    pub replaced: Option<Lease>,
}
