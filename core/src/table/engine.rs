//! How a [`LeaseTable`] decides every command: the clock and TTL checks, the command's own check on the resource's
//! slot, the revision; then, only if all pass, the change, its event and the counters. A refused command changes
//! nothing.

use core::hash::Hash;
use core::time::Duration;

use super::store::Place;
use super::{Event, EventKind, EventSink, LeaseTable, Slot, StoredLease, TableDecision};
use crate::{rules, Lease, OwnerId, Rejection};

/// What a grant requires beyond a vacant resource.
#[derive(Clone, Copy)]
pub(super) enum Precondition {
    None,
    Revision(u64),
    Elected { valid: bool, leader: Option<OwnerId>, term: u64 },
}

/// An accepted command, not yet committed: where its resource is, its new state, its event, its decision, and
/// whether the holder changed.
type Accepted<R> = (Place, Slot, Event<R>, TableDecision<R>, bool);

/// What an accepted command does to a slot.
pub(super) enum Change {
    Grant { kind: EventKind, owner: OwnerId, deadline: Duration, term: Option<u64> },
    Renew { deadline: Duration },
    End { kind: EventKind },
}

impl<R: Ord + Hash + Clone, S: EventSink<R>> LeaseTable<R, S> {
    /// Every grant: the precondition, then the lease record, then the token space. `rotation` is
    /// [`EventKind::Reacquired`] when the owner's own live lease may be replaced, [`EventKind::Acquired`] otherwise.
    pub(super) fn grant(
        &mut self,
        resource: &R,
        owner: OwnerId,
        now: Duration,
        ttl: Duration,
        precondition: Precondition,
        rotation: EventKind,
    ) -> TableDecision<R> {
        self.decide(resource, now, Some(ttl), |slot, now, deadline| {
            let term = match precondition {
                Precondition::None | Precondition::Revision(_) if slot.term.is_some() => {
                    return Err(Rejection::LeadershipRequired)
                }
                Precondition::None => None,
                Precondition::Revision(expected) if expected != slot.revision => {
                    return Err(Rejection::RevisionMismatch)
                }
                Precondition::Revision(_) => None,
                Precondition::Elected { valid: false, .. } => return Err(Rejection::NoQuorum),
                Precondition::Elected { leader, .. } if leader != Some(owner) => return Err(Rejection::NotLeader),
                Precondition::Elected { term, .. } if slot.term.is_some_and(|used| term <= used) => {
                    return Err(Rejection::StaleTerm)
                }
                Precondition::Elected { term, .. } => Some(term),
            };
            let rotate = rotation == EventKind::Reacquired;
            rules::vacant_for(slot.lease(), owner, now, rotate)?;
            rules::next_token(slot.last_issued)?;
            let live_own = slot.stored.filter(|stored| stored.lease.is_live(now) && stored.lease.owner() == owner);
            let kind = if live_own.is_some() && rotate { EventKind::Reacquired } else { EventKind::Acquired };
            Ok(Change::Grant { kind, owner, deadline, term })
        })
    }

    /// Runs one command: the clock and TTL checks, then `check` on the resource's slot (an empty one for a resource
    /// the table does not know), then the revision; commits the change and records its event only if all pass.
    pub(super) fn decide(
        &mut self,
        resource: &R,
        now: Duration,
        ttl: Option<Duration>,
        check: impl FnOnce(&Slot, Duration, Duration) -> Result<Change, Rejection>,
    ) -> TableDecision<R> {
        match self.evaluate(resource, now, ttl, check) {
            Ok((place, slot, event, decision, transition)) => {
                if !self.resources.set(place, || event.resource.clone(), slot) {
                    // A new resource the table has no room for (`evaluate` refuses it first).
                    self.count_rejection(Rejection::TokenSpaceExhausted);
                    return TableDecision::Rejected(Rejection::TokenSpaceExhausted);
                }
                self.observed = self.observed.max(event.at);
                if transition {
                    self.counters.holder_transitions = self.counters.holder_transitions.saturating_add(1);
                }
                self.counters.accepted = self.counters.accepted.saturating_add(1);
                self.counters.events = self.counters.events.saturating_add(1);
                self.sink.record(event);
                decision
            }
            Err(rejection) => {
                self.count_rejection(rejection);
                TableDecision::Rejected(rejection)
            }
        }
    }

    fn evaluate(
        &mut self,
        resource: &R,
        now: Duration,
        ttl: Option<Duration>,
        check: impl FnOnce(&Slot, Duration, Duration) -> Result<Change, Rejection>,
    ) -> Result<Accepted<R>, Rejection> {
        let now = rules::observe(&mut self.observed.clone(), self.clock_policy, now)?;
        let deadline = match ttl {
            Some(ttl) => {
                let deadline = rules::deadline(now, ttl)?;
                self.round_up.map_or(deadline, |round_up| round_up(deadline).max(deadline))
            }
            None => now,
        };
        // The event and the lease carry the table's own key when it has one: for a shared key type (`Arc<str>`),
        // every event of a resource then holds the one name the table keeps, not the copy each caller passed.
        let place = self.resources.place(resource);
        let found = self.resources.get(place);
        let before = found.map(|(_, slot)| slot).unwrap_or_default();
        let change = check(&before, now, deadline)?;
        let revision = before.revision.checked_add(1).ok_or(Rejection::RevisionSpaceExhausted)?;
        if !place.is_known() && !self.resources.has_room() {
            return Err(Rejection::TokenSpaceExhausted);
        }
        let mut after = Slot { revision, ..before };
        let replaced = before.stored.map(|stored| stored.lease);
        let mut transition = false;
        let (kind, ended) = match change {
            Change::Grant { kind, owner, deadline, term } => {
                let token = rules::next_token(before.last_issued)?;
                transition = !matches!(replaced, Some(lease) if lease.owner() == owner);
                after.last_issued = Some(token);
                after.term = after.term.max(term);
                after.stored = Some(StoredLease { lease: Lease::new(owner, token, deadline), issued_at: now, term });
                (kind, None)
            }
            Change::Renew { deadline } => {
                after.stored =
                    before.stored.map(|stored| StoredLease { lease: stored.lease.extended(deadline), ..stored });
                (EventKind::Renewed, None)
            }
            Change::End { kind } => {
                after.stored = None;
                (kind, before.stored)
            }
        };
        let shown = after.stored.or(ended).ok_or(Rejection::NotHeld)?;
        let key = found.map_or(resource, |(key, _)| key).clone();
        let decision = match (kind, after.table_lease(&key)) {
            (EventKind::Acquired | EventKind::Reacquired, Some(lease)) => TableDecision::Granted(lease),
            (EventKind::Transferred, Some(lease)) => TableDecision::Transferred(lease),
            (EventKind::Renewed, Some(lease)) => TableDecision::Renewed(lease),
            (EventKind::Released, _) => TableDecision::Released,
            _ => TableDecision::Reaped,
        };
        let event = Event {
            resource: key,
            kind,
            at: now,
            owner: shown.lease.owner(),
            token: shown.lease.token(),
            revision,
            expires_at: shown.lease.expires_at(),
            term: shown.term,
            replaced: if ended.is_some() { None } else { replaced },
        };
        Ok((place, after, event, decision, transition))
    }

    pub(super) fn count_rejection(&mut self, rejection: Rejection) {
        self.counters.rejected = self.counters.rejected.saturating_add(1);
        if let Some(count) = self.counters.rejections.get_mut(rejection.index()) {
            *count = count.saturating_add(1);
        }
    }
}
