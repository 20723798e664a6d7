//! Table commands as values, for batches and for replaying stored requests.

use alloc::vec::Vec;
use core::time::Duration;

use crate::{FencingToken, OwnerId, TableDecision};

/// One request to a [`LeaseTable`](crate::LeaseTable), as a value. [`LeaseTable::apply`](crate::LeaseTable::apply)
/// decides it exactly as the method of the same name would.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Command<R> {
    /// [`LeaseTable::acquire`](crate::LeaseTable::acquire), or with `expected_revision`,
    /// [`LeaseTable::acquire_at_revision`](crate::LeaseTable::acquire_at_revision).
    Acquire {
        /// The resource.
        resource: R,
        /// Who asks.
        owner: OwnerId,
        /// How long the lease lasts.
        ttl: Duration,
        /// The compare-and-set precondition, if any: the revision the caller last saw.
        expected_revision: Option<u64>,
    },
    /// [`LeaseTable::reacquire`](crate::LeaseTable::reacquire).
    Reacquire {
        /// The resource.
        resource: R,
        /// Who asks.
        owner: OwnerId,
        /// How long the new lease lasts.
        ttl: Duration,
    },
    /// [`LeaseTable::renew`](crate::LeaseTable::renew).
    Renew {
        /// The resource.
        resource: R,
        /// The holder.
        owner: OwnerId,
        /// The holder's token.
        token: FencingToken,
        /// How long from `now` the lease lasts at least.
        ttl: Duration,
    },
    /// [`LeaseTable::release`](crate::LeaseTable::release).
    Release {
        /// The resource.
        resource: R,
        /// The holder.
        owner: OwnerId,
        /// The holder's token.
        token: FencingToken,
    },
    /// [`LeaseTable::transfer`](crate::LeaseTable::transfer).
    Transfer {
        /// The resource.
        resource: R,
        /// The holder handing the lease over.
        owner: OwnerId,
        /// The holder's token.
        token: FencingToken,
        /// Who receives the lease.
        new_owner: OwnerId,
        /// How long the new owner's lease lasts.
        ttl: Duration,
    },
    /// [`LeaseTable::reap`](crate::LeaseTable::reap).
    Reap {
        /// The resource.
        resource: R,
    },
}

impl<R> Command<R> {
    /// The resource the command is for.
    #[must_use]
    pub const fn resource(&self) -> &R {
        match self {
            Self::Acquire { resource, .. }
            | Self::Reacquire { resource, .. }
            | Self::Renew { resource, .. }
            | Self::Release { resource, .. }
            | Self::Transfer { resource, .. }
            | Self::Reap { resource } => resource,
        }
    }
}

/// A [`Command`] and the instant it is decided at, a [`Duration`] from the table's clock origin.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct TimedCommand<R> {
    /// The request.
    pub command: Command<R>,
    /// Its `now`.
    pub at: Duration,
}

/// What [`LeaseTable::apply_batch`](crate::LeaseTable::apply_batch) returns: every decision, in the order of the
/// commands, and how many were accepted and rejected.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct BatchResult<R> {
    /// One decision per command, in order.
    pub decisions: Vec<TableDecision<R>>,
    /// How many decisions accepted their command.
    pub accepted: usize,
    /// How many decisions rejected theirs.
    pub rejected: usize,
}
