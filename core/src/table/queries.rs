//! What a [`LeaseTable`] says without changing: its settings, its leases, revisions, tokens and terms, its
//! checkpoint and its metrics. None of these moves the watermark.

use core::hash::Hash;
use core::time::Duration;

use super::{Event, EventSink, LeaseRecord, LeaseTable, Metrics, ResourceRecord, TableCheckpoint, TableLease};
use crate::{ClockPolicy, FencingToken};

impl<R: Ord + Hash + Clone> LeaseTable<R> {
    /// The events the table's log keeps, oldest first.
    pub fn events(&self) -> impl ExactSizeIterator<Item = &Event<R>> + DoubleEndedIterator {
        self.sink.events()
    }
}

impl<R: Ord + Hash + Clone, S: EventSink<R>> LeaseTable<R, S> {
    /// The table's [`ClockPolicy`].
    #[must_use]
    pub const fn clock_policy(&self) -> ClockPolicy {
        self.clock_policy
    }

    /// The clock watermark: the latest instant an accepted command was decided at.
    #[must_use]
    pub const fn observed(&self) -> Duration {
        self.observed
    }

    /// The event sink.
    #[must_use]
    pub const fn sink(&self) -> &S {
        &self.sink
    }

    /// The event sink, mutably (to drain a log, say).
    pub fn sink_mut(&mut self) -> &mut S {
        &mut self.sink
    }

    /// How many resources the table knows.
    #[must_use]
    pub fn len(&self) -> usize {
        self.resources.len()
    }

    /// Whether the table knows no resource.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.resources.len() == 0
    }

    /// The lease record of `resource`, live or expired, or `None` when vacant or unknown. It carries the table's
    /// own key (shared, for a shared key type), not a copy of `resource`.
    #[must_use]
    pub fn lease(&self, resource: &R) -> Option<TableLease<R>> {
        self.resources.find(resource).and_then(|(key, slot)| slot.table_lease(key))
    }

    /// The lease live on `resource` at `now`, if any. A pure query: the watermark does not move.
    #[must_use]
    pub fn live_lease(&self, resource: &R, now: Duration) -> Option<TableLease<R>> {
        self.lease(resource).filter(|lease| lease.is_live(now))
    }

    /// Every lease live at `now`, in resource order. O(n + k log k) for k live leases (the live ones are sorted
    /// when asked for; O(n) when the resources were first granted in resource order).
    pub fn live_leases(&self, now: Duration) -> impl Iterator<Item = TableLease<R>> + '_ {
        self.resources
            .sorted(move |slot| slot.stored.is_some_and(|stored| stored.lease.is_live(now)))
            .into_iter()
            .filter_map(|(resource, slot)| slot.table_lease(resource))
    }

    /// The revision of `resource`: how many accepted changes it has seen (`0` when unknown).
    #[must_use]
    pub fn revision(&self, resource: &R) -> u64 {
        self.resources.find(resource).map_or(0, |(_, slot)| slot.revision)
    }

    /// The greatest token issued for `resource`, `None` when none was.
    #[must_use]
    pub fn last_issued(&self, resource: &R) -> Option<FencingToken> {
        self.resources.find(resource).and_then(|(_, slot)| slot.last_issued)
    }

    /// The greatest election term used for `resource`, `None` when no leadership lease was granted on it.
    #[must_use]
    pub fn term(&self, resource: &R) -> Option<u64> {
        self.resources.find(resource).and_then(|(_, slot)| slot.term)
    }

    /// The table's whole state, for storage, in resource order. O(n log n) (the resources are sorted; O(n) when
    /// they were first granted in resource order, or restored).
    #[must_use]
    pub fn checkpoint(&self) -> TableCheckpoint<R> {
        let records = self
            .resources
            .sorted(|_| true)
            .into_iter()
            .map(|(resource, slot)| ResourceRecord {
                resource: resource.clone(),
                last_issued: slot.last_issued.map(FencingToken::value),
                revision: slot.revision,
                term: slot.term,
                lease: slot.stored.map(|stored| LeaseRecord {
                    owner: stored.lease.owner().value(),
                    token: stored.lease.token().value(),
                    issued_at: stored.issued_at,
                    expires_at: stored.lease.expires_at(),
                    term: stored.term,
                }),
            })
            .collect();
        TableCheckpoint::from_table(self.observed, records)
    }

    /// The table's figures at `now` (a pure query: the watermark does not move). O(n).
    #[must_use]
    pub fn metrics(&self, now: Duration) -> Metrics {
        let mut metrics = Metrics {
            resources: self.resources.len() as u64,
            events: self.counters.events,
            accepted: self.counters.accepted,
            rejected: self.counters.rejected,
            rejections: self.counters.rejections,
            holder_transitions: self.counters.holder_transitions,
            ..Metrics::default()
        };
        metrics.highest_token = self.resources.highest_token();
        for expires_at in self.resources.expiries() {
            metrics.stored_leases = metrics.stored_leases.saturating_add(1);
            if now < expires_at {
                metrics.live_leases = metrics.live_leases.saturating_add(1);
            } else {
                metrics.expired_leases = metrics.expired_leases.saturating_add(1);
            }
        }
        metrics
    }
}
