//! The failover simulation: moonleasekit's failover preset, determinism, refused configurations, restores and clock
//! steps that change nothing about safety, and a disabled fence that the oracle catches.
#![cfg(test)] // test code throughout: clippy.toml lets it unwrap, expect, panic and index

use core::time::Duration;
use std::time::Instant;

use lease_machines::ClockPolicy;
use lease_machines_sim::{simulate, FenceMode, Scenario, SimulationConfig, SimulationError, SimulationReport};

fn run(config: SimulationConfig) -> SimulationReport {
    simulate(&config).unwrap_or_else(|error| panic!("{config:?} is valid: {error}"))
}

fn contention(seed: u64) -> SimulationConfig {
    SimulationConfig { seed, cycles: 3_000, ..SimulationConfig::default() }
}

/// The report with the fields a restore may change (how many restores, and the setting) set aside.
fn without_restores(report: &SimulationReport) -> SimulationReport {
    SimulationReport { restores: 0, config: SimulationConfig { restore_every: 0, ..report.config }, ..report.clone() }
}

#[test]
fn the_preset_runs_50_000_failovers_and_refuses_every_old_writer() {
    let config = SimulationConfig::failover_preset();
    assert_eq!((config.cycles, config.resources, config.scenario), (50_000, 1, Scenario::Failover));
    let started = Instant::now();
    let report = run(config);
    let elapsed = started.elapsed();
    eprintln!("failover preset: {elapsed:?} ({} build)", if cfg!(debug_assertions) { "debug" } else { "release" });
    eprintln!("{report:?}");

    assert_eq!(report.cycles, 50_000);
    // One initial grant, then one takeover per cycle, each with a new token.
    assert_eq!(report.takeovers, 50_000);
    assert_eq!(report.leases_acquired, 50_001);
    assert_eq!(report.final_token, 50_001);
    // Every new holder's write lands; every old holder's delayed write after the takeover is refused.
    assert_eq!(report.writes_accepted, 50_001);
    assert_eq!(report.stale_writes_rejected, 50_000);
    assert_eq!(report.late_writes_accepted, 0);
    // Every old holder learns it from its refused renewal.
    assert_eq!(report.leases_lost, 50_000);
    assert_eq!(report.restores, 4);
    assert_eq!(report.events, 50_001);
    assert_eq!(report.violations, 0);
    assert!(report.audit_valid);
    assert!(report.is_safe());
}

#[test]
fn the_same_seed_gives_the_same_report() {
    for config in [SimulationConfig::failover_preset(), contention(7), SimulationConfig { seed: 7, ..contention(7) }] {
        let config = SimulationConfig { cycles: config.cycles.min(5_000), ..config };
        assert_eq!(run(config), run(config));
    }
}

#[cfg(feature = "serde")]
#[test]
fn the_same_seed_gives_byte_identical_json() {
    use lease_machines::json::Json;

    for config in [SimulationConfig { cycles: 2_000, ..SimulationConfig::failover_preset() }, contention(11)] {
        let (first, second) = (run(config).to_json(), run(config).to_json());
        assert_eq!(first, second);
        assert_eq!(SimulationReport::from_json(&first).as_ref(), Ok(&run(config)));
    }
}

#[cfg(feature = "serde")]
#[test]
fn the_report_reads_and_writes_format_1() {
    use lease_machines::json::{Json, JsonError};

    let config = SimulationConfig { cycles: 3, ..SimulationConfig::failover_preset() };
    let text = run(config).to_json();
    assert!(
        text.starts_with(
            r#"{"format":1,"config":{"seed":0,"cycles":3,"workers":2,"resources":1,"ttl_ns":10000000000,"scenario":"failover","clock_policy":"clamp","restore_every":10000,"fence":"enforced"},"cycles":3,"leases_acquired":4,"#
        ),
        "{text}"
    );
    assert!(
        text.contains(r#","final_token":4,"events":4,"audit_valid":true,"audit_findings":0,"violations":0,"#),
        "{text}"
    );

    let future = text.replacen(r#""format":1"#, r#""format":2"#, 1);
    assert_eq!(SimulationReport::from_json(&future), Err(JsonError::UnsupportedFormat(2)));
    let unknown = text.replacen(r#""cycles":3,"leases"#, r#""cycles":3,"surprise":0,"leases"#, 1);
    assert!(matches!(SimulationReport::from_json(&unknown), Err(JsonError::Syntax(_))));
    let no_workers = text.replacen(r#""workers":2"#, r#""workers":0"#, 1);
    assert!(matches!(SimulationReport::from_json(&no_workers), Err(JsonError::Invalid(_))));
    let scenario = text.replacen(r#""failover""#, r#""chaos""#, 1);
    assert!(matches!(SimulationReport::from_json(&scenario), Err(JsonError::Invalid(_))));
    let contradiction = text.replacen(r#""audit_findings":0"#, r#""audit_findings":1"#, 1);
    assert!(matches!(SimulationReport::from_json(&contradiction), Err(JsonError::Invalid(_))));
    assert!(SimulationReport::from_json("[]").is_err());
}

#[test]
fn different_seeds_give_different_runs() {
    for base in [SimulationConfig { cycles: 2_000, ..SimulationConfig::failover_preset() }, contention(0)] {
        let digests: Vec<u64> = (0..4).map(|seed| run(SimulationConfig { seed, ..base }).event_digest).collect();
        for (index, digest) in digests.iter().enumerate() {
            assert!(!digests[index + 1..].contains(digest), "{base:?}: {digests:?}");
        }
    }
}

#[test]
fn invalid_configurations_are_refused() {
    let valid = SimulationConfig::default();
    let refused = [
        (SimulationConfig { workers: 0, ..valid }, SimulationError::Workers(0), "workers"),
        (SimulationConfig { workers: 1, ..valid }, SimulationError::Workers(1), "workers"),
        (SimulationConfig { workers: 1025, ..valid }, SimulationError::Workers(1025), "workers"),
        (SimulationConfig { resources: 0, ..valid }, SimulationError::Resources(0), "resources"),
        (SimulationConfig { resources: 1025, ..valid }, SimulationError::Resources(1025), "resources"),
        (SimulationConfig { ttl: Duration::ZERO, ..valid }, SimulationError::Ttl(Duration::ZERO), "ttl"),
        (
            SimulationConfig { ttl: Duration::from_nanos(999), ..valid },
            SimulationError::Ttl(Duration::from_nanos(999)),
            "ttl",
        ),
        (SimulationConfig { ttl: Duration::MAX, ..valid }, SimulationError::TooLong, "cycles"),
        (SimulationConfig { cycles: u64::MAX, ..valid }, SimulationError::TooLong, "cycles"),
        (
            SimulationConfig { cycles: 1 << 40, ttl: Duration::from_secs(86_400), ..valid },
            SimulationError::TooLong,
            "cycles",
        ),
    ];
    for (config, error, field) in refused {
        assert_eq!(config.validate(), Err(error), "{config:?}");
        assert_eq!(simulate(&config), Err(error), "{config:?}");
        assert_eq!(error.field(), field);
        assert!(error.to_string().starts_with(field), "{error}");
    }
    for config in [
        valid,
        SimulationConfig::failover_preset(),
        SimulationConfig { workers: 2, resources: 1, ttl: SimulationConfig::MIN_TTL, cycles: 0, ..valid },
        SimulationConfig { workers: 1024, resources: 1024, cycles: 1, ..valid },
    ] {
        assert_eq!(config.validate(), Ok(()), "{config:?}");
    }
    let empty = run(SimulationConfig { cycles: 0, ..valid });
    assert_eq!((empty.cycles, empty.events, empty.final_token, empty.writes_accepted), (0, 0, 0, 0));
    assert!(empty.is_safe());
}

#[test]
fn restoring_the_table_mid_run_changes_nothing() {
    for base in [
        contention(3),
        SimulationConfig { clock_policy: ClockPolicy::Reject, ..contention(4) },
        SimulationConfig { resources: 5, workers: 9, ..contention(5) },
        SimulationConfig { cycles: 3_000, ..SimulationConfig::failover_preset() },
        SimulationConfig { cycles: 3_000, resources: 3, workers: 5, ..SimulationConfig::failover_preset() },
    ] {
        let never = run(SimulationConfig { restore_every: 0, ..base });
        assert_eq!(never.restores, 0);
        assert!(never.is_safe(), "{never:?}");
        for every in [1, 7, 500] {
            let restored = run(SimulationConfig { restore_every: every, ..base });
            assert_eq!(restored.restores, (base.cycles - 1) / every);
            assert_eq!(without_restores(&restored), without_restores(&never), "restore every {every}");
        }
    }
}

#[test]
fn clock_steps_back_do_not_break_safety() {
    for policy in [ClockPolicy::Clamp, ClockPolicy::Reject] {
        for seed in 0..4 {
            let report = run(SimulationConfig { clock_policy: policy, ..contention(seed) });
            assert!(report.clock_steps_back > 0, "{report:?}");
            assert_eq!(report.clock_rejections > 0, policy == ClockPolicy::Reject, "{report:?}");
            assert!(report.is_safe(), "{report:?}");
        }
    }
}

#[test]
fn contention_exercises_every_move_safely() {
    let report = run(SimulationConfig::default());
    eprintln!("{report:?}");
    let moves = [
        ("acquisitions", report.leases_acquired),
        ("renewals", report.renewals),
        ("rotations", report.rotations),
        ("transfers", report.transfers),
        ("releases", report.releases),
        ("reaps", report.reaps),
        ("takeovers", report.takeovers),
        ("lost leases", report.leases_lost),
        ("pauses", report.pauses),
        ("clock steps back", report.clock_steps_back),
        ("restores", report.restores),
        ("accepted writes", report.writes_accepted),
        ("refused stale writes", report.stale_writes_rejected),
    ];
    for (name, count) in moves {
        assert!(count > 0, "no {name}: {report:?}");
    }
    assert!(report.final_token > 0 && report.final_token <= report.tokens_issued());
    assert!(report.events >= report.tokens_issued() + report.renewals + report.releases + report.reaps);
    assert!(report.is_safe());
}

/// A token is issued per grant, and each resource counts its own from 1: over several resources the tokens issued are
/// the grants on all of them, and the final token only the highest of any one. With one resource the two agree.
#[test]
fn tokens_issued_counts_every_grant_on_every_resource() {
    let failover = SimulationConfig { cycles: 3_000, resources: 3, workers: 5, ..SimulationConfig::failover_preset() };
    let contention =
        SimulationConfig { seed: 42, cycles: 1_500, workers: 5, resources: 3, ..SimulationConfig::default() };
    let single = SimulationConfig { seed: 2, cycles: 3_000, resources: 1, ..SimulationConfig::default() };
    // (acquisitions, rotations, transfers), tokens issued, final token. The failover: one first grant per resource,
    // then one takeover per cycle.
    for (config, grants, tokens_issued, final_token) in [
        (failover, (3_003, 0, 0), 3_003, 1_040),
        (contention, (166, 39, 20), 225, 76),
        (single, (137, 31, 35), 203, 203),
    ] {
        let report = run(config);
        assert_eq!((report.leases_acquired, report.rotations, report.transfers), grants, "{config:?}");
        assert_eq!((report.tokens_issued(), report.final_token), (tokens_issued, final_token), "{config:?}");
    }
}

#[test]
fn a_disabled_fence_lets_stale_writes_through_and_the_oracle_finds_every_one() {
    let preset = SimulationConfig { cycles: 5_000, ..SimulationConfig::failover_preset() };
    let broken = run(SimulationConfig { fence: FenceMode::Disabled, ..preset });
    assert_eq!(broken.violations, 5_000);
    assert_eq!(broken.stale_writes_rejected, 0);
    assert!(!broken.is_safe());
    // The audit of the table's events is still clean: the table did nothing wrong, the storage did.
    assert!(broken.audit_valid);

    for config in [preset, contention(0), contention(1), SimulationConfig { resources: 1, ..contention(2) }] {
        let enforced = run(config);
        let broken = run(SimulationConfig { fence: FenceMode::Disabled, ..config });
        // What the storage says never changes the workers' course: the same commands, the same events ...
        assert_eq!(broken.event_digest, enforced.event_digest);
        assert_eq!(broken.tokens_issued(), enforced.tokens_issued());
        // ... and every write the fence refused is a violation once let through.
        assert!(enforced.stale_writes_rejected > 0);
        assert_eq!(enforced.violations, 0);
        assert_eq!(broken.violations, enforced.stale_writes_rejected);
        assert_eq!(broken.writes_accepted, enforced.writes_accepted + enforced.stale_writes_rejected);
    }
}
