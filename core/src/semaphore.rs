//! A semaphore: a resource that up to a limit of owners hold at once, each in a slot of its own, and every slot a
//! lease with its own owner, token, renewal and fence.

use core::time::Duration;

use crate::{rules, ClockPolicy, Decision, Event, FencingToken, LeaseRow, OwnerId, Request, RowDecision};

/// The greatest limit a semaphore takes, and so the most slots it has: 1024.
pub const MAX_LIMIT: u32 = 1024;

/// How many owners may hold a semaphore at once: 1 to [`MAX_LIMIT`]. A limit of 1 is a plain lease: slot 0 is the
/// resource's one row, and it decides exactly as [`LeaseRow::decide`] does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Limit(u32);

impl Limit {
    /// One holder at a time.
    pub const ONE: Self = Self(1);

    /// The limit `value`, or `None` outside 1 to [`MAX_LIMIT`].
    #[must_use]
    pub const fn new(value: u32) -> Option<Self> {
        if value >= 1 && value <= MAX_LIMIT {
            Some(Self(value))
        } else {
            None
        }
    }

    /// The number of holders.
    #[must_use]
    pub const fn get(self) -> u32 {
        self.0
    }
}

/// One request to a semaphore. A grant picks the slot; a renewal and a release name theirs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SlotRequest {
    /// A slot for `owner`, lasting `ttl` from the request's instant, while fewer than `limit` slots are live.
    Acquire {
        /// Who asks.
        owner: OwnerId,
        /// How long the lease lasts from the request's instant.
        ttl: Duration,
        /// How many owners may hold the semaphore at once, as of this request.
        limit: Limit,
    },
    /// [`Request::Reacquire`]: an owner's own live slot below `limit` is granted again there, with a new token (a
    /// rotation: its old token is fenced); otherwise it is decided as [`SlotRequest::Acquire`] with `limit`, so an
    /// owner that holds no slot is refused while `limit` slots are live. With `limit` 1 it is a plain lease's
    /// reacquire: it rotates slot 0 and never adds a holder beside another slot's.
    Reacquire {
        /// Who asks.
        owner: OwnerId,
        /// How long the lease lasts from the request's instant.
        ttl: Duration,
        /// How many owners may hold the semaphore at once, as of this request.
        limit: Limit,
    },
    /// [`Request::Renew`] on `slot`'s lease.
    Renew {
        /// The slot the lease was granted in.
        slot: u32,
        /// Who asks.
        owner: OwnerId,
        /// The token of the lease to renew.
        token: FencingToken,
        /// How long the lease lasts from the request's instant, at least.
        ttl: Duration,
    },
    /// [`Request::Release`] of `slot`'s lease.
    Release {
        /// The slot the lease was granted in.
        slot: u32,
        /// Who asks.
        owner: OwnerId,
        /// The token of the lease to give back.
        token: FencingToken,
    },
    /// [`Request::Revoke`] of `slot`'s lease: an operator ends it, whoever holds it.
    Revoke {
        /// The slot the lease was granted in.
        slot: u32,
        /// The token of the lease to end.
        token: FencingToken,
    },
}

/// The slots of one semaphore, as a store read them: `rows[i]` is slot `i`'s [`LeaseRow`], and a slot past the end
/// has no row yet ([`LeaseRow::EMPTY`]). At most [`MAX_LIMIT`] rows.
///
/// A store's request reads every slot row of the resource (locked for the transaction), asks [`Semaphore::decide`],
/// writes back the one row the answer names, in the slot it names, and commits before showing the decision.
///
/// The rules, each slot being a [`LeaseRow`]:
///
/// - **A grant takes the lowest free slot.** An acquire is granted in the lowest-numbered slot below the limit whose
///   lease is not live, while fewer than `limit` slots (any slot, those at or above the limit included) are live at
///   the request's instant. The slot's own next token is its grant's: tokens rise per slot.
/// - **Full is occupied.** With `limit` or more slots live, the acquire is refused as a lease refuses one while it is
///   held ([`Rejection::Occupied`](crate::Rejection::Occupied), or an earlier reason: the clock, the TTL): it is
///   decided on the lowest live slot. So is an acquire by an owner that holds a live slot already, on that slot: an
///   owner holds at most one slot.
/// - **A lower limit revokes nothing.** Slots at or above a lowered limit keep their leases, renew and release as
///   before, and count as held: new grants wait until fewer than the new limit are live.
/// - **Renewals and releases are the slot's.** They are decided by the slot's row alone, by owner and token, so a
///   holder whose slot has moved on (expired, and granted again with a newer token) is refused, and cannot free or
///   renew its successor's lease.
/// - **One instant for all slots.** Every request is evaluated at `now`, or under [`ClockPolicy::Clamp`] at the
///   latest instant any slot observed when `now` is earlier. Under [`ClockPolicy::Reject`] a `now` earlier than that
///   is refused ([`Rejection::ClockRegressed`](crate::Rejection::ClockRegressed)) in the slot that observed it, as
///   its row refuses one.
/// - **Each slot's fence is its own**: [`LeaseRow::check_write`] on the slot's row, against the slot's mark.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Semaphore<'a> {
    rows: &'a [LeaseRow],
}

/// What [`Semaphore::decide`] answers: the slot the request was decided in, the decision, and the slot's row to write
/// back in the same transaction, if any.
#[must_use = "the row must be written, and committed, before the decision is shown"]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct SlotDecision {
    slot: u32,
    answer: RowDecision,
}

impl<'a> Semaphore<'a> {
    /// The semaphore whose slot rows are `rows`, or `None` for more than [`MAX_LIMIT`] of them (no limit makes so
    /// many slots).
    #[must_use]
    pub const fn new(rows: &'a [LeaseRow]) -> Option<Self> {
        if rows.len() <= MAX_LIMIT as usize {
            Some(Self { rows })
        } else {
            None
        }
    }

    /// The slot rows.
    #[must_use]
    pub const fn rows(&self) -> &'a [LeaseRow] {
        self.rows
    }

    /// How many slots hold a lease live at `now`.
    #[must_use]
    pub fn live(&self, now: Duration) -> u32 {
        let live = self.rows.iter().filter(|row| is_live(row, now)).count();
        // At most MAX_LIMIT rows (see `new`): the count always fits.
        u32::try_from(live).unwrap_or(MAX_LIMIT)
    }

    /// `slot`'s row: the stored one, or [`LeaseRow::EMPTY`] past the end.
    #[must_use]
    pub fn row(&self, slot: u32) -> LeaseRow {
        usize::try_from(slot).ok().and_then(|index| self.rows.get(index)).copied().unwrap_or(LeaseRow::EMPTY)
    }

    /// Decides `request` at `now` under `clock_policy` (see the rules above).
    pub fn decide(&self, request: SlotRequest, now: Duration, clock_policy: ClockPolicy) -> SlotDecision {
        let mut in_row = match request {
            SlotRequest::Acquire { owner, ttl, .. } => Request::Acquire { owner, ttl },
            SlotRequest::Reacquire { owner, ttl, .. } => Request::Reacquire { owner, ttl },
            SlotRequest::Renew { owner, token, ttl, .. } => Request::Renew { owner, token, ttl },
            SlotRequest::Release { owner, token, .. } => Request::Release { owner, token },
            SlotRequest::Revoke { token, .. } => Request::Revoke { token },
        };
        // The slot that observed the latest instant (the first of equals) holds the semaphore's watermark.
        let (latest, mut observed) = self
            .slots()
            .map(|(slot, row)| (slot, row.checkpoint().observed()))
            .fold((0, Duration::ZERO), |best, slot| if slot.1 > best.1 { slot } else { best });
        let Ok(now) = rules::observe(&mut observed, clock_policy, now) else {
            // An earlier instant, refused in the slot whose watermark refuses it, as its own row refuses it.
            return SlotDecision { slot: latest, answer: self.row(latest).decide(in_row, now, clock_policy) };
        };
        let slot = match request {
            SlotRequest::Acquire { owner, limit, .. } => self.grant_slot(owner, limit, now),
            SlotRequest::Reacquire { owner, ttl, limit } => {
                let slot = self.grant_slot(owner, limit, now);
                if slot >= limit.get() || holder(&self.row(slot)) != Some(owner) || !is_live(&self.row(slot), now) {
                    in_row = Request::Acquire { owner, ttl }; // no own slot below the limit to rotate
                }
                slot
            }
            SlotRequest::Renew { slot, .. } | SlotRequest::Release { slot, .. } | SlotRequest::Revoke { slot, .. } => {
                slot
            }
        };
        SlotDecision { slot, answer: self.row(slot).decide(in_row, now, clock_policy) }
    }

    /// The slot an acquire by `owner` at `now` is decided in: the owner's own live slot, else (when full) the lowest
    /// live slot, else the lowest free slot below `limit`.
    fn grant_slot(&self, owner: OwnerId, limit: Limit, now: Duration) -> u32 {
        let live = |row: &LeaseRow| is_live(row, now);
        if let Some((slot, _)) = self.slots().find(|(_, row)| live(row) && holder(row) == Some(owner)) {
            slot
        } else if self.live(now) >= limit.get() {
            self.slots().find(|(_, row)| live(row)).map_or(0, |(slot, _)| slot)
        } else {
            (0..limit.get()).find(|&slot| !live(&self.row(slot))).unwrap_or(0)
        }
    }

    fn slots(&self) -> impl Iterator<Item = (u32, LeaseRow)> + 'a {
        (0..MAX_LIMIT).zip(self.rows.iter().copied())
    }
}

impl SlotDecision {
    /// The slot the request was decided in: the granted one, the one renewed or released, for a refused acquire the
    /// live slot that refused it, and for an instant refused as earlier than the semaphore's watermark the slot that
    /// holds it.
    #[must_use]
    pub const fn slot(&self) -> u32 {
        self.slot
    }

    /// The decision.
    pub const fn decision(&self) -> Decision {
        self.answer.decision()
    }

    /// The row to write back in slot [`slot`](Self::slot), in the request's transaction and before the decision is
    /// shown; `None` when nothing changed.
    #[must_use]
    pub const fn write(&self) -> Option<LeaseRow> {
        self.answer.write()
    }

    /// The token the decision issued in its slot ([`RowDecision::issued`]).
    #[must_use]
    pub const fn issued(&self) -> Option<FencingToken> {
        self.answer.issued()
    }

    /// The instant the request was decided at ([`RowDecision::at`]).
    #[must_use]
    pub const fn at(&self) -> Duration {
        self.answer.at()
    }

    /// The [`Event`] an accepted request records in slot [`slot`](Self::slot) ([`RowDecision::event`]; its
    /// `revision` is the slot row's).
    #[must_use]
    pub fn event<R>(&self, resource: R) -> Option<Event<R>> {
        self.answer.event(resource)
    }
}

fn is_live(row: &LeaseRow, now: Duration) -> bool {
    row.checkpoint().lease().is_some_and(|lease| lease.is_live(now))
}

fn holder(row: &LeaseRow) -> Option<OwnerId> {
    row.checkpoint().lease().map(|lease| lease.owner())
}
