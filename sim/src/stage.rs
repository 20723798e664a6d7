//! The [`Stage`] every scenario acts on: the world, the table, the storage, the ledger and the report's counts.

use alloc::vec::Vec;
use core::time::Duration;

use lease_machines::{Cadence, ClockPolicy, EventLog, FencedWrite, LeaseTable, OwnerId, Rejection, TableLease};

use crate::ledger::Ledger;
use crate::oracle::{Storage, Verdict};
use crate::workers::Tenure;
use crate::world::{Spans, World};
use crate::{SimulationConfig, SimulationError, SimulationReport};

/// How many events the table's log holds before they are audited.
const AUDIT_BATCH: usize = EventLog::<u64>::DEFAULT_CAPACITY;

/// What both scenarios act on, and what counts what they do.
pub(crate) struct Stage {
    pub(crate) config: SimulationConfig,
    pub(crate) world: World,
    pub(crate) spans: Spans,
    /// The cadence of every worker's [`Holder`](lease_machines::Holder): renew every `ttl / 3`, at risk from
    /// `ttl / 4` before the end.
    pub(crate) cadence: Cadence,
    pub(crate) table: LeaseTable<u64>,
    storage: Storage,
    ledger: Ledger,
    /// Per resource, the owner of its last grant: a grant to anyone else is a takeover.
    last_grantees: Vec<Option<OwnerId>>,
    /// Writes made so far: the next write's number.
    writes: u64,
    /// At the end of a cycle the log is audited once it has no more room than this (what one cycle can add, and
    /// some).
    audit_room: usize,
    pub(crate) report: SimulationReport,
}

impl Stage {
    pub(crate) fn new(config: SimulationConfig, resources: usize, workers: usize) -> Result<Self, SimulationError> {
        if u64::try_from(config.ttl.as_nanos()).is_err() {
            return Err(SimulationError::TooLong);
        }
        let spans = Spans::of(config.ttl);
        let cadence = Cadence::new(spans.ttl, spans.third, spans.quarter).ok_or(SimulationError::Ttl(config.ttl))?;
        let mut last_grantees = Vec::with_capacity(resources);
        last_grantees.resize(resources, None);
        Ok(Self {
            config,
            world: World::new(config.seed),
            spans,
            cadence,
            table: Self::table(config.clock_policy),
            storage: Storage::new(config.fence, resources),
            ledger: Ledger::new(resources),
            last_grantees,
            writes: 0,
            audit_room: workers.saturating_mul(2).saturating_add(4),
            report: SimulationReport::new(config),
        })
    }

    fn table(policy: ClockPolicy) -> LeaseTable<u64> {
        LeaseTable::with_event_capacity(AUDIT_BATCH).with_clock_policy(policy)
    }

    /// Counts the cycle; audits the events once enough have gathered for one batch, and restores the table when
    /// one is due.
    pub(crate) fn end_cycle(&mut self) {
        self.report.cycles = self.report.cycles.saturating_add(1);
        let room = AUDIT_BATCH.saturating_sub(self.table.sink().len());
        if room <= self.audit_room {
            self.ledger.absorb(self.table.sink_mut());
        }
        let mid_run = self.report.cycles < self.config.cycles;
        if mid_run
            && self.config.restore_every > 0
            && self.report.cycles.checked_rem(self.config.restore_every) == Some(0)
        {
            self.restore();
        }
    }

    /// Checkpoints the table and carries on with a table restored from the checkpoint.
    fn restore(&mut self) {
        self.ledger.absorb(self.table.sink_mut());
        let checkpoint = self.table.checkpoint();
        self.table = Self::table(self.config.clock_policy).restored(checkpoint);
        self.report.restores = self.report.restores.saturating_add(1);
    }

    /// Counts a grant to `owner` on `resource`, and whether it is a takeover.
    pub(crate) fn granted(&mut self, resource: u64, owner: OwnerId) {
        let last = usize::try_from(resource).ok().and_then(|index| self.last_grantees.get_mut(index));
        if let Some(last) = last {
            let takeover = last.is_some_and(|previous| previous != owner);
            *last = Some(owner);
            if takeover {
                self.report.takeovers = self.report.takeovers.saturating_add(1);
            }
        }
    }

    /// A write under `lease`, built at `clock` (the writer's time), numbered in the run's order.
    pub(crate) fn write_for(&mut self, lease: &TableLease<u64>, clock: Duration) -> Option<FencedWrite<u64, u64>> {
        let write = lease.fenced_write(self.writes, clock)?;
        self.writes = self.writes.saturating_add(1);
        Some(write)
    }

    /// The storage receives `write`; an accepted write whose lease is no longer the live one is counted as late.
    pub(crate) fn deliver(&mut self, write: &FencedWrite<u64, u64>) {
        match self.storage.receive(write) {
            Verdict::Refused => {
                self.report.stale_writes_rejected = self.report.stale_writes_rejected.saturating_add(1);
            }
            Verdict::Violation => {
                self.report.writes_accepted = self.report.writes_accepted.saturating_add(1);
                self.report.violations = self.report.violations.saturating_add(1);
            }
            Verdict::Accepted => {
                self.report.writes_accepted = self.report.writes_accepted.saturating_add(1);
                let live = self.table.live_lease(write.resource(), self.world.now());
                if live.map_or(true, |lease| lease.token() != write.token()) {
                    self.report.late_writes_accepted = self.report.late_writes_accepted.saturating_add(1);
                }
            }
        }
    }

    /// A refusal seen by a worker: `ClockRegressed` is counted, and false (the worker retries); any other is true
    /// (the lease is gone).
    pub(crate) fn refused(&mut self, rejection: Rejection) -> bool {
        if rejection == Rejection::ClockRegressed {
            self.report.clock_rejections = self.report.clock_rejections.saturating_add(1);
            false
        } else {
            true
        }
    }

    /// A worker learnt that its lease is gone: its `Holder` expires.
    pub(crate) fn lost(&mut self, mut tenure: Tenure) {
        tenure.holder.expire();
        self.report.leases_lost = self.report.leases_lost.saturating_add(1);
    }

    /// Audits the rest of the log and completes the report.
    pub(crate) fn finish(mut self) -> SimulationReport {
        self.ledger.absorb(self.table.sink_mut());
        for resource in 0..self.config.resources {
            let last = self.table.last_issued(&resource).map_or(0, |token| token.value());
            self.report.final_token = self.report.final_token.max(last);
        }
        self.ledger.settle(&mut self.report);
        self.report
    }
}
