//! The auditor, tested on real logs: each test takes a table's own (valid) event log, corrupts it in one way, and
//! expects exactly the finding for that corruption.
#![cfg(test)] // test code throughout: clippy.toml lets it unwrap, expect, panic and index
#![cfg(feature = "alloc")]

use lease_machines::{audit, Event, EventKind, Finding, FindingCode, LeaseTable, TableDecision};

mod support;
use support::{s, token, A, B};

/// A real history on two resources: acquire, renew, reacquire, transfer, release, expiry and reap, acquire again.
/// Indexes: 0 jobs acquired (A, t1, 0..5), 1 mail acquired (B, t1), 2 jobs renewed (to 7), 3 jobs reacquired (A, t2),
/// 4 jobs transferred (B, t3, 4..10), 5 mail released, 6 jobs reaped at 10, 7 jobs acquired (A, t4, 11..16).
fn real_log() -> Vec<Event<String>> {
    let mut table = LeaseTable::new();
    let jobs = "jobs".to_owned();
    let mail = "mail".to_owned();
    let grant = |decision: TableDecision<String>| decision.lease().expect("granted").token();
    let first = grant(table.acquire(&jobs, A, s(0), s(5)));
    let mail_token = grant(table.acquire(&mail, B, s(1), s(5)));
    let _ = table.renew(&jobs, A, first, s(2), s(5));
    let rotated = grant(table.reacquire(&jobs, A, s(3), s(5)));
    let _ = table.transfer(&jobs, A, rotated, B, s(4), s(6));
    let _ = table.release(&mail, B, mail_token, s(5));
    let _ = table.reap(&jobs, s(10));
    grant(table.acquire(&jobs, A, s(11), s(5)));
    let log: Vec<Event<String>> = table.events().cloned().collect();
    assert_eq!(log.len(), 8);
    assert!(audit(&log).is_valid(), "the uncorrupted log is valid");
    log
}

fn findings(log: &[Event<String>]) -> Vec<(FindingCode, String, u64)> {
    audit(log)
        .findings
        .into_iter()
        .map(|Finding { code, resource, event_index }| (code, resource, event_index))
        .collect()
}

fn jobs(code: FindingCode, index: u64) -> (FindingCode, String, u64) {
    (code, "jobs".to_owned(), index)
}

#[test]
fn a_token_that_does_not_rise_is_found() {
    let mut log = real_log();
    log[7].token = token(3);
    assert_eq!(findings(&log), [jobs(FindingCode::TokenNotRising, 7)]);
}

#[test]
fn a_revision_that_does_not_rise_is_found() {
    let mut log = real_log();
    log[3].revision = 2;
    assert_eq!(findings(&log), [jobs(FindingCode::RevisionNotRising, 3)]);
}

#[test]
fn time_going_backwards_is_found() {
    let mut log = real_log();
    log.swap(1, 2);
    // Swapped: renew at 2 s now comes before mail's acquire at 1 s.
    assert_eq!(findings(&log), [(FindingCode::TimeBackwards, "mail".to_owned(), 2)]);
}

#[test]
fn two_live_leases_overlapping_are_found() {
    let mut log = real_log();
    // The transfer claims to hand over a lease that was not the live one: the live token 2 stays live beside it.
    log[4].replaced = log[0].replaced;
    assert_eq!(findings(&log), [jobs(FindingCode::OverlappingLeases, 4)]);
    let mut log = real_log();
    // A different owner "rotates" a lease it does not hold.
    log[3].owner = B;
    assert_eq!(findings(&log), [jobs(FindingCode::OverlappingLeases, 3)]);
}

#[test]
fn a_grant_while_another_lease_was_live_is_found() {
    let mut log = real_log();
    // The final acquire moved to before the reap, while token 3 (until 10 s) was live.
    log.truncate(6);
    let mut early = real_log()[7].clone();
    early.at = s(9);
    early.revision = 6;
    log.push(early);
    assert_eq!(findings(&log), [jobs(FindingCode::GrantWhileLive, 6)]);
}

#[test]
fn a_renewal_that_shortened_the_lease_is_found() {
    let mut log = real_log();
    log[2].expires_at = s(4);
    assert_eq!(findings(&log), [jobs(FindingCode::RenewalShortened, 2)]);
}

#[test]
fn a_renewal_that_changed_the_token_is_found() {
    let mut log = real_log();
    log[2].token = token(9);
    assert_eq!(findings(&log), [jobs(FindingCode::RenewalChangedToken, 2)]);
}

#[test]
fn a_release_of_another_lease_is_found() {
    let mut log = real_log();
    log[5].token = token(4);
    assert_eq!(findings(&log), [(FindingCode::TokenMismatch, "mail".to_owned(), 5)]);
}

#[test]
fn a_reap_of_an_unexpired_lease_is_found() {
    let mut log = real_log();
    log[6].at = s(9);
    assert_eq!(findings(&log), [jobs(FindingCode::ReapUnexpired, 6)]);
}

#[test]
fn a_log_that_starts_mid_history_is_audited_from_where_it_starts() {
    let log = real_log();
    assert!(audit(&log[3..]).is_valid());
    assert_eq!(audit(&log[3..]).checked_events, 5);
    assert_eq!(log[4].kind, EventKind::Transferred);
}

#[test]
fn renewing_a_released_lease_is_found() {
    let mut log = real_log();
    // mail was released at index 5; a renewal of it afterwards would resurrect it.
    let mut revived = log[5].clone();
    revived.kind = EventKind::Renewed;
    revived.at = s(6);
    revived.revision = 3;
    log.insert(6, revived);
    assert_eq!(findings(&log), [(FindingCode::NotLive, "mail".to_owned(), 6)]);
}

#[test]
fn renewing_releasing_or_transferring_an_expired_lease_is_found() {
    let mut log = real_log();
    // The transfer (index 4) and mail's release (5) moved to 8 s: the rotated lease (until 8 s) and mail's lease
    // (until 6 s) had both expired.
    log[4].at = s(8);
    log[5].at = s(8);
    assert_eq!(findings(&log), [jobs(FindingCode::NotLive, 4), (FindingCode::NotLive, "mail".to_owned(), 5)]);
}

#[test]
fn reaping_a_vacant_resource_is_found() {
    let mut log = real_log();
    let mut again = log[6].clone();
    again.revision = 6;
    again.at = s(10);
    log.insert(7, again);
    log[8].revision = 7;
    assert_eq!(findings(&log), [jobs(FindingCode::TokenMismatch, 7)]);
}

#[test]
fn a_reused_token_is_found_even_when_the_log_starts_mid_history() {
    let log = real_log();
    // Starting at the reap of token 3, a later grant of token 3 again is a repeat.
    let mut window = log[6..].to_vec();
    window[1].token = token(3);
    assert_eq!(findings(&window), [jobs(FindingCode::TokenNotRising, 1)]);
}
