//! Many resources, one decision engine: the [`LeaseTable`], its state, and where each part of it lives.
//!
//! - `builders`: making a table (empty, restored from a checkpoint) and its settings (sink, clock policy, rounding).
//! - `queries`: what a table says without changing (leases, revisions, tokens, terms, its checkpoint, its metrics).
//! - `command`: the commands that change it (acquire, renew, transfer, ...), as methods and as [`Command`] values.
//! - `engine`: how every command is decided: the checks, then the change, the event and the counters.
//! - `store`: where the resources are kept (dense, with a hash index) and how a resource's [`Slot`] is read and
//!   written.
//! - `audit`, `event`, `lease`, `metrics`, `state`: what a table hands out and takes back.

mod audit;
mod builders;
mod command;
mod engine;
mod event;
mod lease;
mod metrics;
mod queries;
mod state;
mod store;

use core::time::Duration;

use crate::{Event, EventKind};

pub use audit::{audit, AuditReport, Finding, FindingCode};
pub use command::{BatchResult, Command, TimedCommand};
pub use event::{Discard, EventLog, EventSink};
pub use lease::TableLease;
pub use metrics::{Metrics, MetricsIssue};
pub use state::{validate_record, IssueCode, LeaseRecord, ResourceRecord, StateIssue, TableCheckpoint};

use crate::{ClockPolicy, FencingToken, Lease, Rejection};

/// The answer to every [`LeaseTable`] command. Refusals are values, as with [`Decision`](crate::Decision).
#[must_use = "a decision says whether the caller holds the lease; ignoring it is how stale writers happen"]
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum TableDecision<R> {
    /// A new lease with a fresh token ([`acquire`](LeaseTable::acquire), [`reacquire`](LeaseTable::reacquire)).
    Granted(TableLease<R>),
    /// The lease, same token, expiring at `max(expires_at, now + ttl)` ([`renew`](LeaseTable::renew)).
    Renewed(TableLease<R>),
    /// The new owner's lease, with a fresh token ([`transfer`](LeaseTable::transfer)).
    Transferred(TableLease<R>),
    /// The lease was given back ([`release`](LeaseTable::release)).
    Released,
    /// The expired lease record was dropped ([`reap`](LeaseTable::reap)).
    Reaped,
    /// Refused; the resource is unchanged.
    Rejected(Rejection),
}

impl<R> TableDecision<R> {
    /// The lease a grant, renewal or transfer carries.
    #[must_use]
    pub const fn lease(&self) -> Option<&TableLease<R>> {
        match self {
            Self::Granted(lease) | Self::Renewed(lease) | Self::Transferred(lease) => Some(lease),
            Self::Released | Self::Reaped | Self::Rejected(_) => None,
        }
    }

    /// The reason of a refusal; `None` when the command was accepted.
    #[must_use]
    pub const fn rejection(&self) -> Option<Rejection> {
        match self {
            Self::Rejected(rejection) => Some(*rejection),
            _ => None,
        }
    }

    /// Whether the command was accepted.
    #[must_use]
    pub const fn is_accepted(&self) -> bool {
        !matches!(self, Self::Rejected(_))
    }
}

/// One resource's state, as the engine reads and writes it (the store keeps it packed, see `store`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
struct Slot {
    last_issued: Option<FencingToken>,
    revision: u64,
    term: Option<u64>,
    stored: Option<StoredLease>,
}

/// The lease a slot stores, live or expired (its resource is the key, its revision the slot's).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
struct StoredLease {
    lease: Lease,
    issued_at: Duration,
    term: Option<u64>,
}

impl Slot {
    fn lease(&self) -> Option<Lease> {
        self.stored.map(|stored| stored.lease)
    }

    /// The slot's lease record as a [`TableLease`] of `resource`.
    fn table_lease<R: Clone>(&self, resource: &R) -> Option<TableLease<R>> {
        self.stored
            .map(|stored| TableLease::new(resource.clone(), stored.lease, stored.issued_at, self.revision, stored.term))
    }
}

/// The running totals behind [`Metrics`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
struct Counters {
    events: u64,
    accepted: u64,
    rejected: u64,
    rejections: [u64; Rejection::ALL.len()],
    holder_transitions: u64,
}

/// Leases on many resources, decided by the same rules as a [`LeaseAuthority`](crate::LeaseAuthority), with a
/// revision per resource, transfers, reaping, batches, audit events and metrics.
///
/// Each resource (any `R: Ord + Hash + Clone`, such as a `String` name) has its own token namespace, kept for good once the
/// resource has been granted: tokens start at 1 and rise by one per grant, never reused after a release or a reap.
/// Each resource also has a **revision**, raised by one on every accepted change, which callers can use as a
/// compare-and-set precondition ([`acquire_at_revision`](Self::acquire_at_revision)). The table has one clock
/// watermark for all resources, the latest instant an accepted command was decided at, with the authority's
/// [`ClockPolicy`] rules for a `now` before it.
///
/// Every command checks, in order: the clock, the TTL, the precondition (revision, election), the lease record,
/// and that the token and the revision can still rise. A rejected command changes nothing at all: no resource, no
/// event, and, unlike a [`LeaseAuthority`](crate::LeaseAuthority), not the watermark either, so one caller's bad
/// request (a far-future `now` with a zero TTL, say) cannot refuse every other resource's callers. Once a resource
/// has had a leadership lease, only [`acquire_leadership`](Self::acquire_leadership) grants it
/// ([`Rejection::LeadershipRequired`] for a plain grant or a transfer). An accepted command changes one
/// resource and sends one [`Event`] to the sink `S` ([`EventLog`] by default). Nothing reads a clock or panics.
///
/// A command costs O(1) (expected) in the number of resources: resources are kept densely in the order they were
/// first granted, behind a hash index with a fixed seed (so the table is as deterministic as its inputs), and only
/// held resources have a lease record. What is reported in resource order ([`live_leases`](Self::live_leases),
/// [`reap_expired`](Self::reap_expired), [`checkpoint`](Self::checkpoint)) is sorted on the way out: O(n log n),
/// O(n) when the resources were first granted in resource order (or restored). A table holds at most
/// `u32::MAX` resources; a grant to a new resource beyond that is refused with
/// [`Rejection::TokenSpaceExhausted`].
#[derive(Debug, Clone)]
pub struct LeaseTable<R, S = EventLog<R>> {
    resources: store::Store<R>,
    observed: Duration,
    clock_policy: ClockPolicy,
    round_up: Option<fn(Duration) -> Duration>,
    sink: S,
    counters: Counters,
}
