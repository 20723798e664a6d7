//! The `lease_machines` gem's native extension: the `lease-machines` decision engine as Ruby classes.
//!
//! Every record that crosses into Ruby (a `LeaseMachines::Decision`, `Lease`, `Event`, ...) is a frozen instance of
//! a `Data` class the Ruby layer declares, built here and read back by member name (see `data`); the mutable objects
//! (`Authority`, `Fence`, `Holder`, `Table`, `FenceGuard`, `Simulation`) are Rust values wrapped in Ruby objects.
//! The Ruby layer (`lib/lease_machines/*.rb`) adds keyword arguments over the private native methods defined here.
//! Input faults raise the Ruby exception the contract names (see `convert`); rejections never raise. No code path
//! here panics (clippy denies `unwrap`, `expect`, `panic` and indexing); were one to, magnus would still turn it
//! into a Ruby exception rather than unwind into the VM, except inside a `protect` closure (`data`'s builders),
//! whose `extern "C"` callback would abort the process: those closures only call Ruby's C API.

mod authority;
mod convert;
mod data;
mod election;
mod errors;
mod event_log;
mod fence;
mod fence_guard;
mod floor;
mod helpers;
mod holder;
mod json;
mod records;
mod row;
mod simulation;
mod symbols;
mod table;
mod values;

use lease_machines::Rejection;
use magnus::{prelude::*, Error, RArray, RModule, Ruby};

use crate::symbols::{Status, SymbolEnum};

#[magnus::init]
fn init(ruby: &Ruby) -> Result<(), Error> {
    // Every object here is confined to the Ractor that made it, except the records (frozen Data instances, see
    // `data`), which are shareable; the extension keeps no global mutable state.
    // SAFETY: called on a Ruby thread during the extension's initialisation, before any method is defined.
    unsafe { rb_sys::rb_ext_ractor_safe(true) };
    symbols::intern_all(ruby);
    let module = ruby.define_module("LeaseMachines")?;
    errors::fetch(ruby, module)?;
    define_lists(ruby, module)?;
    module.define_singleton_method("shown", magnus::function!(helpers::shown, 1))?;
    module.singleton_class()?.define_private_method("_resource_name", magnus::function!(convert::resource_name, 1))?;
    values::define(ruby)?;
    authority::define(ruby, module)?;
    fence::define(ruby, module)?;
    holder::define(ruby, module)?;
    table::define(ruby, module)?;
    fence_guard::define(ruby, module)?;
    election::define(module)?;
    records::define(ruby, module)?;
    simulation::define(ruby, module)?;
    floor::define(ruby, module)?;
    row::define(module)?;
    event_log::define(module)?;
    Ok(())
}

/// `LeaseMachines::REASONS` (frozen) and `Decision.statuses`, from the enums' declarations in `symbols`, and
/// `LeaseMachines::MAX_RESOURCE_BYTES`, the core's bound on a resource name.
fn define_lists(ruby: &Ruby, module: RModule) -> Result<(), Error> {
    let reasons = Rejection::symbols(ruby);
    reasons.freeze();
    module.const_set("REASONS", reasons)?;
    module.const_set("MAX_RESOURCE_BYTES", lease_machines::MAX_RESOURCE_BYTES)?;
    data::DECISION.class(ruby)?.define_singleton_method("statuses", magnus::function!(statuses, 0))
}

fn statuses(ruby: &Ruby) -> RArray {
    Status::symbols(ruby)
}
