//! `LeaseMachines::Election`: candidate choice, quorum size and vote certification, as module functions over
//! arrays the Ruby layer turns into its `Data` types (`Candidate`, `ElectionVote`, `QuorumCertificate`,
//! `Equivocation`), in their member order.

use lease_machines::{
    certify_votes, quorum_size, select_candidate, Candidate, ElectionVote, Equivocation, OwnerId, QuorumCertificate,
};
use magnus::{prelude::*, value::ReprValue, Error, IntoValue, RArray, RModule, Ruby, Value};

use crate::convert::{array_arg as array, owner_arg, rows_arg as entries, shown, u64_arg};
use crate::symbols;

fn bool_arg(ruby: &Ruby, name: &str, value: Value) -> Result<bool, Error> {
    if value.is_kind_of(ruby.class_true_class()) {
        Ok(true)
    } else if value.is_kind_of(ruby.class_false_class()) {
        Ok(false)
    } else {
        Err(Error::new(ruby.exception_type_error(), format!("{name} must be true or false, got {}", shown(value))))
    }
}

fn vote_arg(ruby: &Ruby, row: RArray) -> Result<ElectionVote<OwnerId>, Error> {
    Ok(ElectionVote {
        voter: u64_arg(ruby, "voter", row.entry(0)?).map(OwnerId::new)?,
        candidate: u64_arg(ruby, "candidate", row.entry(1)?).map(OwnerId::new)?,
        term: u64_arg(ruby, "term", row.entry(2)?)?,
        granted: bool_arg(ruby, "granted", row.entry(3)?)?,
    })
}

fn vote(ruby: &Ruby, vote: &ElectionVote<OwnerId>) -> RArray {
    let values: [Value; 4] = [
        vote.voter.value().into_value_with(ruby),
        vote.candidate.value().into_value_with(ruby),
        vote.term.into_value_with(ruby),
        vote.granted.into_value_with(ruby),
    ];
    ruby.ary_new_from_values(&values)
}

fn members_arg(ruby: &Ruby, value: Value) -> Result<Vec<OwnerId>, Error> {
    let list = array(ruby, "members", value)?;
    let mut members = Vec::with_capacity(list.len());
    for index in 0..list.len() {
        members.push(u64_arg(ruby, "member", list.entry(index as isize)?).map(OwnerId::new)?);
    }
    Ok(members)
}

/// `[valid, status, leader, term, members, quorum, voters, equivocations]`, equivocations as
/// `[voter, first_vote, second_vote]`.
fn certificate(ruby: &Ruby, certificate: &QuorumCertificate<OwnerId>) -> RArray {
    let voters = ruby.ary_from_iter(certificate.voters.iter().map(|voter| voter.value()));
    let equivocations = ruby.ary_from_iter(certificate.equivocations.iter().map(|equivocation| {
        let values: [Value; 3] = [
            equivocation.voter.value().into_value_with(ruby),
            vote(ruby, &equivocation.first).as_value(),
            vote(ruby, &equivocation.second).as_value(),
        ];
        ruby.ary_new_from_values(&values)
    }));
    let values: [Value; 8] = [
        certificate.valid.into_value_with(ruby),
        symbols::certificate_status(ruby, certificate.status).as_value(),
        certificate.leader.map(OwnerId::value).into_value_with(ruby),
        certificate.term.into_value_with(ruby),
        certificate.members.into_value_with(ruby),
        certificate.quorum.into_value_with(ruby),
        voters.as_value(),
        equivocations.as_value(),
    ];
    ruby.ary_new_from_values(&values)
}

/// A certificate as [`certificate`] shapes it (`LeaseMachines::QuorumCertificate#deconstruct`).
pub fn certificate_arg(ruby: &Ruby, value: Value) -> Result<QuorumCertificate<OwnerId>, Error> {
    let row = array(ruby, "certificate", value)?;
    if row.len() != 8 {
        return Err(Error::new(
            ruby.exception_arg_error(),
            format!("certificate must have 8 fields, got {}", row.len()),
        ));
    }
    let leader: Value = row.entry(2)?;
    let voters = members_arg(ruby, row.entry(6)?)?;
    let mut equivocations = Vec::new();
    for entry in entries(ruby, "equivocations", row.entry(7)?, 3)? {
        let first = array(ruby, "vote", entry.entry(1)?)?;
        let second = array(ruby, "vote", entry.entry(2)?)?;
        equivocations.push(Equivocation {
            voter: owner_arg(ruby, entry.entry(0)?)?,
            first: vote_arg(ruby, first)?,
            second: vote_arg(ruby, second)?,
        });
    }
    let size = |name: &str, value: Value| -> Result<usize, Error> {
        usize::try_from(u64_arg(ruby, name, value)?)
            .map_err(|_| Error::new(ruby.exception_range_error(), format!("{name} is too large")))
    };
    Ok(QuorumCertificate {
        valid: bool_arg(ruby, "valid", row.entry(0)?)?,
        status: symbols::certificate_status_arg(ruby, row.entry(1)?)?,
        leader: if leader.is_nil() { None } else { Some(owner_arg(ruby, leader)?) },
        term: u64_arg(ruby, "term", row.entry(3)?)?,
        members: size("members", row.entry(4)?)?,
        quorum: size("quorum", row.entry(5)?)?,
        voters,
        equivocations,
    })
}

fn quorum(ruby: &Ruby, members: Value) -> Result<usize, Error> {
    let members = usize::try_from(u64_arg(ruby, "members", members)?)
        .map_err(|_| Error::new(ruby.exception_range_error(), "members is too large"))?;
    Ok(quorum_size(members))
}

/// `[[id, priority], ...]` -> the chosen `[id, priority]` or nil.
fn select(ruby: &Ruby, candidates: Value) -> Result<Option<(u64, u64)>, Error> {
    let mut parsed = Vec::new();
    for row in entries(ruby, "candidates", candidates, 2)? {
        parsed.push(Candidate {
            id: u64_arg(ruby, "id", row.entry(0)?).map(OwnerId::new)?,
            priority: u64_arg(ruby, "priority", row.entry(1)?)?,
        });
    }
    Ok(select_candidate(&parsed).map(|chosen| (chosen.id.value(), chosen.priority)))
}

fn certify(ruby: &Ruby, votes: Value, members: Value, term: Value) -> Result<RArray, Error> {
    let mut parsed = Vec::new();
    for row in entries(ruby, "votes", votes, 4)? {
        parsed.push(vote_arg(ruby, row)?);
    }
    let members = members_arg(ruby, members)?;
    let term = u64_arg(ruby, "term", term)?;
    Ok(certificate(ruby, &certify_votes(&parsed, &members, term)))
}

pub fn define(module: RModule) -> Result<(), Error> {
    let election = module.define_module("Election")?;
    election.define_singleton_method("_quorum_size", magnus::function!(quorum, 1))?;
    election.define_singleton_method("_select_candidate", magnus::function!(select, 1))?;
    election.define_singleton_method("_certify_votes", magnus::function!(certify, 3))?;
    Ok(())
}
