//! `LeaseMachines::Holder`: the holder's side of one lease, on the holder's own clock.

use std::cell::Cell;

use lease_machines::Holder;
use magnus::{prelude::*, typed_data::Obj, Error, RModule, Ruby, StaticSymbol, Value};

use crate::convert::{instant, issued_token_arg, seconds_arg, token_arg};
use crate::symbols::SymbolEnum;
use crate::values;

#[magnus::wrap(class = "LeaseMachines::Holder", free_immediately, size)]
pub struct RbHolder(Cell<Holder>);

impl RbHolder {
    fn new(ruby: &Ruby, token: Value, at: Value, cadence: Value) -> Result<Self, Error> {
        let token = issued_token_arg(ruby, "token", token)?;
        let at = seconds_arg(ruby, "at", at)?;
        let cadence = values::cadence_arg(ruby, cadence)?;
        Ok(Self(Cell::new(Holder::new(token, at, cadence))))
    }

    /// Applies `change` to a copy and stores it: raises FrozenError on a frozen holder.
    fn change(rb_self: Obj<Self>, change: impl FnOnce(&mut Holder) -> bool) -> Result<bool, Error> {
        rb_self.check_frozen()?;
        let mut holder = rb_self.0.get();
        let changed = change(&mut holder);
        rb_self.0.set(holder);
        Ok(changed)
    }

    fn refresh(ruby: &Ruby, rb_self: Obj<Self>, now: Value) -> Result<bool, Error> {
        let now = seconds_arg(ruby, "now", now)?;
        Self::change(rb_self, |holder| holder.refresh(now))
    }

    fn confirm(ruby: &Ruby, rb_self: Obj<Self>, token: Value, at: Value) -> Result<bool, Error> {
        let token = token_arg(ruby, "token", token)?;
        let at = seconds_arg(ruby, "at", at)?;
        // Token 0 is older than any token: a stale reply, ignored.
        Self::change(rb_self, |holder| token.is_some_and(|token| holder.confirm(token, at)))
    }

    fn expire(rb_self: Obj<Self>) -> Result<bool, Error> {
        Self::change(rb_self, Holder::expire)
    }

    fn reacquire(ruby: &Ruby, rb_self: Obj<Self>, token: Value, at: Value) -> Result<bool, Error> {
        let token = token_arg(ruby, "token", token)?;
        let at = seconds_arg(ruby, "at", at)?;
        Self::change(rb_self, |holder| token.is_some_and(|token| holder.reacquire(token, at)))
    }

    fn fence(rb_self: Obj<Self>) -> Result<bool, Error> {
        Self::change(rb_self, |holder| {
            holder.fence();
            true
        })
    }

    fn renewal_due(ruby: &Ruby, rb_self: &Self, now: Value) -> Result<bool, Error> {
        Ok(rb_self.0.get().renewal_due(seconds_arg(ruby, "now", now)?))
    }

    fn at_risk(ruby: &Ruby, rb_self: &Self, now: Value) -> Result<bool, Error> {
        Ok(rb_self.0.get().at_risk(seconds_arg(ruby, "now", now)?))
    }

    fn token(&self) -> u64 {
        self.0.get().token().value()
    }

    fn state(ruby: &Ruby, rb_self: &Self) -> StaticSymbol {
        rb_self.0.get().state().symbol(ruby)
    }

    fn cadence(ruby: &Ruby, rb_self: &Self) -> Result<Value, Error> {
        values::cadence(ruby, rb_self.0.get().cadence())
    }

    fn renewed_at(&self) -> f64 {
        instant(self.0.get().renewed_at())
    }

    fn warning_deadline(&self) -> Option<f64> {
        self.0.get().warning_deadline().map(instant)
    }

    fn next_renewal(&self) -> Option<f64> {
        self.0.get().next_renewal().map(instant)
    }

    fn inspect(ruby: &Ruby, rb_self: &Self) -> String {
        let holder = rb_self.0.get();
        format!(
            "#<LeaseMachines::Holder token={} state={} renewed_at={:?}>",
            holder.token().value(),
            holder.state().symbol(ruby).inspect(),
            instant(holder.renewed_at())
        )
    }
}

pub fn define(ruby: &Ruby, module: RModule) -> Result<(), Error> {
    let (class, singleton) = crate::helpers::wrapped_class(ruby, module, "Holder")?;
    crate::helpers::constructor!(singleton, "_new", RbHolder::new, 3, token, at, cadence)?;
    class.define_private_method("_refresh", magnus::method!(RbHolder::refresh, 1))?;
    class.define_private_method("_confirm", magnus::method!(RbHolder::confirm, 2))?;
    class.define_method("expire", magnus::method!(RbHolder::expire, 0))?;
    class.define_private_method("_reacquire", magnus::method!(RbHolder::reacquire, 2))?;
    class.define_method("fence", magnus::method!(RbHolder::fence, 0))?;
    class.define_private_method("_renewal_due", magnus::method!(RbHolder::renewal_due, 1))?;
    class.define_private_method("_at_risk", magnus::method!(RbHolder::at_risk, 1))?;
    class.define_method("token", magnus::method!(RbHolder::token, 0))?;
    class.define_method("state", magnus::method!(RbHolder::state, 0))?;
    class.define_method("cadence", magnus::method!(RbHolder::cadence, 0))?;
    class.define_method("renewed_at", magnus::method!(RbHolder::renewed_at, 0))?;
    class.define_method("warning_deadline", magnus::method!(RbHolder::warning_deadline, 0))?;
    class.define_method("next_renewal", magnus::method!(RbHolder::next_renewal, 0))?;
    class.define_method("inspect", magnus::method!(RbHolder::inspect, 0))?;
    Ok(())
}
