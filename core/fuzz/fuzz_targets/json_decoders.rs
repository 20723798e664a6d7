//! Every JSON reader, fed arbitrary bytes: none may panic, and whatever one accepts must write back to a document
//! that reads as the same value.
#![no_main]

use lease_machines::json::Json;
use lease_machines::{AuditReport, Checkpoint, Event, FenceGuard, Metrics, TableCheckpoint};
use libfuzzer_sys::fuzz_target;

fn round_trip<T: Json + PartialEq + core::fmt::Debug>(text: &str) {
    if let Ok(value) = T::from_json(text) {
        let again = T::from_json(&value.to_json());
        assert_eq!(again.as_ref(), Ok(&value), "a document the reader accepted must round-trip");
    }
}

fuzz_target!(|data: &[u8]| {
    let Ok(text) = core::str::from_utf8(data) else { return };
    round_trip::<Checkpoint>(text);
    round_trip::<TableCheckpoint<String>>(text);
    round_trip::<Vec<Event<String>>>(text);
    round_trip::<Metrics>(text);
    round_trip::<AuditReport<String>>(text);
    round_trip::<FenceGuard<String>>(text);
});
