//! The gem's Symbols and the core's enums, one `match` per direction.

use lease_machines::{ClockPolicy, HolderState, Rejection};
use magnus::{prelude::*, value::LazyId, Error, RModule, Ruby, StaticSymbol, Symbol, TryConvert, Value};

use crate::convert::shown;

macro_rules! ids {
    ($($name:ident = $text:expr;)*) => {
        $(static $name: LazyId = LazyId::new($text);)*
        /// Interns every Symbol up front, so that no later use can fail.
        pub fn intern_all(ruby: &Ruby) {
            $(LazyId::force(&$name, ruby);)*
        }
    };
}

ids! {
    GRANTED = "granted";
    RENEWED = "renewed";
    RELEASED = "released";
    REJECTED = "rejected";
    CLOCK_REGRESSED = Rejection::ClockRegressed.as_str();
    INVALID_TTL = Rejection::InvalidTtl.as_str();
    DEADLINE_OVERFLOW = Rejection::DeadlineOverflow.as_str();
    OCCUPIED = Rejection::Occupied.as_str();
    TOKEN_SPACE_EXHAUSTED = Rejection::TokenSpaceExhausted.as_str();
    NOT_HELD = Rejection::NotHeld.as_str();
    STALE_TOKEN = Rejection::StaleToken.as_str();
    WRONG_OWNER = Rejection::WrongOwner.as_str();
    EXPIRED = Rejection::Expired.as_str();
    REJECT = "reject";
    CLAMP = "clamp";
    CONFIRMED = "confirmed";
    UNCONFIRMED = "unconfirmed";
    AT_RISK = "at_risk";
    HOLDER_EXPIRED = "expired";
    FENCED = "fenced";
}

fn symbol(ruby: &Ruby, id: &LazyId) -> StaticSymbol {
    StaticSymbol::from(LazyId::get_inner_with(id, ruby))
}

/// The statuses of a decision.
#[derive(Clone, Copy)]
pub enum Status {
    Granted,
    Renewed,
    Released,
    Rejected,
}

pub fn status(ruby: &Ruby, status: Status) -> StaticSymbol {
    symbol(
        ruby,
        match status {
            Status::Granted => &GRANTED,
            Status::Renewed => &RENEWED,
            Status::Released => &RELEASED,
            Status::Rejected => &REJECTED,
        },
    )
}

pub fn reason(ruby: &Ruby, rejection: Rejection) -> StaticSymbol {
    symbol(
        ruby,
        match rejection {
            Rejection::ClockRegressed => &CLOCK_REGRESSED,
            Rejection::InvalidTtl => &INVALID_TTL,
            Rejection::DeadlineOverflow => &DEADLINE_OVERFLOW,
            Rejection::Occupied => &OCCUPIED,
            Rejection::TokenSpaceExhausted => &TOKEN_SPACE_EXHAUSTED,
            Rejection::NotHeld => &NOT_HELD,
            Rejection::StaleToken => &STALE_TOKEN,
            Rejection::WrongOwner => &WRONG_OWNER,
            Rejection::Expired => &EXPIRED,
        },
    )
}

/// `LeaseMachines::REASONS`: every rejection's Symbol, in the core's order (`Rejection::ALL`), frozen.
pub fn define_reasons(ruby: &Ruby, module: RModule) -> Result<(), Error> {
    let reasons = ruby.ary_from_iter(Rejection::ALL.into_iter().map(|rejection| reason(ruby, rejection)));
    reasons.freeze();
    module.const_set("REASONS", reasons)
}

pub fn holder_state(ruby: &Ruby, state: HolderState) -> StaticSymbol {
    symbol(
        ruby,
        match state {
            HolderState::Confirmed => &CONFIRMED,
            HolderState::Unconfirmed => &UNCONFIRMED,
            HolderState::AtRisk => &AT_RISK,
            HolderState::Expired => &HOLDER_EXPIRED,
            HolderState::Fenced => &FENCED,
        },
    )
}

pub fn clock_policy(ruby: &Ruby, policy: ClockPolicy) -> StaticSymbol {
    symbol(
        ruby,
        match policy {
            ClockPolicy::Reject => &REJECT,
            ClockPolicy::Clamp => &CLAMP,
        },
    )
}

/// `:reject` or `:clamp`; any other Symbol is an `ArgumentError` listing the valid ones, a non-Symbol a `TypeError`.
pub fn clock_policy_arg(ruby: &Ruby, value: Value) -> Result<ClockPolicy, Error> {
    let Ok(given) = Symbol::try_convert(value) else {
        return Err(Error::new(
            ruby.exception_type_error(),
            format!("clock_policy must be a Symbol (:reject or :clamp), got {}", shown(value)),
        ));
    };
    // A Symbol whose name is not valid UTF-8 is simply not one of ours.
    match given.name().as_deref() {
        Ok("reject") => Ok(ClockPolicy::Reject),
        Ok("clamp") => Ok(ClockPolicy::Clamp),
        _ => Err(Error::new(
            ruby.exception_arg_error(),
            format!("unknown clock_policy {} (valid: :reject, :clamp)", shown(value)),
        )),
    }
}
