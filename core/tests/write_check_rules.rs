//! The fence beside the authority's record (`Checkpoint::check_write`): its rules, one test each, then a property
//! test against a small model of "only the live lease's token writes".
//!
//! `PROPTEST_CASES` (proptest's own, default 256) sets the sequences per property.
#![cfg(test)] // test code throughout: clippy.toml lets it unwrap, expect, panic and index

use core::time::Duration;

use lease_machines::{Checkpoint, Decision, Fence, Lease, LeaseAuthority, OwnerId, Rejection, WriteCheck};
use proptest::prelude::*;

mod support;
use support::{s, token, A, B};

fn granted(decision: Decision) -> Lease {
    match decision {
        Decision::Granted(lease) => lease,
        other => panic!("expected a grant, got {other:?}"),
    }
}

fn admitted(mark: u64) -> WriteCheck {
    WriteCheck::Admitted(Fence::new(Some(token(mark))))
}

#[test]
fn the_live_leases_token_is_admitted_and_becomes_the_mark() {
    let mut authority = LeaseAuthority::new();
    let lease = granted(authority.acquire(A, s(0), s(10)));
    let check = authority.checkpoint().check_write(Fence::default(), lease.token(), s(5));
    assert_eq!(check, admitted(1));
    assert!(check.is_admitted());
    assert_eq!(check.fence().and_then(|fence| fence.highest()), Some(token(1)));
}

#[test]
fn a_superseded_token_is_refused_before_the_successor_writes() {
    let mut authority = LeaseAuthority::new();
    let first = granted(authority.acquire(A, s(0), s(10)));
    let _second = granted(authority.acquire(B, s(10), s(10)));
    // No write of token 2 reached the fence yet: its mark is still 1, and token 1 is refused all the same.
    let fence = Fence::new(Some(first.token()));
    let check = authority.checkpoint().check_write(fence, first.token(), s(11));
    assert_eq!(check, WriteCheck::Refused(Rejection::StaleToken));
    assert_eq!(check.fence(), None);
}

#[test]
fn a_token_below_the_mark_is_refused() {
    let checkpoint = Checkpoint::from_parts(Some(token(3)), Some(Lease::new(A, token(3), s(10))), s(0))
        .expect("a consistent checkpoint");
    assert_eq!(
        checkpoint.check_write(Fence::new(Some(token(3))), token(2), s(1)),
        WriteCheck::Refused(Rejection::StaleToken)
    );
}

#[test]
fn a_released_leases_token_is_refused() {
    let mut authority = LeaseAuthority::new();
    let lease = granted(authority.acquire(A, s(0), s(10)));
    assert_eq!(authority.release(A, lease.token(), s(1)), Decision::Released);
    let check = authority.checkpoint().check_write(Fence::new(Some(lease.token())), lease.token(), s(2));
    assert_eq!(check, WriteCheck::Refused(Rejection::NotHeld));
}

#[test]
fn a_token_whose_successor_came_and_went_is_stale_not_merely_not_held() {
    let mut authority = LeaseAuthority::new();
    let first = granted(authority.acquire(A, s(0), s(10)));
    assert_eq!(authority.release(A, first.token(), s(1)), Decision::Released);
    let second = granted(authority.acquire(B, s(2), s(10)));
    assert_eq!(authority.release(B, second.token(), s(3)), Decision::Released);
    let check = authority.checkpoint().check_write(Fence::default(), first.token(), s(4));
    assert_eq!(check, WriteCheck::Refused(Rejection::StaleToken));
}

#[test]
fn an_expired_leases_token_is_refused_with_no_successor_yet() {
    let mut authority = LeaseAuthority::new();
    let lease = granted(authority.acquire(A, s(0), s(10)));
    let checkpoint = authority.checkpoint();
    assert!(checkpoint.check_write(Fence::default(), lease.token(), Duration::from_nanos(9_999_999_999)).is_admitted());
    // The expiry instant already belongs to the next owner, as for every decision.
    assert_eq!(checkpoint.check_write(Fence::default(), lease.token(), s(10)), WriteCheck::Refused(Rejection::Expired));
}

#[test]
fn a_renewed_lease_writes_on_past_its_first_deadline() {
    let mut authority = LeaseAuthority::new();
    let lease = granted(authority.acquire(A, s(0), s(10)));
    assert!(authority.renew(A, lease.token(), s(8), s(10)).is_accepted());
    assert!(authority.checkpoint().check_write(Fence::default(), lease.token(), s(15)).is_admitted());
}

#[test]
fn a_clock_behind_the_watermark_is_read_as_the_watermark() {
    let mut authority = LeaseAuthority::new();
    let lease = granted(authority.acquire(A, s(0), s(10)));
    // Another request observed 12 s: the lease is expired there, whatever an earlier clock says.
    assert_eq!(authority.acquire(B, s(12), Duration::ZERO), Decision::Rejected(Rejection::InvalidTtl));
    let check = authority.checkpoint().check_write(Fence::default(), lease.token(), s(3));
    assert_eq!(check, WriteCheck::Refused(Rejection::Expired));
}

#[test]
fn a_token_above_every_issued_one_is_never_issued() {
    let mut authority = LeaseAuthority::new();
    assert_eq!(Checkpoint::default().check_write(Fence::default(), token(1), s(0)), WriteCheck::NeverIssued);
    let _ = granted(authority.acquire(A, s(0), s(10)));
    assert_eq!(authority.checkpoint().check_write(Fence::default(), token(2), s(1)), WriteCheck::NeverIssued);
}

#[test]
fn a_mark_above_every_issued_token_is_inconsistent() {
    let mut authority = LeaseAuthority::new();
    let lease = granted(authority.acquire(A, s(0), s(10)));
    let check = authority.checkpoint().check_write(Fence::new(Some(token(5))), lease.token(), s(1));
    assert_eq!(check, WriteCheck::InconsistentMark);
    assert_eq!(
        Checkpoint::default().check_write(Fence::new(Some(token(1))), token(1), s(0)),
        WriteCheck::InconsistentMark
    );
}

#[test]
fn a_check_changes_neither_the_checkpoint_nor_the_fence_it_was_given() {
    let mut authority = LeaseAuthority::new();
    let lease = granted(authority.acquire(A, s(0), s(10)));
    let checkpoint = authority.checkpoint();
    let fence = Fence::default();
    let _ = checkpoint.check_write(fence, lease.token(), s(20));
    assert_eq!(checkpoint.observed(), s(0));
    assert_eq!(fence.highest(), None);
}

/// One step of a history: a request to the authority, or a write with some token.
#[derive(Debug, Clone)]
enum Step {
    Acquire { owner: u64, ttl: u64 },
    Reacquire { owner: u64, ttl: u64 },
    Renew { owner: u64, token: u64, ttl: u64 },
    Release { owner: u64, token: u64 },
    Write { token: u64 },
    Advance { by: u64 },
}

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        (1..=3u64, 1..=6u64).prop_map(|(owner, ttl)| Step::Acquire { owner, ttl }),
        (1..=3u64, 1..=6u64).prop_map(|(owner, ttl)| Step::Reacquire { owner, ttl }),
        (1..=3u64, 1..=6u64, 1..=6u64).prop_map(|(owner, token, ttl)| Step::Renew { owner, token, ttl }),
        (1..=3u64, 1..=6u64).prop_map(|(owner, token)| Step::Release { owner, token }),
        (1..=7u64).prop_map(|token| Step::Write { token }),
        (0..=4u64).prop_map(|by| Step::Advance { by }),
    ]
}

/// The model: the token of the last grant, whether that grant is still held (not released), and its deadline.
#[derive(Debug, Default)]
struct Model {
    last_grant: u64,
    held: bool,
    expires_at: u64,
}

proptest! {
    #[test]
    fn only_the_live_leases_token_ever_writes(steps in proptest::collection::vec(step(), 1..64)) {
        let mut authority = LeaseAuthority::new();
        let mut fence = Fence::default();
        let mut model = Model::default();
        let mut now = 0u64;
        let mut written: Vec<u64> = Vec::new();
        for step in steps {
            match step {
                Step::Advance { by } => now += by,
                Step::Acquire { owner, ttl } | Step::Reacquire { owner, ttl } => {
                    let decision = if matches!(step, Step::Acquire { .. }) {
                        authority.acquire(OwnerId::new(owner), s(now), s(ttl))
                    } else {
                        authority.reacquire(OwnerId::new(owner), s(now), s(ttl))
                    };
                    if let Decision::Granted(lease) = decision {
                        model = Model { last_grant: lease.token().value(), held: true, expires_at: now + ttl };
                    }
                }
                Step::Renew { owner, token: presented, ttl } => {
                    if let Decision::Renewed(lease) = authority.renew(OwnerId::new(owner), token(presented), s(now), s(ttl)) {
                        model.expires_at = lease.expires_at().as_secs();
                    }
                }
                Step::Release { owner, token: presented } => {
                    if authority.release(OwnerId::new(owner), token(presented), s(now)) == Decision::Released {
                        model.held = false;
                    }
                }
                Step::Write { token: presented } => {
                    let check = authority.checkpoint().check_write(fence, token(presented), s(now));
                    let live = model.held && now < model.expires_at;
                    if presented > model.last_grant {
                        prop_assert_eq!(check, WriteCheck::NeverIssued);
                    } else {
                        prop_assert_eq!(check.is_admitted(), presented == model.last_grant && live, "{:?}", check);
                        // Superseded (a newer grant, or a newer write) is stale, whatever became of the newer one.
                        let superseded = presented < model.last_grant || fence.highest().is_some_and(|mark| presented < mark.value());
                        if superseded {
                            prop_assert_eq!(check, WriteCheck::Refused(Rejection::StaleToken));
                        } else if !model.held {
                            prop_assert_eq!(check, WriteCheck::Refused(Rejection::NotHeld));
                        }
                    }
                    if let WriteCheck::Admitted(next) = check {
                        // Admitted tokens never go down, and every one was the newest grant when it wrote.
                        prop_assert!(written.last().map_or(true, |last| *last <= presented));
                        written.push(presented);
                        fence = next;
                    }
                }
            }
        }
    }
}
