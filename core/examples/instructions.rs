//! The workloads `bin/rake bench:instructions` counts instructions of, under valgrind's callgrind.
//!
//!     instructions DECISION CALLS
//!
//! runs DECISION `CALLS` times in the steady state its name describes (the same ones as `benches/decisions.rs`).
//! callgrind counts every instruction the process runs; the rake task runs each decision twice, with two numbers
//! of calls, and divides the difference of the totals by the difference of the calls, so that start-up, set-up and
//! exit cancel out and what remains is one call and its share of the loop. Instruction counts do not depend on the
//! machine's load, as timings do: the same binary with the same input counts the same.

use std::hint::black_box;
use std::process::ExitCode;
use std::time::Duration;

use lease_machines::{Cadence, Decision, Fence, FencingToken, Holder, LeaseAuthority, OwnerId};

const TTL: Duration = Duration::from_secs(30);
const OWNER: OwnerId = OwnerId::new(7);
const OTHER: OwnerId = OwnerId::new(12);

/// A workload: its name (the one the rake task passes) and the loop, given its number of calls.
type Workload = (&'static str, fn(u64));

/// The decisions, by the name the rake task passes.
const DECISIONS: [Workload; 9] = [
    ("floor", floor),
    ("acquire/granted", acquire_granted),
    ("acquire/occupied", acquire_occupied),
    ("renew", renew),
    ("release", release),
    ("reacquire/rotate", reacquire_rotate),
    ("fence/accept/current", fence_current),
    ("fence/accept/stale", fence_stale),
    ("holder/poll", holder_poll),
];

/// One decision as a host makes it: a call that is not inlined into the loop, on an authority in memory.
#[inline(never)]
fn decide(authority: &mut LeaseAuthority, decide: impl FnOnce(&mut LeaseAuthority) -> Decision) -> Decision {
    decide(authority)
}

#[inline(never)]
fn accept(fence: &mut Fence, token: FencingToken) -> bool {
    fence.accept(token)
}

#[inline(never)]
fn poll(holder: &Holder, now: Duration) -> bool {
    holder.renewal_due(now) | holder.at_risk(now)
}

/// The floor: the loop of `acquire/granted` (`now` advanced, a call made, its answer kept) with a decision that
/// decides nothing. The figure every decision's count is read against.
fn floor(calls: u64) {
    let mut authority = LeaseAuthority::new();
    let mut now = Duration::ZERO;
    for _ in 0..calls {
        now += Duration::from_nanos(1);
        let _ = black_box(decide(&mut authority, |_| black_box(Decision::Released)));
        let _ = black_box(now);
    }
}

fn token(decision: Decision) -> FencingToken {
    decision.lease().map_or(FencingToken::FIRST, |lease| lease.token())
}

/// Every lease lasts 1 ns and `now` moves 1 ns per call: each acquire finds the previous lease expired.
fn acquire_granted(calls: u64) {
    let mut authority = LeaseAuthority::new();
    let mut now = Duration::ZERO;
    for _ in 0..calls {
        now += Duration::from_nanos(1);
        let _ = black_box(decide(&mut authority, |a| a.acquire(black_box(OWNER), now, Duration::from_nanos(1))));
    }
}

fn acquire_occupied(calls: u64) {
    let mut authority = LeaseAuthority::new();
    let _ = black_box(authority.acquire(OWNER, Duration::ZERO, Duration::MAX));
    for _ in 0..calls {
        let _ = black_box(decide(&mut authority, |a| a.acquire(black_box(OTHER), black_box(Duration::ZERO), TTL)));
    }
}

fn renew(calls: u64) {
    let mut authority = LeaseAuthority::new();
    let token = token(authority.acquire(OWNER, Duration::ZERO, TTL));
    let mut now = Duration::ZERO;
    for _ in 0..calls {
        now += Duration::from_nanos(1);
        let _ = black_box(decide(&mut authority, |a| a.renew(black_box(OWNER), black_box(token), now, TTL)));
    }
}

/// A release of a held authority's copy (the copy, 4 words, is part of the figure).
fn release(calls: u64) {
    let mut held = LeaseAuthority::new();
    let token = token(held.acquire(OWNER, Duration::ZERO, TTL));
    for _ in 0..calls {
        let mut authority = black_box(&held).clone();
        let _ = black_box(decide(&mut authority, |a| a.release(black_box(OWNER), black_box(token), Duration::ZERO)));
    }
    black_box(&mut held);
}

fn reacquire_rotate(calls: u64) {
    let mut authority = LeaseAuthority::new();
    let _ = black_box(authority.acquire(OWNER, Duration::ZERO, TTL));
    for _ in 0..calls {
        let _ = black_box(decide(&mut authority, |a| a.reacquire(black_box(OWNER), black_box(Duration::ZERO), TTL)));
    }
}

fn fence_current(calls: u64) {
    let current = FencingToken::new(8).unwrap_or(FencingToken::FIRST);
    let mut fence = Fence::new(Some(current));
    for _ in 0..calls {
        let _ = black_box(accept(&mut fence, black_box(current)));
    }
}

fn fence_stale(calls: u64) {
    let mut fence = Fence::new(FencingToken::new(8));
    let stale = FencingToken::new(7).unwrap_or(FencingToken::FIRST);
    for _ in 0..calls {
        let _ = black_box(accept(&mut fence, black_box(stale)));
    }
}

fn holder_poll(calls: u64) {
    let Some(cadence) = Cadence::new(TTL, Duration::from_secs(10), Duration::from_secs(5)) else { return };
    let holder = Holder::new(FencingToken::FIRST, Duration::ZERO, cadence);
    let mut now = Duration::ZERO;
    for _ in 0..calls {
        now += Duration::from_nanos(1);
        let _ = black_box(poll(black_box(&holder), now));
    }
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if let [name] = args.as_slice() {
        if name == "--list" {
            DECISIONS.iter().for_each(|(name, _)| println!("{name}"));
            return ExitCode::SUCCESS;
        }
    }
    let found = match args.as_slice() {
        [name, calls] => DECISIONS.iter().find(|(known, _)| known == name).zip(calls.parse::<u64>().ok()),
        _ => None,
    };
    let Some(((_, run), calls)) = found else {
        eprintln!("usage: instructions DECISION CALLS | --list");
        return ExitCode::from(2);
    };
    run(calls);
    ExitCode::SUCCESS
}
