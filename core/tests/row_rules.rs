//! A store's row (`LeaseRow::decide`): its rules, one test each, then a property test that a row written back after
//! every request decides as one long-lived authority does, with a transfer as a release and a grant in one change, a
//! revocation as the holder's release, and the events of its accepted requests the audit's valid history.
//!
//! `PROPTEST_CASES` (proptest's own, default 256) sets the sequences per property.
#![cfg(test)] // test code throughout: clippy.toml lets it unwrap, expect, panic and index

use core::time::Duration;

use lease_machines::{
    Checkpoint, ClockPolicy, Decision, EventKind, Fence, FencingToken, Lease, LeaseAuthority, LeaseRow, OwnerId,
    Rejection, Request, WriteCheck,
};
use proptest::prelude::*;

mod support;
use support::{s, token, A, B};

const CLAMP: ClockPolicy = ClockPolicy::Clamp;

/// The row written back, which the test expects to exist.
fn written(row: &LeaseRow, request: Request, now: Duration) -> (Decision, LeaseRow) {
    let answer = row.decide(request, now, CLAMP);
    (answer.decision(), answer.write().expect("a row to write"))
}

#[test]
fn a_grant_writes_the_new_checkpoint_at_the_next_revision() {
    let (decision, row) = written(&LeaseRow::EMPTY, Request::Acquire { owner: A, ttl: s(10) }, s(5));
    assert_eq!(decision, Decision::Granted(Lease::new(A, token(1), s(15))));
    assert_eq!(row.revision(), 1);
    assert_eq!(row.checkpoint().last_issued(), Some(token(1)));
    assert_eq!(row.checkpoint().observed(), s(5));
}

#[test]
fn a_refusal_on_a_row_never_stored_still_writes_it_so_the_resource_has_its_row() {
    let (decision, row) = written(&LeaseRow::EMPTY, Request::Release { owner: A, token: token(1) }, s(0));
    assert_eq!(decision, Decision::Rejected(Rejection::NotHeld));
    assert_eq!(row, LeaseRow::EMPTY);
}

#[test]
fn a_refusal_keeps_the_lease_and_revision_and_writes_only_a_moved_watermark() {
    let (_, held) = written(&LeaseRow::EMPTY, Request::Acquire { owner: A, ttl: s(10) }, s(0));
    let later = held.decide(Request::Acquire { owner: B, ttl: s(10) }, s(3), CLAMP);
    assert_eq!(later.decision(), Decision::Rejected(Rejection::Occupied));
    let kept = later.write().expect("the watermark moved");
    assert_eq!((kept.revision(), kept.checkpoint().lease()), (1, held.checkpoint().lease()));
    assert_eq!(kept.checkpoint().observed(), s(3));
    // The same refusal at the same instant changes nothing at all.
    let again = kept.decide(Request::Acquire { owner: B, ttl: s(10) }, s(3), CLAMP);
    assert_eq!(again.write(), None);
}

#[test]
fn a_transfer_is_one_change_with_a_greater_token_for_the_new_owner() {
    let (_, held) = written(&LeaseRow::EMPTY, Request::Acquire { owner: A, ttl: s(10) }, s(0));
    let request = Request::Transfer { owner: A, token: token(1), new_owner: B, ttl: s(20) };
    let (decision, row) = written(&held, request, s(4));
    assert_eq!(decision, Decision::Granted(Lease::new(B, token(2), s(24))));
    assert_eq!(row.revision(), 2, "the release and the grant are one change");
    // The old holder is fenced at once.
    let check = row.check_write(Fence::new(Some(token(1))), token(1), s(5));
    assert_eq!(check, WriteCheck::Refused(Rejection::StaleToken));
}

#[test]
fn a_transfer_refused_by_its_grant_keeps_the_release_undone() {
    let (_, held) = written(&LeaseRow::EMPTY, Request::Acquire { owner: A, ttl: s(10) }, s(0));
    let request = Request::Transfer { owner: A, token: token(1), new_owner: B, ttl: Duration::ZERO };
    let (decision, row) = written(&held, request, s(4));
    assert_eq!(decision, Decision::Rejected(Rejection::InvalidTtl));
    assert_eq!(row.checkpoint().lease(), held.checkpoint().lease(), "A still holds its lease");
    assert_eq!((row.revision(), row.checkpoint().observed()), (1, s(4)));
}

#[test]
fn a_transfer_by_a_stale_holder_is_refused_as_its_release_is() {
    let (_, held) = written(&LeaseRow::EMPTY, Request::Acquire { owner: A, ttl: s(10) }, s(0));
    let request = Request::Transfer { owner: B, token: token(1), new_owner: B, ttl: s(10) };
    assert_eq!(held.decide(request, s(1), CLAMP).decision(), Decision::Rejected(Rejection::WrongOwner));
}

#[test]
fn a_row_cannot_have_issued_more_tokens_than_it_counts_changes() {
    let checkpoint = Checkpoint::from_parts(Some(token(3)), None, s(0)).expect("a consistent checkpoint");
    assert_eq!(LeaseRow::from_parts(checkpoint, 2), None);
    assert_eq!(LeaseRow::from_parts(checkpoint, 3).map(|row| row.revision()), Some(3));
}

#[test]
fn revisions_never_wrap() {
    let row = LeaseRow::from_parts(Checkpoint::default(), u64::MAX).expect("a row");
    let answer = row.decide(Request::Acquire { owner: A, ttl: s(1) }, s(1), CLAMP);
    assert_eq!(answer.decision(), Decision::Rejected(Rejection::RevisionSpaceExhausted));
    assert_eq!(answer.write().map(|row| (row.revision(), row.checkpoint().lease())), Some((u64::MAX, None)));
}

#[test]
fn a_takeover_records_the_expired_lease_it_replaced() {
    let (_, held) = written(&LeaseRow::EMPTY, Request::Acquire { owner: A, ttl: s(10) }, s(0));
    let answer = held.decide(Request::Acquire { owner: B, ttl: s(10) }, s(12), CLAMP);
    let event = answer.event("report").expect("an accepted change has its event");
    assert_eq!((event.kind, event.owner, event.token, event.revision), (EventKind::Acquired, B, token(2), 2));
    assert_eq!((event.at, event.expires_at), (s(12), s(22)));
    assert_eq!(event.replaced, Some(Lease::new(A, token(1), s(10))), "the expired lease taken over");
}

#[test]
fn a_rotation_is_reacquired_and_a_grant_after_expiry_is_acquired() {
    let (_, held) = written(&LeaseRow::EMPTY, Request::Acquire { owner: A, ttl: s(10) }, s(0));
    let rotated = held.decide(Request::Reacquire { owner: A, ttl: s(10) }, s(5), CLAMP);
    assert_eq!(rotated.event("r").map(|event| (event.kind, event.token)), Some((EventKind::Reacquired, token(2))));
    let late = held.decide(Request::Reacquire { owner: A, ttl: s(10) }, s(10), CLAMP);
    assert_eq!(late.event("r").map(|event| event.kind), Some(EventKind::Acquired), "expired at 10: a new grant");
}

#[test]
fn a_release_records_the_lease_that_ended_and_a_refusal_no_event_but_its_instant() {
    let (_, held) = written(&LeaseRow::EMPTY, Request::Acquire { owner: A, ttl: s(10) }, s(4));
    let released = held.decide(Request::Release { owner: A, token: token(1) }, s(6), CLAMP);
    let event = released.event("r").expect("an event");
    assert_eq!((event.kind, event.owner, event.token, event.expires_at), (EventKind::Released, A, token(1), s(14)));
    let refused = held.decide(Request::Acquire { owner: B, ttl: s(10) }, s(2), CLAMP);
    assert_eq!(refused.decision(), Decision::Rejected(Rejection::Occupied));
    assert_eq!((refused.event("r"), refused.at()), (None, s(4)), "clamped to the watermark, 4");
}

#[test]
fn a_revocation_ends_the_live_lease_whoever_holds_it_and_fences_its_token() {
    let (_, held) = written(&LeaseRow::EMPTY, Request::Acquire { owner: A, ttl: s(10) }, s(0));
    let (decision, row) = written(&held, Request::Revoke { token: token(1) }, s(3));
    assert_eq!(decision, Decision::Released);
    assert_eq!(row.checkpoint().lease(), None);
    let check = row.check_write(Fence::new(None), token(1), s(4));
    assert_eq!(check, WriteCheck::Refused(Rejection::NotHeld), "the revoked holder can no longer write");
    let (next, _) = written(&row, Request::Acquire { owner: B, ttl: s(10) }, s(4));
    assert_eq!(next, Decision::Granted(Lease::new(B, token(2), s(14))), "the next token is above it");
    // Another token, or nothing held, is refused as a release is.
    let stale = held.decide(Request::Revoke { token: token(2) }, s(3), CLAMP).decision();
    assert_eq!(stale, Decision::Rejected(Rejection::StaleToken));
    let none = LeaseRow::EMPTY.decide(Request::Revoke { token: token(1) }, s(3), CLAMP).decision();
    assert_eq!(none, Decision::Rejected(Rejection::NotHeld));
}

// ---------------------------------------------------------------------------------------------------------------
// The property: a row, read back after every request, decides as one authority that lives through them all
// ---------------------------------------------------------------------------------------------------------------

#[derive(Debug, Clone)]
enum Step {
    Acquire(u64, u64, u64),
    Reacquire(u64, u64, u64),
    Renew(u64, u64, u64, u64),
    Release(u64, u64, u64),
    Transfer(u64, u64, u64, u64, u64),
    Revoke(u64, u64),
}

fn step() -> impl Strategy<Value = Step> {
    let owner = 0u64..3;
    let tok = 0u64..6;
    let at = 0u64..60;
    let ttl = 0u64..20;
    prop_oneof![
        (owner.clone(), at.clone(), ttl.clone()).prop_map(|(o, n, t)| Step::Acquire(o, n, t)),
        (owner.clone(), at.clone(), ttl.clone()).prop_map(|(o, n, t)| Step::Reacquire(o, n, t)),
        (owner.clone(), tok.clone(), at.clone(), ttl.clone()).prop_map(|(o, k, n, t)| Step::Renew(o, k, n, t)),
        (owner.clone(), tok.clone(), at.clone()).prop_map(|(o, k, n)| Step::Release(o, k, n)),
        (owner.clone(), tok.clone(), owner, at.clone(), ttl).prop_map(|(o, k, b, n, t)| Step::Transfer(o, k, b, n, t)),
        (tok, at).prop_map(|(k, n)| Step::Revoke(k, n)),
    ]
}

/// The model's answer: the authority's, with a transfer a release then a grant at one instant, undone but for the
/// watermark when the grant is refused.
fn model(authority: &mut LeaseAuthority, step: &Step) -> Decision {
    let (o, n, k) = (OwnerId::new, Duration::from_secs, model_token);
    match *step {
        Step::Acquire(owner, now, ttl) => authority.acquire(o(owner), n(now), n(ttl)),
        Step::Reacquire(owner, now, ttl) => authority.reacquire(o(owner), n(now), n(ttl)),
        Step::Renew(owner, tok, now, ttl) => authority.renew(o(owner), k(tok), n(now), n(ttl)),
        Step::Release(owner, tok, now) => authority.release(o(owner), k(tok), n(now)),
        Step::Transfer(owner, tok, new_owner, now, ttl) => {
            let before = authority.clone();
            match authority.release(o(owner), k(tok), n(now)) {
                Decision::Released => {
                    let granted = authority.acquire(o(new_owner), n(now), n(ttl));
                    if !granted.is_accepted() {
                        let observed = authority.observed();
                        let kept = Checkpoint::from_parts(before.last_issued(), before.lease(), observed);
                        *authority = LeaseAuthority::restore(kept.expect("the state before")).with_clock_policy(CLAMP);
                    }
                    granted
                }
                refused => refused,
            }
        }
        // The holder's own release; without a lease, any owner's (refused as not held whoever asks).
        Step::Revoke(tok, now) => {
            let holder = authority.lease().map_or(o(0), |lease| lease.owner());
            authority.release(holder, k(tok), n(now))
        }
    }
}

/// A generated token: 0, which is never issued, stands for the last one, which is never reached here.
fn model_token(value: u64) -> FencingToken {
    FencingToken::new(value).unwrap_or(FencingToken::LAST)
}

fn request(step: &Step) -> Request {
    let (o, n, k) = (OwnerId::new, Duration::from_secs, model_token);
    match *step {
        Step::Acquire(owner, _, ttl) => Request::Acquire { owner: o(owner), ttl: n(ttl) },
        Step::Reacquire(owner, _, ttl) => Request::Reacquire { owner: o(owner), ttl: n(ttl) },
        Step::Renew(owner, tok, _, ttl) => Request::Renew { owner: o(owner), token: k(tok), ttl: n(ttl) },
        Step::Release(owner, tok, _) => Request::Release { owner: o(owner), token: k(tok) },
        Step::Transfer(owner, tok, new_owner, _, ttl) => {
            Request::Transfer { owner: o(owner), token: k(tok), new_owner: o(new_owner), ttl: n(ttl) }
        }
        Step::Revoke(tok, _) => Request::Revoke { token: k(tok) },
    }
}

fn now_of(step: &Step) -> Duration {
    let now = match *step {
        Step::Acquire(_, now, _) | Step::Reacquire(_, now, _) | Step::Release(_, _, now) => now,
        Step::Renew(_, _, now, _) | Step::Transfer(_, _, _, now, _) => now,
        Step::Revoke(_, now) => now,
    };
    Duration::from_secs(now)
}

proptest! {
    #[test]
    fn a_row_written_back_decides_as_one_authority(steps in proptest::collection::vec(step(), 1..64)) {
        let mut authority = LeaseAuthority::new().with_clock_policy(CLAMP);
        let mut row = LeaseRow::EMPTY;
        let mut stored = false;
        let mut accepted = 0u64;
        let mut events = Vec::new();
        for step in &steps {
            let before = row;
            let answer = row.decide(request(step), now_of(step), CLAMP);
            let expected = model(&mut authority, step);
            prop_assert_eq!(answer.decision(), expected);
            // The decision's instant is the authority's watermark after it.
            prop_assert_eq!(answer.at(), authority.observed());
            let event = answer.event("r");
            prop_assert_eq!(event.is_some(), expected.is_accepted(), "an event for each accepted change, none else");
            if let Some(event) = event {
                prop_assert_eq!(event.replaced, if expected == Decision::Released { None } else { before.checkpoint().lease() });
                match expected {
                    Decision::Granted(lease) | Decision::Renewed(lease) => {
                        prop_assert_eq!((event.owner, event.token, event.expires_at), (lease.owner(), lease.token(), lease.expires_at()));
                    }
                    _ => prop_assert_eq!(Some(Lease::new(event.owner, event.token, event.expires_at)), before.checkpoint().lease()),
                }
                events.push(event);
            }
            if expected.is_accepted() {
                accepted += 1;
            }
            match answer.write() {
                Some(next) => {
                    row = next;
                    stored = true;
                }
                None => prop_assert!(stored, "a row never stored is always written"),
            }
            // The stored row is the authority's whole state, and its revision counts the accepted changes.
            prop_assert_eq!(row.checkpoint(), authority.checkpoint());
            prop_assert_eq!(row.revision(), accepted);
            prop_assert!(LeaseRow::from_parts(row.checkpoint(), row.revision()).is_some());
            if let (Step::Transfer(_, tok, _, _, _), Decision::Granted(lease)) = (step, expected) {
                prop_assert!(lease.token().value() > *tok, "the new owner's token is greater than the old one");
            }
        }
        // The row's events are a history the auditor finds nothing wrong with.
        #[cfg(feature = "alloc")]
        {
            let report = lease_machines::audit(&events);
            prop_assert!(report.is_valid(), "{:?} in {:?}", report.findings, events);
            prop_assert_eq!(report.checked_events, events.len() as u64);
        }
    }
}
