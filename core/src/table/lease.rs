//! A lease as a table keeps it: the grant plus where and when it was made.

use core::time::Duration;

use crate::{FencedWrite, FencingToken, Lease, OwnerId};

/// A lease granted by a [`LeaseTable`](crate::LeaseTable): the core [`Lease`] (owner, fencing token, expiry) plus
/// the resource it is for, the instant it was issued, the resource's revision when it was last written, and the
/// election term it was granted for (only leadership grants have one).
///
/// Times are [`Duration`]s from the table's clock origin. The lease is live while `now < expires_at`, as every lease.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct TableLease<R> {
    resource: R,
    lease: Lease,
    issued_at: Duration,
    revision: u64,
    term: Option<u64>,
}

impl<R> TableLease<R> {
    /// A lease record as read back from storage. Building one grants nothing; a table only adopts it through a
    /// validated [`TableCheckpoint`](crate::TableCheckpoint).
    #[must_use]
    pub const fn new(resource: R, lease: Lease, issued_at: Duration, revision: u64, term: Option<u64>) -> Self {
        Self { resource, lease, issued_at, revision, term }
    }

    /// The resource the lease is for.
    #[must_use]
    pub const fn resource(&self) -> &R {
        &self.resource
    }

    /// The core lease: owner, token and expiry.
    #[must_use]
    pub const fn lease(&self) -> Lease {
        self.lease
    }

    /// The owner the lease was granted (or transferred) to.
    #[must_use]
    pub const fn owner(&self) -> OwnerId {
        self.lease.owner()
    }

    /// The fencing token of the grant.
    #[must_use]
    pub const fn token(&self) -> FencingToken {
        self.lease.token()
    }

    /// The instant the grant was made (renewals keep it), as a [`Duration`] from the table's clock origin.
    #[must_use]
    pub const fn issued_at(&self) -> Duration {
        self.issued_at
    }

    /// The instant the lease expires, as a [`Duration`] from the table's clock origin.
    #[must_use]
    pub const fn expires_at(&self) -> Duration {
        self.lease.expires_at()
    }

    /// The resource's revision when this record was written (granted or renewed). Every accepted change to a
    /// resource raises its revision by one, so the number orders the records of one resource.
    #[must_use]
    pub const fn revision(&self) -> u64 {
        self.revision
    }

    /// The election term of a leadership lease
    /// ([`LeaseTable::acquire_leadership`](crate::LeaseTable::acquire_leadership)), kept by renewals; `None` for
    /// leases granted otherwise.
    #[must_use]
    pub const fn term(&self) -> Option<u64> {
        self.term
    }

    /// Whether the lease is live at `now`: `now < expires_at`. moonleasekit calls this "active"; this crate says
    /// "live" everywhere ([`Lease::is_live`], [`Metrics::live_leases`](crate::Metrics::live_leases)).
    #[doc(alias = "is_active")]
    #[must_use]
    pub fn is_live(&self, now: Duration) -> bool {
        self.lease.is_live(now)
    }

    /// Time left at `now`: `expires_at - now`, or [`Duration::ZERO`] once expired.
    #[must_use]
    pub fn remaining(&self, now: Duration) -> Duration {
        self.lease.remaining(now)
    }

    /// A write request carrying this lease's fencing token, for a [`FenceGuard`](crate::FenceGuard) to check; `None`
    /// when the lease is not live at `now` (its holder must not start a write it can no longer justify).
    #[must_use]
    pub fn fenced_write<O>(&self, operation: O, now: Duration) -> Option<FencedWrite<R, O>>
    where
        R: Clone,
    {
        self.is_live(now).then(|| FencedWrite::new(self.resource.clone(), self.owner(), self.token(), operation))
    }
}
