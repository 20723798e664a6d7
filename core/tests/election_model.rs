#![cfg(test)] // test code throughout: clippy.toml lets it unwrap, expect, panic and index
#![cfg(feature = "alloc")]
//! Property tests of leader election against a small reference model written with sets and maps.
//!
//! Runs proptest's default configuration, so `PROPTEST_CASES` (default 256) sets the cases per property.

use std::collections::{BTreeMap, BTreeSet};

use lease_machines::{certify_votes, CertificateStatus, ElectionVote, Equivocation, QuorumCertificate};
use proptest::prelude::*;
use proptest::sample::subsequence;

const TERM: u64 = 3;

fn vote(voter: u64, candidate: u64, term: u64, granted: bool) -> ElectionVote<u64> {
    ElectionVote { voter, candidate, term, granted }
}

// ---------------------------------------------------------------------------------------------------------------
// The reference model
// ---------------------------------------------------------------------------------------------------------------

/// The rules read literally: the distinct members; per member, the set of candidates it granted a vote to in the
/// term; members with two or more are equivocators; the others are tallied per candidate; the leader is the one
/// candidate voted for by more than half of the members.
fn model(votes: &[ElectionVote<u64>], membership: &[u64], term: u64) -> QuorumCertificate<u64> {
    let members: BTreeSet<u64> = membership.iter().copied().collect();
    let mut chosen: BTreeMap<u64, BTreeSet<u64>> = BTreeMap::new();
    for vote in votes {
        if vote.term == term && vote.granted && members.contains(&vote.voter) {
            chosen.entry(vote.voter).or_default().insert(vote.candidate);
        }
    }
    let mut tally: BTreeMap<u64, BTreeSet<u64>> = BTreeMap::new();
    let mut equivocations = Vec::new();
    for (&voter, candidates) in &chosen {
        let mut smallest = candidates.iter().copied();
        match (smallest.next(), smallest.next()) {
            (Some(first), Some(second)) => equivocations.push(Equivocation {
                voter,
                first: vote(voter, first, term, true),
                second: vote(voter, second, term, true),
            }),
            (Some(only), None) => {
                tally.entry(only).or_default().insert(voter);
            }
            _ => unreachable!("a member in `chosen` voted at least once"),
        }
    }
    let majorities: Vec<(&u64, &BTreeSet<u64>)> =
        tally.iter().filter(|(_, voters)| 2 * voters.len() > members.len()).collect();
    let status = if members.is_empty() {
        CertificateStatus::NoMembers
    } else if tally.is_empty() {
        CertificateStatus::NoVotes
    } else if majorities.len() == 1 {
        CertificateStatus::Certified
    } else if tally.len() > 1 {
        CertificateStatus::Split
    } else {
        CertificateStatus::NoQuorum
    };
    let (leader, voters) = match majorities.as_slice() {
        [(&leader, voters)] => (Some(leader), voters.iter().copied().collect()),
        _ => (None, Vec::new()),
    };
    QuorumCertificate {
        valid: leader.is_some(),
        status,
        leader,
        term,
        members: members.len(),
        quorum: members.len() / 2 + 1,
        voters,
        equivocations,
    }
}

// ---------------------------------------------------------------------------------------------------------------
// Strategies
// ---------------------------------------------------------------------------------------------------------------

/// Any vote: voters 0..7 (some of them outside the membership), candidates 0..4, mostly for [`TERM`], mostly granted.
fn any_vote() -> impl Strategy<Value = ElectionVote<u64>> {
    let term = prop_oneof![8 => Just(TERM), 1 => Just(TERM - 1), 1 => Just(TERM + 1)];
    (0u64..7, 0u64..4, term, prop::bool::weighted(0.85))
        .prop_map(|(voter, candidate, term, granted)| vote(voter, candidate, term, granted))
}

/// A vote that never counts in [`TERM`]: for another term, or refused.
fn noise_vote() -> impl Strategy<Value = ElectionVote<u64>> {
    prop_oneof![
        (0u64..7, 0u64..4, prop_oneof![Just(TERM - 1), Just(TERM + 1), Just(0), Just(u64::MAX)])
            .prop_map(|(voter, candidate, term)| vote(voter, candidate, term, true)),
        (0u64..7, 0u64..4).prop_map(|(voter, candidate)| vote(voter, candidate, TERM, false)),
    ]
}

/// The granted votes of voters 0..7 that each vote for one candidate or not at all (some more than once, candidate 0
/// the favourite), with noise mixed in.
fn honest_votes() -> impl Strategy<Value = Vec<ElectionVote<u64>>> {
    (
        prop::collection::vec(
            prop::option::weighted(0.75, prop_oneof![3 => Just(0u64), 1 => Just(1), 1 => Just(2)]),
            7,
        ),
        prop::collection::vec(noise_vote(), 0..6),
        prop::collection::vec(0usize..7, 0..4),
    )
        .prop_map(|(ballots, noise, repeats)| {
            let mut votes: Vec<ElectionVote<u64>> =
                (0u64..).zip(ballots).filter_map(|(voter, ballot)| Some(vote(voter, ballot?, TERM, true))).collect();
            let repeated: Vec<ElectionVote<u64>> =
                repeats.iter().filter_map(|&index| votes.get(index).cloned()).collect();
            votes.extend(repeated);
            votes.extend(noise);
            votes
        })
        .prop_shuffle()
}

/// Votes of either kind: arbitrary ones, with equivocations, or mostly honest ones, which elect more often.
fn votes() -> impl Strategy<Value = Vec<ElectionVote<u64>>> {
    prop_oneof![
        prop::collection::vec(any_vote(), 0..24),
        (honest_votes(), prop::collection::vec(any_vote(), 0..3)).prop_map(|(mut votes, extra)| {
            votes.extend(extra);
            votes
        }),
    ]
}

/// A membership of ids 0..6, duplicates included, and sometimes empty.
fn membership() -> impl Strategy<Value = Vec<u64>> {
    prop_oneof![1 => Just(Vec::new()), 15 => prop::collection::vec(0u64..6, 1..9)]
}

/// `items` and `items` again with some of its elements repeated, in another order.
fn reordered<T: Clone + std::fmt::Debug + 'static>(items: Vec<T>) -> impl Strategy<Value = (Vec<T>, Vec<T>)> {
    let len = items.len();
    (Just(items.clone()), subsequence(items, 0..=len))
        .prop_map(|(items, repeated)| {
            let mut more = items.clone();
            more.extend(repeated);
            (items, more)
        })
        .prop_flat_map(|(items, more)| (Just(items), Just(more).prop_shuffle()))
}

/// Two subsets of `universe`, each in its own order.
fn two_subsets(
    universe: Vec<ElectionVote<u64>>,
) -> impl Strategy<Value = (Vec<ElectionVote<u64>>, Vec<ElectionVote<u64>>)> {
    let len = universe.len();
    (subsequence(universe.clone(), 0..=len).prop_shuffle(), subsequence(universe, 0..=len).prop_shuffle())
}

/// Two rounds of granted votes for [`TERM`], by voters 0..5 for candidates 0..2, each voter voting at most once per
/// round: a voter that votes in both rounds for different candidates equivocates.
fn two_rounds() -> impl Strategy<Value = (Vec<ElectionVote<u64>>, Vec<ElectionVote<u64>>)> {
    let round = || {
        prop::collection::btree_map(0u64..5, 0u64..2, 2..=5)
            .prop_map(|ballots| ballots.into_iter().map(|(voter, candidate)| vote(voter, candidate, TERM, true)))
            .prop_map(Vec::from_iter)
            .prop_shuffle()
    };
    (round(), round())
}

// ---------------------------------------------------------------------------------------------------------------
// Properties
// ---------------------------------------------------------------------------------------------------------------

proptest! {
    /// (a) The certificate is the model's, field for field: in particular it is valid only when more than half of
    /// the distinct members granted their one vote of the term to the leader.
    #[test]
    fn the_certificate_is_the_models(votes in votes(), membership in membership()) {
        let certificate = certify_votes(&votes, &membership, TERM);
        prop_assert_eq!(&certificate, &model(&votes, &membership, TERM));
        prop_assert_eq!(certificate.valid, certificate.status == CertificateStatus::Certified);
        prop_assert_eq!(certificate.valid, certificate.leader.is_some());
    }

    /// (a) Checked directly: every counted voter of a valid certificate is a member that granted a vote to the
    /// leader in the term and to nobody else, and there are more than half of the members of them.
    #[test]
    fn a_valid_certificate_has_a_strict_majority_of_single_minded_members(
        votes in votes(),
        membership in membership(),
    ) {
        let certificate = certify_votes(&votes, &membership, TERM);
        if let Some(leader) = certificate.leader {
            let members: BTreeSet<u64> = membership.iter().copied().collect();
            let voters: BTreeSet<u64> = certificate.voters.iter().copied().collect();
            prop_assert_eq!(voters.len(), certificate.voters.len(), "voters are distinct");
            prop_assert!(certificate.voters.windows(2).all(|pair| pair[0] < pair[1]), "voters are sorted");
            prop_assert!(2 * voters.len() > members.len());
            prop_assert!(voters.len() >= certificate.quorum);
            for voter in voters {
                prop_assert!(members.contains(&voter));
                let counting = votes.iter().filter(|vote| vote.voter == voter && vote.term == TERM && vote.granted);
                let candidates: BTreeSet<u64> = counting.map(|vote| vote.candidate).collect();
                prop_assert_eq!(candidates, BTreeSet::from([leader]));
            }
        } else {
            prop_assert!(certificate.voters.is_empty());
        }
    }

    /// (c) Reordering the votes or the membership, or repeating some of either, changes nothing.
    #[test]
    fn order_and_repetition_change_nothing(
        (votes, more_votes) in votes().prop_flat_map(reordered),
        (membership, more_members) in membership().prop_flat_map(reordered),
    ) {
        prop_assert_eq!(certify_votes(&more_votes, &more_members, TERM), certify_votes(&votes, &membership, TERM));
    }

    /// Votes that cannot count (another term, refused, or cast by a non-member) change nothing.
    #[test]
    fn votes_that_cannot_count_change_nothing(
        votes in votes(),
        membership in membership(),
        noise in prop::collection::vec(noise_vote(), 0..8),
        outsiders in prop::collection::vec((6u64..9, 0u64..4), 0..8),
    ) {
        let mut noisy = votes.clone();
        noisy.extend(noise);
        noisy.extend(outsiders.into_iter().map(|(voter, candidate)| vote(voter, candidate, TERM, true)));
        prop_assert_eq!(certify_votes(&noisy, &membership, TERM), certify_votes(&votes, &membership, TERM));
    }

    /// (b) When every member votes for at most one candidate, no two sets of its votes, whatever their order, elect
    /// different leaders in the term, and any set that elects a leader elects the leader of all the votes.
    #[test]
    fn honest_votes_never_elect_two_leaders(
        (universe, (first, second)) in honest_votes()
            .prop_flat_map(|universe| (Just(universe.clone()), two_subsets(universe))),
        membership in membership(),
    ) {
        let all = certify_votes(&universe, &membership, TERM);
        let one = certify_votes(&first, &membership, TERM);
        let other = certify_votes(&second, &membership, TERM);
        for part in [&one, &other] {
            if part.valid {
                prop_assert_eq!(&part.leader, &all.leader);
            }
        }
        if let (Some(one), Some(other)) = (one.leader, other.leader) {
            prop_assert_eq!(one, other);
        }
    }

    /// (b) Two sets of votes of one term can elect different leaders only if a member voted in both for different
    /// candidates (the two quorums share a member), and that member is caught as an equivocator once the two sets
    /// are certified together.
    #[test]
    fn two_leaders_in_one_term_need_an_equivocator_that_is_caught(
        (first, second) in two_rounds(),
        membership in subsequence((0u64..5).collect::<Vec<_>>(), 1..=5).prop_shuffle(),
    ) {
        let one = certify_votes(&first, &membership, TERM);
        let other = certify_votes(&second, &membership, TERM);
        if let (Some(a), Some(b)) = (&one.leader, &other.leader) {
            if a != b {
                let mut both = first.clone();
                both.extend(second.iter().cloned());
                let caught: BTreeSet<u64> =
                    certify_votes(&both, &membership, TERM).equivocations.iter().map(|found| found.voter).collect();
                let shared: Vec<u64> =
                    one.voters.iter().copied().filter(|voter| other.voters.contains(voter)).collect();
                prop_assert!(!shared.is_empty(), "two quorums of one membership share a member");
                for voter in shared {
                    prop_assert!(caught.contains(&voter), "member {} voted for {} and {}", voter, a, b);
                }
            }
        }
    }

    /// The certificate does not depend on the id type: string ids that sort like the numbers give the same one.
    #[test]
    fn string_ids_give_the_same_certificate(votes in votes(), membership in membership()) {
        let name = |id: u64| format!("node-{id:020}");
        let rename = |vote: &ElectionVote<u64>| ElectionVote {
            voter: name(vote.voter),
            candidate: name(vote.candidate),
            term: vote.term,
            granted: vote.granted,
        };
        let named_votes: Vec<ElectionVote<String>> = votes.iter().map(rename).collect();
        let named_members: Vec<String> = membership.iter().copied().map(name).collect();
        let numbered = certify_votes(&votes, &membership, TERM);
        let expected = QuorumCertificate {
            valid: numbered.valid,
            status: numbered.status,
            leader: numbered.leader.map(name),
            term: numbered.term,
            members: numbered.members,
            quorum: numbered.quorum,
            voters: numbered.voters.into_iter().map(name).collect(),
            equivocations: numbered
                .equivocations
                .iter()
                .map(|found| Equivocation {
                    voter: name(found.voter),
                    first: rename(&found.first),
                    second: rename(&found.second),
                })
                .collect(),
        };
        prop_assert_eq!(certify_votes(&named_votes, &named_members, TERM), expected);
    }
}
