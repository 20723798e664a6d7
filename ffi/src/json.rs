//! The JSON documents (format 1, core/FORMAT.md) read from Ruby Strings.

use lease_machines::json::Json;
use magnus::{Error, Ruby, Value};

use crate::convert::{string_arg, utf8_text};
use crate::errors;

/// The text of a JSON document argument: a String (a `TypeError` otherwise) holding UTF-8, whatever its encoding
/// says (see `convert::utf8_text`), else `LeaseMachines::InvalidDocument`.
fn document(ruby: &Ruby, text: Value) -> Result<String, Error> {
    utf8_text(ruby, string_arg(ruby, "json", text)?)
        .ok_or_else(|| errors::invalid_document(ruby, "the JSON is not valid UTF-8"))
}

/// The value a JSON document describes, or `LeaseMachines::InvalidDocument` with the reason.
pub fn read<T: Json>(ruby: &Ruby, text: Value) -> Result<T, Error> {
    T::from_json(&document(ruby, text)?).map_err(|error| errors::invalid_document(ruby, &error.to_string()))
}
