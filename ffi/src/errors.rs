//! The exception classes the gem declares in Ruby (`lib/lease_machines/errors.rb`), fetched once when the extension
//! loads.

use std::sync::OnceLock;

use magnus::{prelude::*, value::Opaque, Error, ExceptionClass, RModule, Ruby};

static INVALID_DOCUMENT: OnceLock<Opaque<ExceptionClass>> = OnceLock::new();

/// Fetches `LeaseMachines::InvalidDocument` and registers it with the garbage collector, which then neither
/// collects nor moves it (compaction would otherwise leave the kept reference pointing at a stale slot).
pub fn fetch(ruby: &Ruby, module: RModule) -> Result<(), Error> {
    let class: ExceptionClass = module.const_get("InvalidDocument")?;
    ruby.gc_register_mark_object(class);
    let _ = INVALID_DOCUMENT.set(Opaque::from(class));
    Ok(())
}

/// `LeaseMachines::InvalidDocument` (an `ArgumentError`) with `message`: a JSON document that cannot be read.
pub fn invalid_document(ruby: &Ruby, message: &str) -> Error {
    let class = INVALID_DOCUMENT.get().map_or_else(|| ruby.exception_arg_error(), |class| ruby.get_inner(*class));
    Error::new(class, message.to_owned())
}
