//! `LeaseMachines::Authority`: the decision engine for one resource, as a mutable Ruby object.

use std::cell::RefCell;

use lease_machines::{Checkpoint, ClockPolicy, Decision, FencingToken, Lease, LeaseAuthority};
use magnus::{prelude::*, typed_data::Obj, Error, RModule, Ruby, StaticSymbol, Value};

use crate::convert::{instant, never_current, on_grid, owner_arg, seconds_arg, token_arg};
use crate::data::{self, LEASE};
use crate::helpers::{borrowed, Borrowed};
use crate::symbols::{Status, SymbolEnum};
use crate::values;

#[magnus::wrap(class = "LeaseMachines::Authority", free_immediately, size)]
pub struct RbAuthority(RefCell<LeaseAuthority>);

borrowed!(RbAuthority, LeaseAuthority, "LeaseMachines::Authority");

impl RbAuthority {
    fn new(ruby: &Ruby, clock_policy: Value) -> Result<Self, Error> {
        let policy = ClockPolicy::arg(ruby, clock_policy)?;
        Ok(Self(RefCell::new(LeaseAuthority::new().with_clock_policy(policy))))
    }

    fn restore(ruby: &Ruby, checkpoint: Value, clock_policy: Value) -> Result<Self, Error> {
        let checkpoint = values::checkpoint_arg(ruby, checkpoint)?;
        let policy = ClockPolicy::arg(ruby, clock_policy)?;
        Ok(Self(RefCell::new(LeaseAuthority::restore(checkpoint).with_clock_policy(policy))))
    }

    fn state(&self, ruby: &Ruby) -> Result<LeaseAuthority, Error> {
        Ok(self.borrowed(ruby)?.clone())
    }

    /// Decides on a copy of the state, builds the Ruby answer (a frozen `LeaseMachines::Decision`), and only then commits the copy: if anything fails on
    /// the way (a bad argument, an allocation), the authority is unchanged.
    fn decide(
        ruby: &Ruby,
        rb_self: Obj<Self>,
        decide: impl FnOnce(&mut LeaseAuthority) -> Decision,
    ) -> Result<Value, Error> {
        rb_self.check_frozen()?;
        let mut next = rb_self.state(ruby)?;
        let decision = match decide(&mut next) {
            Decision::Granted(lease) => Decision::Granted(deadline_on_grid(&mut next, lease)),
            Decision::Renewed(lease) => Decision::Renewed(deadline_on_grid(&mut next, lease)),
            other => other,
        };
        let (status, lease) = match decision {
            Decision::Granted(lease) => (Status::Granted, Some(lease)),
            Decision::Renewed(lease) => (Status::Renewed, Some(lease)),
            Decision::Released => (Status::Released, None),
            Decision::Rejected(rejection) => {
                // A refusal may still move the watermark: committed as a grant is, once the answer exists.
                let answer = data::refusal(ruby, rejection)?;
                *rb_self.borrowed_mut(ruby)? = next;
                return Ok(answer);
            }
        };
        let lease = lease.map(|lease| (&LEASE, values::lease_members(ruby, lease)));
        let answer = data::decision(ruby, status.symbol(ruby).as_value(), lease, ruby.qnil().as_value())?;
        *rb_self.borrowed_mut(ruby)? = next;
        Ok(answer)
    }

    fn acquire(ruby: &Ruby, rb_self: Obj<Self>, owner: Value, now: Value, ttl: Value) -> Result<Value, Error> {
        let (owner, now, ttl) =
            (owner_arg(ruby, owner)?, seconds_arg(ruby, "now", now)?, seconds_arg(ruby, "ttl", ttl)?);
        Self::decide(ruby, rb_self, |authority| authority.acquire(owner, now, ttl))
    }

    fn reacquire(ruby: &Ruby, rb_self: Obj<Self>, owner: Value, now: Value, ttl: Value) -> Result<Value, Error> {
        let (owner, now, ttl) =
            (owner_arg(ruby, owner)?, seconds_arg(ruby, "now", now)?, seconds_arg(ruby, "ttl", ttl)?);
        Self::decide(ruby, rb_self, |authority| authority.reacquire(owner, now, ttl))
    }

    fn renew(
        ruby: &Ruby,
        rb_self: Obj<Self>,
        owner: Value,
        token: Value,
        now: Value,
        ttl: Value,
    ) -> Result<Value, Error> {
        let owner = owner_arg(ruby, owner)?;
        let token = token_arg(ruby, "token", token)?;
        let (now, ttl) = (seconds_arg(ruby, "now", now)?, seconds_arg(ruby, "ttl", ttl)?);
        Self::decide(ruby, rb_self, |authority| {
            let token = token.unwrap_or_else(|| never_current(authority.lease().map(|lease| lease.token())));
            authority.renew(owner, token, now, ttl)
        })
    }

    fn release(ruby: &Ruby, rb_self: Obj<Self>, owner: Value, token: Value, now: Value) -> Result<Value, Error> {
        let owner = owner_arg(ruby, owner)?;
        let token = token_arg(ruby, "token", token)?;
        let now = seconds_arg(ruby, "now", now)?;
        Self::decide(ruby, rb_self, |authority| {
            let token = token.unwrap_or_else(|| never_current(authority.lease().map(|lease| lease.token())));
            authority.release(owner, token, now)
        })
    }

    fn checkpoint(ruby: &Ruby, rb_self: &Self) -> Result<Value, Error> {
        values::checkpoint(ruby, &rb_self.state(ruby)?.checkpoint())
    }

    fn lease(ruby: &Ruby, rb_self: &Self) -> Result<Option<Value>, Error> {
        rb_self.state(ruby)?.lease().map(|lease| values::lease(ruby, lease)).transpose()
    }

    fn last_issued(ruby: &Ruby, rb_self: &Self) -> Result<Option<u64>, Error> {
        Ok(rb_self.state(ruby)?.last_issued().map(FencingToken::value))
    }

    fn observed(ruby: &Ruby, rb_self: &Self) -> Result<f64, Error> {
        Ok(instant(rb_self.state(ruby)?.observed()))
    }

    fn clock_policy(ruby: &Ruby, rb_self: &Self) -> Result<StaticSymbol, Error> {
        Ok(rb_self.state(ruby)?.clock_policy().symbol(ruby))
    }

    fn inspect(ruby: &Ruby, rb_self: &Self) -> Result<String, Error> {
        let state = rb_self.state(ruby)?;
        Ok(format!(
            "#<LeaseMachines::Authority clock_policy={} checkpoint={}>",
            state.clock_policy().symbol(ruby).inspect(),
            values::checkpoint(ruby, &state.checkpoint())?.inspect()
        ))
    }
}

/// Moves a granted or renewed lease's expiry up to the next instant a Float stands for exactly (see
/// `convert::on_grid`), in the authority too: the `expires_at` Ruby sees is then exactly the engine's deadline,
/// and a lease is never shortened by the conversion.
fn deadline_on_grid(authority: &mut LeaseAuthority, lease: Lease) -> Lease {
    let lease = Lease::new(lease.owner(), lease.token(), on_grid(lease.expires_at()));
    if let Some(checkpoint) = Checkpoint::from_parts(authority.last_issued(), Some(lease), authority.observed()) {
        *authority = LeaseAuthority::restore(checkpoint).with_clock_policy(authority.clock_policy());
    }
    lease
}

pub fn define(ruby: &Ruby, module: RModule) -> Result<(), Error> {
    let (class, singleton) = crate::helpers::wrapped_class(ruby, module, "Authority")?;
    crate::helpers::constructor!(singleton, "_new", RbAuthority::new, 1, clock_policy)?;
    crate::helpers::constructor!(singleton, "_restore", RbAuthority::restore, 2, checkpoint, clock_policy)?;
    class.define_private_method("_acquire", magnus::method!(RbAuthority::acquire, 3))?;
    class.define_private_method("_reacquire", magnus::method!(RbAuthority::reacquire, 3))?;
    class.define_private_method("_renew", magnus::method!(RbAuthority::renew, 4))?;
    class.define_private_method("_release", magnus::method!(RbAuthority::release, 3))?;
    class.define_method("checkpoint", magnus::method!(RbAuthority::checkpoint, 0))?;
    class.define_method("lease", magnus::method!(RbAuthority::lease, 0))?;
    class.define_method("last_issued", magnus::method!(RbAuthority::last_issued, 0))?;
    class.define_method("observed", magnus::method!(RbAuthority::observed, 0))?;
    class.define_method("clock_policy", magnus::method!(RbAuthority::clock_policy, 0))?;
    class.define_method("inspect", magnus::method!(RbAuthority::inspect, 0))?;
    Ok(())
}
