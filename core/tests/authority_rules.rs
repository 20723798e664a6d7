//! The authority's rules, one test each, named after the rule.
#![cfg(test)] // test code throughout: clippy.toml lets it unwrap, expect, panic and index

use core::time::Duration;

use lease_machines::{Checkpoint, ClockPolicy, Decision, FencingToken, Lease, LeaseAuthority, Rejection};

mod support;
use support::{s, token, A, B};

fn granted(decision: Decision) -> Lease {
    match decision {
        Decision::Granted(lease) => lease,
        other => panic!("expected a grant, got {other:?}"),
    }
}

fn rejected(reason: Rejection) -> Decision {
    Decision::Rejected(reason)
}

#[test]
fn first_token_is_one() {
    let mut authority = LeaseAuthority::new();
    let lease = granted(authority.acquire(A, s(0), s(5)));
    assert_eq!(lease.token(), FencingToken::FIRST);
    assert_eq!(lease.token().value(), 1);
    assert_eq!(lease.owner(), A);
    assert_eq!(lease.expires_at(), s(5));
    assert_eq!(authority.last_issued(), Some(token(1)));
}

#[test]
fn zero_is_never_a_token() {
    assert_eq!(FencingToken::new(0), None);
    assert_eq!(FencingToken::new(u64::MAX).map(FencingToken::value), Some(u64::MAX));
    assert!(token(2) > token(1));
}

#[test]
fn every_acquisition_gets_a_strictly_greater_token_even_for_the_same_owner() {
    let mut authority = LeaseAuthority::new();
    let first = granted(authority.acquire(A, s(0), s(1)));
    // Expired at 1 s: the same owner acquires again and gets a new token.
    let second = granted(authority.acquire(A, s(1), s(1)));
    assert_eq!(authority.release(A, second.token(), s(1)), Decision::Released);
    let third = granted(authority.acquire(A, s(1), s(1)));
    assert_eq!([first.token().value(), second.token().value(), third.token().value()], [1, 2, 3]);
}

#[test]
fn acquire_while_live_is_occupied_even_for_the_holder() {
    let mut authority = LeaseAuthority::new();
    let _ = granted(authority.acquire(A, s(0), s(5)));
    assert_eq!(authority.acquire(B, s(4), s(5)), rejected(Rejection::Occupied));
    assert_eq!(authority.acquire(A, s(4), s(5)), rejected(Rejection::Occupied));
    assert_eq!(authority.last_issued(), Some(token(1)));
}

#[test]
fn a_lease_expires_at_now_equal_to_expires_at() {
    let mut authority = LeaseAuthority::new();
    let lease = granted(authority.acquire(A, s(0), s(5)));
    assert!(lease.is_live(Duration::from_nanos(4_999_999_999)));
    assert!(!lease.is_live(s(5)));
    assert_eq!(lease.remaining(s(3)), s(2));
    assert_eq!(lease.remaining(s(9)), Duration::ZERO);
    assert_eq!(authority.acquire(B, Duration::from_nanos(4_999_999_999), s(5)), rejected(Rejection::Occupied));
    assert_eq!(granted(authority.acquire(B, s(5), s(5))).token(), token(2));
}

#[test]
fn renewal_keeps_the_token_and_counts_from_now() {
    let mut authority = LeaseAuthority::new();
    let lease = granted(authority.acquire(A, s(0), s(2)));
    let renewed = authority.renew(A, lease.token(), s(1), s(3));
    assert_eq!(renewed, Decision::Renewed(Lease::new(A, token(1), s(4))));
}

#[test]
fn renewal_never_shortens_a_lease() {
    let mut authority = LeaseAuthority::new();
    let lease = granted(authority.acquire(A, s(0), s(10)));
    let renewed = authority.renew(A, lease.token(), s(1), s(2));
    assert_eq!(renewed, Decision::Renewed(Lease::new(A, token(1), s(10))));
    assert_eq!(authority.lease().map(|l| l.expires_at()), Some(s(10)));
}

#[test]
fn renewal_cannot_resurrect_an_expired_lease() {
    let mut authority = LeaseAuthority::new();
    let lease = granted(authority.acquire(A, s(0), s(2)));
    assert_eq!(authority.renew(A, lease.token(), s(2), s(10)), rejected(Rejection::Expired));
    assert_eq!(authority.lease(), Some(lease), "the record is unchanged");
    assert_eq!(authority.observed(), s(2), "the watermark still advanced");
}

#[test]
fn renewal_cannot_resurrect_a_released_lease() {
    let mut authority = LeaseAuthority::new();
    let lease = granted(authority.acquire(A, s(0), s(10)));
    assert_eq!(authority.release(A, lease.token(), s(1)), Decision::Released);
    assert_eq!(authority.renew(A, lease.token(), s(2), s(10)), rejected(Rejection::NotHeld));
    assert_eq!(authority.lease(), None);
}

#[test]
fn renewal_and_release_need_the_current_token() {
    let mut authority = LeaseAuthority::new();
    let first = granted(authority.acquire(A, s(0), s(1)));
    let second = granted(authority.acquire(A, s(1), s(10)));
    assert_eq!(authority.renew(A, first.token(), s(2), s(10)), rejected(Rejection::StaleToken));
    assert_eq!(authority.release(A, first.token(), s(2)), rejected(Rejection::StaleToken));
    // A token the history never issued is not the current one either.
    assert_eq!(authority.renew(A, token(99), s(2), s(10)), rejected(Rejection::StaleToken));
    assert_eq!(authority.lease(), Some(second));
}

#[test]
fn renewal_and_release_need_the_current_owner() {
    let mut authority = LeaseAuthority::new();
    let lease = granted(authority.acquire(A, s(0), s(10)));
    assert_eq!(authority.renew(B, lease.token(), s(1), s(10)), rejected(Rejection::WrongOwner));
    assert_eq!(authority.release(B, lease.token(), s(1)), rejected(Rejection::WrongOwner));
    assert_eq!(authority.lease(), Some(lease));
}

#[test]
fn renewal_and_release_with_nothing_held_are_not_held() {
    let mut authority = LeaseAuthority::new();
    assert_eq!(authority.renew(A, token(1), s(0), s(1)), rejected(Rejection::NotHeld));
    assert_eq!(authority.release(A, token(1), s(0)), rejected(Rejection::NotHeld));
}

#[test]
fn release_after_expiry_is_expired() {
    let mut authority = LeaseAuthority::new();
    let lease = granted(authority.acquire(A, s(0), s(1)));
    assert_eq!(authority.release(A, lease.token(), s(3)), rejected(Rejection::Expired));
}

#[test]
fn release_keeps_the_token_high_water() {
    let mut authority = LeaseAuthority::new();
    let lease = granted(authority.acquire(A, s(0), s(10)));
    assert_eq!(authority.release(A, lease.token(), s(1)), Decision::Released);
    assert_eq!(authority.last_issued(), Some(token(1)));
    assert_eq!(granted(authority.acquire(B, s(1), s(10))).token(), token(2));
}

#[test]
fn zero_ttl_is_invalid() {
    let mut authority = LeaseAuthority::new();
    assert_eq!(authority.acquire(A, s(0), Duration::ZERO), rejected(Rejection::InvalidTtl));
    assert_eq!(authority.reacquire(A, s(0), Duration::ZERO), rejected(Rejection::InvalidTtl));
    let lease = granted(authority.acquire(A, s(0), s(1)));
    assert_eq!(authority.renew(A, lease.token(), s(0), Duration::ZERO), rejected(Rejection::InvalidTtl));
}

#[test]
fn deadline_overflow_is_rejected() {
    let mut authority = LeaseAuthority::new();
    assert_eq!(authority.acquire(A, s(1), Duration::MAX), rejected(Rejection::DeadlineOverflow));
    let lease = granted(authority.acquire(A, s(1), s(1)));
    assert_eq!(authority.renew(A, lease.token(), s(1), Duration::MAX), rejected(Rejection::DeadlineOverflow));
    // The largest representable deadline itself is fine.
    let mut edge = LeaseAuthority::new();
    let lease = granted(edge.acquire(A, Duration::ZERO, Duration::MAX));
    assert_eq!(lease.expires_at(), Duration::MAX);
    assert!(lease.is_live(Duration::MAX - Duration::from_nanos(1)));
}

#[test]
fn token_space_exhaustion_fails_closed() {
    let last = Checkpoint::from_parts(Some(FencingToken::LAST), None, s(0)).expect("consistent parts");
    let mut authority = LeaseAuthority::restore(last);
    assert_eq!(authority.acquire(A, s(0), s(1)), rejected(Rejection::TokenSpaceExhausted));
    assert_eq!(authority.reacquire(A, s(0), s(1)), rejected(Rejection::TokenSpaceExhausted));
    assert_eq!(authority.last_issued(), Some(FencingToken::LAST), "tokens never wrap");
    assert_eq!(FencingToken::LAST.next(), None);
}

#[test]
fn the_last_token_is_issued_then_nothing_more() {
    let before_last = Checkpoint::from_parts(FencingToken::new(u64::MAX - 1), None, s(0)).expect("consistent");
    let mut authority = LeaseAuthority::restore(before_last);
    assert_eq!(granted(authority.acquire(A, s(0), s(1))).token(), FencingToken::LAST);
    assert_eq!(authority.acquire(B, s(1), s(1)), rejected(Rejection::TokenSpaceExhausted));
}

#[test]
fn a_regressing_clock_is_rejected_and_changes_nothing() {
    let mut authority = LeaseAuthority::new();
    let lease = granted(authority.acquire(A, s(10), s(5)));
    let before = authority.checkpoint();
    assert_eq!(authority.acquire(B, s(9), s(5)), rejected(Rejection::ClockRegressed));
    assert_eq!(authority.renew(A, lease.token(), s(9), s(5)), rejected(Rejection::ClockRegressed));
    assert_eq!(authority.release(A, lease.token(), s(9)), rejected(Rejection::ClockRegressed));
    assert_eq!(authority.reacquire(A, s(9), s(5)), rejected(Rejection::ClockRegressed));
    assert_eq!(authority.checkpoint(), before);
}

#[test]
fn a_rejected_request_still_advances_the_clock() {
    let mut authority = LeaseAuthority::new();
    let _ = granted(authority.acquire(A, s(0), s(10)));
    assert_eq!(authority.acquire(B, s(7), s(1)), rejected(Rejection::Occupied));
    assert_eq!(authority.observed(), s(7));
    assert_eq!(authority.acquire(B, s(8), Duration::ZERO), rejected(Rejection::InvalidTtl));
    assert_eq!(authority.observed(), s(8));
    assert_eq!(authority.acquire(B, s(6), s(1)), rejected(Rejection::ClockRegressed));
}

#[test]
fn clamp_cannot_revive_an_expired_lease() {
    let mut authority = LeaseAuthority::new().with_clock_policy(ClockPolicy::Clamp);
    let lease = granted(authority.acquire(A, s(0), s(5)));
    // Observe 6 s (the lease has expired), then step back to 4 s: evaluated at 6 s, still expired.
    assert_eq!(authority.acquire(B, s(6), Duration::ZERO), rejected(Rejection::InvalidTtl));
    assert_eq!(authority.renew(A, lease.token(), s(4), s(5)), rejected(Rejection::Expired));
    assert_eq!(authority.observed(), s(6));
}

#[test]
fn clamp_cannot_shorten_a_lease() {
    let mut authority = LeaseAuthority::new().with_clock_policy(ClockPolicy::Clamp);
    let _ = granted(authority.acquire(A, s(0), s(1)));
    // At 10 s the old lease is gone; a backwards request at 3 s is granted as if at 10 s.
    assert_eq!(authority.acquire(B, s(10), Duration::ZERO), rejected(Rejection::InvalidTtl));
    let lease = granted(authority.acquire(B, s(3), s(5)));
    assert_eq!(lease.expires_at(), s(15));
    assert_eq!(authority.acquire(A, s(12), s(5)), rejected(Rejection::Occupied));
}

#[test]
fn reacquire_rotates_the_holders_own_live_grant() {
    let mut authority = LeaseAuthority::new();
    let old = granted(authority.acquire(A, s(0), s(10)));
    let new = granted(authority.reacquire(A, s(1), s(10)));
    assert_eq!(new.token(), token(2));
    assert_eq!(new.expires_at(), s(11));
    assert_eq!(authority.renew(A, old.token(), s(2), s(10)), rejected(Rejection::StaleToken));
    assert_eq!(authority.release(A, old.token(), s(2)), rejected(Rejection::StaleToken));
    assert_eq!(authority.renew(A, new.token(), s(2), s(10)), Decision::Renewed(Lease::new(A, token(2), s(12))));
}

#[test]
fn reacquire_against_another_owners_live_lease_is_occupied() {
    let mut authority = LeaseAuthority::new();
    let _ = granted(authority.acquire(A, s(0), s(10)));
    assert_eq!(authority.reacquire(B, s(1), s(10)), rejected(Rejection::Occupied));
}

#[test]
fn reacquire_when_vacant_or_expired_is_acquire() {
    let mut authority = LeaseAuthority::new();
    assert_eq!(granted(authority.reacquire(A, s(0), s(1))).token(), token(1));
    assert_eq!(granted(authority.reacquire(B, s(1), s(1))).token(), token(2));
}

#[test]
fn from_parts_refuses_a_token_the_history_never_issued() {
    let lease = Lease::new(A, token(4), s(10));
    assert_eq!(Checkpoint::from_parts(Some(token(3)), Some(lease), s(0)), None);
    assert_eq!(Checkpoint::from_parts(None, Some(lease), s(0)), None);
    let ok = Checkpoint::from_parts(Some(token(4)), Some(lease), s(2)).expect("consistent parts");
    assert_eq!((ok.last_issued(), ok.lease(), ok.observed()), (Some(token(4)), Some(lease), s(2)));
    assert!(Checkpoint::from_parts(Some(token(9)), None, s(0)).is_some());
    assert!(Checkpoint::from_parts(None, None, s(0)).is_some());
}

#[test]
fn restore_continues_the_token_sequence_and_the_clock() {
    let mut authority = LeaseAuthority::new();
    let lease = granted(authority.acquire(A, s(3), s(10)));
    let mut restored = LeaseAuthority::restore(authority.checkpoint());
    assert_eq!(restored.acquire(B, s(2), s(1)), rejected(Rejection::ClockRegressed));
    assert_eq!(restored.acquire(B, s(4), s(1)), rejected(Rejection::Occupied));
    assert_eq!(restored.release(A, lease.token(), s(5)), Decision::Released);
    assert_eq!(granted(restored.acquire(B, s(5), s(1))).token(), token(2));
}

#[test]
fn an_unknown_watermark_trusts_the_next_now() {
    let checkpoint = Checkpoint::from_parts(Some(token(3)), None, Duration::ZERO).expect("consistent");
    let mut authority = LeaseAuthority::restore(checkpoint);
    assert_eq!(granted(authority.acquire(A, s(0), s(1))).token(), token(4));
}

#[test]
fn every_rejection_has_a_distinct_snake_case_name() {
    let names = Rejection::ALL.map(Rejection::as_str);
    assert_eq!(
        names,
        [
            "clock_regressed",
            "invalid_ttl",
            "deadline_overflow",
            "occupied",
            "token_space_exhausted",
            "not_held",
            "stale_token",
            "wrong_owner",
            "expired",
            "revision_mismatch",
            "revision_space_exhausted",
            "no_quorum",
            "not_leader",
            "stale_term",
            "leadership_required"
        ]
    );
    for (index, reason) in Rejection::ALL.into_iter().enumerate() {
        assert_eq!(reason.index(), index);
    }
    assert_eq!(Rejection::StaleToken.to_string(), "the token is not the current lease's token");
}

#[test]
fn decisions_expose_their_lease_and_reason() {
    let lease = Lease::new(A, token(1), s(1));
    assert_eq!(Decision::Granted(lease).lease(), Some(lease));
    assert_eq!(Decision::Renewed(lease).lease(), Some(lease));
    assert_eq!(Decision::Released.lease(), None);
    assert_eq!(rejected(Rejection::Occupied).rejection(), Some(Rejection::Occupied));
    assert_eq!(Decision::Released.rejection(), None);
    assert!(Decision::Released.is_accepted());
    assert!(!rejected(Rejection::Expired).is_accepted());
}

#[test]
fn each_clock_policy_has_one_stable_name() {
    assert_eq!(ClockPolicy::ALL.map(ClockPolicy::as_str), ["reject", "clamp"]);
    for policy in ClockPolicy::ALL {
        assert_eq!(ClockPolicy::from_name(policy.as_str()), Some(policy));
    }
    assert_eq!(ClockPolicy::from_name("Reject"), None);
    assert_eq!(ClockPolicy::from_name(""), None);
}
