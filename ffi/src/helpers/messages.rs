//! How an error message shows a value, and the `TypeError` that names an argument, what it must be and what it got.

use magnus::{prelude::*, Error, Integer, RString, Ruby, Value};

/// How many characters of a value's `inspect` an error message shows; a longer one ends in `...`.
const SHOWN_CHARS: usize = 64;

/// A value as an error message shows it: its `inspect`, at most [`SHOWN_CHARS`] characters (a longer one cut and
/// ended with `...`), so that a huge String or Array cannot flood the message; its class name when `inspect`
/// raises, returns something other than a String, or is missing (a `BasicObject`). A Bignum too large to print
/// quickly is described by its size. The one such helper: Ruby's is `LeaseMachines.shown`, this function.
pub fn shown(value: Value) -> String {
    if let Some(integer) = Integer::from_value(value) {
        // A huge Bignum's decimal form is slow to build: describe it by its size instead.
        if let Ok(bits) = integer.funcall::<_, _, u64>("bit_length", ()) {
            if bits > 1024 {
                return format!("an Integer of {bits} bits");
            }
        }
    }
    let Some(inspected) = value.funcall::<_, _, Value>("inspect", ()).ok().and_then(RString::from_value) else {
        return class_name(value);
    };
    let ruby = Ruby::get_with(inspected);
    // SAFETY: the text is copied into an owned String before any other Ruby call.
    let text = unsafe { inspected.conv_enc(ruby.utf8_encoding()).unwrap_or(inspected).to_string_lossy().into_owned() };
    if text.chars().count() > SHOWN_CHARS {
        let head: String = text.chars().take(SHOWN_CHARS - 3).collect();
        format!("{head}...")
    } else {
        text
    }
}

pub fn class_name(value: Value) -> String {
    // SAFETY: the name is copied into an owned String before any other Ruby call.
    unsafe { value.classname() }.into_owned()
}

pub fn type_error(ruby: &Ruby, name: &str, expected: &str, value: Value) -> Error {
    Error::new(
        ruby.exception_type_error(),
        format!("{name} must be {expected}, got {} {}", class_name(value), shown(value)),
    )
}
