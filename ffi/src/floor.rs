//! `LeaseMachines::BenchmarkFloor`: native methods that take exactly the arguments of the real decision methods
//! and do nothing. `bench/` measures every call against these, so that its ratios separate the cost of deciding
//! from the fixed cost of calling into the extension at all. Not part of the gem's API.
//!
//! The records floor (`_granted`, `_renewed`, `_table_granted`) takes the same arguments and builds, with `data`'s
//! builders, the frozen answer a grant or a renewal returns: a `Decision` and its `Lease` (for a table, its
//! `TableLease` and that lease's resource String). It decides nothing and converts no argument but a table's resource name: every answer
//! carries one fixed lease (owner 1, token 1, expiring at 5 s), on the resource named for a table. A refusal has no
//! records floor of its own: it returns a `Decision` built once and kept (`data::refusal`), so the empty methods
//! are its floor.

use core::time::Duration;

use lease_machines::{FencingToken, Lease, OwnerId, TableLease};
use magnus::{prelude::*, Error, RModule, RString, Ruby, Value};

use crate::convert::utf8_text;
use crate::data::{self, LEASE, TABLE_LEASE};
use crate::records::table_lease_members;
use crate::symbols::{Status, SymbolEnum};
use crate::values::lease_members;

/// The lease every answer of the records floor carries.
const LEASE_HELD: Lease = Lease::new(OwnerId::new(1), FencingToken::FIRST, Duration::from_secs(5));

#[magnus::wrap(class = "LeaseMachines::BenchmarkFloor", free_immediately, size)]
struct RbBenchmarkFloor;

impl RbBenchmarkFloor {
    const fn new() -> Self {
        Self
    }

    /// `Authority#_acquire`, `#_reacquire`: owner, now, ttl.
    fn three(&self, _: Value, _: Value, _: Value) {}

    /// `Authority#_renew`: owner, token, now, ttl.
    fn four(&self, _: Value, _: Value, _: Value, _: Value) {}

    /// `Fence#accept`: token.
    fn one(&self, _: Value) {}

    /// `Table#_acquire`: resource, owner, now, ttl, precondition.
    fn five(&self, _: Value, _: Value, _: Value, _: Value, _: Value) {}

    /// `Authority#_acquire`'s arguments; a granted acquire's records.
    fn granted(ruby: &Ruby, _: &Self, _: Value, _: Value, _: Value) -> Result<Value, Error> {
        with_lease(ruby, Status::Granted)
    }

    /// `Authority#_renew`'s arguments; a renewal's records.
    fn renewed(ruby: &Ruby, _: &Self, _: Value, _: Value, _: Value, _: Value) -> Result<Value, Error> {
        with_lease(ruby, Status::Renewed)
    }

    /// `Table#_acquire`'s arguments; a granted table acquire's records, the lease on `resource`: its text (read as
    /// the table reads a name, unchecked otherwise: the table's checks are conversion, not building), copied into the
    /// lease's new frozen String as the table copies its key.
    fn table_granted(
        ruby: &Ruby,
        _: &Self,
        resource: RString,
        _: Value,
        _: Value,
        _: Value,
        _: Value,
    ) -> Result<Value, Error> {
        let name = utf8_text(ruby, resource)
            .ok_or_else(|| Error::new(ruby.exception_arg_error(), "resource must be valid UTF-8"))?;
        let lease = TableLease::new(name.as_str(), LEASE_HELD, Duration::ZERO, 1, None);
        let members = table_lease_members(ruby, &lease);
        data::decision(
            ruby,
            Status::Granted.symbol(ruby).as_value(),
            Some((&TABLE_LEASE, members)),
            ruby.qnil().as_value(),
        )
    }
}

/// A frozen `Decision` with `status` and a new frozen `Lease`, built as `Authority#_acquire` builds a grant's.
fn with_lease(ruby: &Ruby, status: Status) -> Result<Value, Error> {
    let lease = (&LEASE, lease_members(ruby, LEASE_HELD));
    data::decision(ruby, status.symbol(ruby).as_value(), Some(lease), ruby.qnil().as_value())
}

pub fn define(ruby: &Ruby, module: RModule) -> Result<(), Error> {
    let class = module.define_class("BenchmarkFloor", ruby.class_object())?;
    class.undef_default_alloc_func();
    class.define_singleton_method("new", magnus::function!(RbBenchmarkFloor::new, 0))?;
    class.define_method("_acquire", magnus::method!(RbBenchmarkFloor::three, 3))?;
    class.define_method("_reacquire", magnus::method!(RbBenchmarkFloor::three, 3))?;
    class.define_method("_renew", magnus::method!(RbBenchmarkFloor::four, 4))?;
    class.define_method("_release", magnus::method!(RbBenchmarkFloor::three, 3))?;
    class.define_method("accept", magnus::method!(RbBenchmarkFloor::one, 1))?;
    class.define_method("_table_acquire", magnus::method!(RbBenchmarkFloor::five, 5))?;
    class.define_method("_granted", magnus::method!(RbBenchmarkFloor::granted, 3))?;
    class.define_method("_renewed", magnus::method!(RbBenchmarkFloor::renewed, 4))?;
    class.define_method("_table_granted", magnus::method!(RbBenchmarkFloor::table_granted, 5))?;
    Ok(())
}
