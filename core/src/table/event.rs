//! What a table records of every accepted change.

use crate::Event;
use alloc::collections::VecDeque;

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
