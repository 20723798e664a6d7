//! `LeaseTable::acquire_leadership`: leadership leases granted on the strength of a quorum certificate, one rule per
//! test.
#![cfg(test)] // test code throughout: clippy.toml lets it unwrap, expect, panic and index
#![cfg(feature = "alloc")]

use core::time::Duration;

use lease_machines::{
    audit, certify_votes, ElectionVote, EventKind, LeaseTable, OwnerId, QuorumCertificate, Rejection, TableDecision,
    TableLease,
};

mod support;
use support::{s, A, B, C};

const MEMBERS: [OwnerId; 3] = [A, B, C];

/// The certificate of `term` in which `voters` all voted for `leader`.
fn elected(leader: OwnerId, voters: &[OwnerId], term: u64) -> QuorumCertificate<OwnerId> {
    let votes: Vec<ElectionVote<OwnerId>> =
        voters.iter().map(|&voter| ElectionVote { voter, candidate: leader, term, granted: true }).collect();
    certify_votes(&votes, &MEMBERS, term)
}

fn granted(decision: TableDecision<String>) -> TableLease<String> {
    match decision {
        TableDecision::Granted(lease) => lease,
        other => panic!("expected a grant, got {other:?}"),
    }
}

fn leader() -> String {
    "cluster/leader".to_owned()
}

#[test]
fn a_valid_certificate_grants_its_leader_an_ordinary_lease_with_the_term_recorded() {
    let mut table = LeaseTable::new();
    let lease = granted(table.acquire_leadership(&leader(), &elected(A, &[A, B], 4), A, s(0), s(5)));
    assert_eq!((lease.owner(), lease.token().value(), lease.expires_at(), lease.term()), (A, 1, s(5), Some(4)));
    assert_eq!(table.term(&leader()), Some(4));
    let event = table.events().last().expect("recorded");
    assert_eq!((event.kind, event.term), (EventKind::Acquired, Some(4)));
    let checkpoint = table.checkpoint();
    let record = &checkpoint.records()[0];
    assert_eq!((record.term, record.lease.and_then(|lease| lease.term)), (Some(4), Some(4)));
}

#[test]
fn a_certificate_without_quorum_grants_nothing() {
    let mut table = LeaseTable::new();
    let minority = elected(A, &[A], 1);
    assert!(!minority.is_valid());
    assert_eq!(
        table.acquire_leadership(&leader(), &minority, A, s(0), s(5)),
        TableDecision::Rejected(Rejection::NoQuorum)
    );
    assert_eq!(table.lease(&leader()), None);
}

#[test]
fn only_the_elected_leader_may_use_the_certificate() {
    let mut table = LeaseTable::new();
    let certificate = elected(A, &[A, B], 1);
    assert_eq!(
        table.acquire_leadership(&leader(), &certificate, B, s(0), s(5)),
        TableDecision::Rejected(Rejection::NotLeader)
    );
}

#[test]
fn a_stale_term_cannot_take_leadership_back() {
    let mut table = LeaseTable::new();
    let lease = granted(table.acquire_leadership(&leader(), &elected(A, &[A, B], 5), A, s(0), s(5)));
    assert_eq!(table.release(&leader(), A, lease.token(), s(1)), TableDecision::Released);
    let older = elected(B, &[B, C], 4);
    let same = elected(B, &[B, C], 5);
    assert_eq!(
        table.acquire_leadership(&leader(), &older, B, s(2), s(5)),
        TableDecision::Rejected(Rejection::StaleTerm)
    );
    assert_eq!(
        table.acquire_leadership(&leader(), &same, B, s(2), s(5)),
        TableDecision::Rejected(Rejection::StaleTerm)
    );
    let newer = granted(table.acquire_leadership(&leader(), &elected(B, &[B, C], 6), B, s(2), s(5)));
    assert_eq!((newer.owner(), newer.token().value(), newer.term()), (B, 2, Some(6)));
}

#[test]
fn a_new_leader_waits_for_the_old_leaders_live_lease() {
    let mut table = LeaseTable::new();
    granted(table.acquire_leadership(&leader(), &elected(A, &[A, B], 1), A, s(0), s(5)));
    let next_term = elected(B, &[B, C], 2);
    assert_eq!(
        table.acquire_leadership(&leader(), &next_term, B, s(4), s(5)),
        TableDecision::Rejected(Rejection::Occupied)
    );
    let lease = granted(table.acquire_leadership(&leader(), &next_term, B, s(5), s(5)));
    assert_eq!((lease.token().value(), lease.term()), (2, Some(2)));
}

#[test]
fn a_re_elected_leader_rotates_its_own_live_lease_to_the_new_term() {
    let mut table = LeaseTable::new();
    let first = granted(table.acquire_leadership(&leader(), &elected(A, &[A, B], 1), A, s(0), s(5)));
    let second = granted(table.acquire_leadership(&leader(), &elected(A, &[A, C], 2), A, s(1), s(5)));
    assert!(second.token() > first.token());
    assert_eq!(second.term(), Some(2));
    assert_eq!(table.events().last().map(|event| event.kind), Some(EventKind::Reacquired));
    assert_eq!(table.renew(&leader(), A, first.token(), s(2), s(5)), TableDecision::Rejected(Rejection::StaleToken));
    assert!(audit(table.events()).is_valid());
}

#[test]
fn leadership_checks_come_after_the_clock_and_ttl() {
    let mut table = LeaseTable::new();
    let certificate = elected(A, &[A], 1);
    assert_eq!(
        table.acquire_leadership(&leader(), &certificate, B, s(0), Duration::ZERO),
        TableDecision::Rejected(Rejection::InvalidTtl)
    );
}

#[test]
fn renewals_keep_the_term() {
    let mut table = LeaseTable::new();
    let lease = granted(table.acquire_leadership(&leader(), &elected(A, &[A, B], 3), A, s(0), s(5)));
    let renewed = table.renew(&leader(), A, lease.token(), s(1), s(5));
    assert_eq!(renewed.lease().and_then(TableLease::term), Some(3));
}

#[test]
fn once_elected_a_resource_is_granted_only_by_a_newer_election() {
    let mut table = LeaseTable::new();
    let lease = granted(table.acquire_leadership(&leader(), &elected(A, &[A, B], 4), A, s(0), s(10)));
    let required = TableDecision::Rejected(Rejection::LeadershipRequired);
    // The old leader cannot slip back in with a plain grant after its lease expires, nor hand leadership over.
    assert_eq!(table.acquire(&leader(), A, s(11), s(10)), required);
    assert_eq!(table.acquire_at_revision(&leader(), A, 1, s(11), s(10)), required);
    assert_eq!(table.reacquire(&leader(), A, s(5), s(10)), required);
    assert_eq!(table.transfer(&leader(), A, lease.token(), B, s(5), s(10)), required);
    let next = granted(table.acquire_leadership(&leader(), &elected(B, &[B, C], 5), B, s(11), s(10)));
    assert_eq!((next.owner(), next.term()), (B, Some(5)));
}

#[test]
fn a_certificate_built_by_hand_must_be_consistent() {
    let mut table = LeaseTable::new();
    let genuine = elected(A, &[A, B], 2);
    let forged = QuorumCertificate { members: 0, quorum: 5, voters: Vec::new(), ..genuine.clone() };
    assert_eq!(
        table.acquire_leadership(&leader(), &forged, A, s(0), s(5)),
        TableDecision::Rejected(Rejection::NoQuorum)
    );
    let short = QuorumCertificate { voters: vec![A], ..genuine.clone() };
    assert_eq!(
        table.acquire_leadership(&leader(), &short, A, s(0), s(5)),
        TableDecision::Rejected(Rejection::NoQuorum)
    );
    granted(table.acquire_leadership(&leader(), &genuine, A, s(0), s(5)));
}
