//! The row a database keeps for one resource, and the one decision each of its requests makes on it.

use core::time::Duration;

use crate::{Checkpoint, ClockPolicy, Decision, Fence, FencingToken, LeaseAuthority, OwnerId, Rejection, WriteCheck};

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
}

/// What [`LeaseRow::decide`] answers: the decision, and the row to write back in the same transaction, if any.
#[must_use = "the row must be written, and committed, before the decision is shown"]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct RowDecision {
    decision: Decision,
    write: Option<LeaseRow>,
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
        match (decision, self.revision.checked_add(1)) {
            (Decision::Rejected(rejection), _) => self.refused(rejection, after.observed()),
            (_, None) => self.refused(Rejection::RevisionSpaceExhausted, after.observed()),
            (_, Some(revision)) => RowDecision { decision, write: Some(Self { checkpoint: after, revision }) },
        }
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
        RowDecision { decision: Decision::Rejected(rejection), write }
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
}
