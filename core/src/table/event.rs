//! What a table records of every accepted change.

use alloc::collections::VecDeque;
use core::fmt;
use core::time::Duration;

use crate::{FencingToken, Lease, OwnerId};

/// Which change an [`Event`] records.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum EventKind {
    /// A new lease was granted on a resource no lease was live on (any grant: [`acquire`](crate::LeaseTable::acquire),
    /// and [`reacquire`](crate::LeaseTable::reacquire) or
    /// [`acquire_leadership`](crate::LeaseTable::acquire_leadership) when nothing was live).
    Acquired,
    /// The holder of the live lease rotated it to a new token ([`reacquire`](crate::LeaseTable::reacquire), or
    /// [`acquire_leadership`](crate::LeaseTable::acquire_leadership) for a re-elected holder).
    Reacquired,
    /// The live lease was extended, same token ([`renew`](crate::LeaseTable::renew)).
    Renewed,
    /// The holder gave the lease back ([`release`](crate::LeaseTable::release)).
    Released,
    /// The holder handed the lease to another owner, who got a new token ([`transfer`](crate::LeaseTable::transfer)).
    Transferred,
    /// An expired lease record was dropped ([`reap`](crate::LeaseTable::reap)).
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

/// One accepted change to one resource of a [`LeaseTable`](crate::LeaseTable): the audit record.
///
/// For a grant, transfer or renewal, `owner`, `token`, `expires_at` and `term` describe the lease as it is after the
/// change; for a release or a reap, the lease that ended. `replaced` is the lease record the change replaced, if any:
/// the expired record a new grant took over from, the rotated or transferred lease, the renewed lease with its old
/// expiry. Times are [`Duration`]s from the table's clock origin; `at` is the instant the change was decided at (the
/// watermark, when a [`ClockPolicy::Clamp`](crate::ClockPolicy::Clamp) table moved a late request forward).
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

/// Where a table sends its [`Event`]s. Implement it to stream events to a log, a channel or a database; the default
/// is an in-table [`EventLog`].
pub trait EventSink<R> {
    /// Takes one event, in the order the table decided the changes.
    fn record(&mut self, event: Event<R>);
}

/// Discards every event (the table still counts them in its metrics).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct Discard;

impl<R> EventSink<R> for Discard {
    fn record(&mut self, _event: Event<R>) {}
}

/// A bounded log of the newest events: once `capacity` events are kept, each new one drops the oldest and counts it
/// in [`dropped`](Self::dropped).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct EventLog<R> {
    events: VecDeque<Event<R>>,
    capacity: usize,
    dropped: u64,
}

impl<R> EventLog<R> {
    /// The capacity [`LeaseTable::new`](crate::LeaseTable::new) gives its log.
    pub const DEFAULT_CAPACITY: usize = 4096;

    /// An empty log that keeps the newest `capacity` events (`0` keeps none, and counts every event as dropped).
    #[must_use]
    pub const fn new(capacity: usize) -> Self {
        Self { events: VecDeque::new(), capacity, dropped: 0 }
    }

    /// The events kept, oldest first.
    pub fn events(&self) -> impl ExactSizeIterator<Item = &Event<R>> + DoubleEndedIterator {
        self.events.iter()
    }

    /// How many events are kept.
    #[must_use]
    pub fn len(&self) -> usize {
        self.events.len()
    }

    /// Whether no event is kept.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.events.is_empty()
    }

    /// The most events the log keeps.
    #[must_use]
    pub const fn capacity(&self) -> usize {
        self.capacity
    }

    /// How many events were dropped to respect the capacity.
    #[must_use]
    pub const fn dropped(&self) -> u64 {
        self.dropped
    }

    /// Takes the kept events out, oldest first, leaving the log empty (the dropped count stays).
    pub fn drain(&mut self) -> impl Iterator<Item = Event<R>> + '_ {
        self.events.drain(..)
    }
}

impl<R> Default for EventLog<R> {
    fn default() -> Self {
        Self::new(Self::DEFAULT_CAPACITY)
    }
}

impl<R> EventSink<R> for EventLog<R> {
    fn record(&mut self, event: Event<R>) {
        if self.capacity == 0 {
            self.dropped = self.dropped.saturating_add(1);
            return;
        }
        if self.events.len() >= self.capacity {
            self.events.pop_front();
            self.dropped = self.dropped.saturating_add(1);
        }
        self.events.push_back(event);
    }
}
