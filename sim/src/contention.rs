//! [`Scenario::Contention`](crate::Scenario::Contention): a crowd of workers contends for the resources at random.
//! Every cycle the true time moves on and every worker takes one turn; what a turn does is described on
//! [`simulate`](crate::simulate).

use alloc::vec::Vec;
use core::time::Duration;

use lease_machines::{OwnerId, TableDecision};

use crate::stage::Stage;
use crate::workers::{Tenure, Worker};

/// Probabilities, in 1024ths, of a holder's actions on its turn (cumulative thresholds), and of an idle worker's.
const PAUSE: u64 = 48;
const ROTATE: u64 = PAUSE + 16;
const TRANSFER: u64 = ROTATE + 24;
const RELEASE: u64 = TRANSFER + 16;
const ACQUIRE: u64 = 512;
const REAP: u64 = ACQUIRE + 64;
/// The probability, in 1024ths, that a worker's clock steps back on its turn.
const CLOCK_STEP: u64 = 24;

/// The smallest step of simulated time.
const NANOSECOND: Duration = Duration::from_nanos(1);

/// The contending workers, owners `1..=workers`.
pub(crate) struct Crowd {
    workers: Vec<Worker>,
}

impl Crowd {
    pub(crate) fn new(workers: u64) -> Self {
        Self { workers: (1..=workers).map(|owner| Worker::new(OwnerId::new(owner))).collect() }
    }

    /// The true time moves forward by `ttl / 16 + [0, ttl / 8]`, then every worker takes a turn, from a random one on.
    pub(crate) fn cycle(&mut self, stage: &mut Stage) {
        let spans = stage.spans;
        let step = stage.world.span_between(spans.sixteenth, spans.sixteenth.saturating_add(spans.eighth));
        stage.world.advance(step);
        let count = stage.config.workers;
        let first = stage.world.below(count);
        for offset in 0..count {
            let index = first.wrapping_add(offset).checked_rem(count).unwrap_or(0);
            self.take_turn(stage, index);
        }
    }

    /// Worker `index` takes its turn, out of the crowd meanwhile, so that a transfer can reach the others.
    fn take_turn(&mut self, stage: &mut Stage, index: u64) {
        let Some(slot) = usize::try_from(index).ok().and_then(|index| self.workers.get_mut(index)) else {
            return;
        };
        let placeholder = Worker::new(slot.owner);
        let mut worker = core::mem::replace(slot, placeholder);
        self.turn(stage, &mut worker, index);
        if let Some(slot) = usize::try_from(index).ok().and_then(|index| self.workers.get_mut(index)) {
            *slot = worker;
        }
    }

    /// An awake worker delivers the write it had in flight, its clock may step back, and it acts as holder or idle.
    fn turn(&mut self, stage: &mut Stage, worker: &mut Worker, index: u64) {
        if stage.world.now() < worker.asleep_until {
            return;
        }
        if let Some(write) = worker.in_flight.take() {
            stage.deliver(&write);
        }
        worker.lag = worker.lag.checked_div(2).unwrap_or(Duration::ZERO);
        if stage.world.below(1024) < CLOCK_STEP {
            worker.lag = stage.world.span_between(NANOSECOND, stage.spans.half);
            stage.report.clock_steps_back = stage.report.clock_steps_back.saturating_add(1);
        }
        let clock = stage.world.now().saturating_sub(worker.lag);
        match worker.tenure.take() {
            Some(tenure) => worker.tenure = self.holder_turn(stage, worker, tenure, index, clock),
            None => idle_turn(stage, worker, clock),
        }
    }

    /// A holder renews when due, then pauses, rotates, transfers, releases or writes; returns its tenure if it still
    /// holds the lease.
    fn holder_turn(
        &mut self,
        stage: &mut Stage,
        worker: &mut Worker,
        tenure: Tenure,
        index: u64,
        clock: Duration,
    ) -> Option<Tenure> {
        let tenure = renew_if_due(stage, worker, tenure, clock)?;
        let roll = stage.world.below(1024);
        if roll < PAUSE {
            pause(stage, worker, &tenure, clock);
            Some(tenure)
        } else if roll < ROTATE {
            rotate(stage, worker, tenure, clock)
        } else if roll < TRANSFER {
            self.transfer(stage, worker, tenure, index, clock)
        } else if roll < RELEASE {
            release(stage, worker, tenure, clock)
        } else {
            write(stage, worker, &tenure, clock);
            Some(tenure)
        }
    }

    /// Hands the lease to another worker, if the one drawn is idle and awake; the old token's last write stays in
    /// flight.
    fn transfer(
        &mut self,
        stage: &mut Stage,
        worker: &mut Worker,
        mut tenure: Tenure,
        index: u64,
        clock: Duration,
    ) -> Option<Tenure> {
        let count = stage.config.workers;
        let target = stage.world.between(1, count.saturating_sub(1));
        let target = index.wrapping_add(target).checked_rem(count).unwrap_or(0);
        let now = stage.world.now();
        let other = usize::try_from(target).ok().and_then(|target| self.workers.get_mut(target));
        let Some(other) = other.filter(|other| other.tenure.is_none() && other.asleep_until <= now) else {
            return Some(tenure);
        };
        let (resource, new_owner) = (*tenure.lease.resource(), OwnerId::new(target.saturating_add(1)));
        let token = tenure.lease.token();
        match stage.table.transfer(&resource, worker.owner, token, new_owner, clock, stage.spans.ttl) {
            TableDecision::Transferred(lease) => {
                stage.report.transfers = stage.report.transfers.saturating_add(1);
                stage.granted(resource, new_owner);
                other.tenure = Some(Tenure::granted(lease, now, stage.cadence));
                other.last_write = None;
                worker.in_flight = worker.last_write.take();
                tenure.holder.expire();
                None
            }
            refused => kept(stage, refused, tenure),
        }
    }
}

/// Renews the lease when the worker's `Holder` says a renewal is due. A `ClockRegressed` refusal leaves the renewal
/// outstanding, to retry on the next turn; any other refusal means the lease is gone (`None`).
fn renew_if_due(stage: &mut Stage, worker: &Worker, mut tenure: Tenure, clock: Duration) -> Option<Tenure> {
    let now = stage.world.now();
    if !tenure.holder.renewal_due(now) {
        return Some(tenure);
    }
    tenure.holder.refresh(now);
    let (resource, token) = (*tenure.lease.resource(), tenure.lease.token());
    match stage.table.renew(&resource, worker.owner, token, clock, stage.spans.ttl) {
        TableDecision::Renewed(lease) => {
            tenure.holder.confirm(lease.token(), now);
            tenure.lease = lease;
            stage.report.renewals = stage.report.renewals.saturating_add(1);
            Some(tenure)
        }
        TableDecision::Rejected(rejection) if !stage.refused(rejection) => Some(tenure),
        _ => {
            stage.lost(tenure);
            None
        }
    }
}

/// The classic stale writer: a write built while the lease was live goes in flight, and the worker sleeps for a
/// random span in `(ttl, 4 ttl]`.
fn pause(stage: &mut Stage, worker: &mut Worker, tenure: &Tenure, clock: Duration) {
    let now = stage.world.now();
    if !tenure.holder.at_risk(now) {
        worker.in_flight = stage.write_for(&tenure.lease, clock);
    }
    let ttl = stage.spans.ttl;
    let span = stage.world.span_between(ttl.saturating_add(NANOSECOND), ttl.saturating_mul(4));
    worker.asleep_until = now.saturating_add(span);
    stage.report.pauses = stage.report.pauses.saturating_add(1);
}

/// Rotates the lease to a new token and writes with it; the last write with the old token goes in flight.
fn rotate(stage: &mut Stage, worker: &mut Worker, mut tenure: Tenure, clock: Duration) -> Option<Tenure> {
    let resource = *tenure.lease.resource();
    match stage.table.reacquire(&resource, worker.owner, clock, stage.spans.ttl) {
        TableDecision::Granted(lease) => {
            tenure.holder.reacquire(lease.token(), stage.world.now());
            stage.report.rotations = stage.report.rotations.saturating_add(1);
            stage.granted(resource, worker.owner);
            worker.in_flight = worker.last_write.take();
            tenure.lease = lease;
            write(stage, worker, &tenure, clock);
            Some(tenure)
        }
        refused => kept(stage, refused, tenure),
    }
}

/// Gives the lease back.
fn release(stage: &mut Stage, worker: &Worker, mut tenure: Tenure, clock: Duration) -> Option<Tenure> {
    let (resource, token) = (*tenure.lease.resource(), tenure.lease.token());
    match stage.table.release(&resource, worker.owner, token, clock) {
        TableDecision::Released => {
            stage.report.releases = stage.report.releases.saturating_add(1);
            tenure.holder.expire();
            None
        }
        refused => kept(stage, refused, tenure),
    }
}

/// What a holder's rotation, transfer or release that did not go through leaves: the tenure as it was after a
/// `ClockRegressed` refusal (the worker retries on a later turn), nothing after any other refusal (the lease is gone).
fn kept(stage: &mut Stage, decision: TableDecision<u64>, tenure: Tenure) -> Option<Tenure> {
    match decision {
        TableDecision::Rejected(rejection) if stage.refused(rejection) => {
            stage.lost(tenure);
            None
        }
        _ => Some(tenure),
    }
}

/// The worker writes now, if its `Holder` is not at risk and its lease is live on its own clock.
fn write(stage: &mut Stage, worker: &mut Worker, tenure: &Tenure, clock: Duration) {
    if tenure.holder.at_risk(stage.world.now()) {
        return;
    }
    if let Some(write) = stage.write_for(&tenure.lease, clock) {
        stage.deliver(&write);
        worker.last_write = Some(write);
    }
}

/// An idle worker asks for a random resource (half of its turns) or reaps a random resource's expired record (1 in
/// 16).
fn idle_turn(stage: &mut Stage, worker: &mut Worker, clock: Duration) {
    let roll = stage.world.below(1024);
    let resource = stage.world.below(stage.config.resources);
    if roll < ACQUIRE {
        match stage.table.acquire(&resource, worker.owner, clock, stage.spans.ttl) {
            TableDecision::Granted(lease) => {
                stage.report.leases_acquired = stage.report.leases_acquired.saturating_add(1);
                stage.granted(resource, worker.owner);
                worker.last_write = None;
                worker.tenure = Some(Tenure::granted(lease, stage.world.now(), stage.cadence));
            }
            TableDecision::Rejected(rejection) => {
                stage.refused(rejection);
            }
            _ => {}
        }
    } else if roll < REAP {
        match stage.table.reap(&resource, clock) {
            TableDecision::Reaped => stage.report.reaps = stage.report.reaps.saturating_add(1),
            TableDecision::Rejected(rejection) => {
                stage.refused(rejection);
            }
            _ => {}
        }
    }
}
