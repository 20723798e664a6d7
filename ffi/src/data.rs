//! Frozen instances of the `Data` classes the Ruby layer declares (`LeaseMachines::Decision`, `TableLease`), built
//! here rather than through `Data.new`.
//!
//! A `Data` instance is a Ruby struct. Allocating it with `rb_struct_alloc_noinit`, setting each member with
//! `rb_struct_aset` and freezing it makes the same object `Data.new` makes, without the keyword Hash that `Data.new`
//! builds to call `#initialize`, and without the tuple Array the Ruby layer would otherwise splat: about half of the
//! cost of a decision (see README.md, "Performance"). Only classes without a custom `#initialize` are built so.

use std::sync::OnceLock;

use magnus::rb_sys::{protect, AsRawValue, FromRawValue};
use magnus::{prelude::*, value::Opaque, Error, RArray, RClass, RModule, Ruby, Value};

/// One `Data` class of the Ruby layer, looked up by name under `LeaseMachines` the first time it is needed (some
/// are defined only after the extension loads), checked, and registered with the garbage collector, which then
/// neither collects nor moves it (compaction would otherwise leave the cached reference pointing at a stale slot).
pub struct DataClass {
    name: &'static str,
    members: usize,
    class: OnceLock<Opaque<RClass>>,
}

impl DataClass {
    const fn new(name: &'static str, members: usize) -> Self {
        Self { name, members, class: OnceLock::new() }
    }

    /// The class, looked up and checked on first use: a `TypeError` unless it is a subclass of `Data` with the
    /// members the extension fills.
    pub fn class(&self, ruby: &Ruby) -> Result<RClass, Error> {
        if let Some(class) = self.class.get() {
            return Ok(ruby.get_inner(*class));
        }
        let module: RModule = ruby.class_object().const_get("LeaseMachines")?;
        let class: RClass = module.const_get(self.name)?;
        let data: RClass = ruby.class_object().const_get("Data")?;
        let members: RArray = if class.is_inherited(data) { class.funcall("members", ())? } else { ruby.ary_new() };
        if members.len() != self.members {
            return Err(Error::new(
                ruby.exception_type_error(),
                format!("LeaseMachines::{} must be a Data class with {} members", self.name, self.members),
            ));
        }
        ruby.gc_register_mark_object(class);
        let _ = self.class.set(Opaque::from(class));
        Ok(class)
    }

    /// A frozen instance with `values` as its members, in order. `values` lives on the stack, where the garbage
    /// collector sees it, until every value is stored in the new object.
    pub fn build<const N: usize>(&self, ruby: &Ruby, values: [Value; N]) -> Result<Value, Error> {
        let class = self.class(ruby)?;
        if N != self.members {
            return Err(Error::new(
                ruby.exception_runtime_error(),
                format!("LeaseMachines::{} takes {} members, got {N}", self.name, self.members),
            ));
        }
        // SAFETY: called on a Ruby thread; `protect` turns any Ruby exception (an index outside the struct, a
        // NoMemoryError) into an `Err` instead of unwinding through Rust frames. The members are fixnum indexes
        // below the struct's size: the class's member count was checked when it was looked up.
        let raw = protect(|| unsafe {
            let object = rb_sys::rb_struct_alloc_noinit(class.as_raw());
            for (index, value) in values.iter().enumerate() {
                rb_sys::rb_struct_aset(object, rb_sys::rb_int2inum(index as isize), value.as_raw());
            }
            rb_sys::rb_obj_freeze(object)
        })?;
        // SAFETY: `raw` is the live object just built, returned to Ruby (or dropped) before the next allocation.
        Ok(unsafe { Value::from_raw(raw) })
    }
}

/// `LeaseMachines::Decision`: status, lease, reason.
pub static DECISION: DataClass = DataClass::new("Decision", 3);

/// `LeaseMachines::TableLease`: resource, owner, token, issued_at, expires_at, revision, term.
pub static TABLE_LEASE: DataClass = DataClass::new("TableLease", 7);
