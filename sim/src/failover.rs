//! [`Scenario::Failover`](crate::Scenario::Failover), moonleasekit's failover mode: every cycle one resource's holder
//! stalls with a write in flight, its lease expires, another worker takes over and writes, and the old holder's
//! delayed write arrives, to be refused.

use alloc::vec::Vec;

use lease_machines::{OwnerId, TableDecision};

use crate::stage::Stage;
use crate::workers::Tenure;

/// Who holds a resource: a worker (`0..workers`, owner `worker + 1`) and its tenure.
#[derive(Debug, Clone)]
struct Incumbent {
    worker: u64,
    tenure: Tenure,
}

/// Each resource's incumbent, if any.
pub(crate) struct Incumbents {
    resources: Vec<Option<Incumbent>>,
}

impl Incumbents {
    pub(crate) fn new(resources: usize) -> Self {
        let mut incumbents = Vec::with_capacity(resources);
        incumbents.resize(resources, None);
        Self { resources: incumbents }
    }

    /// A random resource fails over (the first time, a random worker acquires it and writes); then the true time
    /// moves forward by up to `ttl / 4`.
    pub(crate) fn cycle(&mut self, stage: &mut Stage) {
        let resource = stage.world.below(stage.config.resources);
        let Some(slot) = usize::try_from(resource).ok().and_then(|index| self.resources.get_mut(index)) else {
            return;
        };
        let current = match slot.take() {
            Some(incumbent) => Some(incumbent),
            None => {
                let worker = stage.world.below(stage.config.workers);
                take_over(stage, resource, worker)
            }
        };
        *slot = current.and_then(|incumbent| fail_over(stage, resource, incumbent));
        let step = stage.world.span_up_to(stage.spans.quarter);
        stage.world.advance(step);
    }
}

/// `worker` acquires `resource` at the true time and writes.
fn take_over(stage: &mut Stage, resource: u64, worker: u64) -> Option<Incumbent> {
    let owner = OwnerId::new(worker.saturating_add(1));
    let now = stage.world.now();
    let lease = match stage.table.acquire(&resource, owner, now, stage.spans.ttl) {
        TableDecision::Granted(lease) => lease,
        TableDecision::Rejected(rejection) => {
            stage.refused(rejection);
            return None;
        }
        _ => return None,
    };
    stage.report.leases_acquired = stage.report.leases_acquired.saturating_add(1);
    stage.granted(resource, owner);
    if let Some(write) = stage.write_for(&lease, now) {
        stage.deliver(&write);
    }
    Some(Incumbent { worker, tenure: Tenure::granted(lease, now, stage.cadence) })
}

/// One failover: the incumbent's delayed write, expiry, a takeover by another worker, the stale write refused, and
/// the old holder's renewal refused. Returns the new incumbent.
fn fail_over(stage: &mut Stage, resource: u64, mut incumbent: Incumbent) -> Option<Incumbent> {
    // The write started at the grant (or renewal) and stalled: with several resources, the lease may have expired
    // already while other resources failed over.
    let lease = &incumbent.tenure.lease;
    let delayed = stage.write_for(lease, lease.issued_at());
    let jitter = stage.world.span_up_to(stage.spans.half);
    stage.world.advance_past(lease.expires_at(), jitter);
    let count = stage.config.workers;
    let pick = stage.world.between(1, count.saturating_sub(1));
    let successor = incumbent.worker.wrapping_add(pick).checked_rem(count).unwrap_or(0);
    let next = take_over(stage, resource, successor);
    if let Some(write) = delayed {
        stage.deliver(&write);
    }
    let owner = OwnerId::new(incumbent.worker.saturating_add(1));
    let now = stage.world.now();
    if incumbent.tenure.holder.renewal_due(now) {
        incumbent.tenure.holder.refresh(now);
        let token = incumbent.tenure.lease.token();
        match stage.table.renew(&resource, owner, token, now, stage.spans.ttl) {
            TableDecision::Renewed(lease) => {
                incumbent.tenure.holder.confirm(lease.token(), now);
                stage.report.renewals = stage.report.renewals.saturating_add(1);
            }
            TableDecision::Rejected(rejection) => {
                if stage.refused(rejection) {
                    stage.lost(incumbent.tenure);
                }
            }
            _ => stage.lost(incumbent.tenure),
        }
    }
    next
}
