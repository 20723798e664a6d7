//! The lease table at 1,000 / 100,000 / 1,000,000 resources: the cost of a command, and the memory per resource.
//! Run: `cargo bench -p lease-machines --features alloc --bench table`.
//!
//! Memory is measured, not computed: a counting global allocator reports the bytes the table holds once every
//! resource has been granted and released (an idle resource: token high-water and revision kept, no lease record),
//! and once every resource holds a lease. The figures are printed before the timings.
//!
//! Beside the commands, `table/baseline/N` times the physical floor of a random command on a table of `N` resources: a
//! dependent random read (each read's address comes from the one before, so no two overlap) over an array of
//! cache lines as large as that table in memory with every resource holding a lease. One memory miss per read.
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

/// The bytes a table of `n` resources holds with every resource holding a lease (without the tokens `held` returns).
fn held_bytes(n: u64) -> usize {
    let before = LIVE_BYTES.load(Ordering::Relaxed);
    let table = held(n);
    let bytes = LIVE_BYTES.load(Ordering::Relaxed) - before - (n as isize) * 8;
    drop(table);
    usize::try_from(bytes).expect("a table holds memory")
}

/// One cache line of the baseline: the position of the next line to read.
#[repr(align(64))]
struct Line {
    next: usize,
}

/// `bytes` of cache lines linked into one cycle in a shuffled order (splitmix64 from a fixed seed): each line points
/// at the next in that order and the last at the first, so that following `next` from any line reads every line once,
/// in an order the CPU's prefetchers cannot guess.
fn cycle(bytes: usize) -> Vec<Line> {
    let count = (bytes / std::mem::size_of::<Line>()).max(2);
    let mut order: Vec<usize> = (0..count).collect();
    let mut state = 0x243F_6A88_85A3_08D3u64;
    for i in (1..count).rev() {
        // splitmix64
        state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = state;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^= z >> 31;
        let j = usize::try_from(z % i as u64).expect("below count");
        order.swap(i, j);
    }
    let mut lines: Vec<Line> = (0..count).map(|_| Line { next: 0 }).collect();
    for (&from, &to) in order.iter().zip(order.iter().cycle().skip(1)) {
        if let Some(line) = lines.get_mut(from) {
            line.next = to;
        }
    }
    lines
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
        let lines = cycle(held_bytes(n));
        let mut at = 0usize;
        group.bench_with_input(BenchmarkId::new("baseline", n), &n, |b, _| {
            b.iter(|| {
                at = lines.get(at).map_or(0, |line| line.next);
                black_box(at)
            });
        });
        drop(lines);
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
