//! The rules every decision shares, written once: the clock check, the TTL check, the next token, and the check that
//! a request comes from the current holder. [`LeaseAuthority`](crate::LeaseAuthority) and, with the `alloc` feature,
//! `LeaseTable` are both built from these functions, so one resource behaves the same in either.

use core::time::Duration;

use crate::{ClockPolicy, FencingToken, Lease, OwnerId, Rejection};

/// An instant as one integer that orders as [`Duration`] does: the seconds in the high 64 bits, the nanoseconds in
/// the low ones. Building it takes no arithmetic (the two fields side by side), and comparing two of them is one `cmp`
/// and one `sbb`, where `Duration`'s derived order compares the fields one by one and selects between the answers.
#[inline(always)]
const fn instant(at: Duration) -> u128 {
    (at.as_secs() as u128) << 64 | at.subsec_nanos() as u128
}

/// `earlier < later`, as [`Duration`] orders them.
#[inline(always)]
pub(crate) const fn before(earlier: Duration, later: Duration) -> bool {
    instant(earlier) < instant(later)
}

/// The later of two instants (either one when they are equal, which are then the same [`Duration`]).
#[inline(always)]
pub(crate) const fn later(a: Duration, b: Duration) -> Duration {
    if before(a, b) {
        b
    } else {
        a
    }
}

/// Step 1: the instant a request is evaluated at, advancing `observed` (the watermark) when time moved forward.
#[inline(always)]
pub(crate) fn observe(observed: &mut Duration, policy: ClockPolicy, now: Duration) -> Result<Duration, Rejection> {
    if !before(now, *observed) {
        *observed = now;
        Ok(now)
    } else {
        match policy {
            ClockPolicy::Reject => Err(Rejection::ClockRegressed),
            ClockPolicy::Clamp => Ok(*observed),
        }
    }
}

/// Step 2: the deadline a TTL gives at `now`.
#[inline(always)]
pub(crate) fn deadline(now: Duration, ttl: Duration) -> Result<Duration, Rejection> {
    if ttl.is_zero() {
        return Err(Rejection::InvalidTtl);
    }
    now.checked_add(ttl).ok_or(Rejection::DeadlineOverflow)
}

/// The token a new grant gets after `last_issued`: `1` first, then the successor; never wraps.
pub(crate) fn next_token(last_issued: Option<FencingToken>) -> Result<FencingToken, Rejection> {
    match last_issued {
        None => Ok(FencingToken::FIRST),
        Some(last) => last.next().ok_or(Rejection::TokenSpaceExhausted),
    }
}

/// Whether a grant to `owner` may go ahead at `now` over the current record: only when no lease is live, or, for a
/// rotation, when the live lease is `owner`'s own.
pub(crate) fn vacant_for(lease: Option<Lease>, owner: OwnerId, now: Duration, rotate: bool) -> Result<(), Rejection> {
    match lease {
        Some(live) if live.is_live(now) && !(rotate && live.owner() == owner) => Err(Rejection::Occupied),
        _ => Ok(()),
    }
}

/// The current lease, if it is `owner`'s with `token` and live at `now`; else why not: no lease on record
/// (`NotHeld`), another token (`StaleToken`), another owner (`WrongOwner`), or expired.
pub(crate) fn current_lease(
    mut lease: Option<Lease>,
    owner: OwnerId,
    token: FencingToken,
    now: Duration,
) -> Result<Lease, Rejection> {
    held_lease(&mut lease, owner, token, now).copied()
}

/// [`current_lease`], as the record itself, for a change in place (a renewal writes the expiry alone).
pub(crate) fn held_lease(
    lease: &mut Option<Lease>,
    owner: OwnerId,
    token: FencingToken,
    now: Duration,
) -> Result<&mut Lease, Rejection> {
    let lease = lease.as_mut().ok_or(Rejection::NotHeld)?;
    if lease.token() != token {
        Err(Rejection::StaleToken)
    } else if lease.owner() != owner {
        Err(Rejection::WrongOwner)
    } else if !lease.is_live(now) {
        Err(Rejection::Expired)
    } else {
        Ok(lease)
    }
}
