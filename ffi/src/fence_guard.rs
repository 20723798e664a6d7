//! `LeaseMachines::FenceGuard`: storage-side fencing for many resources, as a mutable Ruby object; its marks are
//! `LeaseMachines::FenceMark` records, the writes it checks `LeaseMachines::FencedWrite` records.

use std::cell::RefCell;

use lease_machines::json::Json;
use lease_machines::{FenceGuard, FenceMark, FencedWrite, FencingToken};
use magnus::{prelude::*, typed_data::Obj, Error, IntoValue, RModule, RString, Ruby, Value};

use crate::convert::{frozen, issued_token_arg, owner_arg, resource_arg, token_arg};
use crate::data::{record_of_class, records_arg};
use crate::data::{FenceMarkMembers, FENCED_WRITE, FENCE_MARK};
use crate::helpers::{borrowed, Borrowed};
use crate::json;

#[magnus::wrap(class = "LeaseMachines::FenceGuard", free_immediately, size)]
pub struct RbFenceGuard(RefCell<FenceGuard<String>>);

borrowed!(RbFenceGuard, FenceGuard<String>, "LeaseMachines::FenceGuard");

impl RbFenceGuard {
    /// From the `FenceMark`s a guard persisted: an `ArgumentError` for two marks of one resource.
    fn new(ruby: &Ruby, marks: Value) -> Result<Self, Error> {
        let marks = records_arg(ruby, "marks", &FENCE_MARK, marks, |mark| {
            Ok(FenceMark {
                resource: resource_arg(ruby, mark.resource)?,
                token: issued_token_arg(ruby, "token", mark.token)?,
                owner: owner_arg(ruby, mark.owner)?,
            })
        })?;
        let guard = FenceGuard::from_marks(marks).map_err(|resource| {
            Error::new(ruby.exception_arg_error(), format!("two marks for resource {resource:?}"))
        })?;
        Ok(Self(RefCell::new(guard)))
    }

    fn from_json(ruby: &Ruby, text: Value) -> Result<Self, Error> {
        let guard: FenceGuard<String> = json::read(ruby, text)?;
        Ok(Self(RefCell::new(guard)))
    }

    /// True iff the `FencedWrite`'s token is at least its resource's mark (token 0: never), which it then becomes.
    fn check(ruby: &Ruby, rb_self: Obj<Self>, write: Value) -> Result<bool, Error> {
        let write = record_of_class(ruby, "write", &FENCED_WRITE, write)?;
        let resource = resource_arg(ruby, write.resource)?;
        let owner = owner_arg(ruby, write.owner)?;
        let token = token_arg(ruby, "token", write.token)?;
        rb_self.check_frozen()?;
        let mut guard = rb_self.borrowed_mut(ruby)?;
        Ok(token.is_some_and(|token| guard.check(&FencedWrite::new(resource, owner, token, ()))))
    }

    fn highest(ruby: &Ruby, rb_self: &Self, resource: Value) -> Result<Option<u64>, Error> {
        let resource = resource_arg(ruby, resource)?;
        Ok(rb_self.borrowed(ruby)?.highest(&resource).map(FencingToken::value))
    }

    /// Every resource's frozen `FenceMark`, in resource order, as a frozen Array.
    fn marks(ruby: &Ruby, rb_self: &Self) -> Result<Value, Error> {
        let guard = rb_self.borrowed(ruby)?;
        let marks = ruby.ary_new();
        for mark in guard.marks() {
            marks.push(FENCE_MARK.build(
                ruby,
                FenceMarkMembers {
                    resource: frozen(ruby, &mark.resource).as_value(),
                    token: mark.token.value().into_value_with(ruby),
                    owner: mark.owner.value().into_value_with(ruby),
                },
            )?)?;
        }
        marks.freeze();
        Ok(marks.as_value())
    }

    fn to_json(ruby: &Ruby, rb_self: &Self) -> Result<RString, Error> {
        Ok(ruby.str_new(&rb_self.borrowed(ruby)?.to_json()))
    }
}

pub fn define(ruby: &Ruby, module: RModule) -> Result<(), Error> {
    let (class, singleton) = crate::helpers::wrapped_class(ruby, module, "FenceGuard")?;
    crate::helpers::constructor!(singleton, "_new", RbFenceGuard::new, 1, marks)?;
    crate::helpers::constructor!(singleton, "_from_json", RbFenceGuard::from_json, 1, json)?;
    class.define_private_method("_check", magnus::method!(RbFenceGuard::check, 1))?;
    class.define_private_method("_highest", magnus::method!(RbFenceGuard::highest, 1))?;
    class.define_private_method("_marks", magnus::method!(RbFenceGuard::marks, 0))?;
    class.define_private_method("_to_json", magnus::method!(RbFenceGuard::to_json, 0))?;
    Ok(())
}
