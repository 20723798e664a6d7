//! What a simulation did and found: the [`SimulationReport`].

use crate::SimulationConfig;

#[cfg(doc)]
use {
    crate::{simulate, FenceMode},
    lease_machines::{ClockPolicy, Holder, LeaseTable, Rejection},
};

/// What a simulation did and found. Counts are totals over the whole run.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct SimulationReport {
    /// The configuration run.
    pub config: SimulationConfig,
    /// Cycles run (the configuration's `cycles`).
    pub cycles: u64,
    /// Leases granted by [`LeaseTable::acquire`] (rotations and transfers are counted apart).
    pub leases_acquired: u64,
    /// Leases rotated to a new token by their holder ([`LeaseTable::reacquire`]).
    pub rotations: u64,
    /// Leases handed to another worker ([`LeaseTable::transfer`]).
    pub transfers: u64,
    /// Renewals the table accepted.
    pub renewals: u64,
    /// Leases given back.
    pub releases: u64,
    /// Expired lease records reaped.
    pub reaps: u64,
    /// Grants (acquisitions and transfers) to another owner than the resource's previous grant's.
    pub takeovers: u64,
    /// Holders that learnt from a refused renewal that their lease was gone, and expired their [`Holder`].
    pub leases_lost: u64,
    /// Pauses longer than the TTL, each with a write in flight.
    pub pauses: u64,
    /// Times a worker's clock stepped backwards.
    pub clock_steps_back: u64,
    /// Commands refused with [`Rejection::ClockRegressed`] (only under [`ClockPolicy::Reject`]).
    pub clock_rejections: u64,
    /// Times the table was checkpointed and restored.
    pub restores: u64,
    /// Writes the storage accepted.
    pub writes_accepted: u64,
    /// Writes the storage's fence refused (always `0` with [`FenceMode::Disabled`]).
    pub stale_writes_rejected: u64,
    /// Accepted writes, not violations, whose lease was no longer the live one when they arrived: a fence cannot
    /// refuse a stale holder before a newer holder has written (see "Fencing at the protected resource" in
    /// [`lease_machines`]). Information, not a failure.
    pub late_writes_accepted: u64,
    /// The greatest token issued on any one resource; `0` when none was (`0` is never a token). Each resource has its
    /// own token namespace, so this is the count of grants on the busiest resource, not of all grants: see
    /// [`tokens_issued`](Self::tokens_issued).
    pub final_token: u64,
    /// Events the table recorded, all audited.
    pub events: u64,
    /// Whether the audit of every event found nothing and no event was lost.
    pub audit_valid: bool,
    /// How many findings the audit made.
    pub audit_findings: u64,
    /// Accepted writes the oracle found unsafe: `0` whenever the fence is enforced.
    pub violations: u64,
    /// The word-wise FNV-1a digest of every event, in order (see [`simulate`]).
    pub event_digest: u64,
}

impl SimulationReport {
    /// Whether the run was safe: no violation and a valid audit.
    #[must_use]
    pub const fn is_safe(&self) -> bool {
        self.violations == 0 && self.audit_valid
    }

    /// How many fencing tokens were issued in all, over every resource: one per grant, so acquisitions, rotations and
    /// transfers. With one resource this is [`final_token`](Self::final_token) (tokens start at 1 and rise by one
    /// per grant); with several, each counting its own tokens from 1, it is more.
    #[must_use]
    pub const fn tokens_issued(&self) -> u64 {
        self.leases_acquired.saturating_add(self.rotations).saturating_add(self.transfers)
    }

    /// The report of `config` before its first cycle: every count zero.
    pub(crate) const fn new(config: SimulationConfig) -> Self {
        Self {
            config,
            cycles: 0,
            leases_acquired: 0,
            rotations: 0,
            transfers: 0,
            renewals: 0,
            releases: 0,
            reaps: 0,
            takeovers: 0,
            leases_lost: 0,
            pauses: 0,
            clock_steps_back: 0,
            clock_rejections: 0,
            restores: 0,
            writes_accepted: 0,
            stale_writes_rejected: 0,
            late_writes_accepted: 0,
            final_token: 0,
            events: 0,
            audit_valid: false,
            audit_findings: 0,
            violations: 0,
            event_digest: 0,
        }
    }
}
