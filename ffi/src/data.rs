//! The record protocol: every value object that crosses into Ruby (a decision, a lease, an event, ...) is a frozen
//! instance of a `Data` class the Ruby layer declares (`lib/lease_machines/*.rb`), built here and read back here by
//! member name.
//!
//! Each record is declared once, in [`records!`] below, with its members in the order its `Data.define` lists
//! them. The declaration makes a struct with one `Value` field per member, named as the member, and a [`DataClass`]
//! that
//!
//! - looks the class up under `LeaseMachines` the first time it is needed (some are defined only after the
//!   extension loads), checks that it is a `Data` class whose `members` are the declared names in the declared
//!   order (a `TypeError` otherwise), and registers it with the garbage collector;
//! - builds a frozen instance from such a struct: `rb_struct_alloc_noinit`, each member set in the declared order,
//!   frozen. The same object `Data.new` makes, without the keyword Hash `Data.new` builds to call `#initialize`,
//!   and without `#initialize` itself, so the checks a class's `#initialize` makes are for values Ruby builds;
//!   the extension builds only valid ones;
//! - reads an instance back into such a struct, each field fetched by its member's name: the name's place among
//!   the declared names, which the lookup proved to be its place among the class's own `members`. No field is
//!   ever read by a number written in the code.
//!
//! A struct of `Value`s lives on the stack, where the garbage collector sees it, and is never kept: a record read
//! is turned into Rust data at once (see [`records_arg`]).

use std::sync::OnceLock;

use lease_machines::Rejection;

use crate::convert::optional;
use crate::helpers::{class_name, shown};
use crate::symbols::{Status, SymbolEnum};
use magnus::rb_sys::{protect, AsRawValue, FromRawValue};
use magnus::{prelude::*, value::Opaque, Error, RArray, RClass, RModule, RStruct, Ruby, Symbol, Value};

/// The members of one record, as `Value`s in fields named as the members. Implemented by [`records!`].
pub trait Members: Sized {
    /// The member names, in the order the Ruby class declares them.
    const NAMES: &'static [&'static str];

    /// Each member's value, in the declared order.
    fn for_each(&self, f: impl FnMut(Value));

    /// The members, each one `member(name)`, asked for in the declared order.
    fn from_members(member: impl FnMut(&'static str) -> Result<Value, Error>) -> Result<Self, Error>;
}

/// One `Data` class of the Ruby layer, found by its name under `LeaseMachines` (`"AuditReport::Finding"` for a
/// nested one). The found class is registered with the garbage collector, which then neither collects nor moves it
/// (compaction would otherwise leave the cached reference pointing at a stale slot).
pub struct DataClass<M> {
    name: &'static str,
    class: OnceLock<Opaque<RClass>>,
    members: std::marker::PhantomData<fn() -> M>,
}

impl<M: Members> DataClass<M> {
    const fn new(name: &'static str) -> Self {
        Self { name, class: OnceLock::new(), members: std::marker::PhantomData }
    }

    /// `LeaseMachines::Name`, for messages.
    pub fn name(&self) -> String {
        format!("LeaseMachines::{}", self.name)
    }

    /// The class, looked up and checked on first use: a `TypeError` unless it is a subclass of `Data` whose
    /// `members` are [`Members::NAMES`], in order.
    pub fn class(&self, ruby: &Ruby) -> Result<RClass, Error> {
        if let Some(class) = self.class.get() {
            return Ok(ruby.get_inner(*class));
        }
        let module: RModule = ruby.class_object().const_get("LeaseMachines")?;
        let mut found: Value = module.as_value();
        for part in self.name.split("::") {
            found = match (RClass::from_value(found), RModule::from_value(found)) {
                (Some(class), _) => class.const_get(part)?,
                (None, Some(module)) => module.const_get(part)?,
                (None, None) => return Err(self.not_data(ruby)),
            };
        }
        let class = RClass::from_value(found).ok_or_else(|| self.not_data(ruby))?;
        let data: RClass = ruby.class_object().const_get("Data")?;
        if !class.is_inherited(data) {
            return Err(self.not_data(ruby));
        }
        let members: RArray = class.funcall("members", ())?;
        let declared = members.len() == M::NAMES.len()
            && M::NAMES.iter().enumerate().all(|(index, name)| {
                members
                    .entry::<Symbol>(index as isize)
                    .ok()
                    .and_then(|member| member.name().ok().map(|member| member == *name))
                    .unwrap_or(false)
            });
        if !declared {
            return Err(self.not_data(ruby));
        }
        ruby.gc_register_mark_object(class);
        let _ = self.class.set(Opaque::from(class));
        Ok(class)
    }

    fn not_data(&self, ruby: &Ruby) -> Error {
        Error::new(
            ruby.exception_type_error(),
            format!("{} must be a Data class with the members {}", self.name(), M::NAMES.join(", ")),
        )
    }

    /// A new frozen instance with `members`.
    pub fn build(&self, ruby: &Ruby, members: M) -> Result<Value, Error> {
        let class = self.class(ruby)?;
        // SAFETY: called on a Ruby thread; `protect` turns any Ruby exception (a NoMemoryError) into an `Err`
        // instead of unwinding through Rust frames. The class's members were checked when it was looked up.
        // `members` stays on the stack until every value is stored.
        let raw = protect(|| unsafe { instance(class.as_raw(), &members) })?;
        // SAFETY: `raw` is the live object just built, returned to Ruby (or dropped) before the next allocation.
        Ok(unsafe { Value::from_raw(raw) })
    }

    /// A new frozen instance of `inner`'s class with `inner_members`, then a new frozen instance of this class
    /// with the members `members` makes of it, in one `protect`: a decision and its lease.
    pub fn build_around<I: Members>(
        &self,
        ruby: &Ruby,
        inner: &DataClass<I>,
        inner_members: I,
        members: impl FnOnce(Value) -> M,
    ) -> Result<Value, Error> {
        let (class, inner_class) = (self.class(ruby)?, inner.class(ruby)?);
        // SAFETY: as in `build`; `members` builds a struct and calls no Ruby. The inner object is on the stack (in
        // the struct) while the outer one is allocated.
        let raw = protect(|| unsafe {
            let built = instance(inner_class.as_raw(), &inner_members);
            let members = members(Value::from_raw(built));
            instance(class.as_raw(), &members)
        })?;
        // SAFETY: as in `build`.
        Ok(unsafe { Value::from_raw(raw) })
    }

    /// Sets the members of `object`, a new instance allocated by `Data.new` (this is its `#initialize`), and freezes
    /// it: a `FrozenError` once it is frozen, so that only a new instance (every member nil) gets here.
    pub fn initialize(&self, ruby: &Ruby, object: Value, members: M) -> Result<(), Error> {
        self.class(ruby)?;
        object.check_frozen()?;
        let Some(object) = RStruct::from_value(object).filter(|object| object.size() == M::NAMES.len()) else {
            return Err(self.not_data(ruby));
        };
        // SAFETY: as in `build`; `object` is a struct of the checked size.
        protect(|| unsafe {
            store(object.as_raw(), &members);
            rb_sys::rb_obj_freeze(object.as_raw())
        })?;
        Ok(())
    }

    /// The members of `value`, each read by its name; `None` when `value` is not an instance of the class.
    pub fn read(&self, ruby: &Ruby, value: Value) -> Result<Option<M>, Error> {
        let class = self.class(ruby)?;
        let Some(object) = RStruct::from_value(value).filter(|_| value.is_kind_of(class)) else {
            return Ok(None);
        };
        // `from_members` asks for the members in the declared order, which the lookup matched name by name against
        // the class's own `members`: the next member asked for is the next slot, with no search per member.
        let mut index = 0_usize;
        M::from_members(|name| {
            debug_assert_eq!(M::NAMES.get(index), Some(&name));
            let value = object.aref(index);
            index = index.saturating_add(1);
            value
        })
        .map(Some)
    }
}

/// A frozen `LeaseMachines::Decision` with `status`, `reason` and, when there is one, the lease `lease` describes (a
/// `Lease` or a `TableLease`), built with it.
pub fn decision<L: Members>(
    ruby: &Ruby,
    status: Value,
    lease: Option<(&DataClass<L>, L)>,
    reason: Value,
) -> Result<Value, Error> {
    match lease {
        Some((class, members)) => {
            DECISION.build_around(ruby, class, members, |lease| DecisionMembers { status, lease, reason })
        }
        None => DECISION.build(ruby, DecisionMembers { status, lease: ruby.qnil().as_value(), reason }),
    }
}

/// The frozen `LeaseMachines::Decision` refusing for `rejection` (status `:rejected`, no lease): built the first time
/// that reason is given, made Ractor-shareable and kept for good (registered with the garbage collector), so that a
/// refusal allocates nothing. A `Decision` is a value compared by its members: one refusal for a reason is as good as
/// another.
pub fn refusal(ruby: &Ruby, rejection: Rejection) -> Result<Value, Error> {
    static REFUSALS: [OnceLock<Opaque<Value>>; Rejection::ALL.len()] =
        [const { OnceLock::new() }; Rejection::ALL.len()];
    let Some(slot) = REFUSALS.get(rejection.index()) else {
        // Unreachable: `index` is the reason's place in `Rejection::ALL`. Building a fresh one is still right.
        return decision::<DecisionMembers>(
            ruby,
            Status::Rejected.symbol(ruby).as_value(),
            None,
            reason(ruby, rejection),
        );
    };
    if let Some(kept) = slot.get() {
        return Ok(ruby.get_inner(*kept));
    }
    let built =
        decision::<DecisionMembers>(ruby, Status::Rejected.symbol(ruby).as_value(), None, reason(ruby, rejection))?;
    // SAFETY: `built` is a live, deeply frozen object (a frozen Data of two Symbols and nil); on a Ruby thread.
    unsafe { rb_sys::rb_ractor_make_shareable(built.as_raw()) };
    if slot.set(Opaque::from(built)).is_ok() {
        ruby.gc_register_mark_object(built);
    }
    Ok(slot.get().map_or(built, |kept| ruby.get_inner(*kept)))
}

fn reason(ruby: &Ruby, rejection: Rejection) -> Value {
    rejection.symbol(ruby).as_value()
}

/// A new frozen instance of `class` with `members`: `rb_struct_alloc_noinit`, each member stored, frozen.
///
/// # Safety
///
/// On a Ruby thread, inside `protect`; `class` is a `Data` class whose members are `M::NAMES`.
unsafe fn instance<M: Members>(class: rb_sys::VALUE, members: &M) -> rb_sys::VALUE {
    // SAFETY: as the function's contract says.
    unsafe {
        let object = rb_sys::rb_struct_alloc_noinit(class);
        store(object, members);
        rb_sys::rb_obj_freeze(object)
    }
}

/// Stores `members` into the struct `object`, a new one (every member nil), in the declared order.
///
/// # Safety
///
/// On a Ruby thread, inside `protect`; `object` is a struct with `M::NAMES.len()` members, all nil.
unsafe fn store<M: Members>(object: rb_sys::VALUE, members: &M) {
    let mut index: rb_sys::VALUE = 0;
    members.for_each(|value| {
        // A new struct's members are nil already.
        if !value.is_nil() {
            // The index as a Fixnum (it is below the member count).
            let fixnum = (index << 1) | rb_sys::FIXNUM_FLAG as rb_sys::VALUE;
            // SAFETY: as the function's contract says.
            unsafe { rb_sys::rb_struct_aset(object, fixnum, value.as_raw()) };
        }
        index += 1;
    });
}

/// Declares each record: `STATIC: Fields = "ClassName" { member, ... }`, the members in `Data.define`'s order.
macro_rules! records {
    ($(
        $(#[$doc:meta])*
        $static:ident: $fields:ident = $name:literal { $($member:ident),+ $(,)? }
    )*) => {
        $(
            $(#[$doc])*
            #[derive(Clone, Copy)]
            pub struct $fields {
                $(pub $member: Value,)+
            }

            impl Members for $fields {
                const NAMES: &'static [&'static str] = &[$(stringify!($member)),+];

                fn for_each(&self, mut f: impl FnMut(Value)) {
                    $(f(self.$member);)+
                }

                fn from_members(
                    mut member: impl FnMut(&'static str) -> Result<Value, Error>,
                ) -> Result<Self, Error> {
                    Ok(Self { $($member: member(stringify!($member))?,)+ })
                }
            }

            $(#[$doc])*
            pub static $static: DataClass<$fields> = DataClass::new($name);
        )*
    };
}

records! {
    /// `LeaseMachines::Decision` (lib/lease_machines/decision.rb).
    DECISION: DecisionMembers = "Decision" { status, lease, reason }

    /// `LeaseMachines::Lease` (lib/lease_machines/lease.rb).
    LEASE: LeaseMembers = "Lease" { owner, token, expires_at }

    /// `LeaseMachines::Checkpoint` (lib/lease_machines/checkpoint.rb).
    CHECKPOINT: CheckpointMembers = "Checkpoint" { last_issued, lease, observed }

    /// `LeaseMachines::Cadence` (lib/lease_machines/cadence.rb).
    CADENCE: CadenceMembers = "Cadence" { ttl, renew_every, warn_before }

    /// `LeaseMachines::TableLease` (lib/lease_machines/table_lease.rb).
    TABLE_LEASE: TableLeaseMembers = "TableLease" {
        resource, owner, token, issued_at, expires_at, revision, term
    }

    /// `LeaseMachines::FencedWrite` (lib/lease_machines/fenced_write.rb).
    FENCED_WRITE: FencedWriteMembers = "FencedWrite" { resource, owner, token, operation }

    /// `LeaseMachines::FenceMark` (lib/lease_machines/fence_mark.rb).
    FENCE_MARK: FenceMarkMembers = "FenceMark" { resource, token, owner }

    /// `LeaseMachines::Event` (lib/lease_machines/event.rb).
    EVENT: EventMembers = "Event" {
        resource, kind, at, owner, token, revision, expires_at, term, replaced
    }

    /// `LeaseMachines::Metrics` (lib/lease_machines/metrics.rb).
    METRICS: MetricsMembers = "Metrics" {
        resources, stored_leases, live_leases, expired_leases, highest_token, events, accepted, rejected,
        rejections, holder_transitions
    }

    /// `LeaseMachines::AuditReport` (lib/lease_machines/audit_report.rb).
    AUDIT_REPORT: AuditReportMembers = "AuditReport" { valid, checked_events, findings }

    /// `LeaseMachines::AuditReport::Finding` (lib/lease_machines/audit_report.rb).
    FINDING: FindingMembers = "AuditReport::Finding" { code, resource, event_index, message }

    /// `LeaseMachines::Reaping` (lib/lease_machines/reaping.rb).
    REAPING: ReapingMembers = "Reaping" { leases, reason }

    /// `LeaseMachines::Batch` (lib/lease_machines/batch.rb).
    BATCH: BatchMembers = "Batch" { decisions, accepted, rejected }

    /// `LeaseMachines::Candidate` (lib/lease_machines/election.rb).
    CANDIDATE: CandidateMembers = "Candidate" { id, priority }

    /// `LeaseMachines::ElectionVote` (lib/lease_machines/election.rb).
    ELECTION_VOTE: ElectionVoteMembers = "ElectionVote" { voter, candidate, term, granted }

    /// `LeaseMachines::Equivocation` (lib/lease_machines/election.rb).
    EQUIVOCATION: EquivocationMembers = "Equivocation" { voter, first, second }

    /// `LeaseMachines::QuorumCertificate` (lib/lease_machines/election.rb).
    QUORUM_CERTIFICATE: QuorumCertificateMembers = "QuorumCertificate" {
        valid, status, leader, term, members, quorum, voters, equivocations
    }

    /// `LeaseMachines::SimulationConfig` (lib/lease_machines/simulation_config.rb).
    SIMULATION_CONFIG: SimulationConfigMembers = "SimulationConfig" {
        seed, cycles, workers, resources, ttl, scenario, clock_policy, restore_every, fence
    }

    /// `LeaseMachines::SimulationReport` (lib/lease_machines/simulation_report.rb).
    SIMULATION_REPORT: SimulationReportMembers = "SimulationReport" {
        config, cycles, leases_acquired, rotations, transfers, renewals, releases, reaps, takeovers, leases_lost,
        pauses, clock_steps_back, clock_rejections, restores, writes_accepted, stale_writes_rejected,
        late_writes_accepted, final_token, events, audit_valid, audit_findings, violations, event_digest
    }
}

/// `value` as a `record`, else a `TypeError`: "checkpoint must be a LeaseMachines::Checkpoint, got nil".
pub fn record_arg<M: Members>(ruby: &Ruby, name: &str, record: &DataClass<M>, value: Value) -> Result<M, Error> {
    record.read(ruby, value)?.ok_or_else(|| {
        Error::new(ruby.exception_type_error(), format!("{name} must be a {}, got {}", record.name(), shown(value)))
    })
}

/// `nil` or `value` as a `record`, else a `TypeError`: "lease must be a LeaseMachines::Lease or nil, got {}".
pub fn optional_record_arg<M: Members>(
    ruby: &Ruby,
    name: &str,
    record: &DataClass<M>,
    value: Value,
) -> Result<Option<M>, Error> {
    optional(value, |value| {
        record.read(ruby, value)?.ok_or_else(|| {
            Error::new(
                ruby.exception_type_error(),
                format!("{name} must be a {} or nil, got {}", record.name(), shown(value)),
            )
        })
    })
}

/// `value` as a `record`, else a `TypeError` naming the class it got: "write must be a
/// LeaseMachines::FencedWrite, got Array".
pub fn record_of_class<M: Members>(ruby: &Ruby, name: &str, record: &DataClass<M>, value: Value) -> Result<M, Error> {
    record.read(ruby, value)?.ok_or_else(|| {
        Error::new(
            ruby.exception_type_error(),
            format!("{name} must be a {}, got {}", record.name(), class_name(value)),
        )
    })
}

/// Each element of the Array `value` as a `record`, turned into Rust data by `convert` as soon as it is read (the
/// `Value`s it holds are never kept). A `TypeError` naming the class it got for anything else: "events must be an
/// Array of LeaseMachines::Event, got NilClass", "events must hold LeaseMachines::Event, got Hash".
pub fn records_arg<M: Members, T>(
    ruby: &Ruby,
    name: &str,
    record: &DataClass<M>,
    value: Value,
    mut convert: impl FnMut(M) -> Result<T, Error>,
) -> Result<Vec<T>, Error> {
    let Some(list) = RArray::from_value(value) else {
        return Err(Error::new(
            ruby.exception_type_error(),
            format!("{name} must be an Array of {}, got {}", record.name(), class_name(value)),
        ));
    };
    let mut converted = Vec::with_capacity(list.len());
    let mut index = 0;
    while index < list.len() {
        let element: Value = list.entry(index as isize)?;
        let members = record.read(ruby, element)?.ok_or_else(|| {
            Error::new(
                ruby.exception_type_error(),
                format!("{name} must hold {}, got {}", record.name(), class_name(element)),
            )
        })?;
        converted.push(convert(members)?);
        index += 1;
    }
    Ok(converted)
}
