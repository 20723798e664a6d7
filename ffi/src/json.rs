//! The JSON documents (format 1, core/FORMAT.md) read from Ruby Strings.

use lease_machines::json::Json;
use magnus::{Error, RString, Ruby};

use crate::errors;

/// The text of a JSON document argument, or `LeaseMachines::InvalidDocument` when it is not UTF-8.
fn document(ruby: &Ruby, text: RString) -> Result<String, Error> {
    // SAFETY: the bytes are copied into an owned String before any other Ruby call.
    unsafe { text.as_str() }
        .map(str::to_owned)
        .map_err(|_| errors::invalid_document(ruby, "the JSON is not valid UTF-8"))
}

/// The value a JSON document describes, or `LeaseMachines::InvalidDocument` with the reason.
pub fn read<T: Json>(ruby: &Ruby, text: RString) -> Result<T, Error> {
    T::from_json(&document(ruby, text)?).map_err(|error| errors::invalid_document(ruby, &error.to_string()))
}
