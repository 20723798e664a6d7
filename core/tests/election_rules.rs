#![cfg(test)] // test code throughout: clippy.toml lets it unwrap, expect, panic and index
#![cfg(feature = "alloc")]
//! The leader-election rules, one test each, named after the rule.

use lease_machines::{
    certify_votes, quorum_size, select_candidate, Candidate, CertificateStatus, ElectionVote, Equivocation,
    QuorumCertificate,
};

const TERM: u64 = 7;

fn candidate(id: u64, priority: u64) -> Candidate<u64> {
    Candidate { id, priority }
}

/// A vote granted by `voter` to `candidate` in [`TERM`].
fn vote(voter: u64, candidate: u64) -> ElectionVote<u64> {
    ElectionVote { voter, candidate, term: TERM, granted: true }
}

fn members(count: u64) -> Vec<u64> {
    (1..=count).collect()
}

fn certify(votes: &[ElectionVote<u64>], membership: &[u64]) -> QuorumCertificate<u64> {
    certify_votes(votes, membership, TERM)
}

fn assert_elected(certificate: &QuorumCertificate<u64>, leader: u64, voters: &[u64]) {
    assert!(certificate.valid, "expected {leader} to be elected: {certificate:?}");
    assert!(certificate.is_valid());
    assert_eq!(certificate.status, CertificateStatus::Certified);
    assert_eq!(certificate.leader, Some(leader));
    assert_eq!(certificate.voters, voters);
}

fn assert_not_elected(certificate: &QuorumCertificate<u64>, status: CertificateStatus) {
    assert!(!certificate.valid, "expected no leader: {certificate:?}");
    assert!(!certificate.is_valid());
    assert_eq!(certificate.status, status);
    assert_eq!(certificate.leader, None);
    assert!(certificate.voters.is_empty());
}

// ---------------------------------------------------------------------------------------------------------------
// Choosing a candidate
// ---------------------------------------------------------------------------------------------------------------

#[test]
fn the_highest_priority_candidate_is_selected() {
    let chosen = select_candidate(&[candidate(1, 10), candidate(2, 30), candidate(3, 20)]);
    assert_eq!(chosen, Some(candidate(2, 30)));
}

#[test]
fn a_priority_tie_goes_to_the_smaller_id() {
    let chosen = select_candidate(&[candidate(9, 5), candidate(4, 5), candidate(6, 5), candidate(1, 4)]);
    assert_eq!(chosen, Some(candidate(4, 5)));
}

#[test]
fn a_priority_tie_between_strings_goes_to_the_lexicographically_smaller_id() {
    let node = |id: &str, priority| Candidate { id: id.to_owned(), priority };
    let chosen = select_candidate(&[node("node-b", 1), node("node-a", 1), node("node-aa", 1), node("Z", 0)]);
    assert_eq!(chosen, Some(node("node-a", 1)));
}

#[test]
fn no_candidates_select_nothing() {
    assert_eq!(select_candidate::<u64>(&[]), None);
}

#[test]
fn the_selected_candidate_does_not_depend_on_the_order() {
    let mut candidates =
        vec![candidate(3, 2), candidate(1, 2), candidate(2, 1), candidate(5, u64::MAX), candidate(0, 0)];
    let expected = Some(candidate(5, u64::MAX));
    for _ in 0..candidates.len() {
        candidates.rotate_left(1);
        assert_eq!(select_candidate(&candidates), expected);
        candidates.reverse();
        assert_eq!(select_candidate(&candidates), expected);
    }
}

// ---------------------------------------------------------------------------------------------------------------
// Quorum size
// ---------------------------------------------------------------------------------------------------------------

#[test]
fn the_quorum_is_a_strict_majority_for_zero_to_seven_members() {
    let quorums: Vec<usize> = (0..=7).map(quorum_size).collect();
    assert_eq!(quorums, [1, 1, 2, 2, 3, 3, 4, 4]);
    for members in 1..=7_usize {
        let quorum = quorum_size(members);
        assert!(quorum * 2 > members, "{quorum} of {members} is a strict majority");
        assert!((quorum - 1) * 2 <= members, "{quorum} of {members} is the smallest strict majority");
    }
}

#[test]
fn the_quorum_of_an_empty_membership_is_one_and_never_reached() {
    const EMPTY: usize = quorum_size(0);
    assert_eq!(EMPTY, 1);
    let certificate = certify(&[vote(1, 1), vote(2, 1)], &[]);
    assert_not_elected(&certificate, CertificateStatus::NoMembers);
    assert_eq!((certificate.members, certificate.quorum), (0, 1));
    assert!(certificate.equivocations.is_empty());
}

#[test]
fn the_quorum_size_never_overflows() {
    assert_eq!(quorum_size(usize::MAX), usize::MAX / 2 + 1);
    assert_eq!(quorum_size(usize::MAX - 1), usize::MAX / 2 + 1);
}

// ---------------------------------------------------------------------------------------------------------------
// Which votes count
// ---------------------------------------------------------------------------------------------------------------

#[test]
fn a_majority_of_members_elects_its_candidate() {
    let certificate = certify(&[vote(1, 2), vote(2, 2), vote(3, 2)], &members(5));
    assert_elected(&certificate, 2, &[1, 2, 3]);
    assert_eq!((certificate.term, certificate.members, certificate.quorum), (TERM, 5, 3));
    assert!(certificate.equivocations.is_empty());
}

#[test]
fn votes_for_another_term_do_not_count() {
    let mut old = vote(3, 2);
    old.term = TERM - 1;
    let mut newer = vote(3, 2);
    newer.term = TERM + 1;
    let certificate = certify(&[vote(1, 2), vote(2, 2), old.clone(), newer.clone()], &members(5));
    assert_not_elected(&certificate, CertificateStatus::NoQuorum);
    assert_elected(&certify(&[vote(1, 2), vote(2, 2), old, newer, vote(3, 2)], &members(5)), 2, &[1, 2, 3]);
}

#[test]
fn refused_votes_do_not_count() {
    let mut refused = vote(3, 2);
    refused.granted = false;
    assert_not_elected(&certify(&[vote(1, 2), vote(2, 2), refused], &members(5)), CertificateStatus::NoQuorum);
}

#[test]
fn votes_from_non_members_do_not_count() {
    let certificate = certify(&[vote(1, 2), vote(2, 2), vote(6, 2), vote(7, 2), vote(8, 2)], &members(5));
    assert_not_elected(&certificate, CertificateStatus::NoQuorum);
}

#[test]
fn a_candidate_outside_the_membership_can_be_elected_by_members() {
    assert_elected(&certify(&[vote(1, 9), vote(2, 9)], &members(3)), 9, &[1, 2]);
}

#[test]
fn a_voters_repeated_votes_for_one_candidate_count_once() {
    let votes = [vote(1, 2), vote(1, 2), vote(1, 2), vote(2, 2), vote(2, 2)];
    let certificate = certify(&votes, &members(5));
    assert_not_elected(&certificate, CertificateStatus::NoQuorum);
    assert!(certificate.equivocations.is_empty(), "repeating a vote is not equivocating");
}

#[test]
fn membership_duplicates_count_once() {
    let certificate = certify(&[vote(1, 1), vote(2, 1)], &[1, 2, 3, 3, 3, 3, 1]);
    assert_eq!((certificate.members, certificate.quorum), (3, 2));
    assert_elected(&certificate, 1, &[1, 2]);
}

#[test]
fn no_counted_vote_means_no_votes() {
    let mut refused = vote(1, 1);
    refused.granted = false;
    assert_not_elected(&certify(&[], &members(3)), CertificateStatus::NoVotes);
    assert_not_elected(&certify(&[refused, vote(9, 1)], &members(3)), CertificateStatus::NoVotes);
}

// ---------------------------------------------------------------------------------------------------------------
// Equivocation
// ---------------------------------------------------------------------------------------------------------------

#[test]
fn an_equivocators_votes_do_not_count_and_the_evidence_is_reported() {
    // Member 3 voted for both 1 and 2: without it, 1 has two of five votes.
    let certificate = certify(&[vote(1, 1), vote(2, 1), vote(3, 1), vote(3, 2), vote(4, 2)], &members(5));
    assert_not_elected(&certificate, CertificateStatus::Split);
    assert_eq!(certificate.equivocations, [Equivocation { voter: 3, first: vote(3, 1), second: vote(3, 2) }]);
}

#[test]
fn an_equivocator_is_reported_even_when_a_leader_is_elected() {
    let certificate = certify(&[vote(1, 1), vote(2, 1), vote(3, 1), vote(4, 1), vote(4, 2)], &members(5));
    assert_elected(&certificate, 1, &[1, 2, 3]);
    assert_eq!(certificate.equivocations, [Equivocation { voter: 4, first: vote(4, 1), second: vote(4, 2) }]);
}

#[test]
fn only_equivocators_voting_means_no_votes() {
    let certificate = certify(&[vote(1, 1), vote(1, 2), vote(2, 2), vote(2, 1)], &members(3));
    assert_not_elected(&certificate, CertificateStatus::NoVotes);
    assert_eq!(certificate.equivocations.len(), 2);
}

#[test]
fn the_evidence_is_the_votes_for_the_two_smallest_candidates_whatever_the_order() {
    let mut votes = vec![vote(2, 8), vote(2, 5), vote(2, 9), vote(2, 5), vote(2, 6)];
    let expected = [Equivocation { voter: 2, first: vote(2, 5), second: vote(2, 6) }];
    for _ in 0..votes.len() {
        votes.rotate_left(1);
        assert_eq!(certify(&votes, &members(3)).equivocations, expected);
        votes.reverse();
        assert_eq!(certify(&votes, &members(3)).equivocations, expected);
    }
}

#[test]
fn equivocations_are_sorted_by_voter() {
    let votes = [vote(5, 1), vote(2, 1), vote(5, 2), vote(4, 3), vote(2, 3), vote(4, 1)];
    let voters: Vec<u64> = certify(&votes, &members(5)).equivocations.iter().map(|found| found.voter).collect();
    assert_eq!(voters, [2, 4, 5]);
}

#[test]
fn only_counting_votes_make_an_equivocation() {
    let mut other_term = vote(1, 2);
    other_term.term = TERM + 1;
    let mut refused = vote(1, 3);
    refused.granted = false;
    let outsider = [vote(9, 1), vote(9, 2)];
    let votes = [vote(1, 1), other_term, refused, outsider[0].clone(), outsider[1].clone(), vote(2, 1)];
    let certificate = certify(&votes, &members(3));
    assert!(certificate.equivocations.is_empty(), "{:?}", certificate.equivocations);
    assert_elected(&certificate, 1, &[1, 2]);
}

// ---------------------------------------------------------------------------------------------------------------
// Validity
// ---------------------------------------------------------------------------------------------------------------

#[test]
fn exactly_half_of_the_members_is_not_a_quorum() {
    let certificate = certify(&[vote(1, 1), vote(2, 1)], &members(4));
    assert_eq!(certificate.quorum, 3);
    assert_not_elected(&certificate, CertificateStatus::NoQuorum);
    assert_elected(&certify(&[vote(1, 1), vote(2, 1), vote(3, 1)], &members(4)), 1, &[1, 2, 3]);
}

#[test]
fn a_split_vote_elects_no_one() {
    let certificate = certify(&[vote(1, 1), vote(2, 1), vote(3, 2), vote(4, 2)], &members(4));
    assert_not_elected(&certificate, CertificateStatus::Split);
}

#[test]
fn a_single_member_elects_with_its_own_vote() {
    assert_elected(&certify(&[vote(1, 1)], &[1]), 1, &[1]);
}

#[test]
fn the_voters_are_sorted_and_distinct() {
    let votes = [vote(5, 1), vote(3, 1), vote(5, 1), vote(1, 1), vote(3, 1), vote(2, 4)];
    assert_elected(&certify(&votes, &members(5)), 1, &[1, 3, 5]);
}

#[test]
fn the_certificate_does_not_depend_on_the_order_of_votes_or_members() {
    let mut votes = vec![vote(1, 1), vote(2, 1), vote(3, 1), vote(4, 2), vote(4, 1), vote(5, 3), vote(2, 1)];
    let mut membership = members(5);
    let expected = certify(&votes, &membership);
    assert_elected(&expected, 1, &[1, 2, 3]);
    for _ in 0..votes.len() {
        votes.rotate_left(2);
        membership.rotate_left(1);
        assert_eq!(certify(&votes, &membership), expected);
        votes.reverse();
        membership.reverse();
        assert_eq!(certify(&votes, &membership), expected);
    }
}

#[test]
fn string_ids_are_certified_like_numbers() {
    let vote = |voter: &str, candidate: &str| ElectionVote {
        voter: voter.to_owned(),
        candidate: candidate.to_owned(),
        term: TERM,
        granted: true,
    };
    let membership: Vec<String> = ["a", "b", "c"].into_iter().map(str::to_owned).collect();
    let certificate =
        certify_votes(&[vote("c", "b"), vote("a", "b"), vote("b", "c"), vote("b", "a")], &membership, TERM);
    assert_eq!(certificate.leader.as_deref(), Some("b"));
    assert_eq!(certificate.voters, ["a", "c"]);
    assert_eq!(certificate.equivocations.len(), 1);
    assert_eq!(certificate.equivocations[0].first, vote("b", "a"));
    assert_eq!(certificate.equivocations[0].second, vote("b", "c"));
}

// ---------------------------------------------------------------------------------------------------------------
// Statuses
// ---------------------------------------------------------------------------------------------------------------

#[test]
fn status_names_are_stable_snake_case_and_round_trip() {
    let names: Vec<&str> = CertificateStatus::ALL.iter().map(|status| status.as_str()).collect();
    assert_eq!(names, ["certified", "no_members", "no_votes", "no_quorum", "split"]);
    for status in CertificateStatus::ALL {
        assert_eq!(CertificateStatus::from_name(status.as_str()), Some(status));
        assert!(!status.to_string().is_empty());
    }
    assert_eq!(CertificateStatus::from_name("Certified"), None);
}

#[test]
fn only_certified_is_valid() {
    for status in CertificateStatus::ALL {
        assert_eq!(status.is_valid(), status == CertificateStatus::Certified);
    }
    let certificate = certify(&[vote(1, 1)], &members(3));
    assert_eq!(certificate.message(), "no_quorum");
}
