//! The deterministic failover simulation. Run: `cargo bench -p lease-machines-sim --bench simulation`.
//!
//! `failover_preset` is moonleasekit's benchmark (50,000 failovers, every old writer refused, the whole event log
//! audited); the contention run is `SimulationConfig::default()` (10,000 cycles, 4 workers, 2 resources). Each
//! iteration is one whole run, checked to be safe.
#![allow(clippy::expect_used, clippy::panic, reason = "a benchmark that fails its set-up or check stops")]

use std::hint::black_box;
use std::time::Duration;

use criterion::{criterion_group, criterion_main, Criterion};
use lease_machines_sim::{simulate, SimulationConfig};

fn run(config: &SimulationConfig) -> u64 {
    let report = simulate(black_box(config)).unwrap_or_else(|error| panic!("{config:?} is valid: {error}"));
    assert!(report.is_safe(), "{report:?}");
    report.event_digest
}

fn simulation(c: &mut Criterion) {
    let mut group = c.benchmark_group("simulation");
    group.sample_size(20).measurement_time(Duration::from_secs(5));
    let preset = SimulationConfig::failover_preset();
    group.bench_function("failover_preset (50,000 cycles)", |b| b.iter(|| run(&preset)));
    let contention = SimulationConfig::default();
    group.bench_function("contention (default: 10,000 cycles, 4 workers)", |b| b.iter(|| run(&contention)));
    group.finish();
}

criterion_group!(benches, simulation);
criterion_main!(benches);
