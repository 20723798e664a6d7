//! The lease table's rules, one test each, named after the rule.
#![cfg(test)] // test code throughout: clippy.toml lets it unwrap, expect, panic and index
#![cfg(feature = "alloc")]

use core::time::Duration;

use lease_machines::{
    audit, validate_record, ClockPolicy, Command, Discard, Event, EventKind, EventSink, FenceGuard, FenceMark,
    FencedWrite, FencingToken, IssueCode, LeaseRecord, LeaseTable, OwnerId, Rejection, ResourceRecord, TableCheckpoint,
    TableDecision, TableLease, TimedCommand,
};

mod support;
use support::{s, token, A, B, C};

fn r(name: &str) -> String {
    name.to_owned()
}

fn granted(decision: TableDecision<String>) -> TableLease<String> {
    match decision {
        TableDecision::Granted(lease) => lease,
        other => panic!("expected a grant, got {other:?}"),
    }
}

fn kinds(table: &LeaseTable<String>) -> Vec<EventKind> {
    table.events().map(|event| event.kind).collect()
}

#[test]
fn each_resource_has_its_own_token_namespace() {
    let mut table = LeaseTable::new();
    let jobs = granted(table.acquire(&r("jobs"), A, s(0), s(5)));
    let mail = granted(table.acquire(&r("mail"), B, s(0), s(5)));
    assert_eq!((jobs.token().value(), mail.token().value()), (1, 1));
    assert_eq!(jobs.resource(), "jobs");
    assert_eq!(table.len(), 2);
}

#[test]
fn table_lease_carries_resource_issued_at_and_revision() {
    let mut table = LeaseTable::new();
    let lease = granted(table.acquire(&r("jobs"), A, s(3), s(5)));
    assert_eq!((lease.resource().as_str(), lease.owner(), lease.token()), ("jobs", A, token(1)));
    assert_eq!((lease.issued_at(), lease.expires_at(), lease.revision(), lease.term()), (s(3), s(8), 1, None));
    assert_eq!(table.lease(&r("jobs")), Some(lease));
}

#[test]
fn remaining_and_is_live_follow_expiry_at_expires_at() {
    let mut table = LeaseTable::new();
    let lease = granted(table.acquire(&r("jobs"), A, s(0), s(5)));
    assert_eq!(lease.remaining(s(2)), s(3));
    assert!(lease.is_live(s(4)));
    assert!(!lease.is_live(s(5)), "a lease is expired at its own expires_at");
    assert_eq!(lease.remaining(s(9)), Duration::ZERO);
}

#[test]
fn occupied_while_another_lease_is_live_then_granted_with_a_greater_token_at_expiry() {
    let mut table = LeaseTable::new();
    granted(table.acquire(&r("jobs"), A, s(0), s(5)));
    assert_eq!(table.acquire(&r("jobs"), B, s(4), s(5)), TableDecision::Rejected(Rejection::Occupied));
    let next = granted(table.acquire(&r("jobs"), B, s(5), s(5)));
    assert_eq!((next.owner(), next.token().value()), (B, 2));
}

#[test]
fn revision_rises_on_every_accepted_change_and_never_on_a_rejection() {
    let mut table = LeaseTable::new();
    let jobs = r("jobs");
    assert_eq!(table.revision(&jobs), 0);
    let lease = granted(table.acquire(&jobs, A, s(0), s(5)));
    assert_eq!(table.revision(&jobs), 1);
    assert!(table.acquire(&jobs, B, s(1), s(5)).rejection().is_some());
    assert_eq!(table.revision(&jobs), 1);
    let renewed = table.renew(&jobs, A, lease.token(), s(2), s(5));
    assert_eq!(renewed.lease().map(TableLease::revision), Some(2));
    assert_eq!(table.release(&jobs, A, lease.token(), s(3)), TableDecision::Released);
    assert_eq!(table.revision(&jobs), 3);
}

#[test]
fn acquire_at_revision_is_compare_and_set() {
    let mut table = LeaseTable::new();
    let jobs = r("jobs");
    let lease = granted(table.acquire_at_revision(&jobs, A, 0, s(0), s(5)));
    assert_eq!(table.release(&jobs, A, lease.token(), s(1)), TableDecision::Released);
    // Two workers saw revision 2; the first one wins, the second one's precondition fails.
    granted(table.acquire_at_revision(&jobs, B, 2, s(2), s(5)));
    assert_eq!(
        table.acquire_at_revision(&jobs, C, 2, s(9), s(5)),
        TableDecision::Rejected(Rejection::RevisionMismatch)
    );
    assert_eq!(table.lease(&jobs).map(|lease| lease.owner()), Some(B));
}

#[test]
fn revision_precondition_is_checked_after_the_clock_and_ttl() {
    let mut table = LeaseTable::new();
    let jobs = r("jobs");
    assert_eq!(
        table.acquire_at_revision(&jobs, A, 7, s(0), Duration::ZERO),
        TableDecision::Rejected(Rejection::InvalidTtl)
    );
    granted(table.acquire(&r("other"), A, s(5), s(1)));
    assert_eq!(table.acquire_at_revision(&jobs, A, 7, s(4), s(1)), TableDecision::Rejected(Rejection::ClockRegressed));
}

#[test]
fn renew_keeps_token_and_issued_at_and_never_shortens() {
    let mut table = LeaseTable::new();
    let jobs = r("jobs");
    let lease = granted(table.acquire(&jobs, A, s(0), s(10)));
    let TableDecision::Renewed(renewed) = table.renew(&jobs, A, lease.token(), s(1), s(2)) else { panic!() };
    assert_eq!((renewed.token(), renewed.issued_at(), renewed.expires_at()), (lease.token(), s(0), s(10)));
    let TableDecision::Renewed(longer) = table.renew(&jobs, A, lease.token(), s(9), s(5)) else { panic!() };
    assert_eq!(longer.expires_at(), s(14));
}

#[test]
fn renew_and_release_need_the_current_owner_and_token_and_a_live_lease() {
    let mut table = LeaseTable::new();
    let jobs = r("jobs");
    assert_eq!(table.renew(&jobs, A, token(1), s(0), s(5)), TableDecision::Rejected(Rejection::NotHeld));
    let lease = granted(table.acquire(&jobs, A, s(0), s(5)));
    assert_eq!(table.renew(&jobs, A, token(9), s(1), s(5)), TableDecision::Rejected(Rejection::StaleToken));
    assert_eq!(table.release(&jobs, B, lease.token(), s(1)), TableDecision::Rejected(Rejection::WrongOwner));
    assert_eq!(table.renew(&jobs, A, lease.token(), s(5), s(5)), TableDecision::Rejected(Rejection::Expired));
}

#[test]
fn reacquire_rotates_the_holders_own_live_lease() {
    let mut table = LeaseTable::new();
    let jobs = r("jobs");
    let first = granted(table.acquire(&jobs, A, s(0), s(5)));
    let second = granted(table.reacquire(&jobs, A, s(1), s(5)));
    assert_eq!(second.token().value(), 2);
    assert_eq!(table.renew(&jobs, A, first.token(), s(2), s(5)), TableDecision::Rejected(Rejection::StaleToken));
    assert_eq!(table.reacquire(&jobs, B, s(2), s(5)), TableDecision::Rejected(Rejection::Occupied));
}

#[test]
fn transfer_hands_the_lease_to_a_new_owner_with_a_greater_token_and_fences_the_old_one() {
    let mut table = LeaseTable::new();
    let jobs = r("jobs");
    let old = granted(table.acquire(&jobs, A, s(0), s(5)));
    let TableDecision::Transferred(new) = table.transfer(&jobs, A, old.token(), B, s(2), s(10)) else { panic!() };
    assert_eq!((new.owner(), new.token().value(), new.issued_at(), new.expires_at()), (B, 2, s(2), s(12)));
    assert_eq!(table.renew(&jobs, A, old.token(), s(3), s(5)), TableDecision::Rejected(Rejection::StaleToken));
    let mut guard = FenceGuard::new();
    assert!(guard.check(&FencedWrite::new(jobs.clone(), B, new.token(), "write")));
    assert!(!guard.check(&FencedWrite::new(jobs.clone(), A, old.token(), "late write")));
    let event = table.events().last().expect("a transfer is recorded");
    assert_eq!(
        (event.kind, event.owner, event.replaced.map(|lease| lease.owner())),
        (EventKind::Transferred, B, Some(A))
    );
}

#[test]
fn transfer_needs_the_current_holder() {
    let mut table = LeaseTable::new();
    let jobs = r("jobs");
    let lease = granted(table.acquire(&jobs, A, s(0), s(5)));
    assert_eq!(table.transfer(&jobs, B, lease.token(), C, s(1), s(5)), TableDecision::Rejected(Rejection::WrongOwner));
    assert_eq!(table.transfer(&jobs, A, lease.token(), C, s(5), s(5)), TableDecision::Rejected(Rejection::Expired));
    assert_eq!(table.lease(&jobs).map(|lease| lease.owner()), Some(A));
}

#[test]
fn reap_drops_only_expired_leases_and_keeps_the_token_high_water() {
    let mut table = LeaseTable::new();
    let jobs = r("jobs");
    granted(table.acquire(&jobs, A, s(0), s(5)));
    assert_eq!(table.reap(&jobs, s(4)), TableDecision::Rejected(Rejection::Occupied));
    assert_eq!(table.reap(&jobs, s(5)), TableDecision::Reaped);
    assert_eq!(table.lease(&jobs), None);
    assert_eq!(table.reap(&jobs, s(6)), TableDecision::Rejected(Rejection::NotHeld));
    assert_eq!(table.last_issued(&jobs), Some(token(1)));
    assert_eq!(granted(table.acquire(&jobs, B, s(6), s(5))).token().value(), 2);
}

#[test]
fn reap_expired_reaps_every_expired_record_and_no_live_one() {
    let mut table = LeaseTable::new();
    granted(table.acquire(&r("a"), A, s(0), s(1)));
    granted(table.acquire(&r("b"), A, s(0), s(9)));
    granted(table.acquire(&r("c"), B, s(0), s(2)));
    let reaped = table.reap_expired(s(2)).expect("the clock moved forward");
    let names: Vec<&str> = reaped.iter().map(|lease| lease.resource().as_str()).collect();
    assert_eq!(names, ["a", "c"]);
    assert!(table.lease(&r("b")).is_some());
    assert_eq!(table.reap_expired(s(1)), Err(Rejection::ClockRegressed));
}

#[test]
fn batch_applies_in_order_keeps_every_decision_and_a_rejection_changes_nothing() {
    let mut table = LeaseTable::new();
    let jobs = r("jobs");
    let commands = [
        TimedCommand {
            command: Command::Acquire { resource: jobs.clone(), owner: A, ttl: s(5), expected_revision: None },
            at: s(0),
        },
        TimedCommand {
            command: Command::Acquire { resource: jobs.clone(), owner: B, ttl: s(5), expected_revision: None },
            at: s(1),
        },
        TimedCommand {
            command: Command::Transfer { resource: jobs.clone(), owner: A, token: token(1), new_owner: B, ttl: s(5) },
            at: s(2),
        },
        TimedCommand { command: Command::Reap { resource: jobs.clone() }, at: s(3) },
        TimedCommand { command: Command::Release { resource: jobs.clone(), owner: B, token: token(2) }, at: s(4) },
    ];
    let result = table.apply_batch(&commands);
    assert_eq!((result.accepted, result.rejected), (3, 2));
    let rejections: Vec<Option<Rejection>> = result.decisions.iter().map(TableDecision::rejection).collect();
    assert_eq!(rejections, [None, Some(Rejection::Occupied), None, Some(Rejection::Occupied), None]);
    assert_eq!(table.revision(&jobs), 3);
    assert_eq!(kinds(&table), [EventKind::Acquired, EventKind::Transferred, EventKind::Released]);
}

#[test]
fn every_accepted_change_is_one_event_with_the_resources_revision() {
    let mut table = LeaseTable::new();
    let jobs = r("jobs");
    let lease = granted(table.acquire(&jobs, A, s(0), s(5)));
    let _ = table.renew(&jobs, A, lease.token(), s(1), s(5));
    let _ = table.acquire(&jobs, B, s(2), s(5));
    let _ = table.release(&jobs, A, lease.token(), s(3));
    let events: Vec<(EventKind, Duration, u64, u64)> =
        table.events().map(|event| (event.kind, event.at, event.token.value(), event.revision)).collect();
    assert_eq!(
        events,
        [(EventKind::Acquired, s(0), 1, 1), (EventKind::Renewed, s(1), 1, 2), (EventKind::Released, s(3), 1, 3)]
    );
    let renewal = table.events().nth(1).expect("renewal event");
    assert_eq!((renewal.expires_at, renewal.replaced.map(|lease| lease.expires_at())), (s(6), Some(s(5))));
}

#[test]
fn event_log_keeps_the_newest_events_and_counts_the_dropped() {
    let mut table = LeaseTable::with_event_capacity(2);
    for (index, name) in ["a", "b", "c"].into_iter().enumerate() {
        granted(table.acquire(&r(name), A, s(index as u64), s(5)));
    }
    let names: Vec<&str> = table.events().map(|event| event.resource.as_str()).collect();
    assert_eq!(names, ["b", "c"]);
    assert_eq!(table.sink().dropped(), 1);
    assert_eq!(table.metrics(s(3)).events, 3);
}

#[test]
fn events_go_to_the_callers_sink() {
    struct Collect(Vec<(String, EventKind)>);
    impl EventSink<String> for Collect {
        fn record(&mut self, event: Event<String>) {
            self.0.push((event.resource, event.kind));
        }
    }
    let mut table = LeaseTable::with_sink(Collect(Vec::new()));
    granted(table.acquire(&r("jobs"), A, s(0), s(5)));
    let _ = table.reap(&r("jobs"), s(5));
    assert_eq!(table.sink().0, [(r("jobs"), EventKind::Acquired), (r("jobs"), EventKind::Reaped)]);
    let mut quiet = LeaseTable::with_sink(Discard);
    assert!(quiet.acquire(&r("jobs"), A, s(0), s(5)).is_accepted());
    assert_eq!(quiet.metrics(s(0)).events, 1);
}

#[test]
fn metrics_count_leases_commands_reasons_and_holder_transitions() {
    let mut table = LeaseTable::new();
    let a = granted(table.acquire(&r("a"), A, s(0), s(2)));
    granted(table.acquire(&r("b"), B, s(0), s(9)));
    let _ = table.renew(&r("a"), A, a.token(), s(1), s(2));
    let _ = table.acquire(&r("b"), C, s(1), s(5));
    let _ = table.acquire(&r("b"), C, s(1), Duration::ZERO);
    let _ = table.reacquire(&r("a"), A, s(2), s(1));
    granted(table.acquire(&r("a"), C, s(3), s(5)));
    let metrics = table.metrics(s(4));
    assert_eq!((metrics.resources, metrics.stored_leases, metrics.live_leases, metrics.expired_leases), (2, 2, 2, 0));
    assert_eq!(table.metrics(s(8)).expired_leases, 1);
    assert_eq!(metrics.highest_token.map(FencingToken::value), Some(3));
    assert_eq!((metrics.accepted, metrics.rejected, metrics.events), (5, 2, 5));
    assert_eq!(metrics.rejected_with(Rejection::Occupied), 1);
    assert_eq!(metrics.rejected_with(Rejection::InvalidTtl), 1);
    // a: A (new), renew (no), A's own reacquire (no), C (yes); b: B (new).
    assert_eq!(metrics.holder_transitions, 3);
}

#[test]
fn clock_regressions_change_nothing_under_reject_and_are_clamped_under_clamp() {
    let mut table = LeaseTable::new();
    granted(table.acquire(&r("a"), A, s(10), s(5)));
    assert_eq!(table.acquire(&r("b"), A, s(9), s(5)), TableDecision::Rejected(Rejection::ClockRegressed));
    assert_eq!(table.lease(&r("b")), None);
    let mut clamped = LeaseTable::new().with_clock_policy(ClockPolicy::Clamp);
    granted(clamped.acquire(&r("a"), A, s(10), s(5)));
    let late = granted(clamped.acquire(&r("b"), A, s(9), s(5)));
    assert_eq!((late.issued_at(), late.expires_at()), (s(10), s(15)));
}

#[test]
fn deadline_rounding_only_lengthens_leases() {
    fn whole_seconds(deadline: Duration) -> Duration {
        Duration::from_secs(deadline.as_secs() + u64::from(deadline.subsec_nanos() > 0))
    }
    fn earlier(_: Duration) -> Duration {
        Duration::ZERO
    }
    let mut table = LeaseTable::new().with_deadline_rounding(whole_seconds);
    let lease = granted(table.acquire(&r("a"), A, Duration::from_millis(1500), s(1)));
    assert_eq!(lease.expires_at(), s(3));
    let mut table = LeaseTable::new().with_deadline_rounding(earlier);
    assert_eq!(granted(table.acquire(&r("a"), A, s(1), s(1))).expires_at(), s(2));
}

#[test]
fn revisions_never_wrap() {
    let record = ResourceRecord { resource: r("a"), last_issued: Some(1), revision: u64::MAX, term: None, lease: None };
    assert_eq!(validate_record(&record, s(0)), []);
    let checkpoint = TableCheckpoint::from_records(s(0), [record]).expect("valid");
    let mut table = LeaseTable::restore(checkpoint);
    assert_eq!(table.acquire(&r("a"), A, s(1), s(1)), TableDecision::Rejected(Rejection::RevisionSpaceExhausted));
    assert_eq!(table.last_issued(&r("a")), Some(token(1)));
}

#[test]
fn tokens_never_wrap_in_a_table() {
    let lease = LeaseRecord { owner: 1, token: u64::MAX, issued_at: s(0), expires_at: s(1), term: None };
    let record = ResourceRecord {
        resource: r("a"),
        last_issued: Some(u64::MAX),
        revision: u64::MAX,
        term: None,
        lease: Some(lease),
    };
    let mut table = LeaseTable::restore(TableCheckpoint::from_records(s(0), [record]).expect("valid"));
    assert_eq!(table.acquire(&r("a"), A, s(1), s(1)), TableDecision::Rejected(Rejection::TokenSpaceExhausted));
}

#[test]
fn fenced_write_is_built_only_from_a_live_lease() {
    let mut table = LeaseTable::new();
    let lease = granted(table.acquire(&r("jobs"), A, s(0), s(5)));
    let write = lease.fenced_write("commit job 42", s(4)).expect("live at 4 s");
    assert_eq!(
        (write.resource().as_str(), write.owner(), write.token(), *write.operation()),
        ("jobs", A, token(1), "commit job 42")
    );
    assert_eq!(lease.fenced_write("too late", s(5)), None);
}

#[test]
fn fence_guard_accepts_iff_the_token_is_at_least_the_resources_highest() {
    let mut guard = FenceGuard::new();
    let write = |resource: &str, token_value: u64| FencedWrite::new(r(resource), A, token(token_value), ());
    assert!(guard.check(&write("jobs", 2)));
    assert!(guard.check(&write("jobs", 2)), "the same lease writes many times");
    assert!(!guard.check(&write("jobs", 1)));
    assert!(guard.check(&write("mail", 1)), "marks are per resource");
    assert_eq!((guard.highest(&r("jobs")), guard.highest(&r("none"))), (Some(token(2)), None));
}

#[test]
fn fence_guard_is_restored_from_its_marks() {
    let mut guard = FenceGuard::new();
    assert!(guard.check(&FencedWrite::new(r("jobs"), B, token(7), ())));
    let marks: Vec<FenceMark<String>> = guard.marks().collect();
    assert_eq!(marks, [FenceMark { resource: r("jobs"), token: token(7), owner: B }]);
    let mut restored = FenceGuard::from_marks(marks.clone()).expect("one mark per resource");
    assert!(!restored.check(&FencedWrite::new(r("jobs"), A, token(6), ())));
    assert_eq!(FenceGuard::from_marks([marks[0].clone(), marks[0].clone()]), Err(r("jobs")));
}

#[test]
fn checkpoint_and_restore_continue_the_same_history() {
    let mut table = LeaseTable::new();
    let lease = granted(table.acquire(&r("jobs"), A, s(0), s(5)));
    granted(table.acquire(&r("mail"), B, s(1), s(5)));
    let _ = table.release(&r("mail"), B, token(1), s(2));
    let mut restored = LeaseTable::restore(table.checkpoint());
    assert_eq!(restored.checkpoint(), table.checkpoint());
    for t in [&mut table, &mut restored] {
        assert_eq!(t.acquire(&r("jobs"), B, s(3), s(5)), TableDecision::Rejected(Rejection::Occupied));
        assert!(t.renew(&r("jobs"), A, lease.token(), s(3), s(5)).is_accepted());
        assert_eq!(granted(t.acquire(&r("mail"), A, s(4), s(5))).token().value(), 2);
        assert_eq!(t.acquire(&r("x"), A, s(1), s(5)), TableDecision::Rejected(Rejection::ClockRegressed));
    }
    assert_eq!(restored.checkpoint(), table.checkpoint());
}

fn record(last_issued: Option<u64>, revision: u64, lease: Option<LeaseRecord>) -> ResourceRecord<String> {
    ResourceRecord { resource: r("jobs"), last_issued, revision, term: None, lease }
}

fn lease_record(token: u64, issued_at: u64, expires_at: u64) -> LeaseRecord {
    LeaseRecord { owner: 1, token, issued_at: s(issued_at), expires_at: s(expires_at), term: None }
}

fn codes(record: &ResourceRecord<String>, observed: u64) -> Vec<IssueCode> {
    validate_record(record, s(observed)).into_iter().map(|issue| issue.code).collect()
}

#[test]
fn validation_accepts_what_a_table_produces() {
    let mut table = LeaseTable::new();
    granted(table.acquire(&r("jobs"), A, s(0), s(5)));
    for record in table.checkpoint().records() {
        assert_eq!(validate_record(record, s(0)), []);
    }
    assert_eq!(codes(&record(Some(3), 7, Some(lease_record(3, 1, 2))), 1), []);
}

#[test]
fn validation_reports_each_broken_rule() {
    assert_eq!(codes(&record(Some(0), 0, None), 0), [IssueCode::ZeroToken]);
    assert_eq!(codes(&record(Some(1), 1, Some(lease_record(0, 0, 1))), 0), [IssueCode::ZeroToken]);
    assert_eq!(codes(&record(None, 1, Some(lease_record(1, 0, 1))), 0), [IssueCode::LeaseWithoutHighWater]);
    assert_eq!(codes(&record(Some(1), 2, Some(lease_record(2, 0, 1))), 0), [IssueCode::TokenAboveHighWater]);
    assert_eq!(codes(&record(Some(1), 1, Some(lease_record(1, 3, 3))), 3), [IssueCode::ExpiryNotAfterIssue]);
    assert_eq!(codes(&record(Some(1), 1, Some(lease_record(1, 3, 4))), 2), [IssueCode::IssuedAfterWatermark]);
    assert_eq!(codes(&record(Some(5), 4, None), 0), [IssueCode::RevisionBehindTokens]);
    let mut elected = record(Some(1), 1, Some(LeaseRecord { term: Some(3), ..lease_record(1, 0, 1) }));
    assert_eq!(codes(&elected, 0), [IssueCode::TermMismatch]);
    elected.term = Some(4);
    assert_eq!(codes(&elected, 0), [IssueCode::TermMismatch]);
    elected.term = Some(3);
    assert_eq!(codes(&elected, 0), []);
    assert_eq!(codes(&record(Some(5), 9, Some(lease_record(1, 0, 1))), 0), [IssueCode::TokenBelowHighWater]);
    assert_eq!(codes(&record(Some(2), 2, None), 0), [IssueCode::RevisionBehindTokens]);
    assert_eq!(codes(&record(Some(2), 3, None), 0), []);
    let unelected = ResourceRecord { term: Some(1), ..record(None, 0, None) };
    assert_eq!(codes(&unelected, 0), [IssueCode::TermWithoutGrant]);
    assert_eq!(codes(&record(None, 0, None), 0), [IssueCode::NeverGranted]);
    assert_eq!(codes(&record(None, 7, None), 0), [IssueCode::NeverGranted], "a revision without a grant");
}

#[test]
fn restore_refuses_invalid_state_with_every_issue() {
    let good = record(Some(1), 2, None);
    let issues =
        TableCheckpoint::from_records(s(0), [good.clone(), good, record(Some(0), 0, None)]).expect_err("invalid");
    let codes: Vec<IssueCode> = issues.iter().map(|issue| issue.code).collect();
    assert_eq!(codes, [IssueCode::DuplicateResource, IssueCode::ZeroToken, IssueCode::DuplicateResource]);
    assert!(issues[0].to_string().contains("more than once"));
}

#[test]
fn a_tables_own_log_passes_the_audit() {
    let mut table = LeaseTable::new();
    let jobs = r("jobs");
    let lease = granted(table.acquire(&jobs, A, s(0), s(5)));
    let _ = table.renew(&jobs, A, lease.token(), s(1), s(5));
    let rotated = granted(table.reacquire(&jobs, A, s(2), s(5)));
    let _ = table.transfer(&jobs, A, rotated.token(), B, s(3), s(5));
    let _ = table.reap(&jobs, s(8));
    granted(table.acquire(&jobs, C, s(9), s(5)));
    let report = audit(table.events());
    assert!(report.is_valid(), "{:?}", report.findings);
    assert_eq!(report.checked_events, 6);
}

#[test]
fn a_rejected_command_does_not_move_the_watermark() {
    let mut table = LeaseTable::new();
    granted(table.acquire(&r("a"), A, s(0), s(100)));
    // A far-future request with a zero TTL is refused and leaves the table as it was...
    assert_eq!(table.acquire(&r("b"), B, s(1_000_000), Duration::ZERO), TableDecision::Rejected(Rejection::InvalidTtl));
    assert_eq!(table.observed(), s(0));
    // ...so the other resources' callers are not refused as if the clock had gone backwards.
    assert!(table.renew(&r("a"), A, token(1), s(1), s(100)).is_accepted());
    assert_eq!(table.observed(), s(1));
}

#[test]
fn events_and_leases_share_the_tables_own_key() {
    use std::rc::Rc;

    let mut table: LeaseTable<Rc<str>> = LeaseTable::new();
    let name = || Rc::<str>::from("jobs");
    let TableDecision::Granted(lease) = table.acquire(&name(), A, s(0), s(10)) else { panic!("granted") };
    for step in 1..=5 {
        // Each caller passes its own copy of the name, as a host converting a fresh string per call does.
        let renewed = table.renew(&name(), A, lease.token(), s(step), s(10));
        assert!(renewed.is_accepted());
    }
    let key = table.events().next().map(|event| Rc::clone(&event.resource)).expect("an event");
    assert!(table.events().all(|event| Rc::ptr_eq(&event.resource, &key)), "every event holds one name");
    let current = table.lease(&name()).expect("a lease");
    assert!(Rc::ptr_eq(current.resource(), &key), "and so does the lease the table hands out");
    // The table's key, the six events, `key`, `current` and the first grant's lease: no copy per event.
    assert_eq!(Rc::strong_count(&key), 1 + 6 + 1 + 1 + 1);
}

/// Many resources granted out of resource order, released and reaped in an interleaved order (so records are moved
/// into the places of removed ones and the record storage shrinks), then granted again: every remaining lease is the
/// one its resource was last granted, and a table restored from the checkpoint agrees with the one built by commands.
#[test]
fn dense_storage_keeps_every_lease_through_removals_and_restores_the_same() {
    let n: u64 = 2_000;
    let mut table: LeaseTable<u64> = LeaseTable::new();
    let key = |i: u64| i.wrapping_mul(7_919) % n;
    for i in 0..n {
        let owner = OwnerId::new(key(i) % 5);
        let ttl = s(10 + key(i) % 7);
        assert!(table.acquire(&key(i), owner, s(0), ttl).is_accepted());
    }
    // Release every resource but one in seven, from both ends, interleaved; reap some after they expire.
    for i in 0..n {
        let resource = if i % 2 == 0 { key(i / 2) } else { key(n - 1 - i / 2) };
        if resource % 7 != 0 && resource % 3 != 0 {
            let owner = OwnerId::new(resource % 5);
            assert!(table.release(&resource, owner, token(1), s(1)).is_accepted(), "release {resource}");
        }
    }
    let reaped = table.reap_expired(s(12)).map(|leases| leases.len());
    assert!(reaped.is_ok_and(|count| count > 0));
    for resource in (0..n).filter(|resource| resource % 11 == 0) {
        let _ = table.acquire(&resource, C, s(12), s(5));
    }
    for resource in 0..n {
        let lease = table.lease(&resource);
        let (held, released) = (resource % 7 == 0 || resource % 3 == 0, resource % 7 != 0 && resource % 3 != 0);
        let expired_and_reaped = held && 10 + resource % 7 <= 12;
        if resource % 11 == 0 && (released || expired_and_reaped) {
            let lease = lease.unwrap_or_else(|| panic!("{resource} was granted again"));
            assert_eq!((lease.owner(), lease.token(), lease.expires_at()), (C, token(2), s(17)));
        } else if held && !expired_and_reaped {
            let lease = lease.unwrap_or_else(|| panic!("{resource} still holds its lease"));
            let expected = (OwnerId::new(resource % 5), token(1), s(10 + resource % 7), s(0), 1);
            assert_eq!(
                (lease.owner(), lease.token(), lease.expires_at(), lease.issued_at(), lease.revision()),
                expected
            );
        } else {
            assert_eq!(lease, None, "{resource} holds no lease");
        }
    }
    let live: Vec<u64> = table.live_leases(s(12)).map(|lease| *lease.resource()).collect();
    assert!(live.windows(2).all(|pair| pair[0] < pair[1]), "live leases in resource order");

    let checkpoint = table.checkpoint();
    let records: Vec<u64> = checkpoint.records().iter().map(|record| record.resource).collect();
    assert_eq!(records, (0..n).collect::<Vec<_>>(), "records in resource order");
    let mut restored = LeaseTable::restore(checkpoint.clone());
    assert_eq!(restored.checkpoint(), checkpoint);
    assert_eq!(restored.metrics(s(12)).live_leases, table.metrics(s(12)).live_leases);
    for resource in 0..n {
        assert_eq!(restored.lease(&resource), table.lease(&resource));
        assert_eq!(restored.revision(&resource), table.revision(&resource));
        assert_eq!(restored.last_issued(&resource), table.last_issued(&resource));
        let (a, b) = (restored.acquire(&resource, B, s(20), s(5)), table.acquire(&resource, B, s(20), s(5)));
        assert_eq!(a, b);
    }
    assert_eq!(restored.checkpoint(), table.checkpoint());
    assert_eq!(restored.reap_expired(s(30)), table.reap_expired(s(30)));
    assert_eq!(restored.checkpoint(), table.checkpoint());
}
