//! `Lease`, `Checkpoint`, `Cadence`: the `Data` classes of `lib/lease_machines/{lease,checkpoint,cadence}.rb`,
//! built from the core's values, read back into them, and checked when Ruby builds one.
//!
//! Their `#initialize` (called by `new` and `with`) is defined here: it converts and checks every member as the
//! core requires, raising the exception each input rule names (see `convert`), and stores the members as the
//! extension itself would build them (times as Floats). Values the extension builds skip it: they are valid by
//! construction.

use lease_machines::json::Json;
use lease_machines::{Cadence, Checkpoint, Fence, FencingToken, Lease, Rejection, WriteCheck};
use magnus::{prelude::*, Error, IntoValue, Ruby, Value};

use crate::convert::{instant, issued_token_arg, optional_token_arg, owner_arg, seconds, seconds_arg, token_arg};
use crate::data::{optional_record_arg, record_arg};
use crate::data::{CadenceMembers, CheckpointMembers, LeaseMembers, CADENCE, CHECKPOINT, LEASE};
use crate::json;
use crate::symbols::{SymbolEnum, WriteVerdict};

/// A frozen `LeaseMachines::Lease`.
pub fn lease(ruby: &Ruby, lease: Lease) -> Result<Value, Error> {
    LEASE.build(ruby, lease_members(ruby, lease))
}

/// The members of a `Lease` (for a record that holds one).
pub fn lease_members(ruby: &Ruby, lease: Lease) -> LeaseMembers {
    LeaseMembers {
        owner: lease.owner().value().into_value_with(ruby),
        token: lease.token().value().into_value_with(ruby),
        expires_at: instant(lease.expires_at()).into_value_with(ruby),
    }
}

/// The lease a `Lease`'s members describe.
fn lease_of(ruby: &Ruby, members: LeaseMembers) -> Result<Lease, Error> {
    let owner = owner_arg(ruby, members.owner)?;
    let token = issued_token_arg(ruby, "token", members.token)?;
    let expires_at = seconds_arg(ruby, "expires_at", members.expires_at)?;
    Ok(Lease::new(owner, token, expires_at))
}

/// `nil` or a `Lease` (`name` in the message).
pub fn optional_lease_arg(ruby: &Ruby, name: &str, value: Value) -> Result<Option<Lease>, Error> {
    optional_record_arg(ruby, name, &LEASE, value)?.map(|members| lease_of(ruby, members)).transpose()
}

fn lease_initialize(ruby: &Ruby, rb_self: Value, owner: Value, token: Value, expires_at: Value) -> Result<(), Error> {
    let lease = lease_of(ruby, LeaseMembers { owner, token, expires_at })?;
    LEASE.initialize(ruby, rb_self, lease_members(ruby, lease))
}

fn lease_self(ruby: &Ruby, rb_self: Value) -> Result<Lease, Error> {
    lease_of(ruby, record_arg(ruby, "self", &LEASE, rb_self)?)
}

fn is_live(ruby: &Ruby, rb_self: Value, now: Value) -> Result<bool, Error> {
    let now = seconds_arg(ruby, "now", now)?;
    Ok(lease_self(ruby, rb_self)?.is_live(now))
}

fn remaining(ruby: &Ruby, rb_self: Value, now: Value) -> Result<f64, Error> {
    let now = seconds_arg(ruby, "now", now)?;
    Ok(seconds(lease_self(ruby, rb_self)?.remaining(now)))
}

/// A frozen `LeaseMachines::Checkpoint`.
pub fn checkpoint(ruby: &Ruby, checkpoint: &Checkpoint) -> Result<Value, Error> {
    CHECKPOINT.build(ruby, checkpoint_members(ruby, checkpoint)?)
}

fn checkpoint_members(ruby: &Ruby, checkpoint: &Checkpoint) -> Result<CheckpointMembers, Error> {
    let lease = match checkpoint.lease() {
        Some(held) => lease(ruby, held)?,
        None => ruby.qnil().as_value(),
    };
    Ok(CheckpointMembers {
        last_issued: checkpoint.last_issued().map(|token| token.value()).into_value_with(ruby),
        lease,
        observed: instant(checkpoint.observed()).into_value_with(ruby),
    })
}

/// The checkpoint a `Checkpoint`'s members describe: an `ArgumentError` for parts no history can produce.
fn checkpoint_of(ruby: &Ruby, members: CheckpointMembers) -> Result<Checkpoint, Error> {
    let last_issued = optional_token_arg(ruby, "last_issued", members.last_issued)?;
    let lease = optional_lease_arg(ruby, "lease", members.lease)?;
    let observed = seconds_arg(ruby, "observed", members.observed)?;
    Checkpoint::from_parts(last_issued, lease, observed).ok_or_else(|| {
        let issued = last_issued.map_or_else(|| "nil".to_owned(), |token| token.value().to_string());
        let token = lease.map_or(0, |lease| lease.token().value());
        Error::new(
            ruby.exception_arg_error(),
            format!("impossible checkpoint: lease token {token} was never issued (last_issued is {issued})"),
        )
    })
}

/// A `Checkpoint` argument (`Authority.restore`).
pub fn checkpoint_arg(ruby: &Ruby, value: Value) -> Result<Checkpoint, Error> {
    checkpoint_of(ruby, record_arg(ruby, "checkpoint", &CHECKPOINT, value)?)
}

fn checkpoint_initialize(
    ruby: &Ruby,
    rb_self: Value,
    last_issued: Value,
    lease: Value,
    observed: Value,
) -> Result<(), Error> {
    let checkpoint = checkpoint_of(ruby, CheckpointMembers { last_issued, lease, observed })?;
    CHECKPOINT.initialize(ruby, rb_self, checkpoint_members(ruby, &checkpoint)?)
}

fn checkpoint_to_json(ruby: &Ruby, rb_self: Value) -> Result<String, Error> {
    Ok(checkpoint_arg(ruby, rb_self)?.to_json())
}

fn checkpoint_issued(ruby: &Ruby, rb_self: Value, token: Value) -> Result<bool, Error> {
    let checkpoint = checkpoint_arg(ruby, rb_self)?;
    Ok(token_arg(ruby, "token", token)?.is_some_and(|token| checkpoint.issued(token)))
}

/// `Checkpoint#_check_write(highest, token, now)`: the core's [`Checkpoint::check_write`] with the fence's stored
/// mark `highest` (nil or an issued token), as a Symbol: `:admitted`, a refusal's reason (`:stale_token`,
/// `:not_held`, `:expired`), `:never_issued` or `:inconsistent_mark`. Token 0, never issued, is older than any
/// token: `:stale_token`.
fn checkpoint_check_write(
    ruby: &Ruby,
    rb_self: Value,
    highest: Value,
    token: Value,
    now: Value,
) -> Result<Value, Error> {
    let checkpoint = checkpoint_arg(ruby, rb_self)?;
    let fence = Fence::new(optional_token_arg(ruby, "highest", highest)?);
    let token = token_arg(ruby, "token", token)?;
    let now = seconds_arg(ruby, "now", now)?;
    let check = match token {
        Some(token) => checkpoint.check_write(fence, token, now),
        // Token 0 is checked as token 1 is, for what the core checks before the token (the fence's mark), and is
        // then never admitted: it is older than every token.
        None => match checkpoint.check_write(fence, FencingToken::FIRST, now) {
            WriteCheck::InconsistentMark => WriteCheck::InconsistentMark,
            _ => WriteCheck::Refused(Rejection::StaleToken),
        },
    };
    Ok(match check {
        WriteCheck::Admitted(_) => WriteVerdict::Admitted.symbol(ruby).as_value(),
        WriteCheck::Refused(reason) => reason.symbol(ruby).as_value(),
        WriteCheck::NeverIssued => WriteVerdict::NeverIssued.symbol(ruby).as_value(),
        WriteCheck::InconsistentMark => WriteVerdict::InconsistentMark.symbol(ruby).as_value(),
    })
}

fn checkpoint_from_json(ruby: &Ruby, text: Value) -> Result<Value, Error> {
    checkpoint(ruby, &json::read::<Checkpoint>(ruby, text)?)
}

/// A frozen `LeaseMachines::Cadence`.
pub fn cadence(ruby: &Ruby, cadence: Cadence) -> Result<Value, Error> {
    CADENCE.build(ruby, cadence_members(ruby, cadence))
}

fn cadence_members(ruby: &Ruby, cadence: Cadence) -> CadenceMembers {
    CadenceMembers {
        ttl: seconds(cadence.ttl()).into_value_with(ruby),
        renew_every: seconds(cadence.renew_every()).into_value_with(ruby),
        warn_before: seconds(cadence.warn_before()).into_value_with(ruby),
    }
}

/// The cadence a `Cadence`'s members describe: an `ArgumentError` unless 0 < renew_every < ttl and
/// warn_before < ttl.
fn cadence_of(ruby: &Ruby, members: CadenceMembers) -> Result<Cadence, Error> {
    let ttl = seconds_arg(ruby, "ttl", members.ttl)?;
    let renew_every = seconds_arg(ruby, "renew_every", members.renew_every)?;
    let warn_before = seconds_arg(ruby, "warn_before", members.warn_before)?;
    Cadence::new(ttl, renew_every, warn_before).ok_or_else(|| {
        Error::new(
            ruby.exception_arg_error(),
            format!(
                "a cadence needs 0 < renew_every < ttl and warn_before < ttl, got ttl={:?} renew_every={:?} \
                 warn_before={:?}",
                seconds(ttl),
                seconds(renew_every),
                seconds(warn_before)
            ),
        )
    })
}

/// A `Cadence` argument (`Holder.new`).
pub fn cadence_arg(ruby: &Ruby, value: Value) -> Result<Cadence, Error> {
    cadence_of(ruby, record_arg(ruby, "cadence", &CADENCE, value)?)
}

fn cadence_initialize(
    ruby: &Ruby,
    rb_self: Value,
    ttl: Value,
    renew_every: Value,
    warn_before: Value,
) -> Result<(), Error> {
    let cadence = cadence_of(ruby, CadenceMembers { ttl, renew_every, warn_before })?;
    CADENCE.initialize(ruby, rb_self, cadence_members(ruby, cadence))
}

pub fn define(ruby: &Ruby) -> Result<(), Error> {
    let lease = LEASE.class(ruby)?;
    lease.define_private_method("_initialize", magnus::method!(lease_initialize, 3))?;
    lease.define_private_method("_live", magnus::method!(is_live, 1))?;
    lease.define_private_method("_remaining", magnus::method!(remaining, 1))?;

    let checkpoint = CHECKPOINT.class(ruby)?;
    checkpoint.define_private_method("_initialize", magnus::method!(checkpoint_initialize, 3))?;
    checkpoint.define_private_method("_to_json", magnus::method!(checkpoint_to_json, 0))?;
    checkpoint.define_private_method("_issued", magnus::method!(checkpoint_issued, 1))?;
    checkpoint.define_private_method("_check_write", magnus::method!(checkpoint_check_write, 3))?;
    checkpoint.singleton_class()?.define_private_method("_from_json", magnus::function!(checkpoint_from_json, 1))?;

    let cadence = CADENCE.class(ruby)?;
    cadence.define_private_method("_initialize", magnus::method!(cadence_initialize, 3))?;
    Ok(())
}
