//! Stable JSON, format 1: checkpoints (one authority, a whole table), event logs, metrics, audit reports and fence
//! marks. The format is specified in `FORMAT.md` at the crate's root, included below.
//!
#![doc = include_str!("../FORMAT.md")]

use alloc::collections::BTreeMap;
use alloc::string::{String, ToString};
#[cfg(target_has_atomic = "ptr")]
use alloc::sync::Arc;
use alloc::vec::Vec;
use core::fmt;
use core::time::Duration;

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

use crate::{
    check_resource_name, AuditReport, Checkpoint, Event, EventKind, FenceGuard, FenceMark, FencingToken, Finding,
    FindingCode, Lease, LeaseRecord, Metrics, OwnerId, Rejection, ResourceNameError, ResourceRecord, TableCheckpoint,
};

/// The format version this crate writes and reads.
pub const FORMAT: u64 = 1;

/// Why a JSON document was refused. Decoding never panics, whatever the input.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum JsonError {
    /// Not JSON, or not the shape of the document asked for (a missing or unknown field, a wrong type).
    Syntax(String),
    /// A `"format"` other than [`FORMAT`].
    UnsupportedFormat(u64),
    /// Well-formed, but values no history can produce (token 0, a time past [`Duration::MAX`], a table record that
    /// fails validation, ...), described.
    Invalid(String),
}

impl fmt::Display for JsonError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Syntax(message) => write!(f, "malformed JSON document: {message}"),
            Self::UnsupportedFormat(format) => {
                write!(f, "unsupported format {format} (this version reads format {FORMAT})")
            }
            Self::Invalid(message) => write!(f, "invalid document: {message}"),
        }
    }
}

impl core::error::Error for JsonError {}

/// A value with a stable JSON document form (format 1).
pub trait Json: Sized {
    /// The document, compact, fields in the documented order.
    fn to_json(&self) -> String;

    /// The value a document describes; refused with a [`JsonError`] saying what is wrong.
    fn from_json(text: &str) -> Result<Self, JsonError>;
}

mod sealed {
    use crate::ResourceNameError;

    pub trait Sealed {
        /// Whether the value may name a resource in a document: names follow
        /// [`check_resource_name`](crate::check_resource_name), numbers are all valid.
        fn check_name(&self) -> Result<(), ResourceNameError> {
            Ok(())
        }
    }
}

/// The resource types the JSON documents support: those that serialise to a JSON string or integer, so that writing
/// a document cannot fail. `String` (or the shared `Arc<str>`) for names, which readers check with
/// [`check_resource_name`] (the Ruby gem's choice), or an integer type for numbered resources.
pub trait JsonResource: Ord + Clone + fmt::Debug + Serialize + DeserializeOwned + sealed::Sealed {}

macro_rules! json_resources {
    ($($type:ty),*) => {$(
        impl sealed::Sealed for $type {}
        impl JsonResource for $type {}
    )*};
}

json_resources!(u8, u16, u32, u64, i8, i16, i32, i64);

impl sealed::Sealed for String {
    fn check_name(&self) -> Result<(), ResourceNameError> {
        check_resource_name(self)
    }
}
impl JsonResource for String {}

#[cfg(target_has_atomic = "ptr")]
impl sealed::Sealed for Arc<str> {
    fn check_name(&self) -> Result<(), ResourceNameError> {
        check_resource_name(self)
    }
}
#[cfg(target_has_atomic = "ptr")]
impl JsonResource for Arc<str> {}

/// `resource` if it may name a resource; else why not, naming the field it was read from (`events[2].resource`).
fn named<R: JsonResource>(list: &str, index: usize, resource: R) -> Result<R, JsonError> {
    resource
        .check_name()
        .map(|()| resource)
        .map_err(|error| JsonError::Invalid(alloc::format!("{list}[{index}].resource {error}")))
}

/// A count read as a wider integer, so that a negative one is refused naming its field.
fn count(field: &str, value: i128) -> Result<u64, JsonError> {
    u64::try_from(value)
        .map_err(|_| JsonError::Invalid(alloc::format!("{field} must be in 0..=18446744073709551615, got {value}")))
}

fn encode<T: Serialize>(document: &T) -> String {
    // Every document is plain structs of integers, strings and `JsonResource`s: serialising one into a String
    // cannot fail (no map with non-string keys, no I/O), so the empty fallback is never taken.
    serde_json::to_string(document).unwrap_or_default()
}

#[derive(Deserialize)]
struct Version {
    format: u64,
}

/// Checks the format before the shape, so a future format is reported as such rather than as a syntax error.
fn decode<T: DeserializeOwned>(text: &str) -> Result<T, JsonError> {
    let version: Version = serde_json::from_str(text).map_err(|error| JsonError::Syntax(error.to_string()))?;
    if version.format != FORMAT {
        return Err(JsonError::UnsupportedFormat(version.format));
    }
    serde_json::from_str(text).map_err(|error| JsonError::Syntax(error.to_string()))
}

fn nanos(instant: Duration) -> u128 {
    instant.as_nanos()
}

fn instant(field: &str, nanos: u128) -> Result<Duration, JsonError> {
    let secs = u64::try_from(nanos / 1_000_000_000)
        .map_err(|_| JsonError::Invalid(alloc::format!("{field} is beyond the greatest representable instant")))?;
    let subsec = u32::try_from(nanos % 1_000_000_000).unwrap_or(0);
    Ok(Duration::new(secs, subsec))
}

fn fencing_token(field: &str, value: u64) -> Result<FencingToken, JsonError> {
    FencingToken::new(value).ok_or_else(|| JsonError::Invalid(alloc::format!("{field} is 0, which is never a token")))
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct LeaseWire {
    owner: u64,
    token: u64,
    expires_at_ns: u128,
}

impl LeaseWire {
    fn of(lease: Lease) -> Self {
        Self { owner: lease.owner().value(), token: lease.token().value(), expires_at_ns: nanos(lease.expires_at()) }
    }

    fn lease(&self) -> Result<Lease, JsonError> {
        Ok(Lease::new(
            OwnerId::new(self.owner),
            fencing_token("lease token", self.token)?,
            instant("expires_at_ns", self.expires_at_ns)?,
        ))
    }
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct CheckpointWire {
    format: u64,
    last_issued: Option<u64>,
    lease: Option<LeaseWire>,
    observed_ns: u128,
}

impl Json for Checkpoint {
    fn to_json(&self) -> String {
        encode(&CheckpointWire {
            format: FORMAT,
            last_issued: self.last_issued().map(FencingToken::value),
            lease: self.lease().map(LeaseWire::of),
            observed_ns: nanos(self.observed()),
        })
    }

    fn from_json(text: &str) -> Result<Self, JsonError> {
        let wire: CheckpointWire = decode(text)?;
        let last_issued = wire.last_issued.map(|value| fencing_token("last_issued", value)).transpose()?;
        let lease = wire.lease.as_ref().map(LeaseWire::lease).transpose()?;
        Checkpoint::from_parts(last_issued, lease, instant("observed_ns", wire.observed_ns)?)
            .ok_or_else(|| JsonError::Invalid("the lease's token is above last_issued: it was never issued".into()))
    }
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct LeaseRecordWire {
    owner: u64,
    token: u64,
    issued_at_ns: u128,
    expires_at_ns: u128,
    term: Option<u64>,
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct ResourceWire<R> {
    resource: R,
    last_issued: Option<u64>,
    revision: u64,
    term: Option<u64>,
    lease: Option<LeaseRecordWire>,
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct TableWire<R> {
    format: u64,
    observed_ns: u128,
    resources: Vec<ResourceWire<R>>,
}

impl<R: JsonResource> Json for TableCheckpoint<R> {
    fn to_json(&self) -> String {
        let resources = self
            .records()
            .iter()
            .map(|record| ResourceWire {
                resource: record.resource.clone(),
                last_issued: record.last_issued,
                revision: record.revision,
                term: record.term,
                lease: record.lease.map(|lease| LeaseRecordWire {
                    owner: lease.owner,
                    token: lease.token,
                    issued_at_ns: nanos(lease.issued_at),
                    expires_at_ns: nanos(lease.expires_at),
                    term: lease.term,
                }),
            })
            .collect();
        encode(&TableWire { format: FORMAT, observed_ns: nanos(self.observed()), resources })
    }

    fn from_json(text: &str) -> Result<Self, JsonError> {
        let wire: TableWire<R> = decode(text)?;
        let mut records = Vec::with_capacity(wire.resources.len());
        for (index, resource) in wire.resources.into_iter().enumerate() {
            let lease = match resource.lease {
                None => None,
                Some(lease) => Some(LeaseRecord {
                    owner: lease.owner,
                    token: lease.token,
                    issued_at: instant("issued_at_ns", lease.issued_at_ns)?,
                    expires_at: instant("expires_at_ns", lease.expires_at_ns)?,
                    term: lease.term,
                }),
            };
            records.push(ResourceRecord {
                resource: named("resources", index, resource.resource)?,
                last_issued: resource.last_issued,
                revision: resource.revision,
                term: resource.term,
                lease,
            });
        }
        TableCheckpoint::from_records(instant("observed_ns", wire.observed_ns)?, records).map_err(|issues| {
            let described: Vec<String> = issues.iter().map(ToString::to_string).collect();
            JsonError::Invalid(described.join("; "))
        })
    }
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct EventWire<R> {
    resource: R,
    kind: String,
    at_ns: u128,
    owner: u64,
    token: u64,
    revision: u64,
    expires_at_ns: u128,
    term: Option<u64>,
    replaced: Option<LeaseWire>,
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct EventsWire<R> {
    format: u64,
    events: Vec<EventWire<R>>,
}

/// An event log document: `{"format": 1, "events": [...]}`, oldest first.
impl<R: JsonResource> Json for Vec<Event<R>> {
    fn to_json(&self) -> String {
        let events = self
            .iter()
            .map(|event| EventWire {
                resource: event.resource.clone(),
                kind: event.kind.as_str().into(),
                at_ns: nanos(event.at),
                owner: event.owner.value(),
                token: event.token.value(),
                revision: event.revision,
                expires_at_ns: nanos(event.expires_at),
                term: event.term,
                replaced: event.replaced.map(LeaseWire::of),
            })
            .collect();
        encode(&EventsWire { format: FORMAT, events })
    }

    fn from_json(text: &str) -> Result<Self, JsonError> {
        let wire: EventsWire<R> = decode(text)?;
        wire.events
            .into_iter()
            .enumerate()
            .map(|(index, event)| {
                Ok(Event {
                    kind: EventKind::from_name(&event.kind)
                        .ok_or_else(|| JsonError::Invalid(alloc::format!("unknown event kind {:?}", event.kind)))?,
                    resource: named("events", index, event.resource)?,
                    at: instant("at_ns", event.at_ns)?,
                    owner: OwnerId::new(event.owner),
                    token: fencing_token("event token", event.token)?,
                    revision: (event.revision > 0)
                        .then_some(event.revision)
                        .ok_or_else(|| JsonError::Invalid("an event's revision is at least 1".into()))?,
                    expires_at: instant("expires_at_ns", event.expires_at_ns)?,
                    term: event.term,
                    replaced: event.replaced.as_ref().map(LeaseWire::lease).transpose()?,
                })
            })
            .collect()
    }
}

/// Counts are read as `i128`, so that a negative one is refused naming its field (see [`count`]).
#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct MetricsWire {
    format: u64,
    resources: i128,
    stored_leases: i128,
    live_leases: i128,
    expired_leases: i128,
    highest_token: Option<i128>,
    events: i128,
    accepted: i128,
    rejected: i128,
    rejections: BTreeMap<String, i128>,
    holder_transitions: i128,
}

impl Json for Metrics {
    fn to_json(&self) -> String {
        encode(&MetricsWire {
            format: FORMAT,
            resources: self.resources.into(),
            stored_leases: self.stored_leases.into(),
            live_leases: self.live_leases.into(),
            expired_leases: self.expired_leases.into(),
            highest_token: self.highest_token.map(|token| token.value().into()),
            events: self.events.into(),
            accepted: self.accepted.into(),
            rejected: self.rejected.into(),
            rejections: Rejection::ALL
                .iter()
                .map(|reason| (reason.as_str().into(), self.rejected_with(*reason).into()))
                .collect(),
            holder_transitions: self.holder_transitions.into(),
        })
    }

    fn from_json(text: &str) -> Result<Self, JsonError> {
        let wire: MetricsWire = decode(text)?;
        let mut rejections = [0; Rejection::ALL.len()];
        for (name, value) in wire.rejections {
            let slot = Rejection::ALL
                .iter()
                .find(|reason| reason.as_str() == name)
                .and_then(|reason| rejections.get_mut(reason.index()))
                .ok_or_else(|| JsonError::Invalid(alloc::format!("unknown rejection reason {name:?}")))?;
            *slot = count(&alloc::format!("rejections.{name}"), value)?;
        }
        let highest_token = match wire.highest_token {
            Some(value) => Some(fencing_token("highest_token", count("highest_token", value)?)?),
            None => None,
        };
        let metrics = Metrics {
            resources: count("resources", wire.resources)?,
            stored_leases: count("stored_leases", wire.stored_leases)?,
            live_leases: count("live_leases", wire.live_leases)?,
            expired_leases: count("expired_leases", wire.expired_leases)?,
            highest_token,
            events: count("events", wire.events)?,
            accepted: count("accepted", wire.accepted)?,
            rejected: count("rejected", wire.rejected)?,
            rejections,
            holder_transitions: count("holder_transitions", wire.holder_transitions)?,
        };
        metrics.check().map_err(|issue| JsonError::Invalid(issue.to_string()))?;
        Ok(metrics)
    }
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct FindingWire<R> {
    code: String,
    resource: R,
    event_index: u64,
    message: String,
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct ReportWire<R> {
    format: u64,
    valid: bool,
    checked_events: u64,
    findings: Vec<FindingWire<R>>,
}

/// `message` is written for people and ignored when read: the code says everything.
impl<R: JsonResource> Json for AuditReport<R> {
    fn to_json(&self) -> String {
        let findings = self
            .findings
            .iter()
            .map(|finding| FindingWire {
                code: finding.code.as_str().into(),
                resource: finding.resource.clone(),
                event_index: finding.event_index,
                message: finding.code.to_string(),
            })
            .collect();
        encode(&ReportWire { format: FORMAT, valid: self.is_valid(), checked_events: self.checked_events, findings })
    }

    fn from_json(text: &str) -> Result<Self, JsonError> {
        let wire: ReportWire<R> = decode(text)?;
        if wire.valid != wire.findings.is_empty() {
            return Err(JsonError::Invalid("\"valid\" must be true exactly when there are no findings".into()));
        }
        let findings = wire
            .findings
            .into_iter()
            .enumerate()
            .map(|(index, finding)| {
                Ok(Finding {
                    code: FindingCode::from_name(&finding.code)
                        .ok_or_else(|| JsonError::Invalid(alloc::format!("unknown finding code {:?}", finding.code)))?,
                    resource: named("findings", index, finding.resource)?,
                    event_index: (finding.event_index < wire.checked_events)
                        .then_some(finding.event_index)
                        .ok_or_else(|| {
                            JsonError::Invalid("a finding's event_index must be below checked_events".into())
                        })?,
                })
            })
            .collect::<Result<Vec<_>, JsonError>>()?;
        Ok(AuditReport { checked_events: wire.checked_events, findings })
    }
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct MarkWire<R> {
    resource: R,
    token: u64,
    owner: u64,
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct MarksWire<R> {
    format: u64,
    marks: Vec<MarkWire<R>>,
}

/// The guard's marks, in resource order.
impl<R: JsonResource> Json for FenceGuard<R> {
    fn to_json(&self) -> String {
        let marks = self
            .marks()
            .map(|mark| MarkWire { resource: mark.resource, token: mark.token.value(), owner: mark.owner.value() })
            .collect();
        encode(&MarksWire { format: FORMAT, marks })
    }

    fn from_json(text: &str) -> Result<Self, JsonError> {
        let wire: MarksWire<R> = decode(text)?;
        let marks = wire
            .marks
            .into_iter()
            .enumerate()
            .map(|(index, mark)| {
                Ok(FenceMark {
                    token: fencing_token("mark token", mark.token)?,
                    resource: named("marks", index, mark.resource)?,
                    owner: OwnerId::new(mark.owner),
                })
            })
            .collect::<Result<Vec<_>, JsonError>>()?;
        FenceGuard::from_marks(marks)
            .map_err(|resource| JsonError::Invalid(alloc::format!("two marks for resource {resource:?}")))
    }
}
