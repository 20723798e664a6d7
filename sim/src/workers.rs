//! The workers: each owner's [`Tenure`] of a lease, and the contention scenario's [`Worker`].

use core::time::Duration;

use lease_machines::{Cadence, FencedWrite, Holder, OwnerId, TableLease};

/// A lease as the worker that holds it sees it: the table's lease and the worker's own [`Holder`] for it, which says
/// when to renew and when the lease is at risk.
#[derive(Debug, Clone)]
pub(crate) struct Tenure {
    pub(crate) lease: TableLease<u64>,
    pub(crate) holder: Holder,
}

impl Tenure {
    /// The tenure of `lease`, just granted at `now` (the true time).
    pub(crate) fn granted(lease: TableLease<u64>, now: Duration, cadence: Cadence) -> Self {
        Self { holder: Holder::new(lease.token(), now, cadence), lease }
    }
}

/// One contending worker (in the contention scenario).
#[derive(Debug, Clone)]
pub(crate) struct Worker {
    pub(crate) owner: OwnerId,
    pub(crate) tenure: Option<Tenure>,
    /// Paused until this instant (true time).
    pub(crate) asleep_until: Duration,
    /// A write to deliver at the start of the worker's next turn.
    pub(crate) in_flight: Option<FencedWrite<u64, u64>>,
    /// The last write the worker made, re-delivered after a rotation or a transfer.
    pub(crate) last_write: Option<FencedWrite<u64, u64>>,
    /// How far behind the true time the worker's clock is.
    pub(crate) lag: Duration,
}

impl Worker {
    pub(crate) const fn new(owner: OwnerId) -> Self {
        Self {
            owner,
            tenure: None,
            asleep_until: Duration::ZERO,
            in_flight: None,
            last_write: None,
            lag: Duration::ZERO,
        }
    }
}
