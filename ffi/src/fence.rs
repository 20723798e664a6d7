//! `LeaseMachines::Fence`: the check at the protected resource.

use std::cell::Cell;

use lease_machines::Fence;
use magnus::{prelude::*, typed_data::Obj, Error, RModule, Ruby, Value};

use crate::convert::{optional_token_arg, token_arg};

#[magnus::wrap(class = "LeaseMachines::Fence", free_immediately, size)]
pub struct RbFence(Cell<Fence>);

impl RbFence {
    fn new(ruby: &Ruby, highest: Value) -> Result<Self, Error> {
        Ok(Self(Cell::new(Fence::new(optional_token_arg(ruby, "highest", highest)?))))
    }

    /// True iff `token >= highest`; token 0, never issued, is older than any token and always refused.
    fn accept(ruby: &Ruby, rb_self: Obj<Self>, token: Value) -> Result<bool, Error> {
        let token = token_arg(ruby, "token", token)?;
        rb_self.check_frozen()?;
        let mut fence = rb_self.0.get();
        let accepted = token.is_some_and(|token| fence.accept(token));
        rb_self.0.set(fence);
        Ok(accepted)
    }

    fn highest(&self) -> Option<u64> {
        self.0.get().highest().map(|token| token.value())
    }

    fn inspect(&self) -> String {
        let highest = self.highest().map_or_else(|| "nil".to_owned(), |token| token.to_string());
        format!("#<LeaseMachines::Fence highest={highest}>")
    }
}

pub fn define(ruby: &Ruby, module: RModule) -> Result<(), Error> {
    let (class, singleton) = crate::helpers::wrapped_class(ruby, module, "Fence")?;
    crate::helpers::constructor!(singleton, "_new", RbFence::new, 1, highest)?;
    class.define_method("accept", magnus::method!(RbFence::accept, 1))?;
    class.define_method("highest", magnus::method!(RbFence::highest, 0))?;
    class.define_method("inspect", magnus::method!(RbFence::inspect, 0))?;
    Ok(())
}
