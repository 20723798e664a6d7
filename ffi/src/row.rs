//! A durable store's one call per request (`LeaseMachines::Store`): the resource's row as the database returned it
//! in, the decision and the row to write back out, by the core's [`LeaseRow`]. The store reads, locks and writes;
//! every rule is here, in one native call.
//!
//! A row crosses as the Array of its columns, `[owner, token, expires_at, last_issued, observed, revision]`
//! (Integers, Floats and nils, as the database driver returns them), or `nil` for a resource without one. A row no
//! history can produce (wrong types, a token above the high-water, more tokens than changes, ...) raises
//! `LeaseMachines::StoreError` naming the resource and the database; an argument of the request raises what the
//! input rules name, before the row is looked at.

use std::time::Duration;

use lease_machines::{
    Checkpoint, ClockPolicy, Decision, Event, EventKind, Fence, FencingToken, Lease, LeaseRow, Limit, OwnerId,
    Rejection, Request, Semaphore, SlotRequest, TokenEpoch, WriteCheck, MAX_LIMIT,
};
use magnus::{prelude::*, Error, ExceptionClass, Integer, IntoValue, RArray, RModule, Ruby, Symbol, Value};

use crate::convert::{
    instant, never_current, on_grid, optional, optional_token_arg, owner_arg, seconds_arg, token_arg, u64_arg,
};
use crate::data::{self, LEASE};
use crate::helpers::shown;
use crate::symbols::{Status, SymbolEnum, WriteVerdict};
use crate::values;

/// The columns of a row, in the order they cross.
const COLUMNS: usize = 6;

/// `LeaseMachines::StoreError` with `message` (the class is the Ruby store's, `lib/lease_machines/store/errors.rb`).
pub fn store_error(ruby: &Ruby, message: String) -> Error {
    let class = ruby
        .class_object()
        .const_get::<_, RModule>("LeaseMachines")
        .and_then(|module| module.const_get::<_, ExceptionClass>("StoreError"));
    match class {
        Ok(class) => Error::new(class, message),
        Err(error) => error,
    }
}

/// Where a corrupt row is, for the message: `"name" in path`.
struct Place {
    path: Value,
    name: Value,
}

impl Place {
    fn corrupt(&self, ruby: &Ruby, table: &str, what: &str) -> Error {
        let path = String::try_convert(self.path).unwrap_or_else(|_| shown(self.path));
        store_error(ruby, format!("corrupt {table} row for {} in {path}: {what}", shown(self.name)))
    }
}

/// The row `value` stands for: [`LeaseRow::EMPTY`] for `nil`.
fn row_arg(ruby: &Ruby, place: &Place, value: Value) -> Result<LeaseRow, Error> {
    if value.is_nil() {
        return Ok(LeaseRow::EMPTY);
    }
    let columns = RArray::from_value(value).filter(|columns| columns.len() == COLUMNS);
    let Some(columns) = columns else {
        return Err(place.corrupt(ruby, "lease", &format!("{} is not its {COLUMNS} columns", shown(value))));
    };
    let column = |index: usize| columns.entry::<Value>(index as isize);
    let corrupt = |error: Error| place.corrupt(ruby, "lease", &error.to_string());
    let (owner, token, expires_at) = (column(0)?, column(1)?, column(2)?);
    let last_issued = optional_token_arg(ruby, "last_issued", column(3)?).map_err(corrupt)?;
    let observed = seconds_arg(ruby, "observed", column(4)?).map_err(corrupt)?;
    let revision = u64_arg(ruby, "revision", column(5)?).map_err(corrupt)?;
    let lease = if token.is_nil() && owner.is_nil() && expires_at.is_nil() {
        None
    } else {
        let owner = owner_arg(ruby, owner).map_err(corrupt)?;
        let token = optional_token_arg(ruby, "token", token).map_err(corrupt)?;
        let expires_at = seconds_arg(ruby, "expires_at", expires_at).map_err(corrupt)?;
        let Some(token) = token else {
            return Err(place.corrupt(ruby, "lease", "a lease without a token"));
        };
        Some(Lease::new(owner, token, expires_at))
    };
    let checkpoint = Checkpoint::from_parts(last_issued, lease, observed).ok_or_else(|| {
        place.corrupt(
            ruby,
            "lease",
            &format!("lease token {} was never issued", lease.map_or(0, |l| l.token().value())),
        )
    })?;
    LeaseRow::from_parts(checkpoint, revision).ok_or_else(|| {
        let issued = last_issued.map_or(0, FencingToken::value);
        place.corrupt(ruby, "lease", &format!("{issued} tokens issued in {revision} changes (each grant is a change)"))
    })
}

/// The token epoch a store decides in: `nil` for a store without epochs (SQLite; Redis before its first), else an
/// Integer from 0 to 2**24-1; a stored value out of range is a corrupt epoch, `StoreError`.
fn epoch_arg(ruby: &Ruby, place: &Place, value: Value) -> Result<Option<TokenEpoch>, Error> {
    if value.is_nil() {
        return Ok(None);
    }
    let epoch = u64_arg(ruby, "epoch", value).ok().and_then(TokenEpoch::new);
    epoch.map(Some).ok_or_else(|| place.corrupt(ruby, "token epoch", &format!("epoch {} is not one", shown(value))))
}

/// What a decision answers when the token it would issue opens `opened` (an epoch's floor): nothing may be written,
/// the store moves to that epoch and decides again: `[:next_epoch, epoch, token]`.
fn next_epoch(ruby: &Ruby, opened: TokenEpoch) -> RArray {
    let floor = opened.floor().map_or(0, FencingToken::value);
    ruby.ary_new_from_values(&[
        ruby.to_symbol("next_epoch").as_value(),
        opened.number().into_value_with(ruby),
        floor.into_value_with(ruby),
    ])
}

/// The token a decision issued, as an Integer, or `nil`.
fn issued_value(ruby: &Ruby, issued: Option<FencingToken>) -> Value {
    issued.map_or(ruby.qnil().as_value(), |token| token.value().into_value_with(ruby))
}

/// The columns of `row`, as the store writes them (times as the Floats the gem hands out).
fn row_columns(ruby: &Ruby, row: LeaseRow) -> RArray {
    let checkpoint = row.checkpoint();
    let lease = checkpoint.lease();
    let columns = ruby.ary_new_capa(COLUMNS);
    let nil = ruby.qnil().as_value();
    let _ = columns.push(lease.map_or(nil, |lease| lease.owner().value().into_value_with(ruby)));
    let _ = columns.push(lease.map_or(nil, |lease| lease.token().value().into_value_with(ruby)));
    let _ = columns.push(lease.map_or(nil, |lease| instant(lease.expires_at()).into_value_with(ruby)));
    let _ = columns.push(checkpoint.last_issued().map_or(nil, |token| token.value().into_value_with(ruby)));
    let _ = columns.push(instant(checkpoint.observed()).into_value_with(ruby));
    let _ = columns.push(row.revision().into_value_with(ruby));
    columns
}

/// A request as the caller asked it, checked but not yet put to a row: a presented token 0 (never issued) is
/// `None` until the row says which token it must not be.
struct Asked {
    kind: Kind,
    owner: OwnerId,
    token: Option<FencingToken>,
    new_owner: OwnerId,
    ttl: Duration,
    /// A revocation of whichever lease is on record (no token named).
    current: bool,
}

/// A revocation's token: `nil` for the lease on record, whichever it is (`(None, true)`), else a token as
/// [`token_arg`] reads it.
fn revoke_token(ruby: &Ruby, value: Value) -> Result<(Option<FencingToken>, bool), Error> {
    if value.is_nil() {
        return Ok((None, true));
    }
    Ok((token_arg(ruby, "token", value)?, false))
}

/// The token a request presents on `row`: its own, or for a revocation of the lease on record that lease's; a
/// token 0 (or no lease on record) stands for a token that is not the row's current one, so that it goes through
/// every check before it is refused.
fn presented(row: &LeaseRow, token: Option<FencingToken>, current: bool) -> FencingToken {
    let on_record = row.checkpoint().lease().map(|lease| lease.token());
    let token = if current { on_record } else { token };
    token.unwrap_or_else(|| never_current(on_record))
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    Acquire,
    Reacquire,
    Renew,
    Release,
    Transfer,
    Revoke,
}

impl Asked {
    /// The request `kind` names with its `args` (an Array): `:acquire`/`:reacquire` `[owner, ttl]`, `:renew`
    /// `[owner, token, ttl]`, `:release` `[owner, token]`, `:transfer` `[owner, token, new_owner, ttl]`, `:revoke`
    /// `[token]`.
    fn arg(ruby: &Ruby, kind: Value, args: Value) -> Result<Self, Error> {
        let name = Symbol::try_convert(kind)?.name()?.into_owned();
        let args = RArray::try_convert(args)?;
        let arg = |index: isize| args.entry::<Value>(index);
        let (kind, ttl_at) = match name.as_str() {
            "acquire" => (Kind::Acquire, 1),
            "reacquire" => (Kind::Reacquire, 1),
            "renew" => (Kind::Renew, 2),
            "release" => (Kind::Release, -1),
            "transfer" => (Kind::Transfer, 3),
            "revoke" => {
                let (token, current) = revoke_token(ruby, arg(0)?)?;
                let owner = OwnerId::new(0);
                return Ok(Self { kind: Kind::Revoke, owner, token, new_owner: owner, ttl: Duration::ZERO, current });
            }
            other => return Err(Error::new(ruby.exception_arg_error(), format!("no store request {other:?}"))),
        };
        let owner = owner_arg(ruby, arg(0)?)?;
        let token = match kind {
            Kind::Acquire | Kind::Reacquire => None,
            Kind::Renew | Kind::Release | Kind::Transfer | Kind::Revoke => token_arg(ruby, "token", arg(1)?)?,
        };
        let new_owner = match kind {
            Kind::Transfer => OwnerId::new(u64_arg(ruby, "new_owner", arg(2)?)?),
            _ => owner,
        };
        let ttl = if ttl_at < 0 { Duration::ZERO } else { seconds_arg(ruby, "ttl", arg(ttl_at)?)? };
        Ok(Self { kind, owner, token, new_owner, ttl, current: false })
    }

    /// The request on `row`: a token 0 stands for a token that is not the row's current one, so that it goes
    /// through every check before it is refused.
    fn on(&self, row: &LeaseRow) -> Request {
        let token = presented(row, self.token, self.current);
        let (owner, ttl) = (self.owner, self.ttl);
        match self.kind {
            Kind::Acquire => Request::Acquire { owner, ttl },
            Kind::Reacquire => Request::Reacquire { owner, ttl },
            Kind::Renew => Request::Renew { owner, token, ttl },
            Kind::Release => Request::Release { owner, token },
            Kind::Transfer => Request::Transfer { owner, token, new_owner: self.new_owner, ttl },
            Kind::Revoke => Request::Revoke { token },
        }
    }

    /// Who asked and with which token, as the refusal's event records them (nil for what the request has not: an
    /// operator's revocation names no owner, an acquire no token; a presented token 0 is recorded as 0).
    fn asker(&self, ruby: &Ruby) -> (Value, Value) {
        let nil = ruby.qnil().as_value();
        let owner = if self.kind == Kind::Revoke { nil } else { self.owner.value().into_value_with(ruby) };
        let token = match self.kind {
            Kind::Acquire | Kind::Reacquire => nil,
            Kind::Revoke if self.current => nil,
            _ => self.token.map_or(0, FencingToken::value).into_value_with(ruby),
        };
        (owner, token)
    }
}

/// The event a request logs, as the columns the store writes:
/// `[kind, at, owner, token, expires_at, revision, reason, replaced_owner, replaced_token, replaced_expires_at]`.
/// An accepted change is the core's [`Event`] (a revocation's release logged as `"revoked"`); a refusal is
/// `"refused"` with its reason and who asked (`asker`), at the instant the request was decided at.
fn event_columns(
    ruby: &Ruby,
    event: Option<Event<()>>,
    at: Duration,
    refusal: Option<(Rejection, (Value, Value))>,
    revoke: bool,
) -> RArray {
    let nil = ruby.qnil().as_value();
    let columns = ruby.ary_new_capa(10);
    let time = |at: Duration| instant(at).into_value_with(ruby);
    match (event, refusal) {
        (Some(event), _) => {
            let kind = if revoke && event.kind == EventKind::Released { "revoked" } else { event.kind.as_str() };
            let replaced = event.replaced;
            for value in [
                ruby.str_new(kind).as_value(),
                time(event.at),
                event.owner.value().into_value_with(ruby),
                event.token.value().into_value_with(ruby),
                time(event.expires_at),
                event.revision.into_value_with(ruby),
                nil,
                replaced.map_or(nil, |lease| lease.owner().value().into_value_with(ruby)),
                replaced.map_or(nil, |lease| lease.token().value().into_value_with(ruby)),
                replaced.map_or(nil, |lease| time(lease.expires_at())),
            ] {
                let _ = columns.push(value);
            }
        }
        (None, refusal) => {
            let (reason, (owner, token)) = match refusal {
                Some((reason, asker)) => (ruby.str_new(reason.as_str()).as_value(), asker),
                None => (nil, (nil, nil)),
            };
            for value in [ruby.str_new("refused").as_value(), time(at), owner, token, nil, nil, reason, nil, nil, nil] {
                let _ = columns.push(value);
            }
        }
    }
    columns
}

/// The refusal of `decision`, if it is one.
fn refusal(decision: Decision) -> Option<Rejection> {
    match decision {
        Decision::Rejected(rejection) => Some(rejection),
        _ => None,
    }
}

/// Moves a granted or renewed lease's expiry up to the next Float (see `convert::on_grid`), in the row to write as
/// well: the `expires_at` Ruby sees and stores is then exactly the engine's deadline, never earlier.
fn on_grid_lease(lease: Lease, write: Option<LeaseRow>) -> (Lease, Option<LeaseRow>) {
    let lease = Lease::new(lease.owner(), lease.token(), on_grid(lease.expires_at()));
    let write = write.map(|row| {
        let checkpoint = row.checkpoint();
        Checkpoint::from_parts(checkpoint.last_issued(), Some(lease), checkpoint.observed())
            .and_then(|checkpoint| LeaseRow::from_parts(checkpoint, row.revision()))
            .unwrap_or(row)
    });
    (lease, write)
}

/// `LeaseMachines._store_decide(path, name, row, kind, args, now, clock_policy, epoch)`: the request decided on the
/// row raised into the token epoch `epoch` (nil: the first; [`LeaseRow::decide_in`]), as `[decision, row_to_write,
/// event, issued]` (a frozen `LeaseMachines::Decision`; the columns to write back, or `nil` when nothing changed; the
/// event's columns, see [`event_columns`]; the token the decision issued, or `nil`), or `[:next_epoch, epoch,
/// token]` when the token it would issue is the floor of `epoch` (see [`next_epoch`]). An accepted transfer answers `:transferred` with the new owner's
/// lease.
#[allow(clippy::too_many_arguments)]
fn store_decide(
    ruby: &Ruby,
    path: Value,
    name: Value,
    row: Value,
    kind: Value,
    args: Value,
    now: Value,
    clock_policy: Value,
    epoch: Value,
) -> Result<RArray, Error> {
    let (place, now, policy) = opened(ruby, path, name, now, clock_policy)?;
    // The request's arguments are checked before the row: an input fault is the caller's, whatever is stored.
    let asked = Asked::arg(ruby, kind, args)?;
    let epoch = epoch_arg(ruby, &place, epoch)?;
    let row = row_arg(ruby, &place, row)?;
    let row = epoch.map_or(row, |epoch| row.in_epoch(epoch));
    let request = asked.on(&row);
    let answer = match epoch {
        None => row.decide(request, now, policy),
        Some(epoch) => match row.decide_in(epoch, request, now, policy) {
            Ok(answer) => answer,
            Err(opened) => return Ok(next_epoch(ruby, opened)),
        },
    };
    let (decision, write) = shown_answer(ruby, answer.decision(), answer.write(), asked.kind == Kind::Transfer)?;
    let refused = refusal(answer.decision()).map(|reason| (reason, asked.asker(ruby)));
    let event = event_columns(ruby, answer.event(()), answer.at(), refused, asked.kind == Kind::Revoke);
    Ok(ruby.ary_new_from_values(&[decision, write, event.as_value(), issued_value(ruby, answer.issued())]))
}

/// The decision of `answer` as the frozen `LeaseMachines::Decision`, and the row to write (expiries on the grid).
fn shown_answer(
    ruby: &Ruby,
    decision: Decision,
    write: Option<LeaseRow>,
    transfer: bool,
) -> Result<(Value, Value), Error> {
    let (decision, write) = match decision {
        Decision::Granted(lease) => {
            let (lease, write) = on_grid_lease(lease, write);
            let status = if transfer { Status::Transferred } else { Status::Granted };
            (granted(ruby, status, lease)?, write)
        }
        Decision::Renewed(lease) => {
            let (lease, write) = on_grid_lease(lease, write);
            (granted(ruby, Status::Renewed, lease)?, write)
        }
        Decision::Released => (
            data::decision::<crate::data::LeaseMembers>(
                ruby,
                Status::Released.symbol(ruby).as_value(),
                None,
                ruby.qnil().as_value(),
            )?,
            write,
        ),
        Decision::Rejected(rejection) => (data::refusal(ruby, rejection)?, write),
    };
    let nil = ruby.qnil().as_value();
    Ok((decision, write.map_or(nil, |row| row_columns(ruby, row).as_value())))
}

/// An Integer from `low` to `high` named `name`: `TypeError` for another class, `ArgumentError` out of range.
fn bounded_arg(ruby: &Ruby, name: &str, value: Value, low: u32, high: u32) -> Result<u32, Error> {
    let out_of_range =
        || Error::new(ruby.exception_arg_error(), format!("{name} must be from {low} to {high}, got {}", shown(value)));
    let number = u64_arg(ruby, name, value).map_err(|error| match Integer::from_value(value) {
        Some(_) => out_of_range(),
        None => error,
    })?;
    u32::try_from(number).ok().filter(|number| (low..=high).contains(number)).ok_or_else(out_of_range)
}

/// A semaphore's limit: an Integer from 1 to [`MAX_LIMIT`].
fn limit_arg(ruby: &Ruby, value: Value) -> Result<Limit, Error> {
    let limit = bounded_arg(ruby, "limit", value, 1, MAX_LIMIT)?;
    Limit::new(limit).ok_or_else(|| Error::new(ruby.exception_arg_error(), format!("no limit {limit}")))
}

/// `LeaseMachines._limit(value)`: `value` as a semaphore's limit (see [`limit_arg`]), for the Ruby layer's checks.
fn limit_check(ruby: &Ruby, value: Value) -> Result<u32, Error> {
    limit_arg(ruby, value).map(Limit::get)
}

/// A slot of a semaphore: an Integer from 0 to [`MAX_LIMIT`] - 1 (also `LeaseMachines._slot`, for the Ruby layer).
fn slot_arg(ruby: &Ruby, value: Value) -> Result<u32, Error> {
    bounded_arg(ruby, "slot", value, 0, MAX_LIMIT - 1)
}

/// `LeaseMachines._store_decide_slots(path, name, kind, args, now, clock_policy, rows, epoch)`: a semaphore's
/// request decided on its slot rows (`rows[i]` slot `i`'s columns, or `nil`), each raised into the token epoch
/// `epoch` (nil: none), as `[decision, slot, row_to_write, event, issued]` (the event's columns, see
/// [`event_columns`]; the token issued, or `nil`), or `[:next_epoch, epoch, token]` as [`store_decide`] answers it. `kind` and `args`: `:acquire` and `:reacquire` `[owner, ttl, limit]`, `:renew`
/// `[slot, owner, token, ttl]`, `:release` `[slot, owner, token]`, `:revoke` `[slot, token]`. A limit outside 1 to
/// 1024 or a slot outside 0 to 1023 raises `ArgumentError`.
#[allow(clippy::too_many_arguments)]
fn store_decide_slots(
    ruby: &Ruby,
    path: Value,
    name: Value,
    kind: Value,
    args: Value,
    now: Value,
    clock_policy: Value,
    rows: Value,
    epoch: Value,
) -> Result<RArray, Error> {
    let (place, now, policy) = opened(ruby, path, name, now, clock_policy)?;
    let kind = Symbol::try_convert(kind)?.name()?.into_owned();
    let args = RArray::try_convert(args)?;
    let arg = |index: isize| args.entry::<Value>(index);
    // The request's arguments are checked before the rows: an input fault is the caller's, whatever is stored.
    let (slot, asked) = match kind.as_str() {
        "acquire" | "reacquire" => {
            let limit = limit_arg(ruby, arg(2)?)?;
            let kind = if kind == "acquire" { Kind::Acquire } else { Kind::Reacquire };
            (None, (kind, owner_arg(ruby, arg(0)?)?, None, seconds_arg(ruby, "ttl", arg(1)?)?, limit, false))
        }
        "renew" | "release" => {
            let slot = slot_arg(ruby, arg(0)?)?;
            let owner = owner_arg(ruby, arg(1)?)?;
            let token = token_arg(ruby, "token", arg(2)?)?;
            let (kind, ttl) = if kind == "renew" {
                (Kind::Renew, seconds_arg(ruby, "ttl", arg(3)?)?)
            } else {
                (Kind::Release, Duration::ZERO)
            };
            (Some(slot), (kind, owner, token, ttl, Limit::ONE, false))
        }
        "revoke" => {
            let slot = slot_arg(ruby, arg(0)?)?;
            let (token, current) = revoke_token(ruby, arg(1)?)?;
            (Some(slot), (Kind::Revoke, OwnerId::new(0), token, Duration::ZERO, Limit::ONE, current))
        }
        other => return Err(Error::new(ruby.exception_arg_error(), format!("no semaphore request {other:?}"))),
    };
    let rows = RArray::try_convert(rows)?;
    if rows.len() > MAX_LIMIT as usize {
        return Err(place.corrupt(ruby, "lease", &format!("{} slot rows, more than any limit makes", rows.len())));
    }
    let epoch = epoch_arg(ruby, &place, epoch)?;
    let rows = rows
        .into_iter()
        .map(|row| row_arg(ruby, &place, row).map(|row| epoch.map_or(row, |epoch| row.in_epoch(epoch))))
        .collect::<Result<Vec<_>, _>>()?;
    let Some(semaphore) = Semaphore::new(&rows) else {
        return Err(place.corrupt(ruby, "lease", "more slot rows than any limit makes"));
    };
    let (kind, owner, token, ttl, limit, current) = asked;
    let request = match (kind, slot) {
        (Kind::Renew | Kind::Release | Kind::Revoke, Some(slot)) => {
            let token = presented(&semaphore.row(slot), token, current);
            match kind {
                Kind::Renew => SlotRequest::Renew { slot, owner, token, ttl },
                Kind::Release => SlotRequest::Release { slot, owner, token },
                _ => SlotRequest::Revoke { slot, token },
            }
        }
        (Kind::Reacquire, _) => SlotRequest::Reacquire { owner, ttl, limit },
        _ => SlotRequest::Acquire { owner, ttl, limit },
    };
    let answer = semaphore.decide(request, now, policy);
    if let Some(opened) = epoch.and(TokenEpoch::opened_by(answer.issued())) {
        return Ok(next_epoch(ruby, opened));
    }
    let (decision, write) = shown_answer(ruby, answer.decision(), answer.write(), false)?;
    let asked = Asked { kind, owner, token, new_owner: owner, ttl, current };
    let refused = refusal(answer.decision()).map(|reason| (reason, asked.asker(ruby)));
    let event = event_columns(ruby, answer.event(()), answer.at(), refused, kind == Kind::Revoke);
    let slot = answer.slot().into_value_with(ruby);
    Ok(ruby.ary_new_from_values(&[decision, slot, write, event.as_value(), issued_value(ruby, answer.issued())]))
}

/// A request's place, instant and clock policy, checked.
fn opened(
    ruby: &Ruby,
    path: Value,
    name: Value,
    now: Value,
    policy: Value,
) -> Result<(Place, Duration, ClockPolicy), Error> {
    Ok((Place { path, name }, seconds_arg(ruby, "now", now)?, ClockPolicy::arg(ruby, policy)?))
}

fn granted(ruby: &Ruby, status: Status, lease: Lease) -> Result<Value, Error> {
    let lease = Some((&LEASE, values::lease_members(ruby, lease)));
    data::decision(ruby, status.symbol(ruby).as_value(), lease, ruby.qnil().as_value())
}

/// `LeaseMachines._store_check_write(path, name, row, highest, token, now, epoch)`: the core's check of a write
/// carrying `token` at `now` against the resource's row, raised into the token epoch `epoch` (nil: none), and
/// its fence's stored mark `highest` (nil without one), as a Symbol:
/// `:admitted`, or a refusal's reason (`:stale_token`, `:not_held`, `:expired`). Raises `ArgumentError` for a token
/// the row never issued, `StoreError` for a row or mark no history can produce. Token 0, never issued, is older
/// than every token: `:stale_token`.
#[allow(clippy::too_many_arguments)]
fn store_check_write(
    ruby: &Ruby,
    path: Value,
    name: Value,
    row: Value,
    highest: Value,
    token: Value,
    now: Value,
    epoch: Value,
) -> Result<Value, Error> {
    let place = Place { path, name };
    let presented = token_arg(ruby, "token", token)?;
    let now = seconds_arg(ruby, "now", now)?;
    let row = row_arg(ruby, &place, row)?;
    let row = epoch_arg(ruby, &place, epoch)?.map_or(row, |epoch| row.in_epoch(epoch));
    let mark = optional_token_arg(ruby, "highest", highest)
        .map_err(|_| place.corrupt(ruby, "fence", &format!("highest {} is not a token", shown(highest))))?;
    let fence = Fence::new(mark);
    let check = match presented {
        Some(token) => row.check_write(fence, token, now),
        // Token 0 is checked as token 1 is for what comes before the token (the fence's mark), then never admitted.
        None => match row.check_write(fence, FencingToken::FIRST, now) {
            WriteCheck::InconsistentMark => WriteCheck::InconsistentMark,
            _ => WriteCheck::Refused(Rejection::StaleToken),
        },
    };
    match check {
        WriteCheck::Admitted(_) => Ok(WriteVerdict::Admitted.symbol(ruby).as_value()),
        WriteCheck::Refused(reason) => Ok(reason.symbol(ruby).as_value()),
        WriteCheck::NeverIssued => {
            let issued = row.checkpoint().last_issued().map_or_else(
                || "no lease was ever granted on it".to_owned(),
                |last| format!("the last one was {}", last.value()),
            );
            let message = format!("{}: token {} was never issued ({issued})", resource_text(name), shown(token));
            Err(Error::new(ruby.exception_arg_error(), message))
        }
        WriteCheck::InconsistentMark => {
            Err(place.corrupt(ruby, "fence", &format!("highest {} was never issued", shown(highest))))
        }
    }
}

/// `LeaseMachines._token_epoch_after(recorded, generation)`: the token epoch a store takes when it finds its database
/// in a new history ([`TokenEpoch::after`]): one above `recorded` (an Integer, or `nil` for none) and no lower than
/// the first of `generation` (an Integer: PostgreSQL's timeline less one). Raises `StoreError` when no epoch is left,
/// `TypeError` or `RangeError` for an argument that is not an Integer in 0..2**64-1.
fn token_epoch_after(ruby: &Ruby, recorded: Value, generation: Value) -> Result<u64, Error> {
    let generation = u64_arg(ruby, "generation", generation)?;
    let recorded = optional(recorded, |value| u64_arg(ruby, "recorded", value))?;
    let epoch = match recorded {
        None => TokenEpoch::after(None, generation),
        Some(number) => TokenEpoch::new(number).and_then(|epoch| TokenEpoch::after(Some(epoch), generation)),
    };
    epoch.map(TokenEpoch::number).ok_or_else(|| {
        let after = recorded.map_or_else(|| "none".to_owned(), |number| number.to_string());
        store_error(ruby, format!("no token epoch is left after epoch {after} in generation {generation}"))
    })
}

/// The resource name as text, for a message.
fn resource_text(name: Value) -> String {
    String::try_convert(name).unwrap_or_else(|_| shown(name))
}

/// `LeaseMachines._store_checkpoint(path, name, row)`: `[checkpoint, revision]` of the row (an empty checkpoint and
/// 0 for `nil`).
fn store_checkpoint(ruby: &Ruby, path: Value, name: Value, row: Value) -> Result<RArray, Error> {
    let row = row_arg(ruby, &Place { path, name }, row)?;
    let checkpoint = values::checkpoint(ruby, &row.checkpoint())?;
    Ok(ruby.ary_new_from_values(&[checkpoint, row.revision().into_value_with(ruby)]))
}

pub fn define(module: RModule) -> Result<(), Error> {
    let singleton = module.singleton_class()?;
    singleton.define_private_method("_store_decide", magnus::function!(store_decide, 8))?;
    singleton.define_private_method("_store_decide_slots", magnus::function!(store_decide_slots, 8))?;
    singleton.define_private_method("_limit", magnus::function!(limit_check, 1))?;
    singleton.define_private_method("_slot", magnus::function!(slot_arg, 1))?;
    // The greatest limit a semaphore takes (Store#acquire's limit:), the core's.
    module.const_set("MAX_LIMIT", MAX_LIMIT)?;
    // How many bits of a token count within its token epoch (Store::Redis's), the core's.
    module.const_set("TOKEN_EPOCH_BITS", lease_machines::EPOCH_BITS)?;
    singleton.define_private_method("_store_check_write", magnus::function!(store_check_write, 7))?;
    singleton.define_private_method("_store_checkpoint", magnus::function!(store_checkpoint, 3))?;
    singleton.define_private_method("_token_epoch_after", magnus::function!(token_epoch_after, 2))?;
    Ok(())
}
