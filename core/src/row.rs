//! The row a database keeps for one resource, and the one decision each of its requests makes on it.

use core::time::Duration;

use crate::{
    Checkpoint, ClockPolicy, Decision, Event, EventKind, Fence, FencingToken, Lease, LeaseAuthority, OwnerId,
    Rejection, TokenEpoch, WriteCheck,
};

/// What a durable store keeps for one resource: the authority's [`Checkpoint`] and the row's revision, the count
/// of accepted changes it has seen.
///
/// A store's request reads the row (locked for the transaction), hands it to [`LeaseRow::decide`] with the request
/// and the instant, writes back the row the answer names, and commits before showing the decision to anyone. Every
/// lease rule of the request is in that one call: the store only reads, locks and writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct LeaseRow {
    checkpoint: Checkpoint,
    revision: u64,
}

/// One request to a store, with its arguments (the resource is the row's).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Request {
    /// [`LeaseAuthority::acquire`].
    Acquire {
        /// Who asks.
        owner: OwnerId,
        /// How long the lease lasts from the request's instant.
        ttl: Duration,
    },
    /// [`LeaseAuthority::reacquire`].
    Reacquire {
        /// Who asks.
        owner: OwnerId,
        /// How long the lease lasts from the request's instant.
        ttl: Duration,
    },
    /// [`LeaseAuthority::renew`].
    Renew {
        /// Who asks.
        owner: OwnerId,
        /// The token of the lease to renew.
        token: FencingToken,
        /// How long the lease lasts from the request's instant, at least.
        ttl: Duration,
    },
    /// [`LeaseAuthority::release`].
    Release {
        /// Who asks.
        owner: OwnerId,
        /// The token of the lease to give back.
        token: FencingToken,
    },
    /// Hands the live lease of `owner` (with `token`) to `new_owner` at once: a release, then a grant to
    /// `new_owner` with the next token, at the same instant, as one change. Refused with the release's reason, or
    /// with the grant's ([`Rejection::InvalidTtl`], [`Rejection::DeadlineOverflow`],
    /// [`Rejection::TokenSpaceExhausted`]); then the lease record is unchanged (the release is not kept either) and
    /// only the watermark may move.
    Transfer {
        /// The owner of the live lease.
        owner: OwnerId,
        /// Its token, fenced from then on.
        token: FencingToken,
        /// Who gets the lease.
        new_owner: OwnerId,
        /// How long the new owner's lease lasts from the request's instant.
        ttl: Duration,
    },
    /// Ends the live lease with `token`, whoever holds it, as its holder's release would: an operator's revocation.
    /// From then on `token` is refused by the fence (the lease is no longer held) and the next grant's token is
    /// above it. Refused as that release would be (`NotHeld` without a lease, `StaleToken` for another token,
    /// `Expired` once it has expired).
    Revoke {
        /// The token of the lease to end.
        token: FencingToken,
    },
}

/// What [`LeaseRow::decide`] answers: the decision, and the row to write back in the same transaction, if any.
#[must_use = "the row must be written, and committed, before the decision is shown"]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct RowDecision {
    decision: Decision,
    write: Option<LeaseRow>,
    at: Duration,
    change: Option<Change>,
}

/// What an accepted request changed, for its [`Event`]: which change, the lease it concerns (after a grant or a
/// renewal; for a release, the lease that ended) and the lease record it replaced.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
struct Change {
    kind: EventKind,
    lease: Lease,
    replaced: Option<Lease>,
}

impl LeaseRow {
    /// The row of a resource that has none yet: an empty checkpoint at revision 0.
    pub const EMPTY: Self = Self { checkpoint: Checkpoint::from_state(None, None, Duration::ZERO), revision: 0 };

    /// A row rebuilt from stored parts, or `None` when no history produces it: every grant is an accepted change, so
    /// a row cannot have issued more tokens than its `revision` counts.
    #[must_use]
    pub const fn from_parts(checkpoint: Checkpoint, revision: u64) -> Option<Self> {
        match checkpoint.last_issued() {
            Some(issued) if issued.value() > revision => None,
            _ => Some(Self { checkpoint, revision }),
        }
    }

    /// A row raised into a token epoch ([`LeaseRow::in_epoch`]): `revision` is at least the raised high-water.
    pub(crate) const fn raised(checkpoint: Checkpoint, revision: u64) -> Self {
        Self { checkpoint, revision }
    }

    /// The authority's state the row holds.
    #[must_use]
    pub const fn checkpoint(&self) -> Checkpoint {
        self.checkpoint
    }

    /// How many accepted changes the row has seen; it rises by one with each.
    #[must_use]
    pub const fn revision(&self) -> u64 {
        self.revision
    }

    /// Decides `request` at `now` on this row, as a [`LeaseAuthority`] restored from it with `clock_policy` decides.
    ///
    /// The row to write back is:
    ///
    /// - for an accepted request, the authority's new checkpoint at the next revision;
    /// - for a refusal, the same lease record with the watermark the request observed, at the same revision, when the
    ///   watermark moved or the row was never stored (revision 0), so that every resource asked for has its row;
    /// - otherwise none: nothing changed.
    ///
    /// An accepted change at revision `u64::MAX` is refused with [`Rejection::RevisionSpaceExhausted`]: revisions,
    /// like tokens, never wrap.
    pub fn decide(&self, request: Request, now: Duration, clock_policy: ClockPolicy) -> RowDecision {
        let mut authority = LeaseAuthority::restore(self.checkpoint).with_clock_policy(clock_policy);
        let decision = match request {
            Request::Acquire { owner, ttl } => authority.acquire(owner, now, ttl),
            Request::Reacquire { owner, ttl } => authority.reacquire(owner, now, ttl),
            Request::Renew { owner, token, ttl } => authority.renew(owner, token, now, ttl),
            Request::Release { owner, token } => authority.release(owner, token, now),
            Request::Revoke { token } => {
                // The holder's own release: without a lease on record the owner is never looked at (`NotHeld`).
                let holder = self.checkpoint.lease().map_or(OwnerId::new(0), |lease| lease.owner());
                authority.release(holder, token, now)
            }
            Request::Transfer { owner, token, new_owner, ttl } => match authority.release(owner, token, now) {
                Decision::Released => {
                    let granted = authority.acquire(new_owner, now, ttl);
                    if !granted.is_accepted() {
                        // The release is not kept: only the watermark the request observed stands.
                        authority = LeaseAuthority::restore(Checkpoint::from_state(
                            self.checkpoint.last_issued(),
                            self.checkpoint.lease(),
                            authority.observed(),
                        ))
                        .with_clock_policy(clock_policy);
                    }
                    granted
                }
                refused => refused,
            },
        };
        let after = authority.checkpoint();
        let at = after.observed();
        match (decision, self.revision.checked_add(1)) {
            (Decision::Rejected(rejection), _) => self.refused(rejection, at),
            (_, None) => self.refused(Rejection::RevisionSpaceExhausted, at),
            (_, Some(revision)) => RowDecision {
                decision,
                write: Some(Self { checkpoint: after, revision }),
                at,
                change: self.change(request, decision, at),
            },
        }
    }

    /// The change an accepted `decision` on this row made at `at`: a grant is a rotation
    /// ([`EventKind::Reacquired`]) when it replaced the asker's own live lease, a takeover or a first grant
    /// ([`EventKind::Acquired`]) otherwise, or a transfer; a release (or revocation) records the lease that ended.
    fn change(&self, request: Request, decision: Decision, at: Duration) -> Option<Change> {
        let before = self.checkpoint.lease();
        let (kind, lease) = match (decision, request) {
            (Decision::Granted(lease), Request::Transfer { .. }) => (EventKind::Transferred, lease),
            (Decision::Granted(lease), Request::Reacquire { owner, .. })
                if before.is_some_and(|held| held.owner() == owner && held.is_live(at)) =>
            {
                (EventKind::Reacquired, lease)
            }
            (Decision::Granted(lease), _) => (EventKind::Acquired, lease),
            (Decision::Renewed(lease), _) => (EventKind::Renewed, lease),
            (Decision::Released, _) => {
                return before.map(|ended| Change { kind: EventKind::Released, lease: ended, replaced: None })
            }
            (Decision::Rejected(_), _) => return None,
        };
        Some(Change { kind, lease, replaced: before })
    }

    /// Decides `request` as [`decide`](Self::decide) does, on this row raised to `epoch`'s floor
    /// ([`in_epoch`](Self::in_epoch)), so that a grant is above every token of an earlier epoch. A row already past
    /// the floor goes on issuing its own tokens, within their epoch: a decision that would issue the token after an
    /// epoch's last (an epoch's floor, [`TokenEpoch::is_floor`]) answers `Err` with the epoch that token opens, and
    /// nothing may be written: the store moves to that epoch and decides again.
    pub fn decide_in(
        &self,
        epoch: TokenEpoch,
        request: Request,
        now: Duration,
        clock_policy: ClockPolicy,
    ) -> Result<RowDecision, TokenEpoch> {
        let answer = self.in_epoch(epoch).decide(request, now, clock_policy);
        TokenEpoch::opened_by(answer.issued()).map_or(Ok(answer), Err)
    }

    /// Checks a write carrying `token` at `now` against this row and `fence`, the mark earlier writes left:
    /// [`Checkpoint::check_write`] on the row's checkpoint.
    pub fn check_write(&self, fence: Fence, token: FencingToken, now: Duration) -> WriteCheck {
        self.checkpoint.check_write(fence, token, now)
    }

    /// A refusal: the lease record as it was, with the watermark `observed`.
    fn refused(&self, rejection: Rejection, observed: Duration) -> RowDecision {
        let kept = Self {
            checkpoint: Checkpoint::from_state(self.checkpoint.last_issued(), self.checkpoint.lease(), observed),
            revision: self.revision,
        };
        let write = (observed != self.checkpoint.observed() || self.revision == 0).then_some(kept);
        RowDecision { decision: Decision::Rejected(rejection), write, at: observed, change: None }
    }
}

impl RowDecision {
    /// The decision. A [`Request::Transfer`] that was accepted answers the new owner's grant,
    /// [`Decision::Granted`].
    pub const fn decision(&self) -> Decision {
        self.decision
    }

    /// The row to write back, in the request's transaction and before the decision is shown; `None` when nothing
    /// changed.
    #[must_use]
    pub const fn write(&self) -> Option<LeaseRow> {
        self.write
    }

    /// The token the decision issued: a grant's (a transfer's new one), `None` for any other decision.
    #[must_use]
    pub const fn issued(&self) -> Option<FencingToken> {
        match self.decision {
            Decision::Granted(lease) => Some(lease.token()),
            _ => None,
        }
    }

    /// The instant the request was decided at: its `now`, or the row's watermark when that is later (under
    /// [`ClockPolicy::Clamp`], the instant a late request is evaluated at; under [`ClockPolicy::Reject`], the
    /// watermark that refused it).
    #[must_use]
    pub const fn at(&self) -> Duration {
        self.at
    }

    /// The [`Event`] of `resource` that an accepted request records, for a store's event log; `None` for a refusal.
    /// Its `at` is [`at`](Self::at), its `revision` the written row's, its `term` `None`. The events of a row's
    /// accepted requests, in order, pass the auditor's `audit` (feature `alloc`).
    #[must_use]
    pub fn event<R>(&self, resource: R) -> Option<Event<R>> {
        let (change, write) = (self.change?, self.write?);
        Some(Event {
            resource,
            kind: change.kind,
            at: self.at,
            owner: change.lease.owner(),
            token: change.lease.token(),
            revision: write.revision(),
            expires_at: change.lease.expires_at(),
            term: None,
            replaced: change.replaced,
        })
    }
}
