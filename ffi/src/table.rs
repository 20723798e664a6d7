//! `LeaseMachines::Table`: leases on many named resources, as a mutable Ruby object.
//!
//! Every argument is converted and checked before the table is touched, so a call that raises changes nothing.
//! Decisions come back as frozen `LeaseMachines::Decision`s, their leases `TableLease`s (see `records`).

use std::cell::RefCell;
use std::sync::Arc;

use lease_machines::json::Json;
use lease_machines::{
    ClockPolicy, Command, FencingToken, LeaseTable, OwnerId, QuorumCertificate, TableCheckpoint, TableDecision,
    TimedCommand,
};
use magnus::{prelude::*, typed_data::Obj, Error, IntoValue, RArray, RHash, RModule, RString, Ruby, Value};

use crate::convert::{
    instant, never_current, on_grid, optional, owner_arg, resource_arg, seconds_arg, token_arg, u64_arg, usize_arg,
};
use crate::data::{self, BatchMembers, ReapingMembers, BATCH, DECISION, REAPING, TABLE_LEASE};
use crate::helpers::{borrowed, Borrowed};
use crate::json;
use crate::records;
use crate::symbols::{CommandName, Status, SymbolEnum};

/// A resource name as the table keeps it: shared, so that its events and leases hold the table's one copy (a
/// `String` per event made a 200 KB name renewed 4096 times cost 800 MB).
type Key = Arc<str>;

/// A resource name argument (see `convert::resource_arg`), as the table's key type.
fn key_arg(ruby: &Ruby, value: Value) -> Result<Key, Error> {
    resource_arg(ruby, value).map(Key::from)
}

#[magnus::wrap(class = "LeaseMachines::Table", free_immediately, size)]
pub struct RbTable(RefCell<LeaseTable<Key>>);

borrowed!(RbTable, LeaseTable<Key>, "LeaseMachines::Table");

/// A table as the gem makes it: its computed deadlines on the Float grid (see `convert`), so every `expires_at`
/// Ruby sees is exactly the instant the table enforces.
fn configured(table: LeaseTable<Key>, clock_policy: Value, ruby: &Ruby) -> Result<LeaseTable<Key>, Error> {
    let policy = ClockPolicy::arg(ruby, clock_policy)?;
    Ok(table.with_clock_policy(policy).with_deadline_rounding(on_grid))
}

/// A token as presented, with 0 (never issued) standing for a token that is never the resource's current one.
fn presented(table: &LeaseTable<Key>, resource: &Key, token: Option<FencingToken>) -> FencingToken {
    token.unwrap_or_else(|| never_current(table.lease(resource).map(|lease| lease.token())))
}

/// The frozen `LeaseMachines::Decision` for `decision`, its lease a frozen `TableLease`.
fn answer(ruby: &Ruby, decision: &TableDecision<Key>) -> Result<Value, Error> {
    let (status, lease) = match decision {
        TableDecision::Granted(lease) => (Status::Granted, Some(lease)),
        TableDecision::Renewed(lease) => (Status::Renewed, Some(lease)),
        TableDecision::Transferred(lease) => (Status::Transferred, Some(lease)),
        TableDecision::Released => (Status::Released, None),
        TableDecision::Reaped => (Status::Reaped, None),
        TableDecision::Rejected(rejection) => return data::refusal(ruby, *rejection),
    };
    let lease = lease.map(|lease| (&TABLE_LEASE, records::table_lease_members(ruby, lease)));
    data::decision(ruby, status.symbol(ruby).as_value(), lease, ruby.qnil().as_value())
}

impl RbTable {
    fn new(ruby: &Ruby, clock_policy: Value, event_capacity: Value) -> Result<Self, Error> {
        let capacity = usize_arg(ruby, "event_capacity", event_capacity)?;
        Ok(Self(RefCell::new(configured(LeaseTable::with_event_capacity(capacity), clock_policy, ruby)?)))
    }

    fn from_json(ruby: &Ruby, text: Value, clock_policy: Value, event_capacity: Value) -> Result<Self, Error> {
        let capacity = usize_arg(ruby, "event_capacity", event_capacity)?;
        let checkpoint: TableCheckpoint<Key> = json::read(ruby, text)?;
        let table = LeaseTable::with_event_capacity(capacity).restored(checkpoint);
        Ok(Self(RefCell::new(configured(table, clock_policy, ruby)?)))
    }

    /// Runs one command on the table, with every argument already converted.
    fn decide(
        ruby: &Ruby,
        rb_self: Obj<Self>,
        decide: impl FnOnce(&mut LeaseTable<Key>) -> TableDecision<Key>,
    ) -> Result<Value, Error> {
        rb_self.check_frozen()?;
        // The answer's classes are looked up (and checked) before the table changes, so that a broken Ruby layer
        // raises with the table untouched.
        DECISION.class(ruby)?;
        TABLE_LEASE.class(ruby)?;
        let decision = {
            let mut table = rb_self.borrowed_mut(ruby)?;
            decide(&mut table)
        };
        answer(ruby, &decision)
    }

    /// Runs the table command `name` on its arguments, parsed by [`parse`] as a batch entry is.
    fn run(ruby: &Ruby, rb_self: Obj<Self>, name: CommandName, args: &Arguments) -> Result<Value, Error> {
        let (timed, zero_token) = parse(ruby, name, args)?;
        Self::decide(ruby, rb_self, |table| apply(table, timed, zero_token))
    }

    fn acquire(
        ruby: &Ruby,
        rb_self: Obj<Self>,
        resource: Value,
        owner: Value,
        now: Value,
        ttl: Value,
        expected_revision: Value,
    ) -> Result<Value, Error> {
        let args = Arguments { resource, owner, now, ttl, expected_revision, ..Arguments::none(ruby) };
        Self::run(ruby, rb_self, CommandName::Acquire, &args)
    }

    fn reacquire(
        ruby: &Ruby,
        rb_self: Obj<Self>,
        resource: Value,
        owner: Value,
        now: Value,
        ttl: Value,
    ) -> Result<Value, Error> {
        let args = Arguments { resource, owner, now, ttl, ..Arguments::none(ruby) };
        Self::run(ruby, rb_self, CommandName::Reacquire, &args)
    }

    fn renew(
        ruby: &Ruby,
        rb_self: Obj<Self>,
        resource: Value,
        owner: Value,
        token: Value,
        now: Value,
        ttl: Value,
    ) -> Result<Value, Error> {
        let args = Arguments { resource, owner, token, now, ttl, ..Arguments::none(ruby) };
        Self::run(ruby, rb_self, CommandName::Renew, &args)
    }

    fn release(
        ruby: &Ruby,
        rb_self: Obj<Self>,
        resource: Value,
        owner: Value,
        token: Value,
        now: Value,
    ) -> Result<Value, Error> {
        let args = Arguments { resource, owner, token, now, ..Arguments::none(ruby) };
        Self::run(ruby, rb_self, CommandName::Release, &args)
    }

    #[allow(clippy::too_many_arguments)] // one per keyword of `Table#transfer`
    fn transfer(
        ruby: &Ruby,
        rb_self: Obj<Self>,
        resource: Value,
        owner: Value,
        token: Value,
        new_owner: Value,
        now: Value,
        ttl: Value,
    ) -> Result<Value, Error> {
        let args = Arguments { resource, owner, token, new_owner, now, ttl, ..Arguments::none(ruby) };
        Self::run(ruby, rb_self, CommandName::Transfer, &args)
    }

    fn reap(ruby: &Ruby, rb_self: Obj<Self>, resource: Value, now: Value) -> Result<Value, Error> {
        Self::run(ruby, rb_self, CommandName::Reap, &Arguments { resource, now, ..Arguments::none(ruby) })
    }

    fn acquire_leadership(
        ruby: &Ruby,
        rb_self: Obj<Self>,
        resource: Value,
        certificate: Value,
        owner: Value,
        now: Value,
        ttl: Value,
    ) -> Result<Value, Error> {
        let resource = key_arg(ruby, resource)?;
        let certificate: QuorumCertificate<OwnerId> = crate::election::certificate_arg(ruby, certificate)?;
        let owner = owner_arg(ruby, owner)?;
        let (now, ttl) = (seconds_arg(ruby, "now", now)?, seconds_arg(ruby, "ttl", ttl)?);
        Self::decide(ruby, rb_self, |table| table.acquire_leadership(&resource, &certificate, owner, now, ttl))
    }

    /// A frozen `LeaseMachines::Reaping`: the leases reaped, or none and `:clock_regressed`.
    fn reap_expired(ruby: &Ruby, rb_self: Obj<Self>, now: Value) -> Result<Value, Error> {
        let now = seconds_arg(ruby, "now", now)?;
        rb_self.check_frozen()?;
        REAPING.class(ruby)?;
        TABLE_LEASE.class(ruby)?;
        let reaped = rb_self.borrowed_mut(ruby)?.reap_expired(now);
        let leases = ruby.ary_new();
        let reason = match reaped {
            Ok(reaped) => {
                for lease in &reaped {
                    leases.push(records::table_lease(ruby, lease)?)?;
                }
                ruby.qnil().as_value()
            }
            Err(reason) => reason.symbol(ruby).as_value(),
        };
        leases.freeze();
        REAPING.build(ruby, ReapingMembers { leases: leases.as_value(), reason })
    }

    /// Converts every command first (a bad one raises before any is applied), then applies them in order; a
    /// frozen `LeaseMachines::Batch`.
    fn apply_batch(ruby: &Ruby, rb_self: Obj<Self>, commands: RArray) -> Result<Value, Error> {
        let mut timed = Vec::with_capacity(commands.len());
        for index in 0..commands.len() {
            let entry: RHash = commands.entry(index as isize)?;
            let field = |key: &str| entry.get(ruby.to_symbol(key)).unwrap_or_else(|| ruby.qnil().as_value());
            let args = Arguments {
                resource: field("resource"),
                owner: field("owner"),
                token: field("token"),
                new_owner: field("new_owner"),
                now: field("now"),
                ttl: field("ttl"),
                expected_revision: field("expected_revision"),
            };
            timed.push(parse(ruby, CommandName::arg(ruby, field("command"))?, &args)?);
        }
        rb_self.check_frozen()?;
        DECISION.class(ruby)?;
        TABLE_LEASE.class(ruby)?;
        BATCH.class(ruby)?;
        let result: Vec<TableDecision<Key>> = {
            let mut table = rb_self.borrowed_mut(ruby)?;
            timed.into_iter().map(|(entry, zero_token)| apply(&mut table, entry, zero_token)).collect()
        };
        let accepted = result.iter().filter(|decision| decision.is_accepted()).count();
        let decisions = ruby.ary_new_capa(result.len());
        for decision in &result {
            decisions.push(answer(ruby, decision)?)?;
        }
        decisions.freeze();
        BATCH.build(
            ruby,
            BatchMembers {
                decisions: decisions.as_value(),
                accepted: accepted.into_value_with(ruby),
                rejected: result.len().saturating_sub(accepted).into_value_with(ruby),
            },
        )
    }

    fn lease(ruby: &Ruby, rb_self: &Self, resource: Value) -> Result<Option<Value>, Error> {
        let resource = key_arg(ruby, resource)?;
        let lease = rb_self.borrowed(ruby)?.lease(&resource);
        lease.map(|lease| records::table_lease(ruby, &lease)).transpose()
    }

    fn revision(ruby: &Ruby, rb_self: &Self, resource: Value) -> Result<u64, Error> {
        let resource = key_arg(ruby, resource)?;
        Ok(rb_self.borrowed(ruby)?.revision(&resource))
    }

    fn last_issued(ruby: &Ruby, rb_self: &Self, resource: Value) -> Result<Option<u64>, Error> {
        let resource = key_arg(ruby, resource)?;
        Ok(rb_self.borrowed(ruby)?.last_issued(&resource).map(FencingToken::value))
    }

    fn term(ruby: &Ruby, rb_self: &Self, resource: Value) -> Result<Option<u64>, Error> {
        let resource = key_arg(ruby, resource)?;
        Ok(rb_self.borrowed(ruby)?.term(&resource))
    }

    fn size(ruby: &Ruby, rb_self: &Self) -> Result<usize, Error> {
        Ok(rb_self.borrowed(ruby)?.len())
    }

    fn observed(ruby: &Ruby, rb_self: &Self) -> Result<f64, Error> {
        Ok(instant(rb_self.borrowed(ruby)?.observed()))
    }

    fn clock_policy(ruby: &Ruby, rb_self: &Self) -> Result<Value, Error> {
        Ok(rb_self.borrowed(ruby)?.clock_policy().symbol(ruby).as_value())
    }

    fn events(ruby: &Ruby, rb_self: &Self) -> Result<Value, Error> {
        records::events(ruby, rb_self.borrowed(ruby)?.events())
    }

    fn dropped_events(ruby: &Ruby, rb_self: &Self) -> Result<u64, Error> {
        Ok(rb_self.borrowed(ruby)?.sink().dropped())
    }

    fn event_capacity(ruby: &Ruby, rb_self: &Self) -> Result<usize, Error> {
        Ok(rb_self.borrowed(ruby)?.sink().capacity())
    }

    fn metrics(ruby: &Ruby, rb_self: &Self, now: Value) -> Result<Value, Error> {
        let now = seconds_arg(ruby, "now", now)?;
        let metrics = rb_self.borrowed(ruby)?.metrics(now);
        records::metrics(ruby, &metrics)
    }

    fn to_json(ruby: &Ruby, rb_self: &Self) -> Result<RString, Error> {
        Ok(ruby.str_new(&rb_self.borrowed(ruby)?.checkpoint().to_json()))
    }

    fn inspect(ruby: &Ruby, rb_self: &Self) -> Result<String, Error> {
        let table = rb_self.borrowed(ruby)?;
        Ok(format!(
            "#<LeaseMachines::Table resources={} observed={} clock_policy={}>",
            table.len(),
            ruby.float_from_f64(instant(table.observed())).inspect(),
            table.clock_policy().symbol(ruby).inspect()
        ))
    }
}

/// The arguments of one table command, as Ruby passed them: `nil` for a keyword the command does not take.
struct Arguments {
    resource: Value,
    owner: Value,
    token: Value,
    new_owner: Value,
    now: Value,
    ttl: Value,
    expected_revision: Value,
}

impl Arguments {
    /// Every argument `nil`.
    fn none(ruby: &Ruby) -> Self {
        let nil = ruby.qnil().as_value();
        Self { resource: nil, owner: nil, token: nil, new_owner: nil, now: nil, ttl: nil, expected_revision: nil }
    }
}

/// The one parser of a table command, for the command methods (`Table#renew`, ...) and for each entry of
/// `Table#apply_batch` alike: the arguments the command `name` takes, converted in the order the method lists them
/// (resource, owner, token, new owner, now, TTL, expected revision; the Ruby layer checked that a batch entry has
/// exactly these keywords), and whether it presented token 0, which is resolved against the table when it runs.
fn parse(ruby: &Ruby, name: CommandName, args: &Arguments) -> Result<(TimedCommand<Key>, bool), Error> {
    let resource = key_arg(ruby, args.resource)?;
    let owner = || owner_arg(ruby, args.owner);
    let token =
        || token_arg(ruby, "token", args.token).map(|token| (token.unwrap_or(FencingToken::FIRST), token.is_none()));
    let now = || seconds_arg(ruby, "now", args.now);
    let ttl = || seconds_arg(ruby, "ttl", args.ttl);
    let (command, at, zero_token) = match name {
        CommandName::Acquire => {
            let (owner, at, ttl) = (owner()?, now()?, ttl()?);
            let expected_revision =
                optional(args.expected_revision, |expected| u64_arg(ruby, "expected_revision", expected))?;
            (Command::Acquire { resource, owner, ttl, expected_revision }, at, false)
        }
        CommandName::Reacquire => {
            let (owner, at, ttl) = (owner()?, now()?, ttl()?);
            (Command::Reacquire { resource, owner, ttl }, at, false)
        }
        CommandName::Renew => {
            let (owner, (token, zero), at, ttl) = (owner()?, token()?, now()?, ttl()?);
            (Command::Renew { resource, owner, token, ttl }, at, zero)
        }
        CommandName::Release => {
            let (owner, (token, zero), at) = (owner()?, token()?, now()?);
            (Command::Release { resource, owner, token }, at, zero)
        }
        CommandName::Transfer => {
            let (owner, (token, zero)) = (owner()?, token()?);
            let new_owner = u64_arg(ruby, "new_owner", args.new_owner).map(OwnerId::new)?;
            let (at, ttl) = (now()?, ttl()?);
            (Command::Transfer { resource, owner, token, new_owner, ttl }, at, zero)
        }
        CommandName::Reap => (Command::Reap { resource }, now()?, false),
    };
    Ok((TimedCommand { command, at }, zero_token))
}

/// Applies a parsed command to `table`: a presented token 0 first becomes one that is never the resource's current
/// token (see [`presented`]).
fn apply(table: &mut LeaseTable<Key>, mut entry: TimedCommand<Key>, zero_token: bool) -> TableDecision<Key> {
    if zero_token {
        let resource = entry.command.resource().clone();
        let never = presented(table, &resource, None);
        if let Command::Renew { token, .. } | Command::Release { token, .. } | Command::Transfer { token, .. } =
            &mut entry.command
        {
            *token = never;
        }
    }
    table.apply(&entry.command, entry.at)
}

pub fn define(ruby: &Ruby, module: RModule) -> Result<(), Error> {
    let (class, singleton) = crate::helpers::wrapped_class(ruby, module, "Table")?;
    crate::helpers::constructor!(singleton, "_new", RbTable::new, 2, clock_policy, event_capacity)?;
    crate::helpers::constructor!(singleton, "_from_json", RbTable::from_json, 3, json, clock_policy, event_capacity)?;
    class.define_private_method("_acquire", magnus::method!(RbTable::acquire, 5))?;
    class.define_private_method("_reacquire", magnus::method!(RbTable::reacquire, 4))?;
    class.define_private_method("_renew", magnus::method!(RbTable::renew, 5))?;
    class.define_private_method("_release", magnus::method!(RbTable::release, 4))?;
    class.define_private_method("_transfer", magnus::method!(RbTable::transfer, 6))?;
    class.define_private_method("_reap", magnus::method!(RbTable::reap, 2))?;
    class.define_private_method("_acquire_leadership", magnus::method!(RbTable::acquire_leadership, 5))?;
    class.define_private_method("_reap_expired", magnus::method!(RbTable::reap_expired, 1))?;
    class.define_private_method("_apply_batch", magnus::method!(RbTable::apply_batch, 1))?;
    class.define_private_method("_lease", magnus::method!(RbTable::lease, 1))?;
    class.define_private_method("_revision", magnus::method!(RbTable::revision, 1))?;
    class.define_private_method("_last_issued", magnus::method!(RbTable::last_issued, 1))?;
    class.define_private_method("_term", magnus::method!(RbTable::term, 1))?;
    class.define_method("size", magnus::method!(RbTable::size, 0))?;
    class.define_method("observed", magnus::method!(RbTable::observed, 0))?;
    class.define_method("clock_policy", magnus::method!(RbTable::clock_policy, 0))?;
    class.define_private_method("_events", magnus::method!(RbTable::events, 0))?;
    class.define_method("dropped_events", magnus::method!(RbTable::dropped_events, 0))?;
    class.define_method("event_capacity", magnus::method!(RbTable::event_capacity, 0))?;
    class.define_private_method("_metrics", magnus::method!(RbTable::metrics, 1))?;
    class.define_private_method("_to_json", magnus::method!(RbTable::to_json, 0))?;
    class.define_method("inspect", magnus::method!(RbTable::inspect, 0))?;
    Ok(())
}
