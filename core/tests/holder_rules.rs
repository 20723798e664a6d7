//! The holder's rules, one test each.
#![cfg(test)] // test code throughout: clippy.toml lets it unwrap, expect, panic and index

use core::time::Duration;

use lease_machines::{Cadence, Holder, HolderState};

mod support;
use support::{s, token};

/// 30 s leases, renewed every 10 s, at risk 5 s before the end.
fn cadence() -> Cadence {
    Cadence::new(s(30), s(10), s(5)).expect("valid cadence")
}

fn holder() -> Holder {
    Holder::new(token(1), s(0), cadence())
}

#[test]
fn cadence_needs_renewal_inside_the_ttl_and_a_warning_inside_it() {
    assert_eq!(Cadence::new(s(30), Duration::ZERO, s(5)), None, "renew_every must be positive");
    assert_eq!(Cadence::new(s(30), s(30), s(5)), None, "renew_every must be below ttl");
    assert_eq!(Cadence::new(s(30), s(10), s(30)), None, "warn_before must be below ttl");
    let ok = Cadence::new(s(30), s(29), Duration::ZERO).expect("edge values are fine");
    assert_eq!((ok.ttl(), ok.renew_every(), ok.warn_before(), ok.warn_after()), (s(30), s(29), s(0), s(30)));
}

#[test]
fn a_new_holder_is_confirmed_and_counts_from_its_send() {
    let holder = holder();
    assert_eq!(holder.state(), HolderState::Confirmed);
    assert_eq!(holder.token(), token(1));
    assert_eq!(holder.renewed_at(), s(0));
    assert_eq!(holder.next_renewal(), Some(s(10)));
    assert_eq!(holder.warning_deadline(), Some(s(25)));
    assert!(!holder.at_risk(s(24)));
    assert!(holder.at_risk(s(25)));
}

#[test]
fn renewal_is_due_every_renew_every() {
    let holder = holder();
    assert!(!holder.renewal_due(s(9)));
    assert!(holder.renewal_due(s(10)));
}

#[test]
fn refresh_before_the_warning_deadline_is_unconfirmed() {
    let mut holder = holder();
    assert!(holder.refresh(s(10)));
    assert_eq!(holder.state(), HolderState::Unconfirmed);
}

#[test]
fn refresh_past_the_warning_deadline_is_at_risk() {
    let mut holder = holder();
    assert!(holder.refresh(s(25)));
    assert_eq!(holder.state(), HolderState::AtRisk);
    assert!(holder.at_risk(s(25)));
}

#[test]
fn renewal_stays_due_while_a_renewal_is_outstanding() {
    let mut holder = holder();
    assert!(holder.refresh(s(10)));
    // A failed attempt: no confirmation; the next poll retries, even "before" the schedule.
    assert!(holder.renewal_due(s(10)));
    assert!(holder.renewal_due(s(11)));
    assert!(holder.refresh(s(12)));
    assert!(holder.confirm(token(1), s(13)));
    assert!(!holder.renewal_due(s(13)));
}

#[test]
fn deadlines_count_from_the_first_send_of_the_confirmed_attempt() {
    let mut holder = holder();
    assert!(holder.refresh(s(10)));
    assert!(holder.refresh(s(12))); // a retry: the authority may have counted from the first send
    assert!(holder.confirm(token(1), s(14)));
    assert_eq!(holder.renewed_at(), s(10));
    assert_eq!(holder.warning_deadline(), Some(s(35)));
    assert_eq!(holder.next_renewal(), Some(s(20)));
}

#[test]
fn a_reply_that_arrives_after_the_warning_deadline_is_at_risk() {
    let mut holder = holder();
    assert!(holder.refresh(s(10)));
    // The reply took 26 s: the authority counted from (at least) 10 s, so the lease may be almost over.
    assert!(holder.confirm(token(1), s(36)));
    assert_eq!(holder.state(), HolderState::AtRisk);
    assert!(holder.at_risk(s(36)));
    assert!(holder.renewal_due(s(36)));
}

#[test]
fn a_confirmation_with_no_outstanding_attempt_does_not_move_the_deadlines() {
    let mut holder = holder();
    assert!(holder.confirm(token(1), s(20)));
    assert_eq!(holder.renewed_at(), s(0));
    assert_eq!(holder.warning_deadline(), Some(s(25)));
}

#[test]
fn a_confirmation_with_an_older_token_is_ignored() {
    let mut holder = Holder::new(token(5), s(0), cadence());
    assert!(holder.refresh(s(10)));
    assert!(!holder.confirm(token(4), s(11)));
    assert_eq!(holder.state(), HolderState::Unconfirmed);
    assert_eq!(holder.token(), token(5));
    assert!(holder.confirm(token(6), s(11)), "a newer token is accepted");
    assert_eq!(holder.token(), token(6));
}

#[test]
fn expire_then_only_a_strictly_newer_token_recovers() {
    let mut holder = holder();
    assert!(holder.expire());
    assert!(!holder.expire(), "already expired");
    assert_eq!(holder.state(), HolderState::Expired);
    assert!(!holder.renewal_due(s(100)));
    assert!(holder.at_risk(s(0)));
    assert!(!holder.refresh(s(1)));
    assert!(!holder.confirm(token(1), s(1)));
    assert!(!holder.reacquire(token(1), s(40)));
    assert!(holder.reacquire(token(2), s(40)));
    assert_eq!(holder.state(), HolderState::Confirmed);
    assert_eq!(holder.warning_deadline(), Some(s(65)));
}

#[test]
fn reacquire_rotates_a_held_lease_to_a_newer_token() {
    let mut holder = holder();
    assert!(holder.reacquire(token(2), s(5)));
    assert_eq!((holder.token(), holder.renewed_at()), (token(2), s(5)));
}

#[test]
fn fence_is_terminal_and_idempotent() {
    let mut holder = holder();
    holder.fence();
    let once = holder;
    holder.fence();
    assert_eq!(holder, once);
    assert_eq!(holder.state(), HolderState::Fenced);
    assert_eq!(holder.warning_deadline(), None);
    assert_eq!(holder.next_renewal(), None);
    assert!(!holder.renewal_due(s(100)));
    assert!(holder.at_risk(s(0)));
    assert!(!holder.refresh(s(1)));
    assert!(!holder.confirm(token(9), s(1)));
    assert!(!holder.expire());
    assert!(!holder.reacquire(token(9), s(1)));
}

#[test]
fn deadlines_saturate_instead_of_overflowing() {
    let holder = Holder::new(token(1), Duration::MAX, cadence());
    assert_eq!(holder.warning_deadline(), Some(Duration::MAX));
    assert_eq!(holder.next_renewal(), Some(Duration::MAX));
}

#[test]
fn the_walkthrough_from_the_readme() {
    let mut holder = holder();
    assert!(!holder.renewal_due(s(9)));
    assert!(holder.renewal_due(s(10)));
    assert!(holder.refresh(s(10)));
    assert_eq!(holder.state(), HolderState::Unconfirmed);
    assert!(holder.confirm(token(1), s(11)));
    assert_eq!(holder.state(), HolderState::Confirmed);
    assert!(holder.at_risk(s(36)));
    assert!(holder.expire());
    assert!(holder.reacquire(token(2), s(40)));
    holder.fence();
    assert_eq!(holder.warning_deadline(), None);
}

#[test]
fn each_holder_state_has_one_stable_name() {
    let names = HolderState::ALL.map(HolderState::as_str);
    assert_eq!(names, ["confirmed", "unconfirmed", "at_risk", "expired", "fenced"]);
}
