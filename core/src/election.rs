//! Leader election: choosing who stands, the size of a majority quorum, and certifying one term's votes.
//!
//! The rules are Raft's (Ongaro and Ousterhout, "In Search of an Understandable Consensus Algorithm", §5.2): a member
//! grants at most one vote per term, and a candidate becomes leader with the granted votes of a strict majority of
//! the members. Any two strict majorities of one membership share a member, so two candidates can both reach a
//! quorum in one term only if some member voted for both. [`certify_votes`] reports such a member as an
//! [`Equivocation`] and counts none of its votes: one set of votes never certifies two leaders.
//!
//! Node ids are any `Ord + Clone` type (`u64`-like owner ids, strings). They are only compared, never interpreted.

use alloc::vec::Vec;
use core::fmt;

/// A node standing for election, with the priority it stands with.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Candidate<N> {
    /// The node's id.
    pub id: N,
    /// How strongly the node is preferred, any `u64`: the higher, the more.
    pub priority: u64,
}

/// The candidate that should stand for election: the one with the highest `priority`, ties going to the smaller `id`
/// (by `Ord`, so lexicographically for strings). `None` when `candidates` is empty.
///
/// The answer depends only on the candidates, not on their order, so every node that sees the same candidates picks
/// the same one. This is a deterministic preference, not an election: the chosen candidate still needs the votes of
/// a quorum, checked with [`certify_votes`]. Costs O(n), allocates nothing.
#[must_use]
pub fn select_candidate<N: Ord + Clone>(candidates: &[Candidate<N>]) -> Option<Candidate<N>> {
    candidates.iter().max_by(|a, b| a.priority.cmp(&b.priority).then_with(|| b.id.cmp(&a.id))).cloned()
}

/// How many distinct members' votes make a quorum: a strict majority, `members / 2 + 1`.
///
/// For `members >= 1` the result is in `1..=members` (1 of 1, 2 of 2 or 3, 3 of 4 or 5, ...). Any two sets of that
/// size drawn from one membership share a member, which is what allows at most one leader per term (Raft §5.2).
///
/// For an empty membership the result is 1, the formula's own value, and not 0: a quorum of 0 would be reached with
/// no vote at all. A quorum of an empty membership can never be reached, because only members' votes count and there
/// are none ([`certify_votes`] answers [`CertificateStatus::NoMembers`]). Total: never overflows, `usize::MAX` gives
/// `usize::MAX / 2 + 1`.
#[must_use]
pub const fn quorum_size(members: usize) -> usize {
    (members / 2).saturating_add(1)
}

/// One vote as reported: whether `voter` granted its vote to `candidate` in `term`.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ElectionVote<N> {
    /// The node that cast the vote.
    pub voter: N,
    /// The node the vote is for. It need not be a member: [`certify_votes`] only checks the voter.
    pub candidate: N,
    /// The election term the vote belongs to, any `u64`.
    pub term: u64,
    /// Whether the vote was granted. A refused vote (`false`) never counts and is never evidence of anything.
    pub granted: bool,
}

/// A member that granted its vote to two different candidates in one term, which Raft forbids (§5.2). None of its
/// votes count.
///
/// The evidence is chosen so that it does not depend on the order of the votes: `first` and `second` are the
/// member's granted votes for the term for the two smallest (by `Ord`) distinct candidates it voted for, so
/// `first.candidate < second.candidate`. Both have `voter` as voter, the certified term as term and `granted: true`.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Equivocation<N> {
    /// The member that voted twice.
    pub voter: N,
    /// Its vote for the smallest candidate it voted for.
    pub first: ElectionVote<N>,
    /// Its vote for the second smallest candidate it voted for.
    pub second: ElectionVote<N>,
}

/// Why a [`QuorumCertificate`] is or is not valid.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum CertificateStatus {
    /// Exactly one candidate has the counted votes of a quorum of members: it is the leader. The only valid status.
    Certified,
    /// The membership is empty: no vote can count, so no quorum can be reached.
    NoMembers,
    /// No vote counted: none was granted for the term by a member, or only by members that equivocated (they are in
    /// [`QuorumCertificate::equivocations`]).
    NoVotes,
    /// The counted votes all went to one candidate, and there were fewer than a quorum of them.
    NoQuorum,
    /// The counted votes went to more than one candidate, and none of them reached a quorum.
    Split,
}

impl CertificateStatus {
    /// Every status, in declaration order.
    pub const ALL: [Self; 5] = [Self::Certified, Self::NoMembers, Self::NoVotes, Self::NoQuorum, Self::Split];

    /// The status's stable snake_case name.
    #[must_use]
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Certified => "certified",
            Self::NoMembers => "no_members",
            Self::NoVotes => "no_votes",
            Self::NoQuorum => "no_quorum",
            Self::Split => "split",
        }
    }

    /// The status named `name`, as [`as_str`](Self::as_str) spells it.
    #[must_use]
    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|status| status.as_str() == name)
    }

    /// Whether the status is [`Certified`](Self::Certified), the one status that elects a leader.
    #[must_use]
    pub const fn is_valid(self) -> bool {
        matches!(self, Self::Certified)
    }
}

impl fmt::Display for CertificateStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Certified => "one candidate has the votes of a quorum of members",
            Self::NoMembers => "the membership is empty, so no vote can count",
            Self::NoVotes => "no vote was granted for the term by a member that voted only once",
            Self::NoQuorum => "the only candidate voted for has fewer votes than a quorum",
            Self::Split => "the votes are split between candidates and none has a quorum",
        })
    }
}

/// The result of [`certify_votes`]: whether one term's votes elect a leader, who, with whose votes, and which
/// members equivocated.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct QuorumCertificate<N> {
    /// Whether the votes elect a leader: true exactly when `status` is [`CertificateStatus::Certified`], and then
    /// `leader` is `Some`.
    pub valid: bool,
    /// Why the certificate is or is not valid.
    pub status: CertificateStatus,
    /// The elected leader when valid, `None` otherwise.
    pub leader: Option<N>,
    /// The term the votes were certified for.
    pub term: u64,
    /// The number of distinct members.
    pub members: usize,
    /// How many distinct members' votes elect a leader: [`quorum_size`] of `members`.
    pub quorum: usize,
    /// The members whose counted votes elected the leader, sorted and distinct: at least `quorum` of them when
    /// valid, empty otherwise.
    pub voters: Vec<N>,
    /// The members that granted votes to two different candidates in the term, sorted by voter, one entry each.
    /// Reported whether or not the certificate is valid.
    pub equivocations: Vec<Equivocation<N>>,
}

impl<N> QuorumCertificate<N> {
    /// Whether the votes elect a leader (the `valid` field).
    #[must_use]
    pub const fn is_valid(&self) -> bool {
        self.valid
    }

    /// The status's stable snake_case name, as [`CertificateStatus::as_str`] spells it.
    #[must_use]
    pub const fn message(&self) -> &'static str {
        self.status.as_str()
    }
}

/// Certifies the votes of one `term` against `membership`: the leader, if exactly one candidate has the counted
/// votes of a quorum of members (Raft §5.2).
///
/// A vote counts only if it is for `term`, granted, and cast by a member; its candidate need not be a member.
/// Membership duplicates count once, and the quorum is [`quorum_size`] of the distinct members. A voter's repeated
/// votes for one candidate count once. A member that, among its counting votes, voted for two different candidates
/// equivocated: none of its votes count, and it is reported in
/// [`equivocations`](QuorumCertificate::equivocations) with the evidence described at [`Equivocation`]. The
/// certificate is valid exactly when one candidate has at least `quorum` distinct, non-equivocating member voters;
/// with a strict majority at most one candidate can.
///
/// Ids are compared with `Ord` only. The result depends only on the sets of votes and members, never on their order
/// or repetitions. Costs O((v + m) log(v + m)) for v votes and m members, never panics.
#[must_use]
pub fn certify_votes<N: Ord + Clone>(votes: &[ElectionVote<N>], membership: &[N], term: u64) -> QuorumCertificate<N> {
    let mut members: Vec<&N> = membership.iter().collect();
    members.sort_unstable();
    members.dedup();
    let quorum = quorum_size(members.len());

    // (voter, candidate) of every vote that may count, once each, grouped by voter.
    let mut ballots: Vec<(&N, &N)> = votes
        .iter()
        .filter(|vote| vote.term == term && vote.granted && members.binary_search(&&vote.voter).is_ok())
        .map(|vote| (&vote.voter, &vote.candidate))
        .collect();
    ballots.sort_unstable();
    ballots.dedup();

    // (candidate, voter) of every counted vote: the single vote of each member that voted for one candidate only.
    let mut counted: Vec<(&N, &N)> = Vec::with_capacity(ballots.len());
    let mut equivocations = Vec::new();
    for by_voter in ballots.chunk_by(|a, b| a.0 == b.0) {
        match by_voter {
            [(voter, candidate)] => counted.push((*candidate, *voter)),
            [(voter, first), (_, second), ..] => equivocations.push(Equivocation {
                voter: (*voter).clone(),
                first: granted_vote(voter, first, term),
                second: granted_vote(voter, second, term),
            }),
            [] => {}
        }
    }
    counted.sort_unstable();

    let mut candidates: usize = 0;
    let mut winners: usize = 0;
    let mut elected: &[(&N, &N)] = &[];
    for by_candidate in counted.chunk_by(|a, b| a.0 == b.0) {
        candidates = candidates.saturating_add(1);
        if by_candidate.len() >= quorum {
            winners = winners.saturating_add(1);
            elected = by_candidate;
        }
    }

    // Two winners would need a member counted for both, which the strict majority rules out; were it to happen,
    // the votes would read as split rather than elect either.
    let status = if members.is_empty() {
        CertificateStatus::NoMembers
    } else if counted.is_empty() {
        CertificateStatus::NoVotes
    } else if winners == 1 {
        CertificateStatus::Certified
    } else if candidates > 1 {
        CertificateStatus::Split
    } else {
        CertificateStatus::NoQuorum
    };
    let (leader, voters) = if status.is_valid() {
        let leader = elected.first().map(|(candidate, _)| (*candidate).clone());
        (leader, elected.iter().map(|(_, voter)| (*voter).clone()).collect())
    } else {
        (None, Vec::new())
    };
    QuorumCertificate {
        valid: status.is_valid(),
        status,
        leader,
        term,
        members: members.len(),
        quorum,
        voters,
        equivocations,
    }
}

/// Whether `certificate` says what [`certify_votes`] says of a valid election: its fields are public, so a
/// certificate built by hand is checked for consistency rather than trusted. What
/// [`LeaseTable::acquire_leadership`](crate::LeaseTable::acquire_leadership) asks of the certificate it is given.
pub(crate) fn certifies<N: Ord + Clone>(certificate: &QuorumCertificate<N>) -> bool {
    let mut voters = certificate.voters.clone();
    voters.sort_unstable();
    voters.dedup();
    certificate.valid
        && certificate.status == CertificateStatus::Certified
        && certificate.leader.is_some()
        && certificate.members > 0
        && certificate.quorum == quorum_size(certificate.members)
        && voters.len() >= certificate.quorum
        && voters.len() <= certificate.members
        && certificate.equivocations.iter().all(|equivocation| voters.binary_search(&equivocation.voter).is_err())
}

/// The granted vote of `voter` for `candidate` in `term`, as it was cast (a counting vote has exactly these fields).
fn granted_vote<N: Clone>(voter: &N, candidate: &N, term: u64) -> ElectionVote<N> {
    ElectionVote { voter: voter.clone(), candidate: candidate.clone(), term, granted: true }
}
