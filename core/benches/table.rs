//! The lease table at 1,000 / 100,000 / 1,000,000 resources: the cost of a command, and the memory per resource.
//! Run: `cargo bench -p lease-machines --features alloc --bench table`.
//!
//! Memory is measured, not computed: a counting global allocator reports the bytes the table holds once every
//! resource has been granted and released (an idle resource: token high-water and revision kept, no lease record),
//! and once every resource holds a lease. The figures are printed before the timings.
#![allow(clippy::expect_used, clippy::panic, reason = "a benchmark that fails its set-up or check stops")]

use std::alloc::{GlobalAlloc, Layout, System};
use std::hint::black_box;
use std::sync::atomic::{AtomicIsize, Ordering};
use std::time::Duration;

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use lease_machines::{Discard, FencingToken, LeaseTable, OwnerId, TableDecision};

/// The system allocator, counting the bytes currently allocated.
struct Counting;

static LIVE_BYTES: AtomicIsize = AtomicIsize::new(0);

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        LIVE_BYTES.fetch_add(layout.size() as isize, Ordering::Relaxed);
        // SAFETY: forwarded unchanged to the system allocator.
        unsafe { System.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        LIVE_BYTES.fetch_sub(layout.size() as isize, Ordering::Relaxed);
        // SAFETY: forwarded unchanged to the system allocator.
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

const SIZES: [u64; 3] = [1_000, 100_000, 1_000_000];
const TTL: Duration = Duration::from_secs(30);
const OWNER: OwnerId = OwnerId::new(7);

/// A table of `n` resources (keys `0..n`), each granted once at time 0; events are discarded.
fn held(n: u64) -> (LeaseTable<u64, Discard>, Vec<FencingToken>) {
    let mut table = LeaseTable::with_sink(Discard);
    let tokens = (0..n)
        .map(|resource| match table.acquire(&resource, OWNER, Duration::ZERO, TTL) {
            TableDecision::Granted(lease) => lease.token(),
            other => panic!("expected a grant, got {other:?}"),
        })
        .collect();
    (table, tokens)
}

fn memory() {
    for n in SIZES {
        let before = LIVE_BYTES.load(Ordering::Relaxed);
        let (mut table, tokens) = held(n);
        let with_leases = LIVE_BYTES.load(Ordering::Relaxed) - before;
        drop(tokens);
        for resource in 0..n {
            let _ = table.release(&resource, OWNER, FencingToken::FIRST, Duration::ZERO);
        }
        let idle = LIVE_BYTES.load(Ordering::Relaxed) - before;
        println!(
            "table/memory/{n}: {:.1} bytes per resource holding a lease, {:.1} bytes per idle resource",
            (with_leases - (n as isize) * 8) as f64 / n as f64,
            idle as f64 / n as f64,
        );
        black_box(&table);
    }
}

/// A cheap deterministic spread of resource keys, so lookups are not all in one cache line.
fn spread(i: u64, n: u64) -> u64 {
    i.wrapping_mul(0x9E37_79B9_7F4A_7C15) % n
}

fn commands(c: &mut Criterion) {
    memory();
    let mut group = c.benchmark_group("table");
    group.throughput(Throughput::Elements(1));
    for n in SIZES {
        let (mut table, _) = held(n);
        let mut i = 0u64;
        group.bench_with_input(BenchmarkId::new("renew", n), &n, |b, &n| {
            b.iter(|| {
                i = i.wrapping_add(1);
                black_box(table.renew(&spread(i, n), OWNER, FencingToken::FIRST, Duration::ZERO, TTL))
            });
        });
        group.bench_with_input(BenchmarkId::new("acquire/occupied", n), &n, |b, &n| {
            b.iter(|| {
                i = i.wrapping_add(1);
                black_box(table.acquire(&spread(i, n), OwnerId::new(8), Duration::ZERO, TTL))
            });
        });
    }
    group.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default().measurement_time(Duration::from_secs(3)).warm_up_time(Duration::from_secs(1));
    targets = commands
}
criterion_main!(benches);
