//! Cost of each decision. Run: `cargo bench -p lease-machines --bench decisions`.
//!
//! Each benchmark drives one authority through a steady state in which every iteration gets the named decision, so
//! the figure is the cost of that decision alone (no setup in the timed loop unless the name says so).
#![allow(clippy::expect_used, clippy::panic, reason = "a benchmark that fails its set-up or check stops")]

use std::hint::black_box;
use std::time::Duration;

use criterion::{criterion_group, criterion_main, BatchSize, Criterion};
use lease_machines::{Cadence, Decision, Fence, FencingToken, Holder, LeaseAuthority, OwnerId, Rejection};

const TTL: Duration = Duration::from_secs(30);
const OWNER: OwnerId = OwnerId::new(7);
const OTHER: OwnerId = OwnerId::new(12);

fn granted(decision: Decision) -> FencingToken {
    match decision {
        Decision::Granted(lease) | Decision::Renewed(lease) => lease.token(),
        other => panic!("expected a grant, got {other:?}"),
    }
}

fn authority(c: &mut Criterion) {
    let mut group = c.benchmark_group("authority");

    group.bench_function("acquire/granted", |b| {
        // Every lease lasts 1 ns and `now` moves 1 ns per call, so each acquire finds the previous lease expired.
        let mut authority = LeaseAuthority::new();
        let mut now = Duration::ZERO;
        b.iter(|| {
            now += Duration::from_nanos(1);
            black_box(authority.acquire(black_box(OWNER), now, Duration::from_nanos(1)))
        });
    });

    group.bench_function("acquire/occupied", |b| {
        let mut authority = LeaseAuthority::new();
        let _ = granted(authority.acquire(OWNER, Duration::ZERO, Duration::MAX));
        b.iter(|| {
            let decision = authority.acquire(black_box(OTHER), black_box(Duration::ZERO), TTL);
            debug_assert_eq!(decision, Decision::Rejected(Rejection::Occupied));
            black_box(decision)
        });
    });

    group.bench_function("renew", |b| {
        let mut authority = LeaseAuthority::new();
        let token = granted(authority.acquire(OWNER, Duration::ZERO, TTL));
        let mut now = Duration::ZERO;
        b.iter(|| {
            now += Duration::from_nanos(1);
            black_box(authority.renew(black_box(OWNER), black_box(token), now, TTL))
        });
    });

    group.bench_function("release (with clone of a held authority)", |b| {
        let mut held = LeaseAuthority::new();
        let token = granted(held.acquire(OWNER, Duration::ZERO, TTL));
        b.iter_batched(
            || held.clone(),
            |mut authority| black_box(authority.release(black_box(OWNER), black_box(token), Duration::ZERO)),
            BatchSize::SmallInput,
        );
    });

    group.bench_function("reacquire/rotate", |b| {
        let mut authority = LeaseAuthority::new();
        let _ = granted(authority.acquire(OWNER, Duration::ZERO, TTL));
        b.iter(|| black_box(authority.reacquire(black_box(OWNER), black_box(Duration::ZERO), TTL)));
    });

    group.bench_function("cycle acquire+renew+release", |b| {
        let mut authority = LeaseAuthority::new();
        let mut now = Duration::ZERO;
        b.iter(|| {
            now += Duration::from_nanos(1);
            let token = granted(authority.acquire(black_box(OWNER), now, TTL));
            let _ = black_box(authority.renew(OWNER, token, now, TTL));
            black_box(authority.release(OWNER, token, now))
        });
    });

    group.finish();
}

fn fence(c: &mut Criterion) {
    let mut group = c.benchmark_group("fence");
    let current = FencingToken::new(8).expect("8 is a token");
    let stale = FencingToken::new(7).expect("7 is a token");

    group.bench_function("accept/current", |b| {
        let mut fence = Fence::new(Some(current));
        b.iter(|| black_box(fence.accept(black_box(current))));
    });
    group.bench_function("accept/stale", |b| {
        let mut fence = Fence::new(Some(current));
        b.iter(|| black_box(fence.accept(black_box(stale))));
    });
    group.finish();
}

fn holder(c: &mut Criterion) {
    let cadence = Cadence::new(TTL, Duration::from_secs(10), Duration::from_secs(5)).expect("valid cadence");
    let holder = Holder::new(FencingToken::FIRST, Duration::ZERO, cadence);
    c.bench_function("holder/poll (renewal_due + at_risk)", |b| {
        let mut now = Duration::ZERO;
        b.iter(|| {
            now += Duration::from_nanos(1);
            black_box(black_box(&holder).renewal_due(now)) | black_box(&holder).at_risk(now)
        });
    });
}

criterion_group!(benches, authority, fence, holder);
criterion_main!(benches);
