//! The report's stable JSON document (format 1), an implementation of the core's [`Json`]: the same format
//! version, the same errors.

use alloc::string::{String, ToString};
use core::time::Duration;

use serde::{Deserialize, Serialize};

use lease_machines::json::{Json, JsonError, FORMAT};
use lease_machines::ClockPolicy;

use crate::{FenceMode, Scenario, SimulationConfig, SimulationReport};

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct ConfigWire {
    seed: u64,
    cycles: u64,
    workers: u64,
    resources: u64,
    ttl_ns: u128,
    scenario: String,
    clock_policy: String,
    restore_every: u64,
    fence: String,
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct ReportWire {
    format: u64,
    config: ConfigWire,
    cycles: u64,
    leases_acquired: u64,
    rotations: u64,
    transfers: u64,
    renewals: u64,
    releases: u64,
    reaps: u64,
    takeovers: u64,
    leases_lost: u64,
    pauses: u64,
    clock_steps_back: u64,
    clock_rejections: u64,
    restores: u64,
    writes_accepted: u64,
    stale_writes_rejected: u64,
    late_writes_accepted: u64,
    final_token: u64,
    events: u64,
    audit_valid: bool,
    audit_findings: u64,
    violations: u64,
    event_digest: u64,
}

#[derive(Deserialize)]
struct Version {
    format: u64,
}

fn invalid(message: &str, name: &str) -> JsonError {
    JsonError::Invalid(alloc::format!("{message} {name:?}"))
}

/// The document `{"format": 1, "config": {...}, "cycles": ..., ..., "event_digest": ...}`: every field of the
/// report in declaration order, the configuration's `ttl` as `ttl_ns` (integer nanoseconds) and its scenario,
/// clock policy and fence mode by their snake_case names. A reader refuses a configuration
/// [`SimulationConfig::validate`] refuses, and an `audit_valid` of true with findings.
impl Json for SimulationReport {
    fn to_json(&self) -> String {
        let config = &self.config;
        let wire = ReportWire {
            format: FORMAT,
            config: ConfigWire {
                seed: config.seed,
                cycles: config.cycles,
                workers: config.workers,
                resources: config.resources,
                ttl_ns: config.ttl.as_nanos(),
                scenario: config.scenario.as_str().into(),
                clock_policy: config.clock_policy.as_str().into(),
                restore_every: config.restore_every,
                fence: config.fence.as_str().into(),
            },
            cycles: self.cycles,
            leases_acquired: self.leases_acquired,
            rotations: self.rotations,
            transfers: self.transfers,
            renewals: self.renewals,
            releases: self.releases,
            reaps: self.reaps,
            takeovers: self.takeovers,
            leases_lost: self.leases_lost,
            pauses: self.pauses,
            clock_steps_back: self.clock_steps_back,
            clock_rejections: self.clock_rejections,
            restores: self.restores,
            writes_accepted: self.writes_accepted,
            stale_writes_rejected: self.stale_writes_rejected,
            late_writes_accepted: self.late_writes_accepted,
            final_token: self.final_token,
            events: self.events,
            audit_valid: self.audit_valid,
            audit_findings: self.audit_findings,
            violations: self.violations,
            event_digest: self.event_digest,
        };
        // Serialising this plain struct into a String cannot fail.
        serde_json::to_string(&wire).unwrap_or_default()
    }

    fn from_json(text: &str) -> Result<Self, JsonError> {
        let version: Version = serde_json::from_str(text).map_err(|error| JsonError::Syntax(error.to_string()))?;
        if version.format != FORMAT {
            return Err(JsonError::UnsupportedFormat(version.format));
        }
        let wire: ReportWire = serde_json::from_str(text).map_err(|error| JsonError::Syntax(error.to_string()))?;
        let ttl_ns = u64::try_from(wire.config.ttl_ns)
            .map_err(|_| JsonError::Invalid("ttl_ns is beyond 2^64 nanoseconds".into()))?;
        let config = SimulationConfig {
            seed: wire.config.seed,
            cycles: wire.config.cycles,
            workers: wire.config.workers,
            resources: wire.config.resources,
            ttl: Duration::from_nanos(ttl_ns),
            scenario: Scenario::from_name(&wire.config.scenario)
                .ok_or_else(|| invalid("unknown scenario", &wire.config.scenario))?,
            clock_policy: ClockPolicy::from_name(&wire.config.clock_policy)
                .ok_or_else(|| invalid("unknown clock policy", &wire.config.clock_policy))?,
            restore_every: wire.config.restore_every,
            fence: FenceMode::from_name(&wire.config.fence)
                .ok_or_else(|| invalid("unknown fence mode", &wire.config.fence))?,
        };
        config.validate().map_err(|error| JsonError::Invalid(error.to_string()))?;
        if wire.audit_valid && wire.audit_findings > 0 {
            return Err(JsonError::Invalid("\"audit_valid\" cannot be true with audit findings".into()));
        }
        Ok(SimulationReport {
            config,
            cycles: wire.cycles,
            leases_acquired: wire.leases_acquired,
            rotations: wire.rotations,
            transfers: wire.transfers,
            renewals: wire.renewals,
            releases: wire.releases,
            reaps: wire.reaps,
            takeovers: wire.takeovers,
            leases_lost: wire.leases_lost,
            pauses: wire.pauses,
            clock_steps_back: wire.clock_steps_back,
            clock_rejections: wire.clock_rejections,
            restores: wire.restores,
            writes_accepted: wire.writes_accepted,
            stale_writes_rejected: wire.stale_writes_rejected,
            late_writes_accepted: wire.late_writes_accepted,
            final_token: wire.final_token,
            events: wire.events,
            audit_valid: wire.audit_valid,
            audit_findings: wire.audit_findings,
            violations: wire.violations,
            event_digest: wire.event_digest,
        })
    }
}
