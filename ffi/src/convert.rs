//! Ruby values in, Rust values out: the gem's input rules, in one place.
//!
//! - Owners and tokens are Integers in `0..2**64-1`: a Float is a `TypeError`, an Integer out of range a
//!   `RangeError`, anything else a `TypeError`.
//! - Times and TTLs are seconds as a Float (an Integer is accepted and converted to Float): a negative, NaN,
//!   infinite or too large value (above `2**64` seconds) is an `ArgumentError`, anything that is not a Float or an
//!   Integer a `TypeError`.
//! - Resource names are Strings (else a `TypeError`) in UTF-8, non-empty and at most `LeaseMachines::MAX_RESOURCE_BYTES`
//!   (the core's `MAX_RESOURCE_BYTES`) bytes, else an `ArgumentError` that says the limit and the size given.
//!
//! - A record (`LeaseMachines::Lease`, `Event`, ...) is an instance of its `Data` class, read by member name (see
//!   `data`); anything else is a `TypeError`.
//!
//! Every message names the argument and shows the value it got.
//!
//! # Floats and nanoseconds
//!
//! The core counts time in nanoseconds (`Duration`); Ruby sees Floats. A Float input becomes the nearest
//! nanosecond, and every instant the extension hands back converts to the Float it came from, so values round-trip.
//! The exceptions are a deadline the engine computes (`now + ttl`) and an instant read from a JSON document (in
//! nanoseconds), which need not be a Float's nanosecond: every instant handed to Ruby goes through [`instant`], which
//! moves it up to the next one ([`on_grid`]), so that the Float a caller sees is never earlier than the instant the
//! engine uses (at Unix-epoch scale, by less than a microsecond). Lengths of time (`remaining`, a cadence) are
//! [`seconds`], the nearest Float. `2**64` seconds, the Float nearest `Duration::MAX`, stands for `Duration::MAX`.

use core::time::Duration;

use lease_machines::{check_resource_name, FencingToken, OwnerId};
use magnus::encoding::{EncodingCapable, RbEncoding};
use magnus::{value::ReprValue, Error, Float, Integer, RArray, RString, Ruby, TryConvert, Value};

use crate::helpers::{shown, type_error};

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
    optional(value, |value| issued_token_arg(ruby, name, value))
}

/// `None` for `nil`, else `convert(value)`.
pub fn optional<T>(value: Value, convert: impl FnOnce(Value) -> Result<T, Error>) -> Result<Option<T>, Error> {
    if value.is_nil() {
        Ok(None)
    } else {
        convert(value).map(Some)
    }
}

/// An Integer in `0..2**64-1` that is also a `usize` (a count, a capacity).
pub fn usize_arg(ruby: &Ruby, name: &str, value: Value) -> Result<usize, Error> {
    usize::try_from(u64_arg(ruby, name, value)?)
        .map_err(|_| Error::new(ruby.exception_range_error(), format!("{name} is too large, got {}", shown(value))))
}

/// `true` or `false`.
pub fn bool_arg(ruby: &Ruby, name: &str, value: Value) -> Result<bool, Error> {
    if value.is_kind_of(ruby.class_true_class()) {
        Ok(true)
    } else if value.is_kind_of(ruby.class_false_class()) {
        Ok(false)
    } else {
        Err(Error::new(ruby.exception_type_error(), format!("{name} must be true or false, got {}", shown(value))))
    }
}

/// The text of `string` as UTF-8, whatever its encoding says: its bytes when they are valid UTF-8 (a String read
/// under the C locale is tagged US-ASCII, one from `#b` or a socket ASCII-8BIT, yet both may hold UTF-8); else, for
/// an encoding other than UTF-8, US-ASCII and ASCII-8BIT, its characters transcoded. A String in a wide encoding
/// (UTF-16, UTF-32), whose bytes are not its text's UTF-8 even when they would pass for it, is always transcoded.
/// `None` when neither gives UTF-8.
pub fn utf8_text(ruby: &Ruby, string: RString) -> Option<String> {
    let encoding = string.enc_get();
    let wide = RbEncoding::from(encoding).mbminlen() > 1;
    if !wide {
        // SAFETY: the bytes are copied into an owned String before any other Ruby call.
        if let Ok(text) = std::str::from_utf8(unsafe { string.as_slice() }) {
            return Some(text.to_owned());
        }
        if [ruby.utf8_encindex(), ruby.usascii_encindex(), ruby.ascii8bit_encindex()].contains(&encoding) {
            return None;
        }
    }
    let transcoded = string.conv_enc(ruby.utf8_encoding()).ok()?;
    // SAFETY: as above.
    unsafe { transcoded.test_as_str() }.filter(|_| transcoded.enc_get() == ruby.utf8_encindex()).map(str::to_owned)
}

/// A resource name: a String holding UTF-8 (see [`utf8_text`]), non-empty and at most `MAX_RESOURCE_BYTES` bytes
/// (the core's rule, `check_resource_name`).
pub fn resource_arg(ruby: &Ruby, value: Value) -> Result<String, Error> {
    let Some(string) = RString::from_value(value) else {
        return Err(Error::new(
            ruby.exception_type_error(),
            format!("resource must be a String, got {}", shown(value)),
        ));
    };
    let name = utf8_text(ruby, string).ok_or_else(|| {
        Error::new(ruby.exception_arg_error(), format!("resource must be valid UTF-8, got {}", shown(value)))
    })?;
    check_resource_name(&name).map_err(|error| Error::new(ruby.exception_arg_error(), format!("resource {error}")))?;
    Ok(name)
}

/// A String argument (a JSON document): only a String or an instance of a subclass, never converted with
/// `to_str`, so that no Ruby code runs; anything else is a `TypeError` naming the argument.
pub fn string_arg(ruby: &Ruby, name: &str, value: Value) -> Result<RString, Error> {
    RString::from_value(value).ok_or_else(|| type_error(ruby, name, "a String", value))
}

/// `LeaseMachines._resource_name`: a resource name checked as every command checks it ([`resource_arg`]), as the
/// frozen UTF-8 String it is stored under, for the Ruby layer's store.
pub fn resource_name(ruby: &Ruby, value: Value) -> Result<RString, Error> {
    Ok(frozen(ruby, &resource_arg(ruby, value)?))
}

/// A frozen Ruby String, so that the records holding it can be shared across Ractors.
pub fn frozen(ruby: &Ruby, text: &str) -> RString {
    let string = ruby.str_new(text);
    string.freeze();
    string
}

/// `2**64`, the Float nearest `Duration::MAX` (`2**64 - 1` seconds and 999,999,999 nanoseconds).
const TWO_POW_64: f64 = 18_446_744_073_709_551_616.0;

/// The `Duration` a Float number of seconds stands for: the nearest nanosecond, `Duration::MAX` for `2**64`, and
/// `None` for NaN, negative or larger values.
fn duration_of(seconds: f64) -> Option<Duration> {
    if !(0.0..=TWO_POW_64).contains(&seconds) {
        None
    } else if seconds == TWO_POW_64 {
        Some(Duration::MAX)
    } else {
        Duration::try_from_secs_f64(seconds).ok()
    }
}

/// The earliest instant at or after `instant` that a Float stands for exactly: where a computed deadline moves to,
/// so that the Float the caller sees is never earlier than the deadline the engine keeps.
pub fn on_grid(instant: Duration) -> Duration {
    let nearest = instant.as_secs_f64();
    match duration_of(nearest) {
        Some(exact) if exact >= instant => exact,
        _ => duration_of(nearest.next_up()).unwrap_or(Duration::MAX),
    }
}

/// Seconds as a Float or an Integer: finite, non-negative, at most `2**64`.
pub fn seconds_arg(ruby: &Ruby, name: &str, value: Value) -> Result<Duration, Error> {
    let invalid = || {
        Error::new(
            ruby.exception_arg_error(),
            format!("{name} must be finite, non-negative seconds up to 2**64, got {}", shown(value)),
        )
    };
    if let Some(float) = Float::from_value(value) {
        return duration_of(float.to_f64()).ok_or_else(invalid);
    }
    if let Some(integer) = Integer::from_value(value) {
        // An Integer stands for the Float it converts to (`Integer#to_f`), so one rule bounds both: `2**64` is
        // accepted as `2.0**64` is, and an Integer too large for any Float is refused as infinity is.
        return f64::try_convert(integer.as_value()).ok().and_then(duration_of).ok_or_else(invalid);
    }
    Err(type_error(ruby, name, "seconds as a Float or an Integer", value))
}

/// A length of time as the nearest Float (an instant goes through [`instant`]).
pub fn seconds(duration: Duration) -> f64 {
    duration.as_secs_f64()
}

/// An instant as the Float the gem hands to Ruby: the earliest Float at or after it (see [`on_grid`]). Exact for
/// every instant that came from a Float; a computed deadline, or an instant read from a JSON document in
/// nanoseconds, moves up to the next Float, so that `now:` equal to any instant the gem reports is never before the
/// instant the engine keeps (a lease is never live at the `expires_at` it reports, the watermark never ahead of
/// `observed`).
pub fn instant(duration: Duration) -> f64 {
    seconds(on_grid(duration))
}

/// A token that is never `current`: what a presented token 0 (which is never issued) stands for, so the request
/// still goes through every check before it is refused as `:not_held` or `:stale_token`.
pub fn never_current(current: Option<FencingToken>) -> FencingToken {
    if current == Some(FencingToken::FIRST) {
        FencingToken::LAST
    } else {
        FencingToken::FIRST
    }
}

/// An Array argument; anything else is a `TypeError` naming it.
pub fn array_arg(ruby: &Ruby, name: &str, value: Value) -> Result<RArray, Error> {
    RArray::from_value(value).ok_or_else(|| {
        Error::new(ruby.exception_type_error(), format!("{name} must be an Array, got {}", shown(value)))
    })
}
