//! Where a [`LeaseTable`](super::LeaseTable) keeps its resources: dense, and indexed by a hash of the key.
//!
//! - `entries`: one [`Entry`] per resource the table knows, in the order it first granted them. A resource never
//!   leaves a table (its token high-water is kept for good), so an entry's position never changes.
//! - `index`: a hash table, hashed with a fixed seed (nothing depends on randomness), whose bucket holds the
//!   resource's two places: its entry's position in `entries` and its lease record's position in `leases`. A lookup
//!   that lands on the bucket knows both addresses, so the entry (checked against the key) and the record load at
//!   once: a random command waits for the index, then for one more miss, where it waited for three in a row.
//! - `leases`: the lease records, live or expired, out of line and dense: a resource with no lease record costs no
//!   room for one. A record removed is replaced by the last one (whose entry and bucket are pointed at its new
//!   place), and the vector gives memory back once it is under a quarter full.
//! - `terms`: the election terms of the (few) resources that have had a leadership lease, by entry position.
//!
//! A record's token is always its resource's token high-water and its term the resource's term (a table's own
//! state and every validated checkpoint obey both, see [`validate_record`](super::validate_record)), so a record
//! stores neither.
//!
//! The engine reads a resource as a [`Slot`] (a copy) and writes a changed [`Slot`] back; anything resource-ordered
//! is sorted on the way out.

use alloc::collections::BTreeMap;
use alloc::vec::Vec;
use core::fmt;
use core::hash::{BuildHasher, Hash};
use core::time::Duration;

use foldhash::fast::FixedState;
use hashbrown::HashTable;

use super::{Slot, StoredLease};
use crate::{FencingToken, Lease, OwnerId};

/// The hasher of the index: a fixed seed, so the table's behaviour (and its memory) is the same on every run.
const HASHER: FixedState = FixedState::with_seed(0x6c65_6173_652d_6d61);

/// `Entry::lease` of a resource with no lease record.
const NO_LEASE: u32 = u32::MAX;

/// The most resources a table holds: positions are `u32`, and [`NO_LEASE`] is not one.
pub(super) const MAX_RESOURCES: usize = NO_LEASE as usize;

/// Leases vectors up to this capacity are not shrunk.
const MIN_LEASE_CAPACITY: usize = 16;

/// One resource.
#[derive(Clone)]
struct Entry<R> {
    key: R,
    /// The token high-water, `0` when no token was issued.
    last_issued: u64,
    revision: u64,
    /// The position of the resource's lease record in `leases`, or [`NO_LEASE`].
    lease: u32,
    /// Whether `terms` holds a term for the resource.
    has_term: bool,
}

/// An index bucket: where a resource's entry and lease record are. `lease` is always its entry's `lease`.
#[derive(Clone, Copy)]
struct Bucket {
    entry: u32,
    lease: u32,
}

/// A lease record out of line: its owner and times (split, so the record packs into 40 bytes), and its resource.
#[derive(Clone, Copy)]
struct Record {
    owner: u64,
    expires_secs: u64,
    issued_secs: u64,
    expires_nanos: u32,
    issued_nanos: u32,
    entry: u32,
}

impl Record {
    fn new(stored: &StoredLease, entry: u32) -> Self {
        Self {
            owner: stored.lease.owner().value(),
            expires_secs: stored.lease.expires_at().as_secs(),
            issued_secs: stored.issued_at.as_secs(),
            expires_nanos: stored.lease.expires_at().subsec_nanos(),
            issued_nanos: stored.issued_at.subsec_nanos(),
            entry,
        }
    }

    /// The instant `secs` and `nanos` (below one second, as `subsec_nanos` gives them) stand for.
    fn instant(secs: u64, nanos: u32) -> Duration {
        Duration::from_secs(secs).saturating_add(Duration::from_nanos(u64::from(nanos)))
    }

    fn stored(&self, token: FencingToken, term: Option<u64>) -> StoredLease {
        StoredLease {
            lease: Lease::new(OwnerId::new(self.owner), token, Self::instant(self.expires_secs, self.expires_nanos)),
            issued_at: Self::instant(self.issued_secs, self.issued_nanos),
            term,
        }
    }
}

/// A resource found in the table (its bucket), or the hash it would be indexed under.
#[derive(Clone, Copy)]
pub(super) struct Place {
    hash: u64,
    bucket: Option<Bucket>,
}

impl Place {
    /// Whether the table knows the resource.
    pub(super) const fn is_known(self) -> bool {
        self.bucket.is_some()
    }
}

/// Every resource of a table.
#[derive(Clone)]
pub(super) struct Store<R> {
    index: HashTable<Bucket>,
    entries: Vec<Entry<R>>,
    leases: Vec<Record>,
    terms: BTreeMap<u32, u64>,
}

impl<R> Store<R> {
    pub(super) const fn new() -> Self {
        Self { index: HashTable::new(), entries: Vec::new(), leases: Vec::new(), terms: BTreeMap::new() }
    }

    /// How many resources the table knows.
    pub(super) fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether another resource fits.
    pub(super) fn has_room(&self) -> bool {
        self.entries.len() < MAX_RESOURCES
    }

    /// The state of `entry`, at `position`, with its lease record at `lease`, as a [`Slot`].
    fn slot_of(&self, entry: &Entry<R>, position: u32, lease: u32) -> Slot {
        let last_issued = FencingToken::new(entry.last_issued);
        let term = if entry.has_term { self.terms.get(&position).copied() } else { None };
        let stored = match (last_issued, self.leases.get(lease as usize)) {
            (Some(token), Some(record)) => Some(record.stored(token, term)),
            _ => None,
        };
        Slot { last_issued, revision: entry.revision, term, stored }
    }

    /// Every resource, with its state, in no particular order.
    fn all(&self) -> impl Iterator<Item = (&R, Slot)> + '_ {
        (0u32..).zip(&self.entries).map(|(position, entry)| (&entry.key, self.slot_of(entry, position, entry.lease)))
    }

    /// The greatest token issued for any resource.
    pub(super) fn highest_token(&self) -> Option<FencingToken> {
        self.entries.iter().map(|entry| entry.last_issued).max().and_then(FencingToken::new)
    }

    /// Every lease record, as `(expires_at)`, in no particular order.
    pub(super) fn expiries(&self) -> impl Iterator<Item = Duration> + '_ {
        self.leases.iter().map(|record| Record::instant(record.expires_secs, record.expires_nanos))
    }
}

impl<R: Hash + Eq> Store<R> {
    fn hash(key: &R) -> u64 {
        HASHER.hash_one(key)
    }

    /// Where `key` is.
    pub(super) fn place(&self, key: &R) -> Place {
        let hash = Self::hash(key);
        let entries = &self.entries;
        let bucket = self
            .index
            .find(hash, |bucket| entries.get(bucket.entry as usize).is_some_and(|entry| entry.key == *key))
            .copied();
        Place { hash, bucket }
    }

    /// The table's own key at `place` and its state; `None` for a resource the table does not know. The entry and the
    /// lease record are read through the bucket's two positions, neither waiting for the other.
    pub(super) fn get(&self, place: Place) -> Option<(&R, Slot)> {
        let bucket = place.bucket?;
        let entry = self.entries.get(bucket.entry as usize)?;
        Some((&entry.key, self.slot_of(entry, bucket.entry, bucket.lease)))
    }

    /// The table's own key of `key` and its state.
    pub(super) fn find(&self, key: &R) -> Option<(&R, Slot)> {
        self.get(self.place(key))
    }

    /// Stores `slot` as the state of the resource at `place`, adding the resource (as `key`) when the table does not
    /// know it. Returns `false`, changing nothing, when a new resource does not fit (see [`Self::has_room`]).
    pub(super) fn set(&mut self, place: Place, key: impl FnOnce() -> R, slot: Slot) -> bool {
        let position = match place.bucket {
            Some(bucket) => bucket.entry,
            None => {
                let Ok(position) = u32::try_from(self.entries.len()) else { return false };
                if position == NO_LEASE {
                    return false;
                }
                self.entries.push(Entry { key: key(), last_issued: 0, revision: 0, lease: NO_LEASE, has_term: false });
                let entries = &self.entries;
                self.index.insert_unique(place.hash, Bucket { entry: position, lease: NO_LEASE }, |bucket| {
                    entries.get(bucket.entry as usize).map_or(0, |entry| Self::hash(&entry.key))
                });
                position
            }
        };
        self.write(place.hash, position, slot);
        true
    }

    /// Points the bucket of the entry at `position`, indexed under `hash`, at the lease record at `lease`.
    fn point(&mut self, hash: u64, position: u32, lease: u32) {
        if let Some(bucket) = self.index.find_mut(hash, |bucket| bucket.entry == position) {
            bucket.lease = lease;
        }
    }

    /// Writes `slot` into the entry at `position` (which exists, indexed under `hash`) and its lease record.
    fn write(&mut self, hash: u64, position: u32, slot: Slot) {
        if let Some(term) = slot.term {
            if self.terms.get(&position) != Some(&term) {
                self.terms.insert(position, term);
            }
        }
        let Some(entry) = self.entries.get_mut(position as usize) else { return };
        entry.last_issued = slot.last_issued.map_or(0, FencingToken::value);
        entry.revision = slot.revision;
        entry.has_term |= slot.term.is_some();
        let at = entry.lease;
        match slot.stored {
            Some(stored) => {
                let record = Record::new(&stored, position);
                if let Some(current) = self.leases.get_mut(at as usize) {
                    *current = record;
                } else if let Ok(at) = u32::try_from(self.leases.len()) {
                    // At most one record per resource, so there is always room: `leases.len() < entries.len()`.
                    entry.lease = at;
                    self.leases.push(record);
                    self.point(hash, position, at);
                }
            }
            None if (at as usize) < self.leases.len() => {
                entry.lease = NO_LEASE;
                self.point(hash, position, NO_LEASE);
                self.remove_lease(at);
            }
            None => {}
        }
    }

    /// Drops the lease record at `at`, if there is one: the last record takes its place.
    fn remove_lease(&mut self, at: u32) {
        if (at as usize) >= self.leases.len() {
            return;
        }
        self.leases.swap_remove(at as usize);
        if let Some(moved) = self.leases.get(at as usize).map(|record| record.entry) {
            if let Some(entry) = self.entries.get_mut(moved as usize) {
                entry.lease = at;
                let hash = Self::hash(&entry.key);
                self.point(hash, moved, at);
            }
        }
        let capacity = self.leases.capacity();
        if capacity > MIN_LEASE_CAPACITY && self.leases.len() < capacity / 4 {
            self.leases.shrink_to(self.leases.len().saturating_mul(2));
        }
    }
}

impl<R: Ord> Store<R> {
    /// Every resource `keep` accepts, with its state, in resource order. O(n log n) in the resources kept (O(n) when
    /// they were first granted in resource order).
    pub(super) fn sorted(&self, keep: impl Fn(&Slot) -> bool) -> Vec<(&R, Slot)> {
        let mut kept: Vec<(&R, Slot)> = self.all().filter(|(_, slot)| keep(slot)).collect();
        kept.sort_unstable_by_key(|&(key, _)| key);
        kept
    }
}

impl<R: Hash + Eq> FromIterator<(R, Slot)> for Store<R> {
    /// The resources in the order given, which must name each resource once (a [`TableCheckpoint`]'s records do);
    /// any beyond [`MAX_RESOURCES`] are left out.
    ///
    /// [`TableCheckpoint`]: super::TableCheckpoint
    fn from_iter<I: IntoIterator<Item = (R, Slot)>>(resources: I) -> Self {
        let resources = resources.into_iter();
        let mut store = Self::new();
        let expected = resources.size_hint().0.min(MAX_RESOURCES);
        store.entries.reserve(expected);
        store.index.reserve(expected, |_| 0);
        for (key, slot) in resources {
            let place = Place { hash: Self::hash(&key), bucket: None };
            if !store.set(place, || key, slot) {
                break;
            }
        }
        store
    }
}

/// A map of every resource to its state, in the order the table first granted them (a restored table: resource
/// order).
impl<R: fmt::Debug> fmt::Debug for Store<R> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_map().entries(self.all()).finish()
    }
}
