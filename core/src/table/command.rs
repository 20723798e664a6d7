//! The commands that change a [`LeaseTable`]: its methods (each built on the engine's `grant` or `decide`), and
//! the same commands as values, for batches and for replaying stored requests.

use alloc::vec::Vec;
use core::hash::Hash;
use core::time::Duration;

use super::engine::{Change, Precondition};
use super::{EventKind, EventSink, LeaseTable, TableLease};
use crate::election::certifies;
use crate::{rules, FencingToken, OwnerId, QuorumCertificate, Rejection, TableDecision};

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

impl<R: Ord + Hash + Clone, S: EventSink<R>> LeaseTable<R, S> {
    /// Asks for `resource` for `owner` at `now`, to last `ttl`: [`LeaseAuthority::acquire`](crate::LeaseAuthority::acquire)'s
    /// rules on the resource's own token namespace. Granted (with an [`EventKind::Acquired`] event) when no lease is
    /// live on the resource; refused with `ClockRegressed`, `InvalidTtl`, `DeadlineOverflow`, `Occupied`,
    /// `TokenSpaceExhausted` or `RevisionSpaceExhausted`.
    pub fn acquire(&mut self, resource: &R, owner: OwnerId, now: Duration, ttl: Duration) -> TableDecision<R> {
        self.grant(resource, owner, now, ttl, Precondition::None, EventKind::Acquired)
    }

    /// Grants `owner` a leadership lease on `resource` on the strength of an election: only for a valid
    /// `certificate` ([`certify_votes`](crate::certify_votes)) whose leader is `owner` and whose term is greater than
    /// every term already used for the resource, so a stale election can never take leadership back. The grant is an
    /// ordinary lease with a fresh fencing token; the term is recorded in the lease, its event and the checkpoint.
    ///
    /// Checks, in order: the clock and the TTL, then [`Rejection::NoQuorum`] (the certificate is not valid),
    /// [`Rejection::NotLeader`] (it elected someone else), [`Rejection::StaleTerm`], then the lease record as
    /// [`reacquire`](Self::reacquire) does: another owner's live lease is [`Rejection::Occupied`] (an election does
    /// not cut a live lease short: the new leader waits for it to expire or be released), the owner's own live lease
    /// is rotated to the new token and term ([`EventKind::Reacquired`]); then `TokenSpaceExhausted` and
    /// `RevisionSpaceExhausted`.
    pub fn acquire_leadership(
        &mut self,
        resource: &R,
        certificate: &QuorumCertificate<OwnerId>,
        owner: OwnerId,
        now: Duration,
        ttl: Duration,
    ) -> TableDecision<R> {
        let precondition =
            Precondition::Elected { valid: certifies(certificate), leader: certificate.leader, term: certificate.term };
        self.grant(resource, owner, now, ttl, precondition, EventKind::Reacquired)
    }

    /// [`acquire`](Self::acquire) under a compare-and-set precondition: refused with [`Rejection::RevisionMismatch`]
    /// (after the clock and TTL checks) unless the resource's revision is `expected_revision` (`0` for a resource
    /// the table has never changed).
    pub fn acquire_at_revision(
        &mut self,
        resource: &R,
        owner: OwnerId,
        expected_revision: u64,
        now: Duration,
        ttl: Duration,
    ) -> TableDecision<R> {
        self.grant(resource, owner, now, ttl, Precondition::Revision(expected_revision), EventKind::Acquired)
    }

    /// [`acquire`](Self::acquire), except that the owner of the live lease gets a new lease with a new, greater
    /// token ([`EventKind::Reacquired`]), which makes its old token stale.
    pub fn reacquire(&mut self, resource: &R, owner: OwnerId, now: Duration, ttl: Duration) -> TableDecision<R> {
        self.grant(resource, owner, now, ttl, Precondition::None, EventKind::Reacquired)
    }

    /// Extends the live lease on `resource`: same owner, same token, same `issued_at`, expiry
    /// `max(expires_at, now + ttl)`. Refused as [`LeaseAuthority::renew`](crate::LeaseAuthority::renew) refuses
    /// (`NotHeld`, `StaleToken`, `WrongOwner`, `Expired`), or with `RevisionSpaceExhausted`.
    pub fn renew(
        &mut self,
        resource: &R,
        owner: OwnerId,
        token: FencingToken,
        now: Duration,
        ttl: Duration,
    ) -> TableDecision<R> {
        self.decide(resource, now, Some(ttl), |slot, now, deadline| {
            rules::current_lease(slot.lease(), owner, token, now)?;
            Ok(Change::Renew { deadline })
        })
    }

    /// Gives the lease on `resource` back; the token high-water stays. Refused as
    /// [`LeaseAuthority::release`](crate::LeaseAuthority::release) refuses, or with `RevisionSpaceExhausted`.
    pub fn release(&mut self, resource: &R, owner: OwnerId, token: FencingToken, now: Duration) -> TableDecision<R> {
        self.decide(resource, now, None, |slot, now, _| {
            rules::current_lease(slot.lease(), owner, token, now)?;
            Ok(Change::End { kind: EventKind::Released })
        })
    }

    /// The holder of the live lease on `resource` (`owner` with `token`) hands it to `new_owner`, who gets a new
    /// lease with a new, greater token, issued at `now` and expiring at `now + ttl` ([`EventKind::Transferred`]). The
    /// old token is stale from then on, so the old holder is fenced. Refused as [`renew`](Self::renew) refuses, or
    /// with `TokenSpaceExhausted`.
    pub fn transfer(
        &mut self,
        resource: &R,
        owner: OwnerId,
        token: FencingToken,
        new_owner: OwnerId,
        now: Duration,
        ttl: Duration,
    ) -> TableDecision<R> {
        self.decide(resource, now, Some(ttl), |slot, now, deadline| {
            if slot.term.is_some() {
                return Err(Rejection::LeadershipRequired);
            }
            rules::current_lease(slot.lease(), owner, token, now)?;
            rules::next_token(slot.last_issued)?;
            Ok(Change::Grant { kind: EventKind::Transferred, owner: new_owner, deadline, term: None })
        })
    }

    /// Drops the lease record of `resource` once it has expired at `now` ([`EventKind::Reaped`]); the token
    /// high-water stays, so the next grant still gets a greater token. Refused with `ClockRegressed`, `NotHeld`
    /// (no record), `Occupied` (the lease is live: reaping never ends a live lease) or `RevisionSpaceExhausted`.
    pub fn reap(&mut self, resource: &R, now: Duration) -> TableDecision<R> {
        self.decide(resource, now, None, |slot, now, _| match slot.stored {
            None => Err(Rejection::NotHeld),
            Some(stored) if stored.lease.is_live(now) => Err(Rejection::Occupied),
            Some(_) => Ok(Change::End { kind: EventKind::Reaped }),
        })
    }

    /// Reaps every lease record expired at `now`, in resource order, and returns the leases reaped. O(n + k log k)
    /// for k expired records (sorted into resource order; O(n) when the resources were first granted in resource
    /// order). Refused
    /// as a whole with [`Rejection::ClockRegressed`] under [`ClockPolicy::Reject`](crate::ClockPolicy::Reject); a
    /// resource whose revision cannot rise is skipped (and counted as a `RevisionSpaceExhausted` rejection).
    pub fn reap_expired(&mut self, now: Duration) -> Result<Vec<TableLease<R>>, Rejection> {
        let now = match rules::observe(&mut self.observed.clone(), self.clock_policy, now) {
            Ok(now) => now,
            Err(rejection) => {
                self.count_rejection(rejection);
                return Err(rejection);
            }
        };
        let expired: Vec<R> = self
            .resources
            .sorted(|slot| slot.stored.is_some_and(|stored| !stored.lease.is_live(now)))
            .into_iter()
            .map(|(resource, _)| resource.clone())
            .collect();
        let mut reaped = Vec::with_capacity(expired.len());
        for resource in &expired {
            let lease = self.lease(resource);
            if self.reap(resource, now).is_accepted() {
                reaped.extend(lease);
            }
        }
        Ok(reaped)
    }

    /// Decides `command` at `now`, exactly as the method of the same name.
    pub fn apply(&mut self, command: &Command<R>, now: Duration) -> TableDecision<R> {
        match command {
            Command::Acquire { resource, owner, ttl, expected_revision } => {
                let precondition = expected_revision.map_or(Precondition::None, Precondition::Revision);
                self.grant(resource, *owner, now, *ttl, precondition, EventKind::Acquired)
            }
            Command::Reacquire { resource, owner, ttl } => self.reacquire(resource, *owner, now, *ttl),
            Command::Renew { resource, owner, token, ttl } => self.renew(resource, *owner, *token, now, *ttl),
            Command::Release { resource, owner, token } => self.release(resource, *owner, *token, now),
            Command::Transfer { resource, owner, token, new_owner, ttl } => {
                self.transfer(resource, *owner, *token, *new_owner, now, *ttl)
            }
            Command::Reap { resource } => self.reap(resource, now),
        }
    }

    /// Applies `commands` in order, each at its own `at`, and keeps every decision. A rejected command changes
    /// nothing and does not stop the batch: the later commands are decided on the state the accepted ones left.
    pub fn apply_batch<'a>(&mut self, commands: impl IntoIterator<Item = &'a TimedCommand<R>>) -> BatchResult<R>
    where
        R: 'a,
    {
        let mut result = BatchResult { decisions: Vec::new(), accepted: 0, rejected: 0 };
        for timed in commands {
            let decision = self.apply(&timed.command, timed.at);
            if decision.is_accepted() {
                result.accepted = result.accepted.saturating_add(1);
            } else {
                result.rejected = result.rejected.saturating_add(1);
            }
            result.decisions.push(decision);
        }
        result
    }
}
