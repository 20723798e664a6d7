//! `LeaseMachines::BenchmarkFloor`: native methods that take exactly the arguments of the real decision methods
//! and do nothing. `bench/` measures every call against these, so that its ratios separate the cost of deciding
//! from the fixed cost of calling into the extension at all. Not part of the gem's API.

use magnus::{prelude::*, Error, RModule, Ruby, Value};

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
    Ok(())
}
