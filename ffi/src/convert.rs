//! Ruby values in, Rust values out: the gem's input rules, in one place.
//!
//! - Owners and tokens are Integers in `0..2**64-1`: a Float is a `TypeError`, an Integer out of range a
//!   `RangeError`, anything else a `TypeError`.
//! - Times and TTLs are seconds as a Float (an Integer is accepted): a negative, NaN, infinite or unrepresentably
//!   large value (beyond `2**64` seconds) is an `ArgumentError`, anything that is not a Float or an Integer a
//!   `TypeError`.
//!
//! Every message names the argument and shows the value it got.

use core::time::Duration;

use lease_machines::{FencingToken, OwnerId};
use magnus::{value::ReprValue, Error, Float, Integer, Ruby, Value};

/// `inspect` of a value for an error message, bounded so a huge Bignum or String cannot flood it.
fn shown(value: Value) -> String {
    let text = value.inspect();
    if text.chars().count() > 64 {
        let head: String = text.chars().take(61).collect();
        format!("{head}...")
    } else {
        text
    }
}

fn class_name(value: Value) -> String {
    value.class().inspect()
}

fn type_error(ruby: &Ruby, name: &str, expected: &str, value: Value) -> Error {
    Error::new(
        ruby.exception_type_error(),
        format!("{name} must be {expected}, got {} {}", class_name(value), shown(value)),
    )
}

/// An Integer in `0..2**64-1`.
pub fn u64_arg(ruby: &Ruby, name: &str, value: Value) -> Result<u64, Error> {
    if let Some(integer) = Integer::from_value(value) {
        return integer.to_u64().map_err(|_| {
            Error::new(ruby.exception_range_error(), format!("{name} must be in 0..2**64-1, got {}", shown(value)))
        });
    }
    Err(type_error(ruby, name, "an Integer in 0..2**64-1", value))
}

/// An owner id: any Integer in `0..2**64-1`.
pub fn owner_arg(ruby: &Ruby, value: Value) -> Result<OwnerId, Error> {
    u64_arg(ruby, "owner", value).map(OwnerId::new)
}

/// A token as presented by a caller: an Integer in `0..2**64-1`, where 0 (never issued) is `None`.
pub fn token_arg(ruby: &Ruby, name: &str, value: Value) -> Result<Option<FencingToken>, Error> {
    u64_arg(ruby, name, value).map(FencingToken::new)
}

/// A token that must be one an authority can have issued: an Integer in `1..2**64-1`.
pub fn issued_token_arg(ruby: &Ruby, name: &str, value: Value) -> Result<FencingToken, Error> {
    token_arg(ruby, name, value)?.ok_or_else(|| {
        Error::new(ruby.exception_arg_error(), format!("{name} must be an issued token (1..2**64-1), got 0"))
    })
}

/// `nil` or an issued token.
pub fn optional_token_arg(ruby: &Ruby, name: &str, value: Value) -> Result<Option<FencingToken>, Error> {
    if value.is_nil() {
        Ok(None)
    } else {
        issued_token_arg(ruby, name, value).map(Some)
    }
}

/// Seconds as a Float or an Integer, finite, non-negative and below `2**64`.
pub fn seconds_arg(ruby: &Ruby, name: &str, value: Value) -> Result<Duration, Error> {
    let invalid = || {
        Error::new(
            ruby.exception_arg_error(),
            format!("{name} must be finite, non-negative seconds below 2**64, got {}", shown(value)),
        )
    };
    if let Some(float) = Float::from_value(value) {
        let seconds = float.to_f64();
        if seconds.is_nan() || seconds < 0.0 {
            return Err(invalid());
        }
        return Duration::try_from_secs_f64(seconds).map_err(|_| invalid());
    }
    if let Some(integer) = Integer::from_value(value) {
        return integer.to_u64().map(Duration::from_secs).map_err(|_| invalid());
    }
    Err(type_error(ruby, name, "seconds as a Float or an Integer", value))
}

/// Seconds as the Float the gem returns.
pub fn seconds(duration: Duration) -> f64 {
    duration.as_secs_f64()
}
