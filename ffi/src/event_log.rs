//! A durable store's event log, audited (`LeaseMachines::Store#audit`): the rows of its accepted changes in, the
//! core's [`audit`] over each lease's history out, as a `LeaseMachines::AuditReport`.
//!
//! A row crosses as `[id, resource, slot, kind, at, owner, token, expires_at, revision, replaced_owner,
//! replaced_token, replaced_expires_at]`, as the database returned it, oldest first. A store keeps one clock
//! watermark per lease (per resource, per semaphore slot), not one for the database: each lease's history is
//! audited on its own, so that the rule "time never goes backwards" holds where the store promises it. A finding's
//! `event_index` is the offending event's id in the log, its `resource` the resource's name (`name [slot N]` for a
//! semaphore's slot N above 0). A row no history can produce raises `LeaseMachines::StoreError`.

use std::collections::BTreeMap;

use lease_machines::{audit, AuditReport, Event, EventKind, Finding, Lease};
use magnus::{prelude::*, Error, RArray, RModule, Ruby, Value};

use crate::convert::{optional_token_arg, owner_arg, seconds_arg, u64_arg};
use crate::helpers::shown;
use crate::records;
use crate::row::store_error;

/// The columns of a row, in the order they cross.
const COLUMNS: usize = 12;

/// One lease's history: its name as a finding shows it, its events, and each event's id in the log.
#[derive(Default)]
struct History {
    events: Vec<Event<String>>,
    ids: Vec<u64>,
}

/// `LeaseMachines._store_audit(path, rows)`: the audit of the event log's accepted changes (`rows`, see the module
/// documentation), each lease's on its own; the findings in the log's order.
fn store_audit(ruby: &Ruby, path: Value, rows: Value) -> Result<Value, Error> {
    let path = String::try_convert(path).unwrap_or_else(|_| shown(path));
    let corrupt = |what: String| store_error(ruby, format!("corrupt event row in {path}: {what}"));
    let rows = RArray::try_convert(rows)?;
    let mut histories: BTreeMap<(String, u64), History> = BTreeMap::new();
    let mut checked: u64 = 0;
    for row in rows {
        let columns = RArray::from_value(row).filter(|columns| columns.len() == COLUMNS);
        let Some(columns) = columns else {
            return Err(corrupt(format!("{} is not its {COLUMNS} columns", shown(row))));
        };
        let column = |index: isize| columns.entry::<Value>(index);
        let event_of = || -> Result<(u64, String, u64, Event<String>), Error> {
            let id = u64_arg(ruby, "id", column(0)?)?;
            let resource = String::try_convert(column(1)?)?;
            let slot = u64_arg(ruby, "slot", column(2)?)?;
            let kind_name = String::try_convert(column(3)?)?;
            // An operator's revocation is its holder's release, as the core decided it.
            let kind =
                if kind_name == "revoked" { Some(EventKind::Released) } else { EventKind::from_name(&kind_name) };
            let kind =
                kind.ok_or_else(|| Error::new(ruby.exception_arg_error(), format!("no change {kind_name:?}")))?;
            let token = optional_token_arg(ruby, "token", column(6)?)?
                .ok_or_else(|| Error::new(ruby.exception_arg_error(), "a change without a token"))?;
            let replaced = match optional_token_arg(ruby, "replaced_token", column(10)?)? {
                Some(replaced_token) => Some(Lease::new(
                    owner_arg(ruby, column(9)?)?,
                    replaced_token,
                    seconds_arg(ruby, "replaced_expires_at", column(11)?)?,
                )),
                None => None,
            };
            let label = if slot == 0 { resource.clone() } else { format!("{resource} [slot {slot}]") };
            let event = Event {
                resource: label,
                kind,
                at: seconds_arg(ruby, "at", column(4)?)?,
                owner: owner_arg(ruby, column(5)?)?,
                token,
                revision: u64_arg(ruby, "revision", column(8)?)?,
                expires_at: seconds_arg(ruby, "expires_at", column(7)?)?,
                term: None,
                replaced,
            };
            Ok((id, resource, slot, event))
        };
        let (id, resource, slot, event) = event_of().map_err(|error| corrupt(error.to_string()))?;
        let history = histories.entry((resource, slot)).or_default();
        history.events.push(event);
        history.ids.push(id);
        checked = checked.saturating_add(1);
    }
    let mut findings: Vec<(u64, Finding<String>)> = Vec::new();
    for history in histories.values() {
        for mut finding in audit(&history.events).findings {
            let index = usize::try_from(finding.event_index).ok();
            let id = index.and_then(|index| history.ids.get(index)).copied().unwrap_or(u64::MAX);
            finding.event_index = id;
            findings.push((id, finding));
        }
    }
    findings.sort_by_key(|(id, _)| *id);
    let report = AuditReport { checked_events: checked, findings: findings.into_iter().map(|(_, f)| f).collect() };
    records::report(ruby, &report)
}

pub fn define(module: RModule) -> Result<(), Error> {
    module.singleton_class()?.define_private_method("_store_audit", magnus::function!(store_audit, 2))?;
    Ok(())
}
