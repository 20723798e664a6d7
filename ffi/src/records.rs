//! The lease table's records (`LeaseMachines::TableLease`, `Event`, `Metrics`, `AuditReport` and its `Finding`),
//! built from the core's values and read back into them by member name (see `data`); `LeaseMachines.audit` and the
//! JSON documents of events, metrics and audit reports.

use lease_machines::json::Json;
use lease_machines::{
    audit, AuditReport, Event, EventKind, FencingToken, Finding, FindingCode, Lease, Metrics, Rejection, TableLease,
};
use magnus::{prelude::*, Error, IntoValue, RHash, RModule, RString, Ruby, Value};

use crate::convert::{
    frozen, instant, issued_token_arg, optional, owner_arg, resource_arg, seconds, seconds_arg, u64_arg,
};
use crate::data::{record_arg, records_arg};
use crate::data::{
    AuditReportMembers, EventMembers, FencedWriteMembers, FindingMembers, MetricsMembers, TableLeaseMembers,
    AUDIT_REPORT, EVENT, FENCED_WRITE, FINDING, METRICS, TABLE_LEASE,
};
use crate::helpers::shown;
use crate::json;
use crate::symbols::SymbolEnum;
use crate::values;

/// A frozen `LeaseMachines::TableLease`.
pub fn table_lease<R: AsRef<str>>(ruby: &Ruby, lease: &TableLease<R>) -> Result<Value, Error> {
    TABLE_LEASE.build(ruby, table_lease_members(ruby, lease))
}

/// The members of a `TableLease` (for a record that holds one).
pub fn table_lease_members<R: AsRef<str>>(ruby: &Ruby, lease: &TableLease<R>) -> TableLeaseMembers {
    TableLeaseMembers {
        resource: frozen(ruby, lease.resource().as_ref()).as_value(),
        owner: lease.owner().value().into_value_with(ruby),
        token: lease.token().value().into_value_with(ruby),
        issued_at: instant(lease.issued_at()).into_value_with(ruby),
        expires_at: instant(lease.expires_at()).into_value_with(ruby),
        revision: lease.revision().into_value_with(ruby),
        term: lease.term().into_value_with(ruby),
    }
}

/// The lease a `TableLease`'s members describe, its resource the member itself (checked as a resource name).
fn table_lease_of(ruby: &Ruby, members: TableLeaseMembers) -> Result<TableLease<Value>, Error> {
    resource_arg(ruby, members.resource)?;
    let lease = Lease::new(
        owner_arg(ruby, members.owner)?,
        issued_token_arg(ruby, "token", members.token)?,
        seconds_arg(ruby, "expires_at", members.expires_at)?,
    );
    Ok(TableLease::new(
        members.resource,
        lease,
        seconds_arg(ruby, "issued_at", members.issued_at)?,
        u64_arg(ruby, "revision", members.revision)?,
        optional(members.term, |term| u64_arg(ruby, "term", term))?,
    ))
}

fn table_lease_self(ruby: &Ruby, rb_self: Value) -> Result<TableLease<Value>, Error> {
    table_lease_of(ruby, record_arg(ruby, "self", &TABLE_LEASE, rb_self)?)
}

/// `TableLease#live?`: the core's rule on the engine's instants, `now` converted as every time argument is.
fn table_lease_live(ruby: &Ruby, rb_self: Value, now: Value) -> Result<bool, Error> {
    let now = seconds_arg(ruby, "now", now)?;
    Ok(table_lease_self(ruby, rb_self)?.is_live(now))
}

fn table_lease_remaining(ruby: &Ruby, rb_self: Value, now: Value) -> Result<f64, Error> {
    let now = seconds_arg(ruby, "now", now)?;
    Ok(seconds(table_lease_self(ruby, rb_self)?.remaining(now)))
}

/// `TableLease#fenced_write`: a frozen `LeaseMachines::FencedWrite` while the lease is live at `now`, else `nil`.
fn table_lease_fenced_write(ruby: &Ruby, rb_self: Value, operation: Value, now: Value) -> Result<Value, Error> {
    let now = seconds_arg(ruby, "now", now)?;
    let lease = table_lease_self(ruby, rb_self)?;
    match lease.fenced_write(operation, now) {
        Some(write) => FENCED_WRITE.build(
            ruby,
            FencedWriteMembers {
                resource: *write.resource(),
                owner: write.owner().value().into_value_with(ruby),
                token: write.token().value().into_value_with(ruby),
                operation: *write.operation(),
            },
        ),
        None => Ok(ruby.qnil().as_value()),
    }
}

/// A frozen `LeaseMachines::Event`, its resource `resource` (see [`events`]).
fn event<R>(ruby: &Ruby, event: &Event<R>, resource: RString) -> Result<Value, Error> {
    let replaced = match event.replaced {
        Some(lease) => values::lease(ruby, lease)?,
        None => ruby.qnil().as_value(),
    };
    EVENT.build(
        ruby,
        EventMembers {
            resource: resource.as_value(),
            kind: event.kind.symbol(ruby).as_value(),
            at: instant(event.at).into_value_with(ruby),
            owner: event.owner.value().into_value_with(ruby),
            token: event.token.value().into_value_with(ruby),
            revision: event.revision.into_value_with(ruby),
            expires_at: instant(event.expires_at).into_value_with(ruby),
            term: event.term.into_value_with(ruby),
            replaced,
        },
    )
}

/// A frozen Array of frozen `Event`s. Their resources are interned Strings, one object per name however many
/// events carry it, so that a log of 4096 renewals of one resource holds its name once.
pub fn events<'a, R: AsRef<str> + 'a>(
    ruby: &Ruby,
    events: impl IntoIterator<Item = &'a Event<R>>,
) -> Result<Value, Error> {
    let list = ruby.ary_new();
    for one in events {
        let resource = ruby.str_new(one.resource.as_ref()).to_interned_str();
        list.push(event(ruby, one, resource)?)?;
    }
    list.freeze();
    Ok(list.as_value())
}

/// The event an `Event`'s members describe.
fn event_of(ruby: &Ruby, members: EventMembers) -> Result<Event<String>, Error> {
    Ok(Event {
        resource: resource_arg(ruby, members.resource)?,
        kind: EventKind::arg(ruby, members.kind)?,
        at: seconds_arg(ruby, "at", members.at)?,
        owner: owner_arg(ruby, members.owner)?,
        token: issued_token_arg(ruby, "token", members.token)?,
        revision: u64_arg(ruby, "revision", members.revision)?,
        expires_at: seconds_arg(ruby, "expires_at", members.expires_at)?,
        term: optional(members.term, |term| u64_arg(ruby, "term", term))?,
        replaced: values::optional_lease_arg(ruby, "replaced", members.replaced)?,
    })
}

/// An Array of `Event`s.
fn events_arg(ruby: &Ruby, value: Value) -> Result<Vec<Event<String>>, Error> {
    records_arg(ruby, "events", &EVENT, value, |members| event_of(ruby, members))
}

/// A frozen `LeaseMachines::Metrics`, `rejections` a frozen Hash of every reason to its count.
pub fn metrics(ruby: &Ruby, metrics: &Metrics) -> Result<Value, Error> {
    let rejections = ruby.hash_new();
    for reason in Rejection::ALL {
        rejections.aset(reason.symbol(ruby), metrics.rejected_with(reason))?;
    }
    rejections.freeze();
    METRICS.build(
        ruby,
        MetricsMembers {
            resources: metrics.resources.into_value_with(ruby),
            stored_leases: metrics.stored_leases.into_value_with(ruby),
            live_leases: metrics.live_leases.into_value_with(ruby),
            expired_leases: metrics.expired_leases.into_value_with(ruby),
            highest_token: metrics.highest_token.map(FencingToken::value).into_value_with(ruby),
            events: metrics.events.into_value_with(ruby),
            accepted: metrics.accepted.into_value_with(ruby),
            rejected: metrics.rejected.into_value_with(ruby),
            rejections: rejections.as_value(),
            holder_transitions: metrics.holder_transitions.into_value_with(ruby),
        },
    )
}

/// The metrics a `Metrics`'s members describe.
fn metrics_of(ruby: &Ruby, members: MetricsMembers) -> Result<Metrics, Error> {
    let count = |name: &str, value: Value| u64_arg(ruby, name, value);
    let rejections_hash = RHash::from_value(members.rejections).ok_or_else(|| {
        Error::new(ruby.exception_type_error(), format!("rejections must be a Hash, got {}", shown(members.rejections)))
    })?;
    let mut rejections = [0; Rejection::ALL.len()];
    for reason in Rejection::ALL {
        let count: Option<Value> = rejections_hash.get(reason.symbol(ruby));
        if let (Some(count), Some(slot)) = (count, rejections.get_mut(reason.index())) {
            *slot = u64_arg(ruby, reason.as_str(), count)?;
        }
    }
    let metrics = Metrics {
        resources: count("resources", members.resources)?,
        stored_leases: count("stored_leases", members.stored_leases)?,
        live_leases: count("live_leases", members.live_leases)?,
        expired_leases: count("expired_leases", members.expired_leases)?,
        highest_token: optional(members.highest_token, |token| issued_token_arg(ruby, "highest_token", token))?,
        events: count("events", members.events)?,
        accepted: count("accepted", members.accepted)?,
        rejected: count("rejected", members.rejected)?,
        rejections,
        holder_transitions: count("holder_transitions", members.holder_transitions)?,
    };
    metrics.check().map_err(|issue| Error::new(ruby.exception_arg_error(), format!("impossible metrics: {issue}")))?;
    Ok(metrics)
}

/// A frozen `LeaseMachines::AuditReport`, valid exactly when it has no findings, the findings a frozen Array of
/// frozen `AuditReport::Finding`s.
pub fn report(ruby: &Ruby, report: &AuditReport<String>) -> Result<Value, Error> {
    let findings = ruby.ary_new_capa(report.findings.len());
    for finding in &report.findings {
        findings.push(FINDING.build(
            ruby,
            FindingMembers {
                code: finding.code.symbol(ruby).as_value(),
                resource: frozen(ruby, &finding.resource).as_value(),
                event_index: finding.event_index.into_value_with(ruby),
                message: frozen(ruby, &finding.code.to_string()).as_value(),
            },
        )?)?;
    }
    findings.freeze();
    AUDIT_REPORT.build(
        ruby,
        AuditReportMembers {
            valid: report.findings.is_empty().into_value_with(ruby),
            checked_events: report.checked_events.into_value_with(ruby),
            findings: findings.as_value(),
        },
    )
}

/// The report an `AuditReport`'s members describe (`valid` and each finding's `message` follow from the rest).
fn report_of(ruby: &Ruby, members: AuditReportMembers) -> Result<AuditReport<String>, Error> {
    let findings = records_arg(ruby, "findings", &FINDING, members.findings, |finding| {
        Ok(Finding {
            code: FindingCode::arg(ruby, finding.code)?,
            resource: resource_arg(ruby, finding.resource)?,
            event_index: u64_arg(ruby, "event_index", finding.event_index)?,
        })
    })?;
    Ok(AuditReport { checked_events: u64_arg(ruby, "checked_events", members.checked_events)?, findings })
}

fn audit_events(ruby: &Ruby, events: Value) -> Result<Value, Error> {
    report(ruby, &audit(&events_arg(ruby, events)?))
}

fn events_to_json(ruby: &Ruby, events: Value) -> Result<String, Error> {
    Ok(events_arg(ruby, events)?.to_json())
}

fn events_from_json(ruby: &Ruby, text: Value) -> Result<Value, Error> {
    let read: Vec<Event<String>> = json::read(ruby, text)?;
    self::events(ruby, read.iter())
}

fn metrics_to_json(ruby: &Ruby, rb_self: Value) -> Result<String, Error> {
    Ok(metrics_of(ruby, record_arg(ruby, "metrics", &METRICS, rb_self)?)?.to_json())
}

fn metrics_from_json(ruby: &Ruby, text: Value) -> Result<Value, Error> {
    metrics(ruby, &json::read::<Metrics>(ruby, text)?)
}

fn report_to_json(ruby: &Ruby, rb_self: Value) -> Result<String, Error> {
    Ok(report_of(ruby, record_arg(ruby, "report", &AUDIT_REPORT, rb_self)?)?.to_json())
}

fn report_from_json(ruby: &Ruby, text: Value) -> Result<Value, Error> {
    report(ruby, &json::read::<AuditReport<String>>(ruby, text)?)
}

fn event_kinds(ruby: &Ruby) -> Value {
    EventKind::symbols(ruby).as_value()
}

fn finding_codes(ruby: &Ruby) -> Value {
    FindingCode::symbols(ruby).as_value()
}

pub fn define(ruby: &Ruby, module: RModule) -> Result<(), Error> {
    let functions = module.singleton_class()?;
    functions.define_private_method("_audit", magnus::function!(audit_events, 1))?;
    functions.define_private_method("_events_to_json", magnus::function!(events_to_json, 1))?;
    functions.define_private_method("_events_from_json", magnus::function!(events_from_json, 1))?;

    EVENT.class(ruby)?.define_singleton_method("kinds", magnus::function!(event_kinds, 0))?;

    let table_lease = TABLE_LEASE.class(ruby)?;
    table_lease.define_private_method("_live", magnus::method!(table_lease_live, 1))?;
    table_lease.define_private_method("_remaining", magnus::method!(table_lease_remaining, 1))?;
    table_lease.define_private_method("_fenced_write", magnus::method!(table_lease_fenced_write, 2))?;

    let metrics = METRICS.class(ruby)?;
    metrics.define_private_method("_to_json", magnus::method!(metrics_to_json, 0))?;
    metrics.singleton_class()?.define_private_method("_from_json", magnus::function!(metrics_from_json, 1))?;

    let report = AUDIT_REPORT.class(ruby)?;
    report.define_singleton_method("codes", magnus::function!(finding_codes, 0))?;
    report.define_private_method("_to_json", magnus::method!(report_to_json, 0))?;
    report.singleton_class()?.define_private_method("_from_json", magnus::function!(report_from_json, 1))?;
    Ok(())
}
