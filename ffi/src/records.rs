//! Table records as Ruby arrays, both ways: the shapes the Ruby layer turns into its `Data` types
//! (`LeaseMachines::TableLease`, `Event`, `Metrics`, `AuditReport::Finding`), in their member order.
//!
//! Arrays are built only at the moment they are returned to Ruby, never kept in Rust memory.

use lease_machines::json::Json;
use lease_machines::{audit, AuditReport, Checkpoint, Event, FencingToken, Finding, Metrics, Rejection, TableLease};
use magnus::{
    prelude::*, typed_data::Obj, value::ReprValue, Error, IntoValue, RArray, RHash, RModule, RString, Ruby, TryConvert,
    Value,
};

use crate::data::TABLE_LEASE;
use crate::errors;
use crate::values::RbCheckpoint;

use crate::convert::{array_arg, entry, issued_token_arg, owner_arg, seconds, seconds_arg, shown, u64_arg};
use crate::symbols;
use crate::values::RbLease;

/// A resource name: a non-empty String in an encoding compatible with UTF-8.
pub fn resource_arg(ruby: &Ruby, value: Value) -> Result<String, Error> {
    let Some(string) = RString::from_value(value) else {
        return Err(Error::new(
            ruby.exception_type_error(),
            format!("resource must be a String, got {}", shown(value)),
        ));
    };
    let name = string.to_string().map_err(|_| {
        Error::new(ruby.exception_arg_error(), format!("resource must be valid UTF-8, got {}", shown(value)))
    })?;
    if name.is_empty() {
        return Err(Error::new(ruby.exception_arg_error(), "resource must not be empty"));
    }
    Ok(name)
}

/// A frozen Ruby String, so that the values holding it can be shared across Ractors.
pub fn frozen(ruby: &Ruby, text: &str) -> RString {
    let string = ruby.str_new(text);
    string.freeze();
    string
}

/// A frozen `LeaseMachines::TableLease`: resource, owner, token, issued_at, expires_at, revision, term.
pub fn table_lease(ruby: &Ruby, lease: &TableLease<String>) -> Result<Value, Error> {
    let values: [Value; 7] = [
        frozen(ruby, lease.resource()).as_value(),
        lease.owner().value().into_value_with(ruby),
        lease.token().value().into_value_with(ruby),
        seconds(lease.issued_at()).into_value_with(ruby),
        seconds(lease.expires_at()).into_value_with(ruby),
        lease.revision().into_value_with(ruby),
        lease.term().into_value_with(ruby),
    ];
    TABLE_LEASE.build(ruby, values)
}

/// `[resource, kind, at, owner, token, revision, expires_at, term, replaced]`.
pub fn event(ruby: &Ruby, event: &Event<String>) -> RArray {
    let values: [Value; 9] = [
        frozen(ruby, &event.resource).as_value(),
        symbols::event_kind(ruby, event.kind).as_value(),
        seconds(event.at).into_value_with(ruby),
        event.owner.value().into_value_with(ruby),
        event.token.value().into_value_with(ruby),
        event.revision.into_value_with(ruby),
        seconds(event.expires_at).into_value_with(ruby),
        event.term.into_value_with(ruby),
        event.replaced.map(|lease| RbLease::wrap(ruby, lease)).into_value_with(ruby),
    ];
    ruby.ary_new_from_values(&values)
}

/// An event as [`event`] shapes it (what `LeaseMachines::Event#deconstruct` gives).
pub fn event_arg(ruby: &Ruby, value: Value) -> Result<Event<String>, Error> {
    let fields = array_arg(ruby, "event", value)?;
    if fields.len() != 9 {
        return Err(Error::new(ruby.exception_arg_error(), format!("event must have 9 fields, got {}", fields.len())));
    }
    let field = |index: usize, name: &str| entry(ruby, fields, index, name);
    let replaced = field(8, "replaced")?;
    let replaced = if replaced.is_nil() {
        None
    } else {
        Some(<&RbLease>::try_convert(replaced).map(|lease| lease.0).map_err(|_| {
            Error::new(
                ruby.exception_type_error(),
                format!("replaced must be a LeaseMachines::Lease or nil, got {}", shown(replaced)),
            )
        })?)
    };
    let term = field(7, "term")?;
    Ok(Event {
        resource: resource_arg(ruby, field(0, "resource")?)?,
        kind: symbols::event_kind_arg(ruby, field(1, "kind")?)?,
        at: seconds_arg(ruby, "at", field(2, "at")?)?,
        owner: owner_arg(ruby, field(3, "owner")?)?,
        token: issued_token_arg(ruby, "token", field(4, "token")?)?,
        revision: u64_arg(ruby, "revision", field(5, "revision")?)?,
        expires_at: seconds_arg(ruby, "expires_at", field(6, "expires_at")?)?,
        term: if term.is_nil() { None } else { Some(u64_arg(ruby, "term", term)?) },
        replaced,
    })
}

/// Every event of an Array of events.
pub fn events_arg(ruby: &Ruby, value: Value) -> Result<Vec<Event<String>>, Error> {
    let array = array_arg(ruby, "events", value)?;
    let mut events = Vec::with_capacity(array.len());
    for index in 0..array.len() {
        events.push(event_arg(ruby, entry(ruby, array, index, "event")?)?);
    }
    Ok(events)
}

/// `[resources, stored_leases, live_leases, expired_leases, highest_token, events, accepted, rejected, rejections,
/// holder_transitions]`, `rejections` a Hash of every reason to its count.
pub fn metrics(ruby: &Ruby, metrics: &Metrics) -> Result<RArray, Error> {
    let rejections = ruby.hash_new();
    for reason in Rejection::ALL {
        rejections.aset(symbols::reason(ruby, reason), metrics.rejected_with(reason))?;
    }
    rejections.freeze();
    let values: [Value; 10] = [
        metrics.resources.into_value_with(ruby),
        metrics.stored_leases.into_value_with(ruby),
        metrics.live_leases.into_value_with(ruby),
        metrics.expired_leases.into_value_with(ruby),
        metrics.highest_token.map(FencingToken::value).into_value_with(ruby),
        metrics.events.into_value_with(ruby),
        metrics.accepted.into_value_with(ruby),
        metrics.rejected.into_value_with(ruby),
        rejections.as_value(),
        metrics.holder_transitions.into_value_with(ruby),
    ];
    Ok(ruby.ary_new_from_values(&values))
}

/// Metrics as [`metrics`] shapes them.
pub fn metrics_arg(ruby: &Ruby, value: Value) -> Result<Metrics, Error> {
    let fields = array_arg(ruby, "metrics", value)?;
    let count = |index: usize, name: &str| u64_arg(ruby, name, entry(ruby, fields, index, name)?);
    let highest = entry(ruby, fields, 4, "highest_token")?;
    let rejections_value = entry(ruby, fields, 8, "rejections")?;
    let rejections_hash = RHash::from_value(rejections_value).ok_or_else(|| {
        Error::new(ruby.exception_type_error(), format!("rejections must be a Hash, got {}", shown(rejections_value)))
    })?;
    let mut rejections = [0; Rejection::ALL.len()];
    for reason in Rejection::ALL {
        let count: Option<Value> = rejections_hash.get(symbols::reason(ruby, reason));
        if let (Some(count), Some(slot)) = (count, rejections.get_mut(reason.index())) {
            *slot = u64_arg(ruby, reason.as_str(), count)?;
        }
    }
    Ok(Metrics {
        resources: count(0, "resources")?,
        stored_leases: count(1, "stored_leases")?,
        live_leases: count(2, "live_leases")?,
        expired_leases: count(3, "expired_leases")?,
        highest_token: if highest.is_nil() { None } else { Some(issued_token_arg(ruby, "highest_token", highest)?) },
        events: count(5, "events")?,
        accepted: count(6, "accepted")?,
        rejected: count(7, "rejected")?,
        rejections,
        holder_transitions: count(9, "holder_transitions")?,
    })
}

/// `[checked_events, [[code, resource, event_index, message], ...]]`.
pub fn report(ruby: &Ruby, report: &AuditReport<String>) -> (u64, RArray) {
    let findings = ruby.ary_from_iter(report.findings.iter().map(|finding| {
        let values: [Value; 4] = [
            symbols::finding_code(ruby, finding.code).as_value(),
            frozen(ruby, &finding.resource).as_value(),
            finding.event_index.into_value_with(ruby),
            frozen(ruby, &finding.code.to_string()).as_value(),
        ];
        ruby.ary_new_from_values(&values)
    }));
    (report.checked_events, findings)
}

/// An audit report as [`report`] shapes it: `checked_events` and the findings' `[code, resource, event_index, ...]`.
pub fn report_arg(ruby: &Ruby, checked_events: Value, findings: Value) -> Result<AuditReport<String>, Error> {
    let checked_events = u64_arg(ruby, "checked_events", checked_events)?;
    let array = array_arg(ruby, "findings", findings)?;
    let mut parsed = Vec::with_capacity(array.len());
    for index in 0..array.len() {
        let finding = array_arg(ruby, "finding", entry(ruby, array, index, "finding")?)?;
        parsed.push(Finding {
            code: symbols::finding_code_arg(ruby, entry(ruby, finding, 0, "code")?)?,
            resource: resource_arg(ruby, entry(ruby, finding, 1, "resource")?)?,
            event_index: u64_arg(ruby, "event_index", entry(ruby, finding, 2, "event_index")?)?,
        });
    }
    Ok(AuditReport { checked_events, findings: parsed })
}

/// The text of a JSON document argument, or `LeaseMachines::InvalidDocument` when it is not UTF-8.
fn document(ruby: &Ruby, text: RString) -> Result<String, Error> {
    // SAFETY: the bytes are copied into an owned String before any other Ruby call.
    unsafe { text.as_str() }
        .map(str::to_owned)
        .map_err(|_| errors::invalid_document(ruby, "the JSON is not valid UTF-8"))
}

pub fn read<T: Json>(ruby: &Ruby, text: RString) -> Result<T, Error> {
    T::from_json(&document(ruby, text)?).map_err(|error| errors::invalid_document(ruby, &error.to_string()))
}

fn audit_events(ruby: &Ruby, events: Value) -> Result<(u64, RArray), Error> {
    let events = events_arg(ruby, events)?;
    Ok(report(ruby, &audit(&events)))
}

fn events_to_json(ruby: &Ruby, events: Value) -> Result<String, Error> {
    Ok(events_arg(ruby, events)?.to_json())
}

fn events_from_json(ruby: &Ruby, text: RString) -> Result<RArray, Error> {
    let events: Vec<Event<String>> = read(ruby, text)?;
    Ok(ruby.ary_from_iter(events.iter().map(|one| event(ruby, one))))
}

fn metrics_to_json(ruby: &Ruby, fields: Value) -> Result<String, Error> {
    Ok(metrics_arg(ruby, fields)?.to_json())
}

fn metrics_from_json(ruby: &Ruby, text: RString) -> Result<RArray, Error> {
    metrics(ruby, &read::<Metrics>(ruby, text)?)
}

fn report_to_json(ruby: &Ruby, checked_events: Value, findings: Value) -> Result<String, Error> {
    Ok(report_arg(ruby, checked_events, findings)?.to_json())
}

fn report_from_json(ruby: &Ruby, text: RString) -> Result<(u64, RArray), Error> {
    Ok(report(ruby, &read::<AuditReport<String>>(ruby, text)?))
}

fn checkpoint_to_json(rb_self: &RbCheckpoint) -> String {
    rb_self.0.to_json()
}

fn checkpoint_from_json(ruby: &Ruby, text: RString) -> Result<Obj<RbCheckpoint>, Error> {
    Ok(RbCheckpoint::wrap(ruby, read::<Checkpoint>(ruby, text)?))
}

pub fn define(module: RModule) -> Result<(), Error> {
    module.define_singleton_method("_audit", magnus::function!(audit_events, 1))?;
    module.define_singleton_method("_events_to_json", magnus::function!(events_to_json, 1))?;
    module.define_singleton_method("_events_from_json", magnus::function!(events_from_json, 1))?;
    module.define_singleton_method("_metrics_to_json", magnus::function!(metrics_to_json, 1))?;
    module.define_singleton_method("_metrics_from_json", magnus::function!(metrics_from_json, 1))?;
    module.define_singleton_method("_report_to_json", magnus::function!(report_to_json, 2))?;
    module.define_singleton_method("_report_from_json", magnus::function!(report_from_json, 1))?;
    let checkpoint: magnus::RClass = module.const_get("Checkpoint")?;
    checkpoint.define_method("_to_json", magnus::method!(checkpoint_to_json, 0))?;
    checkpoint.define_singleton_method("_from_json", magnus::function!(checkpoint_from_json, 1))?;
    Ok(())
}
