//! The decision engine for one resource.

use core::time::Duration;

use crate::rules;
use crate::{Checkpoint, ClockPolicy, Decision, FencingToken, Lease, OwnerId, Rejection};

/// The single authority for one resource and one token namespace: it decides who holds the lease and until when.
///
/// It is a pure state machine. Callers pass `now` (a [`Duration`] from an origin they choose, the same origin for the
/// whole history) and get a [`Decision`]; the authority reads no clock, does no I/O, never allocates and never panics.
///
/// Every request is evaluated in the same order, and the first failing check is the answer:
///
/// 1. **Clock.** If `now` is earlier than the watermark, [`ClockPolicy::Reject`] refuses with
///    [`Rejection::ClockRegressed`] and changes nothing; [`ClockPolicy::Clamp`] evaluates the request at the
///    watermark instead. Otherwise the watermark advances to `now`, and stays advanced even if a later check
///    refuses the request.
/// 2. **TTL** (acquire, reacquire, renew). A zero TTL is [`Rejection::InvalidTtl`]; a deadline `now + ttl` beyond
///    [`Duration::MAX`] is [`Rejection::DeadlineOverflow`].
/// 3. **The lease record**, as each request's documentation says.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
pub struct LeaseAuthority {
    last_issued: Option<FencingToken>,
    lease: Option<Lease>,
    observed: Duration,
    clock_policy: ClockPolicy,
}

impl LeaseAuthority {
    /// A fresh authority: no token issued, no lease, watermark at [`Duration::ZERO`], [`ClockPolicy::Reject`].
    ///
    /// Only for a namespace that has never issued a token. Over an existing namespace use
    /// [`restore`](Self::restore) with its newest checkpoint: starting over would issue token 1 again.
    #[must_use]
    pub const fn new() -> Self {
        Self { last_issued: None, lease: None, observed: Duration::ZERO, clock_policy: ClockPolicy::Reject }
    }

    /// An authority that continues the history captured in `checkpoint`, with [`ClockPolicy::Reject`]. Every later
    /// request is decided exactly as the authority that produced the checkpoint would have decided it.
    #[must_use]
    pub const fn restore(checkpoint: Checkpoint) -> Self {
        Self {
            last_issued: checkpoint.last_issued(),
            lease: checkpoint.lease(),
            observed: checkpoint.observed(),
            clock_policy: ClockPolicy::Reject,
        }
    }

    /// The same authority with another [`ClockPolicy`].
    #[must_use]
    pub const fn with_clock_policy(mut self, clock_policy: ClockPolicy) -> Self {
        self.clock_policy = clock_policy;
        self
    }

    /// The authority's [`ClockPolicy`].
    #[must_use]
    pub const fn clock_policy(&self) -> ClockPolicy {
        self.clock_policy
    }

    /// The authority's whole state, to store before the decision that produced it is shown to anyone.
    #[must_use]
    pub const fn checkpoint(&self) -> Checkpoint {
        Checkpoint::from_state(self.last_issued, self.lease, self.observed)
    }

    /// The current lease record, live or expired, or `None` when vacant. Reads no clock and changes nothing.
    #[must_use]
    pub const fn lease(&self) -> Option<Lease> {
        self.lease
    }

    /// The lease live at `now`, if any. A pure query: it neither checks nor advances the watermark.
    #[must_use]
    pub fn live_lease(&self, now: Duration) -> Option<Lease> {
        self.lease.filter(|lease| lease.is_live(now))
    }

    /// The greatest token ever issued (the token high-water), or `None` when none was.
    #[must_use]
    pub const fn last_issued(&self) -> Option<FencingToken> {
        self.last_issued
    }

    /// The clock watermark: the latest `now` observed, as a [`Duration`] from the history's origin.
    #[must_use]
    pub const fn observed(&self) -> Duration {
        self.observed
    }

    /// Asks for the lease for `owner` at `now`, to last `ttl`.
    ///
    /// Grants a new lease with the next fencing token (`1` first, then strictly greater, the same owner's included)
    /// that expires at `now + ttl`, when no lease is live at `now`. Refuses with [`Rejection::ClockRegressed`],
    /// [`Rejection::InvalidTtl`] or [`Rejection::DeadlineOverflow`] (see the type's documentation), then
    /// [`Rejection::Occupied`] while any lease is live (even the requester's own: see [`reacquire`](Self::reacquire)),
    /// then [`Rejection::TokenSpaceExhausted`] once token `u64::MAX` has been issued.
    pub fn acquire(&mut self, owner: OwnerId, now: Duration, ttl: Duration) -> Decision {
        self.grant(owner, now, ttl, false)
    }

    /// [`acquire`](Self::acquire), with one exception: the owner of the live lease is granted a new lease with a new,
    /// greater token, which rotates its grant. The old token is stale from then on, so anything still holding it is
    /// fenced. Another owner's live lease is still [`Rejection::Occupied`].
    pub fn reacquire(&mut self, owner: OwnerId, now: Duration, ttl: Duration) -> Decision {
        self.grant(owner, now, ttl, true)
    }

    /// Extends the current lease: same owner, same token, expiry `max(expires_at, now + ttl)`. Counted from `now`,
    /// never shortened.
    ///
    /// Refuses, after the clock and TTL checks: [`Rejection::NotHeld`] when there is no lease record,
    /// [`Rejection::StaleToken`] when `token` is not the current lease's token, [`Rejection::WrongOwner`] when it is
    /// but `owner` is not its owner, and [`Rejection::Expired`] when the lease expired at or before `now` (renewal
    /// never resurrects a lease).
    pub fn renew(&mut self, owner: OwnerId, token: FencingToken, now: Duration, ttl: Duration) -> Decision {
        let (now, deadline) = match self.evaluate(now, ttl) {
            Ok(times) => times,
            Err(rejection) => return Decision::Rejected(rejection),
        };
        match rules::held_lease(&mut self.lease, owner, token, now) {
            Ok(lease) => {
                *lease = lease.extended(deadline);
                Decision::Renewed(*lease)
            }
            Err(rejection) => Decision::Rejected(rejection),
        }
    }

    /// Gives the current lease back; the resource is vacant at once. The token high-water is kept, so the next grant
    /// still gets a greater token.
    ///
    /// Refuses, after the clock check, with [`Rejection::NotHeld`], [`Rejection::StaleToken`],
    /// [`Rejection::WrongOwner`] or [`Rejection::Expired`], exactly as [`renew`](Self::renew) does.
    pub fn release(&mut self, owner: OwnerId, token: FencingToken, now: Duration) -> Decision {
        let now = rules::observe(&mut self.observed, self.clock_policy, now);
        match now.and_then(|now| rules::current_lease(self.lease, owner, token, now)) {
            Ok(_) => {
                self.lease = None;
                Decision::Released
            }
            Err(rejection) => Decision::Rejected(rejection),
        }
    }

    fn grant(&mut self, owner: OwnerId, now: Duration, ttl: Duration, rotate: bool) -> Decision {
        let (now, deadline) = match self.evaluate(now, ttl) {
            Ok(times) => times,
            Err(rejection) => return Decision::Rejected(rejection),
        };
        if let Err(rejection) = rules::vacant_for(self.lease, owner, now, rotate) {
            return Decision::Rejected(rejection);
        }
        let token = match rules::next_token(self.last_issued) {
            Ok(token) => token,
            Err(rejection) => return Decision::Rejected(rejection),
        };
        let lease = Lease::new(owner, token, deadline);
        self.last_issued = Some(token);
        self.lease = Some(lease);
        Decision::Granted(lease)
    }

    /// Steps 1 and 2: the instant the request is evaluated at (advancing the watermark) and the deadline `ttl` gives.
    #[inline(always)]
    fn evaluate(&mut self, now: Duration, ttl: Duration) -> Result<(Duration, Duration), Rejection> {
        let now = rules::observe(&mut self.observed, self.clock_policy, now)?;
        Ok((now, rules::deadline(now, ttl)?))
    }
}
