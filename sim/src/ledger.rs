//! The audit ledger: the table's events audited and digested batch by batch, in bounded memory, as if the whole
//! history had been audited at once.

use alloc::vec::Vec;

use lease_machines::{audit, Event, EventLog};

use crate::{digest, SimulationReport};

/// What the auditor needs of one resource's past to audit what follows: its last grant and its last event, each with
/// its position in the history.
#[derive(Debug, Clone, Default)]
struct Context {
    last_grant: Option<(u64, Event<u64>)>,
    last: Option<(u64, Event<u64>)>,
}

/// Audits and digests the event history batch by batch.
#[derive(Debug)]
pub(crate) struct Ledger {
    context: Vec<Context>,
    /// Scratch: per resource, whether its last grant and its last event in the batch were carried.
    seen: Vec<(bool, bool)>,
    events: u64,
    findings: u64,
    lost: bool,
    digest: u64,
}

impl Ledger {
    pub(crate) fn new(resources: usize) -> Self {
        let mut context = Vec::with_capacity(resources);
        context.resize(resources, Context::default());
        Self {
            context,
            seen: Vec::with_capacity(resources),
            events: 0,
            findings: 0,
            lost: false,
            digest: digest::EMPTY,
        }
    }

    /// Audits and digests everything in `log`, leaving it empty.
    pub(crate) fn absorb(&mut self, log: &mut EventLog<u64>) {
        if log.dropped() > 0 {
            self.lost = true;
        }
        if log.is_empty() {
            return;
        }
        let mut prefix: Vec<&(u64, Event<u64>)> = Vec::new();
        for context in &self.context {
            if let Some(grant) = &context.last_grant {
                prefix.push(grant);
            }
            if let Some(last) = &context.last {
                if context.last_grant.as_ref().map_or(true, |grant| grant.0 != last.0) {
                    prefix.push(last);
                }
            }
        }
        prefix.sort_unstable_by_key(|(position, _)| *position);
        let skip = prefix.len() as u64;
        let report = audit(prefix.iter().map(|(_, event)| event).chain(log.events()));
        let new_findings = report.findings.iter().filter(|finding| finding.event_index >= skip).count();
        self.findings = self.findings.saturating_add(new_findings as u64);
        drop(prefix);
        for event in log.events() {
            self.digest = digest::fold_event(self.digest, event);
        }
        // Carry each resource's last grant and last event into the next batch's context, newest first.
        self.seen.clear();
        self.seen.resize(self.context.len(), (false, false));
        let count = log.len() as u64;
        for (back, event) in log.events().rev().enumerate() {
            let position = self.events.saturating_add(count).saturating_sub(1).saturating_sub(back as u64);
            let index = usize::try_from(event.resource).ok();
            let (Some(seen), Some(context)) =
                (index.and_then(|index| self.seen.get_mut(index)), index.and_then(|index| self.context.get_mut(index)))
            else {
                // Resources are 0..resources; anything else is a broken history.
                self.findings = self.findings.saturating_add(1);
                continue;
            };
            if !seen.1 {
                seen.1 = true;
                context.last = Some((position, event.clone()));
            }
            if !seen.0 && event.kind.grants() {
                seen.0 = true;
                context.last_grant = Some((position, event.clone()));
            }
        }
        self.events = self.events.saturating_add(log.len() as u64);
        log.drain().for_each(drop);
    }

    /// Writes what the ledger found into `report`: the events, the findings, whether the audit is valid, the digest.
    pub(crate) fn settle(&self, report: &mut SimulationReport) {
        report.events = self.events;
        report.audit_findings = self.findings;
        report.audit_valid = self.findings == 0 && !self.lost;
        report.event_digest = self.digest;
    }
}

#[cfg(test)]
mod tests {
    use alloc::vec;
    use alloc::vec::Vec;
    use core::time::Duration;

    use lease_machines::{audit, Event, EventKind, EventLog, EventSink, FencingToken, OwnerId};

    use super::Ledger;

    fn event(
        resource: u64,
        kind: EventKind,
        at: u64,
        owner: u64,
        token: u64,
        revision: u64,
        expires: u64,
    ) -> Event<u64> {
        Event {
            resource,
            kind,
            at: Duration::from_secs(at),
            owner: OwnerId::new(owner),
            token: FencingToken::new(token).expect("test tokens are non-zero"),
            revision,
            expires_at: Duration::from_secs(expires),
            term: None,
            replaced: None,
        }
    }

    /// Findings and digest of `events` absorbed in two batches split at `split`.
    fn in_two_batches(events: &[Event<u64>], split: usize) -> (u64, u64) {
        let mut ledger = Ledger::new(2);
        let mut log = EventLog::new(events.len());
        for (index, event) in events.iter().enumerate() {
            if index == split {
                ledger.absorb(&mut log);
            }
            log.record(event.clone());
        }
        ledger.absorb(&mut log);
        assert_eq!(ledger.events, events.len() as u64);
        (ledger.findings, ledger.digest)
    }

    /// A valid history, then one more event: audited batch by batch, wherever the batches split, the ledger finds
    /// what one audit of the whole history finds.
    #[test]
    fn batches_are_audited_as_one_history() {
        use EventKind::{Acquired, Reaped, Released, Renewed};
        let valid = vec![
            event(0, Acquired, 0, 1, 1, 1, 10),
            event(1, Acquired, 1, 2, 1, 1, 11),
            event(0, Renewed, 2, 1, 1, 2, 12),
            event(0, Released, 3, 1, 1, 3, 12),
            event(1, Renewed, 4, 2, 1, 2, 14),
        ];
        let last = [
            (event(0, Acquired, 5, 2, 2, 4, 15), 0),
            (event(0, Acquired, 5, 2, 1, 4, 15), 1), // token not rising after a release
            (event(1, Acquired, 5, 3, 2, 3, 15), 1), // granted while live
            (event(0, Acquired, 2, 2, 2, 4, 12), 1), // time backwards
            (event(1, Reaped, 5, 2, 1, 3, 14), 1),   // reaped before expiry
            (event(1, Renewed, 5, 2, 1, 2, 20), 1),  // revision not rising
            (event(1, Renewed, 5, 2, 1, 3, 13), 1),  // renewal shortened
            (event(1, Released, 5, 3, 1, 3, 14), 1), // another owner's lease released
        ];
        for (extra, expected) in last {
            let mut events = valid.clone();
            events.push(extra);
            let whole = audit(&events).findings.len() as u64;
            assert_eq!(whole, expected, "{events:?}");
            let (_, digest) = in_two_batches(&events, 0);
            for split in 0..=events.len() {
                assert_eq!(in_two_batches(&events, split), (whole, digest), "split at {split}: {events:?}");
            }
        }
        let other: Vec<Event<u64>> = valid.iter().rev().cloned().collect();
        assert_ne!(in_two_batches(&other, 0).1, in_two_batches(&valid, 0).1);
    }
}
