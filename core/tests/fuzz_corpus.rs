//! Replays the fuzz corpus (`fuzz/corpus/json_decoders`, kept in the repository) through every JSON reader on each
//! `cargo test`: no input may panic, and whatever a reader accepts must round-trip. The fuzzer itself runs with
//! `cargo fuzz run json_decoders` (see `fuzz/README.md`).
#![cfg(test)] // test code throughout: clippy.toml lets it unwrap, expect, panic and index
#![cfg(feature = "serde")]

use std::fs;
use std::path::Path;

use lease_machines::json::Json;
use lease_machines::{AuditReport, Checkpoint, Event, FenceGuard, Metrics, TableCheckpoint};

fn round_trip<T: Json + PartialEq + core::fmt::Debug>(text: &str) -> bool {
    match T::from_json(text) {
        Ok(value) => {
            assert_eq!(T::from_json(&value.to_json()).as_ref(), Ok(&value), "round-trip of {text:?}");
            true
        }
        Err(_) => false,
    }
}

#[test]
fn every_corpus_input_is_decoded_without_panic_and_accepted_ones_round_trip() {
    let directory = Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz/corpus/json_decoders");
    let mut inputs = 0;
    let mut accepted = 0;
    for entry in fs::read_dir(&directory).expect("the corpus is in the repository") {
        let bytes = fs::read(entry.expect("readable entry").path()).expect("readable input");
        inputs += 1;
        let Ok(text) = std::str::from_utf8(&bytes) else { continue };
        let results = [
            round_trip::<Checkpoint>(text),
            round_trip::<TableCheckpoint<String>>(text),
            round_trip::<Vec<Event<String>>>(text),
            round_trip::<Metrics>(text),
            round_trip::<AuditReport<String>>(text),
            round_trip::<FenceGuard<String>>(text),
        ];
        accepted += results.iter().filter(|ok| **ok).count();
    }
    assert!(inputs >= 6, "the corpus holds at least the FORMAT.md examples");
    assert!(accepted >= 6, "the documented examples are accepted");
}
