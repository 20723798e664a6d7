//! Immutable values: `Lease`, `Checkpoint`, `Cadence`. Frozen at birth, compared by value, shareable across Ractors.

use std::hash::{DefaultHasher, Hash, Hasher};

use lease_machines::{Cadence, Checkpoint, Lease};
use magnus::{
    prelude::*, typed_data::Obj, value::ReprValue, Error, IntoValue, RArray, RClass, RHash, RModule, Ruby, TryConvert,
    TypedData, Value,
};

use crate::convert::{issued_token_arg, optional_token_arg, owner_arg, seconds, seconds_arg, shown};

/// One attribute of a value, as Rust data. Ruby objects are made only at the moment they are handed to Ruby (put
/// in a Hash, or returned), never kept in Rust memory the GC cannot see.
pub enum Attribute {
    Integer(u64),
    OptionalInteger(Option<u64>),
    Seconds(f64),
    Lease(Option<Lease>),
}

impl Attribute {
    fn into_value(self, ruby: &Ruby) -> Value {
        match self {
            Self::Integer(value) => value.into_value_with(ruby),
            Self::OptionalInteger(value) => value.into_value_with(ruby),
            Self::Seconds(value) => value.into_value_with(ruby),
            Self::Lease(value) => value.map(|lease| RbLease::wrap(ruby, lease)).into_value_with(ruby),
        }
    }

    fn inspect(&self, ruby: &Ruby) -> String {
        match self {
            Self::Integer(value) => value.to_string(),
            Self::OptionalInteger(None) | Self::Lease(None) => "nil".to_owned(),
            Self::OptionalInteger(Some(value)) => value.to_string(),
            Self::Seconds(value) => ruby.float_from_f64(*value).inspect(),
            Self::Lease(Some(lease)) => inspect_attributes::<RbLease>(ruby, RbLease::attributes_of(lease)),
        }
    }
}

/// What the three value classes share: a Rust value inside, and named attributes outside. `==`, `eql?`, `hash`,
/// `to_h`, `deconstruct_keys` and `inspect` are written once, below, in terms of these.
pub trait FrozenValue: TypedData + Sized {
    /// The core value compared and hashed.
    type Inner: PartialEq + Hash;
    /// The Ruby class name, for `inspect`.
    const CLASS: &'static str;

    fn inner(&self) -> &Self::Inner;

    /// The attributes, in order.
    fn attributes(&self) -> [(&'static str, Attribute); 3];
}

fn eq<T: FrozenValue>(rb_self: &T, other: Value) -> bool {
    <&T>::try_convert(other).is_ok_and(|other| other.inner() == rb_self.inner())
}

/// A Ruby `#hash` from the Rust hash of the value, small enough to be a Fixnum.
fn hash<T: FrozenValue>(rb_self: &T) -> i64 {
    let mut hasher = DefaultHasher::new();
    rb_self.inner().hash(&mut hasher);
    (hasher.finish() >> 2) as i64
}

fn to_h<T: FrozenValue>(ruby: &Ruby, rb_self: &T) -> Result<RHash, Error> {
    let hash = ruby.hash_new();
    for (name, attribute) in rb_self.attributes() {
        let key = ruby.to_symbol(name);
        hash.aset(key, attribute.into_value(ruby))?;
    }
    Ok(hash)
}

/// For pattern matching: every attribute when `keys` is nil, else the ones asked for.
fn deconstruct_keys<T: FrozenValue>(ruby: &Ruby, rb_self: &T, keys: Value) -> Result<RHash, Error> {
    let all = to_h(ruby, rb_self)?;
    if keys.is_nil() {
        return Ok(all);
    }
    let wanted = ruby.hash_new();
    for key in RArray::try_convert(keys)?.into_iter() {
        if let Some(value) = all.get(key) {
            wanted.aset(key, value)?;
        }
    }
    Ok(wanted)
}

fn inspect_attributes<T: FrozenValue>(ruby: &Ruby, attributes: [(&'static str, Attribute); 3]) -> String {
    let shown: Vec<String> =
        attributes.iter().map(|(name, attribute)| format!("{name}={}", attribute.inspect(ruby))).collect();
    format!("#<{} {}>", T::CLASS, shown.join(" "))
}

fn inspect<T: FrozenValue>(ruby: &Ruby, rb_self: &T) -> String {
    inspect_attributes::<T>(ruby, rb_self.attributes())
}

/// Defines the shared methods of a value class (a macro: `method!` needs a concrete function).
macro_rules! define_value_methods {
    ($class:expr, $type:ty) => {{
        let class: RClass = $class;
        class.define_method("==", magnus::method!(eq::<$type>, 1))?;
        class.define_method("eql?", magnus::method!(eq::<$type>, 1))?;
        class.define_method("hash", magnus::method!(hash::<$type>, 0))?;
        class.define_method("to_h", magnus::method!(to_h::<$type>, 0))?;
        class.define_method("deconstruct_keys", magnus::method!(deconstruct_keys::<$type>, 1))?;
        class.define_method("inspect", magnus::method!(inspect::<$type>, 0))?;
        class.define_method("to_s", magnus::method!(inspect::<$type>, 0))?;
        class
    }};
}

/// `LeaseMachines::Lease`: owner, token and `expires_at` (Float seconds from the history's clock origin).
#[magnus::wrap(class = "LeaseMachines::Lease", free_immediately, size, frozen_shareable)]
pub struct RbLease(pub Lease);

impl RbLease {
    /// A new frozen Ruby `Lease`.
    pub fn wrap(ruby: &Ruby, lease: Lease) -> Obj<Self> {
        let object = ruby.obj_wrap(Self(lease));
        object.freeze();
        object
    }

    fn new(ruby: &Ruby, owner: Value, token: Value, expires_at: Value) -> Result<Obj<Self>, Error> {
        let owner = owner_arg(ruby, owner)?;
        let token = issued_token_arg(ruby, "token", token)?;
        let expires_at = seconds_arg(ruby, "expires_at", expires_at)?;
        Ok(Self::wrap(ruby, Lease::new(owner, token, expires_at)))
    }

    fn owner(&self) -> u64 {
        self.0.owner().value()
    }

    fn token(&self) -> u64 {
        self.0.token().value()
    }

    fn expires_at(&self) -> f64 {
        seconds(self.0.expires_at())
    }

    fn is_live(ruby: &Ruby, rb_self: &Self, now: Value) -> Result<bool, Error> {
        Ok(rb_self.0.is_live(seconds_arg(ruby, "now", now)?))
    }

    fn remaining(ruby: &Ruby, rb_self: &Self, now: Value) -> Result<f64, Error> {
        Ok(seconds(rb_self.0.remaining(seconds_arg(ruby, "now", now)?)))
    }
}

/// `LeaseMachines::Checkpoint`: the whole state of an authority, for storage and `Authority.restore`.
#[magnus::wrap(class = "LeaseMachines::Checkpoint", free_immediately, size, frozen_shareable)]
pub struct RbCheckpoint(pub Checkpoint);

impl RbCheckpoint {
    pub fn wrap(ruby: &Ruby, checkpoint: Checkpoint) -> Obj<Self> {
        let object = ruby.obj_wrap(Self(checkpoint));
        object.freeze();
        object
    }

    fn new(ruby: &Ruby, last_issued: Value, lease: Value, observed: Value) -> Result<Obj<Self>, Error> {
        let last_issued = optional_token_arg(ruby, "last_issued", last_issued)?;
        let lease = if lease.is_nil() {
            None
        } else {
            Some(
                <&RbLease>::try_convert(lease)
                    .map_err(|_| {
                        Error::new(
                            ruby.exception_type_error(),
                            format!("lease must be a LeaseMachines::Lease or nil, got {}", shown(lease)),
                        )
                    })?
                    .0,
            )
        };
        let observed = seconds_arg(ruby, "observed", observed)?;
        let checkpoint = Checkpoint::from_parts(last_issued, lease, observed).ok_or_else(|| {
            let issued = last_issued.map_or_else(|| "nil".to_owned(), |token| token.value().to_string());
            let token = lease.map_or(0, |lease| lease.token().value());
            Error::new(
                ruby.exception_arg_error(),
                format!("impossible checkpoint: lease token {token} was never issued (last_issued is {issued})"),
            )
        })?;
        Ok(Self::wrap(ruby, checkpoint))
    }

    fn last_issued(&self) -> Option<u64> {
        self.0.last_issued().map(|token| token.value())
    }

    fn lease(ruby: &Ruby, rb_self: &Self) -> Option<Obj<RbLease>> {
        rb_self.0.lease().map(|lease| RbLease::wrap(ruby, lease))
    }

    fn observed(&self) -> f64 {
        seconds(self.0.observed())
    }
}

/// `LeaseMachines::Cadence`: a holder's TTL, renewal interval and warning margin, in Float seconds.
#[magnus::wrap(class = "LeaseMachines::Cadence", free_immediately, size, frozen_shareable)]
pub struct RbCadence(pub Cadence);

impl RbCadence {
    pub fn wrap(ruby: &Ruby, cadence: Cadence) -> Obj<Self> {
        let object = ruby.obj_wrap(Self(cadence));
        object.freeze();
        object
    }

    fn new(ruby: &Ruby, ttl: Value, renew_every: Value, warn_before: Value) -> Result<Obj<Self>, Error> {
        let ttl_seconds = seconds_arg(ruby, "ttl", ttl)?;
        let renew_seconds = seconds_arg(ruby, "renew_every", renew_every)?;
        let warn_seconds = seconds_arg(ruby, "warn_before", warn_before)?;
        let cadence = Cadence::new(ttl_seconds, renew_seconds, warn_seconds).ok_or_else(|| {
            Error::new(
                ruby.exception_arg_error(),
                format!(
                    "a cadence needs 0 < renew_every < ttl and warn_before < ttl, got ttl={:?} renew_every={:?} \
                     warn_before={:?}",
                    seconds(ttl_seconds),
                    seconds(renew_seconds),
                    seconds(warn_seconds)
                ),
            )
        })?;
        Ok(Self::wrap(ruby, cadence))
    }

    fn ttl(&self) -> f64 {
        seconds(self.0.ttl())
    }

    fn renew_every(&self) -> f64 {
        seconds(self.0.renew_every())
    }

    fn warn_before(&self) -> f64 {
        seconds(self.0.warn_before())
    }
}

pub fn define(ruby: &Ruby, module: RModule) -> Result<(), Error> {
    let lease = define_value_methods!(module.define_class("Lease", ruby.class_object())?, RbLease);
    lease.undef_default_alloc_func();
    lease.define_singleton_method("_new", magnus::function!(RbLease::new, 3))?;
    lease.define_method("owner", magnus::method!(RbLease::owner, 0))?;
    lease.define_method("token", magnus::method!(RbLease::token, 0))?;
    lease.define_method("expires_at", magnus::method!(RbLease::expires_at, 0))?;
    lease.define_method("live?", magnus::method!(RbLease::is_live, 1))?;
    lease.define_method("remaining", magnus::method!(RbLease::remaining, 1))?;

    let checkpoint = define_value_methods!(module.define_class("Checkpoint", ruby.class_object())?, RbCheckpoint);
    checkpoint.undef_default_alloc_func();
    checkpoint.define_singleton_method("_new", magnus::function!(RbCheckpoint::new, 3))?;
    checkpoint.define_method("last_issued", magnus::method!(RbCheckpoint::last_issued, 0))?;
    checkpoint.define_method("lease", magnus::method!(RbCheckpoint::lease, 0))?;
    checkpoint.define_method("observed", magnus::method!(RbCheckpoint::observed, 0))?;

    let cadence = define_value_methods!(module.define_class("Cadence", ruby.class_object())?, RbCadence);
    cadence.undef_default_alloc_func();
    cadence.define_singleton_method("_new", magnus::function!(RbCadence::new, 3))?;
    cadence.define_method("ttl", magnus::method!(RbCadence::ttl, 0))?;
    cadence.define_method("renew_every", magnus::method!(RbCadence::renew_every, 0))?;
    cadence.define_method("warn_before", magnus::method!(RbCadence::warn_before, 0))?;
    Ok(())
}

impl RbLease {
    fn attributes_of(lease: &Lease) -> [(&'static str, Attribute); 3] {
        [
            ("owner", Attribute::Integer(lease.owner().value())),
            ("token", Attribute::Integer(lease.token().value())),
            ("expires_at", Attribute::Seconds(seconds(lease.expires_at()))),
        ]
    }
}

impl FrozenValue for RbLease {
    type Inner = Lease;
    const CLASS: &'static str = "LeaseMachines::Lease";

    fn inner(&self) -> &Lease {
        &self.0
    }

    fn attributes(&self) -> [(&'static str, Attribute); 3] {
        Self::attributes_of(&self.0)
    }
}

impl FrozenValue for RbCheckpoint {
    type Inner = Checkpoint;
    const CLASS: &'static str = "LeaseMachines::Checkpoint";

    fn inner(&self) -> &Checkpoint {
        &self.0
    }

    fn attributes(&self) -> [(&'static str, Attribute); 3] {
        [
            ("last_issued", Attribute::OptionalInteger(self.last_issued())),
            ("lease", Attribute::Lease(self.0.lease())),
            ("observed", Attribute::Seconds(self.observed())),
        ]
    }
}

impl FrozenValue for RbCadence {
    type Inner = Cadence;
    const CLASS: &'static str = "LeaseMachines::Cadence";

    fn inner(&self) -> &Cadence {
        &self.0
    }

    fn attributes(&self) -> [(&'static str, Attribute); 3] {
        [
            ("ttl", Attribute::Seconds(self.ttl())),
            ("renew_every", Attribute::Seconds(self.renew_every())),
            ("warn_before", Attribute::Seconds(self.warn_before())),
        ]
    }
}

/// `inspect` of a checkpoint, for the authority's own `inspect`.
pub fn inspect_checkpoint(ruby: &Ruby, checkpoint: Checkpoint) -> String {
    inspect::<RbCheckpoint>(ruby, &RbCheckpoint(checkpoint))
}
