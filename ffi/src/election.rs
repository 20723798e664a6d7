//! `LeaseMachines::Election`: candidate choice, quorum size and vote certification, over the records of
//! `lib/lease_machines/election.rb` (`Candidate`, `ElectionVote`, `Equivocation`, `QuorumCertificate`), built and
//! read by member name (see `data`).

use lease_machines::{
    certify_votes, quorum_size, select_candidate, Candidate, CertificateStatus, ElectionVote, Equivocation, OwnerId,
    QuorumCertificate,
};
use magnus::{prelude::*, Error, IntoValue, RModule, Ruby, Value};

use crate::convert::{array_arg, bool_arg, optional, owner_arg, u64_arg, usize_arg};
use crate::data::{record_arg, record_of_class, records_arg};
use crate::data::{
    CandidateMembers, ElectionVoteMembers, EquivocationMembers, QuorumCertificateMembers, CANDIDATE, ELECTION_VOTE,
    EQUIVOCATION, QUORUM_CERTIFICATE,
};
use crate::symbols::SymbolEnum;

fn vote_of(ruby: &Ruby, members: ElectionVoteMembers) -> Result<ElectionVote<OwnerId>, Error> {
    Ok(ElectionVote {
        voter: u64_arg(ruby, "voter", members.voter).map(OwnerId::new)?,
        candidate: u64_arg(ruby, "candidate", members.candidate).map(OwnerId::new)?,
        term: u64_arg(ruby, "term", members.term)?,
        granted: bool_arg(ruby, "granted", members.granted)?,
    })
}

fn vote(ruby: &Ruby, vote: &ElectionVote<OwnerId>) -> Result<Value, Error> {
    ELECTION_VOTE.build(
        ruby,
        ElectionVoteMembers {
            voter: vote.voter.value().into_value_with(ruby),
            candidate: vote.candidate.value().into_value_with(ruby),
            term: vote.term.into_value_with(ruby),
            granted: vote.granted.into_value_with(ruby),
        },
    )
}

fn members_arg(ruby: &Ruby, value: Value) -> Result<Vec<OwnerId>, Error> {
    let list = array_arg(ruby, "members", value)?;
    let mut members = Vec::with_capacity(list.len());
    for index in 0..list.len() {
        members.push(u64_arg(ruby, "member", list.entry(index as isize)?).map(OwnerId::new)?);
    }
    Ok(members)
}

/// A frozen `LeaseMachines::QuorumCertificate`, its `voters` and `equivocations` frozen Arrays.
fn certificate(ruby: &Ruby, certificate: &QuorumCertificate<OwnerId>) -> Result<Value, Error> {
    let voters = ruby.ary_from_iter(certificate.voters.iter().map(|voter| voter.value()));
    voters.freeze();
    let equivocations = ruby.ary_new_capa(certificate.equivocations.len());
    for equivocation in &certificate.equivocations {
        let first = vote(ruby, &equivocation.first)?;
        let second = vote(ruby, &equivocation.second)?;
        equivocations.push(EQUIVOCATION.build(
            ruby,
            EquivocationMembers { voter: equivocation.voter.value().into_value_with(ruby), first, second },
        )?)?;
    }
    equivocations.freeze();
    QUORUM_CERTIFICATE.build(
        ruby,
        QuorumCertificateMembers {
            valid: certificate.valid.into_value_with(ruby),
            status: certificate.status.symbol(ruby).as_value(),
            leader: certificate.leader.map(OwnerId::value).into_value_with(ruby),
            term: certificate.term.into_value_with(ruby),
            members: certificate.members.into_value_with(ruby),
            quorum: certificate.quorum.into_value_with(ruby),
            voters: voters.as_value(),
            equivocations: equivocations.as_value(),
        },
    )
}

/// A `QuorumCertificate` argument (`Table#acquire_leadership`).
pub fn certificate_arg(ruby: &Ruby, value: Value) -> Result<QuorumCertificate<OwnerId>, Error> {
    let members = record_of_class(ruby, "certificate", &QUORUM_CERTIFICATE, value)?;
    let equivocations = records_arg(ruby, "equivocations", &EQUIVOCATION, members.equivocations, |equivocation| {
        Ok(Equivocation {
            voter: owner_arg(ruby, equivocation.voter)?,
            first: vote_of(ruby, record_arg(ruby, "first", &ELECTION_VOTE, equivocation.first)?)?,
            second: vote_of(ruby, record_arg(ruby, "second", &ELECTION_VOTE, equivocation.second)?)?,
        })
    })?;
    Ok(QuorumCertificate {
        valid: bool_arg(ruby, "valid", members.valid)?,
        status: CertificateStatus::arg(ruby, members.status)?,
        leader: optional(members.leader, |leader| owner_arg(ruby, leader))?,
        term: u64_arg(ruby, "term", members.term)?,
        members: usize_arg(ruby, "members", members.members)?,
        quorum: usize_arg(ruby, "quorum", members.quorum)?,
        voters: members_arg(ruby, members.voters)?,
        equivocations,
    })
}

fn quorum(ruby: &Ruby, members: Value) -> Result<usize, Error> {
    Ok(quorum_size(usize_arg(ruby, "members", members)?))
}

/// The `Candidate` with the highest priority (ties to the smaller id), or nil.
fn select(ruby: &Ruby, candidates: Value) -> Result<Option<Value>, Error> {
    let candidates = records_arg(ruby, "candidates", &CANDIDATE, candidates, |candidate| {
        Ok(Candidate {
            id: u64_arg(ruby, "id", candidate.id).map(OwnerId::new)?,
            priority: u64_arg(ruby, "priority", candidate.priority)?,
        })
    })?;
    select_candidate(&candidates)
        .map(|chosen| {
            CANDIDATE.build(
                ruby,
                CandidateMembers {
                    id: chosen.id.value().into_value_with(ruby),
                    priority: chosen.priority.into_value_with(ruby),
                },
            )
        })
        .transpose()
}

fn certify(ruby: &Ruby, votes: Value, members: Value, term: Value) -> Result<Value, Error> {
    let votes = records_arg(ruby, "votes", &ELECTION_VOTE, votes, |vote| vote_of(ruby, vote))?;
    let members = members_arg(ruby, members)?;
    let term = u64_arg(ruby, "term", term)?;
    certificate(ruby, &certify_votes(&votes, &members, term))
}

pub fn define(module: RModule) -> Result<(), Error> {
    let functions = module.define_module("Election")?.singleton_class()?;
    functions.define_private_method("_quorum_size", magnus::function!(quorum, 1))?;
    functions.define_private_method("_select_candidate", magnus::function!(select, 1))?;
    functions.define_private_method("_certify_votes", magnus::function!(certify, 3))?;
    Ok(())
}
