//! Stable JSON, format 1: the documented examples read and write back byte for byte, every document round-trips,
//! and bad input is refused with an error that says what is wrong.
#![cfg(test)] // test code throughout: clippy.toml lets it unwrap, expect, panic and index
#![cfg(feature = "serde")]

use core::time::Duration;

use lease_machines::json::{Json, JsonError, FORMAT};
use lease_machines::{
    audit, AuditReport, Checkpoint, Event, FenceGuard, FencedWrite, FencingToken, Lease, LeaseAuthority, LeaseTable,
    Metrics, OwnerId, TableCheckpoint, TableDecision,
};
use proptest::prelude::*;

mod support;
use support::s;

const SPEC: &str = include_str!("../FORMAT.md");

/// The JSON example under the heading that mentions `title`.
fn example(title: &str) -> &'static str {
    let section = SPEC.split("\n## ").find(|section| section.lines().next().is_some_and(|line| line.contains(title)));
    let section = section.unwrap_or_else(|| panic!("FORMAT.md has a section on {title}"));
    let start = section.find("```json\n").expect("the section has an example") + "```json\n".len();
    let end = section[start..].find("\n```").expect("closed");
    &section[start..start + end]
}

fn round_trips<T: Json + PartialEq + core::fmt::Debug>(text: &str) -> T {
    let value = T::from_json(text).unwrap_or_else(|error| panic!("{error}: {text}"));
    assert_eq!(value.to_json(), text, "writes back byte for byte");
    assert_eq!(T::from_json(&value.to_json()).as_ref(), Ok(&value));
    value
}

#[test]
fn documented_authority_checkpoint_round_trips() {
    let checkpoint: Checkpoint = round_trips(example("Authority checkpoint"));
    assert_eq!(checkpoint.last_issued().map(FencingToken::value), Some(3));
    assert_eq!(checkpoint.lease().map(|lease| lease.expires_at()), Some(s(15)));
    assert_eq!(checkpoint.observed(), s(10));
}

#[test]
fn documented_table_checkpoint_round_trips() {
    let checkpoint: TableCheckpoint<String> = round_trips(example("Table checkpoint"));
    let table = LeaseTable::restore(checkpoint);
    assert_eq!(table.revision(&"jobs".to_owned()), 3);
    assert_eq!(table.lease(&"jobs".to_owned()).map(|lease| lease.issued_at()), Some(s(2)));
}

#[test]
fn documented_event_log_round_trips() {
    let events: Vec<Event<String>> = round_trips(example("Event log"));
    assert_eq!(events.len(), 2);
    assert!(audit(&events).is_valid());
}

#[test]
fn documented_metrics_round_trip() {
    let metrics: Metrics = round_trips(example("Metrics"));
    assert_eq!(metrics.rejected_with(lease_machines::Rejection::Occupied), 1);
}

#[test]
fn documented_audit_report_round_trips() {
    let report: AuditReport<String> = round_trips(example("Audit report"));
    assert_eq!(report.findings[0].event_index, 6);
}

#[test]
fn documented_fence_marks_round_trip() {
    let mut guard: FenceGuard<String> = round_trips(example("Fence marks"));
    assert!(!guard.check(&FencedWrite::new("jobs".to_owned(), OwnerId::new(1), FencingToken::FIRST, ())));
}

#[test]
fn a_running_tables_documents_round_trip() {
    let mut table = LeaseTable::new();
    let jobs = "jobs".to_owned();
    let lease = table.acquire(&jobs, OwnerId::new(1), s(0), s(5)).lease().cloned().expect("granted");
    let _ = table.transfer(&jobs, OwnerId::new(1), lease.token(), OwnerId::new(2), s(2), s(10));
    let _ = table.acquire(&jobs, OwnerId::new(3), s(3), s(1));
    let checkpoint = table.checkpoint();
    assert_eq!(TableCheckpoint::<String>::from_json(&checkpoint.to_json()), Ok(checkpoint));
    let events: Vec<Event<String>> = table.events().cloned().collect();
    assert_eq!(Vec::<Event<String>>::from_json(&events.to_json()), Ok(events.clone()));
    let metrics = table.metrics(s(4));
    assert_eq!(Metrics::from_json(&metrics.to_json()), Ok(metrics));
    let report = audit(&events);
    assert_eq!(AuditReport::<String>::from_json(&report.to_json()), Ok(report));
}

#[test]
fn extreme_values_are_exact() {
    let lease = Lease::new(OwnerId::new(u64::MAX), FencingToken::LAST, Duration::MAX);
    let checkpoint = Checkpoint::from_parts(Some(FencingToken::LAST), Some(lease), Duration::MAX).expect("valid");
    let text = checkpoint.to_json();
    assert!(text.contains("\"expires_at_ns\":18446744073709551615999999999"), "{text}");
    assert_eq!(Checkpoint::from_json(&text), Ok(checkpoint));
}

fn error(text: &str) -> String {
    Checkpoint::from_json(text).expect_err("refused").to_string()
}

#[test]
fn bad_documents_are_refused_with_what_is_wrong() {
    assert!(error("").starts_with("malformed JSON document"));
    assert!(error("[1]").starts_with("malformed JSON document"));
    assert_eq!(Checkpoint::from_json(r#"{"format":2}"#), Err(JsonError::UnsupportedFormat(2)));
    assert_eq!(error(r#"{"format":2}"#), "unsupported format 2 (this version reads format 1)");
    assert!(error(r#"{"format":1,"last_issued":null,"lease":null}"#).contains("missing field `observed_ns`"));
    assert!(
        error(r#"{"format":1,"last_issued":null,"lease":null,"observed_ns":0,"x":1}"#).contains("unknown field `x`")
    );
    assert!(error(r#"{"format":1,"last_issued":-1,"lease":null,"observed_ns":0}"#).contains("invalid value"));
    assert!(error(r#"{"format":1,"last_issued":0,"lease":null,"observed_ns":0}"#).contains("last_issued is 0"));
    assert!(error(r#"{"format":1,"last_issued":null,"lease":null,"observed_ns":18446744073709551616000000000}"#)
        .contains("observed_ns is beyond"));
    assert!(error(r#"{"format":1,"last_issued":1,"lease":{"owner":1,"token":2,"expires_at_ns":1},"observed_ns":0}"#)
        .contains("never issued"));
    assert!(error(r#"{"format":1,"last_issued":null,"lease":null,"observed_ns":1.5}"#).starts_with("malformed"));
}

#[test]
fn invalid_table_state_is_refused_with_every_issue() {
    let text = r#"{"format":1,"observed_ns":0,"resources":[{"resource":"a","last_issued":1,"revision":0,"term":null,"lease":{"owner":1,"token":2,"issued_at_ns":5,"expires_at_ns":5,"term":null}}]}"#;
    let message = TableCheckpoint::<String>::from_json(text).expect_err("invalid").to_string();
    for code in ["revision_behind_tokens", "token_above_high_water", "expiry_not_after_issue", "issued_after_watermark"]
    {
        assert!(message.contains(code), "{message} names {code}");
    }
}

#[test]
fn unknown_names_are_refused() {
    let events = example("Event log").replace("\"transferred\"", "\"stolen\"");
    assert_eq!(
        Vec::<Event<String>>::from_json(&events).map_err(|error| error.to_string()),
        Err("invalid document: unknown event kind \"stolen\"".to_owned())
    );
    let report = example("Audit report").replace("reap_unexpired", "bad_vibes");
    assert!(AuditReport::<String>::from_json(&report).is_err());
    let metrics = example("Metrics").replace("\"occupied\"", "\"busy\"");
    assert!(Metrics::from_json(&metrics).is_err());
    let marks = r#"{"format":1,"marks":[{"resource":"a","token":1,"owner":1},{"resource":"a","token":2,"owner":1}]}"#;
    assert!(FenceGuard::<String>::from_json(marks).expect_err("duplicate").to_string().contains("two marks"));
    assert_eq!(FORMAT, 1);
}

proptest! {
    #[test]
    fn authority_checkpoints_round_trip(requests in prop::collection::vec((0u64..3, 0u64..20, 1u64..10), 0..20)) {
        let mut authority = LeaseAuthority::new();
        for (owner, at, ttl) in requests {
            let _ = authority.acquire(OwnerId::new(owner), s(at), s(ttl));
        }
        let checkpoint = authority.checkpoint();
        prop_assert_eq!(Checkpoint::from_json(&checkpoint.to_json()), Ok(checkpoint));
    }

    #[test]
    fn table_documents_round_trip(requests in prop::collection::vec((0usize..4, 0u64..3, 0u64..400, 0u64..3_000), 0..40)) {
        let mut table = LeaseTable::new();
        let mut now = Duration::ZERO;
        for (resource, owner, step, ttl) in requests {
            now += Duration::from_millis(step);
            let name = ["a", "b", "c", "d"][resource].to_owned();
            if let TableDecision::Rejected(_) = table.acquire(&name, OwnerId::new(owner), now, Duration::from_millis(ttl)) {
                let _ = table.reap(&name, now);
            }
        }
        let checkpoint = table.checkpoint();
        prop_assert_eq!(TableCheckpoint::<String>::from_json(&checkpoint.to_json()), Ok(checkpoint));
        let events: Vec<Event<String>> = table.events().cloned().collect();
        prop_assert_eq!(Vec::<Event<String>>::from_json(&events.to_json()), Ok(events));
        let metrics = table.metrics(now);
        prop_assert_eq!(Metrics::from_json(&metrics.to_json()), Ok(metrics));
    }

    #[test]
    fn decoders_never_panic_on_arbitrary_text(text in ".{0,200}") {
        let _ = Checkpoint::from_json(&text);
        let _ = TableCheckpoint::<String>::from_json(&text);
        let _ = Vec::<Event<String>>::from_json(&text);
        let _ = Metrics::from_json(&text);
        let _ = AuditReport::<String>::from_json(&text);
        let _ = FenceGuard::<String>::from_json(&text);
    }
}

#[test]
fn resource_names_are_checked_where_documents_name_them() {
    use lease_machines::{check_resource_name, ResourceNameError, MAX_RESOURCE_BYTES};

    assert_eq!(check_resource_name(""), Err(ResourceNameError::Empty));
    assert_eq!(check_resource_name(&"é".repeat(MAX_RESOURCE_BYTES / 2)), Ok(()));
    let long = "a".repeat(MAX_RESOURCE_BYTES + 1);
    assert_eq!(check_resource_name(&long), Err(ResourceNameError::TooLong { bytes: MAX_RESOURCE_BYTES + 1 }));
    assert_eq!(
        ResourceNameError::TooLong { bytes: 2048 }.to_string(),
        "must be at most 1024 bytes of UTF-8, got 2048 bytes"
    );

    let refused = |result: Result<(), JsonError>| result.expect_err("refused").to_string();
    let table = example("Table checkpoint").replace("\"mail\"", "\"\"");
    assert_eq!(
        refused(TableCheckpoint::<String>::from_json(&table).map(drop)),
        "invalid document: resources[1].resource must not be empty"
    );
    let events = example("Event log").replacen("\"jobs\"", &format!("{long:?}"), 1);
    assert_eq!(
        refused(Vec::<Event<String>>::from_json(&events).map(drop)),
        "invalid document: events[0].resource must be at most 1024 bytes of UTF-8, got 1025 bytes"
    );
    let marks = example("Fence marks").replace("\"jobs\"", "\"\"");
    assert_eq!(
        refused(FenceGuard::<String>::from_json(&marks).map(drop)),
        "invalid document: marks[0].resource must not be empty"
    );
    let report = example("Audit report").replace("\"jobs\"", "\"\"");
    assert_eq!(
        refused(AuditReport::<String>::from_json(&report).map(drop)),
        "invalid document: findings[0].resource must not be empty"
    );
    // Numbered resources have no names to check; shared names read as owned ones do.
    assert!(TableCheckpoint::<u64>::from_json(r#"{"format":1,"observed_ns":0,"resources":[]}"#).is_ok());
    let shared = TableCheckpoint::<std::sync::Arc<str>>::from_json(example("Table checkpoint")).expect("valid");
    assert_eq!(shared.to_json(), example("Table checkpoint"));
}

#[test]
fn metrics_no_table_can_report_are_refused_naming_the_rule() {
    let documented = Metrics::from_json(example("Metrics")).expect("the example is valid");
    let refused = |edit: &dyn Fn(&mut Metrics)| {
        let mut metrics = documented;
        edit(&mut metrics);
        let issue = metrics.check().expect_err("impossible").to_string();
        assert_eq!(
            Metrics::from_json(&metrics.to_json()).map_err(|error| error.to_string()),
            Err(format!("invalid document: {issue}"))
        );
        issue
    };
    assert_eq!(refused(&|m| m.live_leases = 0), "live_leases + expired_leases must equal stored_leases");
    assert_eq!(refused(&|m| m.resources = 0), "stored_leases cannot exceed resources");
    assert_eq!(refused(&|m| m.events = 2), "events must equal accepted (one event per accepted command)");
    assert_eq!(refused(&|m| m.rejected = 0), "rejections must add up to rejected");
    assert_eq!(refused(&|m| m.rejections[0] = 5), "rejections must add up to rejected");
    assert_eq!(refused(&|m| m.holder_transitions = 4), "holder_transitions cannot exceed accepted");
    assert_eq!(
        refused(&|m| m.highest_token = None),
        "highest_token must be null without resources and set with stored leases"
    );
    let negative = example("Metrics").replace("\"events\":3", "\"events\":-3");
    assert_eq!(
        Metrics::from_json(&negative).map_err(|error| error.to_string()),
        Err("invalid document: events must be in 0..=18446744073709551615, got -3".to_owned())
    );
    let negative = example("Metrics").replace("\"occupied\":1", "\"occupied\":-1");
    assert!(Metrics::from_json(&negative).expect_err("negative").to_string().contains("rejections.occupied must be"));
    assert_eq!(Metrics::default().check(), Ok(()), "a new table's metrics");
}
