//! Making a [`LeaseTable`]: empty or restored from a checkpoint, and its settings (event sink, clock policy,
//! deadline rounding).

use core::hash::Hash;
use core::time::Duration;

use super::store::Store;
use super::{Counters, EventLog, EventSink, LeaseTable, Slot, StoredLease, TableCheckpoint};
use crate::{ClockPolicy, FencingToken, Lease, OwnerId, Rejection};

impl<R: Ord + Hash + Clone> LeaseTable<R> {
    /// An empty table, [`ClockPolicy::Reject`], watermark at zero, events kept in an [`EventLog`] of
    /// [`EventLog::DEFAULT_CAPACITY`].
    #[must_use]
    pub const fn new() -> Self {
        Self::with_sink(EventLog::new(EventLog::<R>::DEFAULT_CAPACITY))
    }

    /// An empty table whose event log keeps the newest `capacity` events.
    #[must_use]
    pub const fn with_event_capacity(capacity: usize) -> Self {
        Self::with_sink(EventLog::new(capacity))
    }

    /// A table continuing the state in `checkpoint`, with [`ClockPolicy::Reject`], an empty default event log and
    /// zeroed counters. It decides every later command as the table that produced the checkpoint would have.
    #[must_use]
    pub fn restore(checkpoint: TableCheckpoint<R>) -> Self {
        Self::new().restored(checkpoint)
    }
}

impl<R: Ord + Hash + Clone> Default for LeaseTable<R> {
    fn default() -> Self {
        Self::new()
    }
}

impl<R: Ord + Hash + Clone, S: EventSink<R>> LeaseTable<R, S> {
    /// An empty table that sends its events to `sink`.
    #[must_use]
    pub const fn with_sink(sink: S) -> Self {
        Self {
            resources: Store::new(),
            observed: Duration::ZERO,
            clock_policy: ClockPolicy::Reject,
            round_up: None,
            sink,
            counters: Counters {
                events: 0,
                accepted: 0,
                rejected: 0,
                rejections: [0; Rejection::ALL.len()],
                holder_transitions: 0,
            },
        }
    }

    /// The same table with its resources and watermark replaced by `checkpoint`'s.
    #[must_use]
    pub fn restored(mut self, checkpoint: TableCheckpoint<R>) -> Self {
        self.observed = checkpoint.observed();
        self.resources = checkpoint
            .into_records()
            .into_iter()
            .map(|record| {
                let stored = record.lease.and_then(|lease| {
                    Some(StoredLease {
                        lease: Lease::new(OwnerId::new(lease.owner), FencingToken::new(lease.token)?, lease.expires_at),
                        issued_at: lease.issued_at,
                        term: lease.term,
                    })
                });
                let last_issued = record.last_issued.and_then(FencingToken::new);
                (record.resource, Slot { last_issued, revision: record.revision, term: record.term, stored })
            })
            .collect();
        self
    }

    /// The same table sending its events to another sink.
    #[must_use]
    pub fn with_events_to<T: EventSink<R>>(self, sink: T) -> LeaseTable<R, T> {
        LeaseTable {
            resources: self.resources,
            observed: self.observed,
            clock_policy: self.clock_policy,
            round_up: self.round_up,
            sink,
            counters: self.counters,
        }
    }

    /// The same table with another [`ClockPolicy`].
    #[must_use]
    pub const fn with_clock_policy(mut self, clock_policy: ClockPolicy) -> Self {
        self.clock_policy = clock_policy;
        self
    }

    /// The same table with every computed deadline (`now + ttl`) passed through `round_up` before it is kept: for
    /// callers whose storage or language keeps coarser instants (whole milliseconds, `f64` seconds), so that the
    /// deadline they store is exactly the one the table enforces. A result earlier than the deadline is ignored:
    /// rounding can only lengthen a lease.
    #[must_use]
    pub const fn with_deadline_rounding(mut self, round_up: fn(Duration) -> Duration) -> Self {
        self.round_up = Some(round_up);
        self
    }
}
