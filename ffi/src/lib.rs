//! The `lease_machines` gem's native extension: the `lease-machines` decision engine as Ruby classes.
//!
//! Each decision method returns a frozen `LeaseMachines::Decision` (status, lease, reason: a Symbol, a
//! `LeaseMachines::Lease` or `TableLease` or nil, a Symbol or nil), built here (see `data`); the Ruby layer
//! (`lib/lease_machines.rb`) adds keyword arguments. Input faults raise the Ruby exception the contract names (see
//! `convert`); rejections never raise. No code path here panics (clippy denies `unwrap`, `expect`, `panic` and indexing); were one to, magnus would still turn it into a
//! Ruby exception rather than unwind into the VM.

mod authority;
mod convert;
mod data;
mod election;
mod errors;
mod fence;
mod floor;
mod holder;
mod records;
mod simulation;
mod symbols;
mod table;
mod values;

use magnus::{Error, Ruby};

#[magnus::init]
fn init(ruby: &Ruby) -> Result<(), Error> {
    // Every object here is confined to the Ractor that made it, except frozen values (Lease, Checkpoint, Cadence),
    // which are immutable and marked shareable; the extension keeps no global mutable state.
    // SAFETY: called on a Ruby thread during the extension's initialisation, before any method is defined.
    unsafe { rb_sys::rb_ext_ractor_safe(true) };
    symbols::intern_all(ruby);
    let module = ruby.define_module("LeaseMachines")?;
    errors::fetch(ruby, module)?;
    symbols::define_reasons(ruby, module)?;
    values::define(ruby, module)?;
    authority::define(ruby, module)?;
    fence::define(ruby, module)?;
    holder::define(ruby, module)?;
    table::define(ruby, module)?;
    election::define(module)?;
    records::define(module)?;
    simulation::define(ruby, module)?;
    floor::define(ruby, module)?;
    Ok(())
}
