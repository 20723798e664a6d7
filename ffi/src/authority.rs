//! `LeaseMachines::Authority`: the decision engine for one resource, as a mutable Ruby object.

use std::cell::RefCell;

use lease_machines::{Checkpoint, Decision, FencingToken, Lease, LeaseAuthority};
use magnus::{prelude::*, typed_data::Obj, Error, RModule, Ruby, StaticSymbol, TryConvert, Value};

use crate::convert::{never_current, on_grid, owner_arg, seconds, seconds_arg, shown, token_arg};
use crate::data::DECISION;
use crate::symbols::{self, Status};
use crate::values::{self, RbCheckpoint, RbLease};

#[magnus::wrap(class = "LeaseMachines::Authority", free_immediately, size)]
pub struct RbAuthority(RefCell<LeaseAuthority>);

impl RbAuthority {
    fn new(ruby: &Ruby, clock_policy: Value) -> Result<Self, Error> {
        let policy = symbols::clock_policy_arg(ruby, clock_policy)?;
        Ok(Self(RefCell::new(LeaseAuthority::new().with_clock_policy(policy))))
    }

    fn restore(ruby: &Ruby, checkpoint: Value, clock_policy: Value) -> Result<Self, Error> {
        let checkpoint = <&RbCheckpoint>::try_convert(checkpoint).map_err(|_| {
            Error::new(
                ruby.exception_type_error(),
                format!("checkpoint must be a LeaseMachines::Checkpoint, got {}", shown(checkpoint)),
            )
        })?;
        let policy = symbols::clock_policy_arg(ruby, clock_policy)?;
        Ok(Self(RefCell::new(LeaseAuthority::restore(checkpoint.0).with_clock_policy(policy))))
    }

    fn state(&self, ruby: &Ruby) -> Result<LeaseAuthority, Error> {
        self.0
            .try_borrow()
            .map(|authority| authority.clone())
            .map_err(|_| Error::new(ruby.exception_runtime_error(), "LeaseMachines::Authority is busy"))
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
        let nil = ruby.qnil().as_value();
        let members = match decision {
            Decision::Granted(lease) => {
                [symbols::status(ruby, Status::Granted).as_value(), RbLease::wrap(ruby, lease).as_value(), nil]
            }
            Decision::Renewed(lease) => {
                [symbols::status(ruby, Status::Renewed).as_value(), RbLease::wrap(ruby, lease).as_value(), nil]
            }
            Decision::Released => [symbols::status(ruby, Status::Released).as_value(), nil, nil],
            Decision::Rejected(rejection) => {
                [symbols::status(ruby, Status::Rejected).as_value(), nil, symbols::reason(ruby, rejection).as_value()]
            }
        };
        let answer = DECISION.build(ruby, members)?;
        let mut current = rb_self
            .0
            .try_borrow_mut()
            .map_err(|_| Error::new(ruby.exception_runtime_error(), "LeaseMachines::Authority is busy"))?;
        *current = next;
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

    fn checkpoint(ruby: &Ruby, rb_self: &Self) -> Result<Obj<RbCheckpoint>, Error> {
        Ok(RbCheckpoint::wrap(ruby, rb_self.state(ruby)?.checkpoint()))
    }

    fn lease(ruby: &Ruby, rb_self: &Self) -> Result<Option<Obj<RbLease>>, Error> {
        Ok(rb_self.state(ruby)?.lease().map(|lease| RbLease::wrap(ruby, lease)))
    }

    fn last_issued(ruby: &Ruby, rb_self: &Self) -> Result<Option<u64>, Error> {
        Ok(rb_self.state(ruby)?.last_issued().map(FencingToken::value))
    }

    fn observed(ruby: &Ruby, rb_self: &Self) -> Result<f64, Error> {
        Ok(seconds(rb_self.state(ruby)?.observed()))
    }

    fn clock_policy(ruby: &Ruby, rb_self: &Self) -> Result<StaticSymbol, Error> {
        Ok(symbols::clock_policy(ruby, rb_self.state(ruby)?.clock_policy()))
    }

    fn inspect(ruby: &Ruby, rb_self: &Self) -> Result<String, Error> {
        let state = rb_self.state(ruby)?;
        Ok(format!(
            "#<LeaseMachines::Authority clock_policy={} checkpoint={}>",
            symbols::clock_policy(ruby, state.clock_policy()).inspect(),
            values::inspect_checkpoint(ruby, state.checkpoint())
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
    let class = module.define_class("Authority", ruby.class_object())?;
    class.undef_default_alloc_func();
    class.define_singleton_method("_new", magnus::function!(RbAuthority::new, 1))?;
    class.define_singleton_method("_restore", magnus::function!(RbAuthority::restore, 2))?;
    class.define_method("_acquire", magnus::method!(RbAuthority::acquire, 3))?;
    class.define_method("_reacquire", magnus::method!(RbAuthority::reacquire, 3))?;
    class.define_method("_renew", magnus::method!(RbAuthority::renew, 4))?;
    class.define_method("_release", magnus::method!(RbAuthority::release, 3))?;
    class.define_method("checkpoint", magnus::method!(RbAuthority::checkpoint, 0))?;
    class.define_method("lease", magnus::method!(RbAuthority::lease, 0))?;
    class.define_method("last_issued", magnus::method!(RbAuthority::last_issued, 0))?;
    class.define_method("observed", magnus::method!(RbAuthority::observed, 0))?;
    class.define_method("clock_policy", magnus::method!(RbAuthority::clock_policy, 0))?;
    class.define_method("inspect", magnus::method!(RbAuthority::inspect, 0))?;
    Ok(())
}
