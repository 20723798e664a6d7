//! A semaphore (`Semaphore::decide`): its rules, one test each, then property tests against a small model over
//! random sequences of requests, with the safety invariants checked after every step: never more live holders than
//! the limit a grant was made under, an owner in one slot at most, tokens rising per slot, each slot's fence refusing
//! its earlier holders, rows rebuilt from their stored parts deciding exactly as the rows did, and a limit of 1 on
//! one row deciding as that row does.
//!
//! `PROPTEST_CASES` (proptest's own, default 256) sets the sequences per property.
#![cfg(test)] // test code throughout: clippy.toml lets it unwrap, expect, panic and index

use core::time::Duration;

use lease_machines::{
    Checkpoint, ClockPolicy, Decision, Fence, Lease, LeaseRow, Limit, OwnerId, Rejection, Request, Semaphore,
    SlotDecision, SlotRequest, WriteCheck, MAX_LIMIT,
};
use proptest::prelude::*;
use proptest::test_runner::FileFailurePersistence;

mod support;
use support::{s, token};

const CLAMP: ClockPolicy = ClockPolicy::Clamp;

fn owner(value: u64) -> OwnerId {
    OwnerId::new(value)
}

fn limit(value: u32) -> Limit {
    Limit::new(value).expect("test limits are in range")
}

/// A semaphore's slot rows, kept as a store keeps them: the row each answer names is written back in its slot.
#[derive(Debug, Clone, Default)]
struct Slots(Vec<LeaseRow>);

impl Slots {
    fn decide(&mut self, request: SlotRequest, now: Duration, policy: ClockPolicy) -> SlotDecision {
        let answer = Semaphore::new(&self.0).expect("at most MAX_LIMIT rows").decide(request, now, policy);
        if let Some(row) = answer.write() {
            let slot = usize::try_from(answer.slot()).expect("slots fit usize");
            if self.0.len() <= slot {
                self.0.resize(slot + 1, LeaseRow::EMPTY);
            }
            self.0[slot] = row;
        }
        answer
    }

    fn acquire(&mut self, who: u64, ttl: u64, of: u32, now: u64) -> SlotDecision {
        self.decide(SlotRequest::Acquire { owner: owner(who), ttl: s(ttl), limit: limit(of) }, s(now), CLAMP)
    }

    fn live(&self, now: u64) -> u32 {
        Semaphore::new(&self.0).expect("at most MAX_LIMIT rows").live(s(now))
    }
}

fn granted(answer: SlotDecision) -> (u32, Lease) {
    match answer.decision() {
        Decision::Granted(lease) => (answer.slot(), lease),
        other => panic!("expected a grant, got {other:?} in slot {}", answer.slot()),
    }
}

#[test]
fn a_limit_is_one_to_max_limit() {
    assert_eq!(Limit::new(0), None);
    assert_eq!(Limit::new(1), Some(Limit::ONE));
    assert_eq!(Limit::new(MAX_LIMIT).map(Limit::get), Some(1024));
    assert_eq!(Limit::new(MAX_LIMIT + 1), None);
}

#[test]
fn more_rows_than_any_limit_makes_are_not_a_semaphore() {
    let rows = vec![LeaseRow::EMPTY; MAX_LIMIT as usize + 1];
    assert!(Semaphore::new(&rows).is_none());
    assert!(Semaphore::new(&rows[..MAX_LIMIT as usize]).is_some());
}

#[test]
fn grants_take_the_lowest_free_slot_until_the_limit_is_live() {
    let mut slots = Slots::default();
    assert_eq!(granted(slots.acquire(1, 10, 3, 0)), (0, Lease::new(owner(1), token(1), s(10))));
    assert_eq!(granted(slots.acquire(2, 10, 3, 1)), (1, Lease::new(owner(2), token(1), s(11))));
    assert_eq!(granted(slots.acquire(3, 10, 3, 2)), (2, Lease::new(owner(3), token(1), s(12))));
    let full = slots.acquire(4, 10, 3, 3);
    assert_eq!(full.decision(), Decision::Rejected(Rejection::Occupied));
    assert_eq!(slots.live(3), 3);
    // Slot 1 is released: the next grant takes it, with slot 1's own next token.
    let released = slots.decide(SlotRequest::Release { slot: 1, owner: owner(2), token: token(1) }, s(4), CLAMP);
    assert_eq!((released.slot(), released.decision()), (1, Decision::Released));
    assert_eq!(granted(slots.acquire(4, 10, 3, 5)), (1, Lease::new(owner(4), token(2), s(15))));
}

#[test]
fn an_owner_holds_one_slot_at_most() {
    let mut slots = Slots::default();
    granted(slots.acquire(1, 10, 3, 0));
    let again = slots.acquire(1, 10, 3, 1);
    assert_eq!((again.slot(), again.decision()), (0, Decision::Rejected(Rejection::Occupied)));
    assert_eq!(slots.live(1), 1);
}

#[test]
fn an_expired_slot_is_granted_again_with_a_newer_token_and_its_old_holder_is_refused_in_it() {
    let mut slots = Slots::default();
    granted(slots.acquire(7, 10, 2, 0));
    granted(slots.acquire(8, 30, 2, 0));
    // Worker 7 stalls past its TTL; worker 12 takes its slot.
    assert_eq!(granted(slots.acquire(12, 10, 2, 11)), (0, Lease::new(owner(12), token(2), s(21))));
    for request in [
        SlotRequest::Renew { slot: 0, owner: owner(7), token: token(1), ttl: s(10) },
        SlotRequest::Release { slot: 0, owner: owner(7), token: token(1) },
    ] {
        let refused = slots.decide(request, s(12), CLAMP);
        assert_eq!(refused.decision(), Decision::Rejected(Rejection::StaleToken));
    }
    let row = Semaphore::new(&slots.0).unwrap().row(0);
    assert_eq!(row.checkpoint().lease(), Some(Lease::new(owner(12), token(2), s(21))), "the successor keeps it");
    let check = row.check_write(Fence::new(Some(token(2))), token(1), s(12));
    assert_eq!(check, WriteCheck::Refused(Rejection::StaleToken), "the slot's fence refuses worker 7");
    // Slot 1's fence is its own: its holder's token 1 is still good there.
    let other = Semaphore::new(&slots.0).unwrap().row(1);
    assert!(other.check_write(Fence::new(Some(token(1))), token(1), s(12)).is_admitted());
}

#[test]
fn a_lower_limit_revokes_no_live_slot_and_grants_wait_until_fewer_are_live() {
    let mut slots = Slots::default();
    for who in 1..=3 {
        granted(slots.acquire(who, 10, 3, 0));
    }
    // The limit is now 1: slot 0 is freed, but slots 1 and 2 still count.
    let freed = slots.decide(SlotRequest::Release { slot: 0, owner: owner(1), token: token(1) }, s(1), CLAMP);
    assert_eq!(freed.decision(), Decision::Released);
    let refused = slots.acquire(4, 10, 1, 2);
    assert_eq!((refused.slot(), refused.decision()), (1, Decision::Rejected(Rejection::Occupied)));
    let renewed =
        slots.decide(SlotRequest::Renew { slot: 2, owner: owner(3), token: token(1), ttl: s(10) }, s(3), CLAMP);
    assert_eq!(renewed.decision(), Decision::Renewed(Lease::new(owner(3), token(1), s(13))), "above the limit, live");
    let freed = slots.decide(SlotRequest::Release { slot: 1, owner: owner(2), token: token(1) }, s(4), CLAMP);
    assert_eq!(freed.decision(), Decision::Released);
    assert_eq!(slots.acquire(4, 10, 1, 5).decision(), Decision::Rejected(Rejection::Occupied), "slot 2 still live");
    // Slot 2 runs out at 13: then slot 0, the lowest below the limit, is granted.
    assert_eq!(granted(slots.acquire(4, 10, 1, 13)), (0, Lease::new(owner(4), token(2), s(23))));
}

#[test]
fn a_higher_limit_opens_new_slots() {
    let mut slots = Slots::default();
    granted(slots.acquire(1, 10, 1, 0));
    assert_eq!(slots.acquire(2, 10, 1, 1).decision(), Decision::Rejected(Rejection::Occupied));
    assert_eq!(granted(slots.acquire(2, 10, 2, 1)).0, 1);
}

#[test]
fn one_instant_for_all_slots() {
    let mut slots = Slots::default();
    granted(slots.acquire(1, 10, 2, 0));
    granted(slots.acquire(2, 10, 2, 8));
    // Under Reject, an instant before slot 1's watermark is refused for slot 0 as well.
    let request = SlotRequest::Renew { slot: 0, owner: owner(1), token: token(1), ttl: s(10) };
    let refused = slots.decide(request, s(5), ClockPolicy::Reject);
    assert_eq!((refused.slot(), refused.decision()), (1, Decision::Rejected(Rejection::ClockRegressed)));
    assert_eq!(refused.write(), None);
    // Under Clamp it is decided at 8, the latest instant any slot observed.
    let clamped = slots.decide(request, s(5), CLAMP);
    assert_eq!(clamped.decision(), Decision::Renewed(Lease::new(owner(1), token(1), s(18))));
}

#[test]
fn a_refusal_before_the_lease_rules_is_the_rows_own() {
    let mut slots = Slots::default();
    let zero =
        slots.decide(SlotRequest::Acquire { owner: owner(1), ttl: Duration::ZERO, limit: limit(2) }, s(0), CLAMP);
    assert_eq!(zero.decision(), Decision::Rejected(Rejection::InvalidTtl));
    let overflow =
        slots.decide(SlotRequest::Acquire { owner: owner(1), ttl: Duration::MAX, limit: limit(2) }, s(1), CLAMP);
    assert_eq!(overflow.decision(), Decision::Rejected(Rejection::DeadlineOverflow));
    assert_eq!(slots.live(1), 0);
}

#[test]
fn a_reacquire_rotates_its_owners_own_slot_and_otherwise_waits_as_an_acquire() {
    let mut slots = Slots::default();
    granted(slots.acquire(1, 10, 2, 0));
    granted(slots.acquire(2, 20, 2, 0));
    let freed = slots.decide(SlotRequest::Release { slot: 0, owner: owner(1), token: token(1) }, s(1), CLAMP);
    assert_eq!(freed.decision(), Decision::Released);
    let reacquire = |who, of| SlotRequest::Reacquire { owner: owner(who), ttl: s(10), limit: limit(of) };
    // Owner 3 holds nothing: as an acquire with a limit of 1, refused while slot 1 is live.
    let refused = slots.decide(reacquire(3, 1), s(2), CLAMP);
    assert_eq!((refused.slot(), refused.decision()), (1, Decision::Rejected(Rejection::Occupied)));
    // Owner 2's slot 1 is not below a limit of 1: no rotation there, and no second slot either.
    assert_eq!(slots.decide(reacquire(2, 1), s(2), CLAMP).decision(), Decision::Rejected(Rejection::Occupied));
    // Below the limit, its own slot is rotated: a new token, the old one fenced.
    let rotated = slots.decide(reacquire(2, 2), s(3), CLAMP);
    assert_eq!(granted(rotated), (1, Lease::new(owner(2), token(2), s(13))));
    assert_eq!(slots.decide(reacquire(3, 2), s(4), CLAMP).slot(), 0, "the free slot 0 for another owner");
}

// ---- The model ----

/// One slot of the model: the tokens it issued, and its lease (owner, token, expiry in seconds).
#[derive(Debug, Clone, Copy, Default)]
struct ModelSlot {
    issued: u64,
    lease: Option<(u64, u64, u64)>,
}

/// The semaphore as its rules say, in whole seconds, with one watermark.
#[derive(Debug, Clone, Default)]
struct Model {
    slots: Vec<ModelSlot>,
    observed: u64,
}

#[derive(Debug, Clone, Copy)]
enum Op {
    Acquire { owner: u64, ttl: u64, limit: u32 },
    Reacquire { owner: u64, ttl: u64, limit: u32 },
    Renew { slot: u32, owner: u64, token: u64, ttl: u64 },
    Release { slot: u32, owner: u64, token: u64 },
}

impl Model {
    fn slot(&mut self, index: u32) -> &mut ModelSlot {
        let index = index as usize;
        if self.slots.len() <= index {
            self.slots.resize(index + 1, ModelSlot::default());
        }
        &mut self.slots[index]
    }

    fn live(&self, now: u64) -> Vec<u32> {
        (0..)
            .zip(&self.slots)
            .filter(|(_, slot)| slot.lease.is_some_and(|(_, _, exp)| now < exp))
            .map(|(i, _)| i)
            .collect()
    }

    /// The slot it was decided in and the decision, or None for a refused clock.
    fn apply(&mut self, op: Op, now: u64, policy: ClockPolicy) -> Option<(u32, Decision)> {
        if now < self.observed && policy == ClockPolicy::Reject {
            return None;
        }
        let now = now.max(self.observed);
        self.observed = now;
        let live = self.live(now);
        let rejected = |rejection| Decision::Rejected(rejection);
        Some(match op {
            Op::Acquire { owner: who, ttl, limit } | Op::Reacquire { owner: who, ttl, limit } => {
                let own = live.iter().copied().find(|&i| self.slots[i as usize].lease.is_some_and(|l| l.0 == who));
                // A reacquire rotates its owner's own live slot below the limit; anything else is an acquire.
                let rotates = matches!(op, Op::Reacquire { .. }) && own.is_some_and(|slot| slot < limit);
                let free = (0..limit).find(|i| !live.contains(i));
                let slot = match (own, free) {
                    (Some(slot), _) => slot,
                    _ if live.len() >= limit as usize => live[0],
                    (None, Some(slot)) => slot,
                    (None, None) => unreachable!("fewer than limit live leaves a free slot below it"),
                };
                if ttl == 0 {
                    (slot, rejected(Rejection::InvalidTtl))
                } else if live.contains(&slot) && !rotates {
                    (slot, rejected(Rejection::Occupied))
                } else {
                    let entry = self.slot(slot);
                    entry.issued += 1;
                    entry.lease = Some((who, entry.issued, now + ttl));
                    (slot, Decision::Granted(Lease::new(owner(who), token(entry.issued), s(now + ttl))))
                }
            }
            Op::Renew { slot, owner: who, token: presented, ttl } => {
                let entry = self.slot(slot);
                let decision = if ttl == 0 {
                    rejected(Rejection::InvalidTtl)
                } else {
                    match Self::current(entry.lease, who, presented, now) {
                        Err(rejection) => rejected(rejection),
                        Ok((_, t, exp)) => {
                            let exp = exp.max(now + ttl);
                            entry.lease = Some((who, t, exp));
                            Decision::Renewed(Lease::new(owner(who), token(t), s(exp)))
                        }
                    }
                };
                (slot, decision)
            }
            Op::Release { slot, owner: who, token: presented } => {
                let entry = self.slot(slot);
                let decision = match Self::current(entry.lease, who, presented, now) {
                    Err(rejection) => rejected(rejection),
                    Ok(_) => {
                        entry.lease = None;
                        Decision::Released
                    }
                };
                (slot, decision)
            }
        })
    }

    fn current(
        lease: Option<(u64, u64, u64)>,
        who: u64,
        presented: u64,
        now: u64,
    ) -> Result<(u64, u64, u64), Rejection> {
        let lease = lease.ok_or(Rejection::NotHeld)?;
        if lease.1 != presented {
            Err(Rejection::StaleToken)
        } else if lease.0 != who {
            Err(Rejection::WrongOwner)
        } else if now >= lease.2 {
            Err(Rejection::Expired)
        } else {
            Ok(lease)
        }
    }
}

fn request(op: Op) -> SlotRequest {
    match op {
        Op::Acquire { owner: who, ttl, limit: of } => {
            SlotRequest::Acquire { owner: owner(who), ttl: s(ttl), limit: limit(of) }
        }
        Op::Reacquire { owner: who, ttl, limit: of } => {
            SlotRequest::Reacquire { owner: owner(who), ttl: s(ttl), limit: limit(of) }
        }
        Op::Renew { slot, owner: who, token: t, ttl } => {
            SlotRequest::Renew { slot, owner: owner(who), token: token(t), ttl: s(ttl) }
        }
        Op::Release { slot, owner: who, token: t } => SlotRequest::Release { slot, owner: owner(who), token: token(t) },
    }
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        3 => (1..=6u64, 0..=12u64, 1..=4u32).prop_map(|(owner, ttl, limit)| Op::Acquire { owner, ttl, limit }),
        2 => (1..=6u64, 0..=12u64, 1..=4u32).prop_map(|(owner, ttl, limit)| Op::Reacquire { owner, ttl, limit }),
        2 => (0..5u32, 1..=6u64, 1..=6u64, 0..=12u64).prop_map(|(slot, owner, token, ttl)| Op::Renew { slot, owner, token, ttl }),
        2 => (0..5u32, 1..=6u64, 1..=6u64).prop_map(|(slot, owner, token)| Op::Release { slot, owner, token }),
    ]
}

/// Requests with the instant each is sent at: mostly forward by 0 to 5 s, sometimes back by up to 3 s.
fn steps() -> impl Strategy<Value = Vec<(Op, i64)>> {
    proptest::collection::vec((op(), prop_oneof![6 => 0..=5i64, 1 => -3..=-1i64]), 1..80)
}

/// A row rebuilt from the parts a store keeps: the checkpoint's three, and the revision.
fn rebuilt(row: LeaseRow) -> LeaseRow {
    let checkpoint = row.checkpoint();
    let restored = Checkpoint::from_parts(checkpoint.last_issued(), checkpoint.lease(), checkpoint.observed())
        .expect("a stored checkpoint is consistent");
    LeaseRow::from_parts(restored, row.revision()).expect("a stored row is consistent")
}

proptest! {
    // Failing cases kept in `core/proptest-regressions/` and replayed first on every later run.
    #![proptest_config(ProptestConfig {
        failure_persistence: Some(Box::new(FileFailurePersistence::Direct("proptest-regressions/semaphore_rules.txt"))),
        ..ProptestConfig::default()
    })]

    #[test]
    fn the_semaphore_decides_as_the_model_and_keeps_its_invariants(steps in steps(), reject in any::<bool>()) {
        let policy = if reject { ClockPolicy::Reject } else { CLAMP };
        let mut slots = Slots::default();
        let mut model = Model::default();
        // Every token each slot granted, in order, with its holder.
        let mut grants: Vec<Vec<(u64, u64)>> = Vec::new();
        let mut now: u64 = 10;
        for (op, delta) in steps {
            now = now.saturating_add_signed(delta);
            let rows_before = slots.0.clone();
            let answer = slots.decide(request(op), s(now), policy);
            let expected = model.apply(op, now, policy);
            match expected {
                None => {
                    prop_assert_eq!(answer.decision(), Decision::Rejected(Rejection::ClockRegressed));
                    // Nothing changes: a row never stored is written as it was, as a row's refusals are.
                    let before = Semaphore::new(&rows_before).unwrap().row(answer.slot());
                    if let Some(row) = answer.write() {
                        prop_assert_eq!(row, before);
                    }
                }
                Some((slot, decision)) => prop_assert_eq!((answer.slot(), answer.decision()), (slot, decision)),
            }
            // Rows rebuilt from their stored parts decide exactly as the rows did.
            let restored: Vec<LeaseRow> = rows_before.iter().copied().map(rebuilt).collect();
            let again = Semaphore::new(&restored).unwrap().decide(request(op), s(now), policy);
            prop_assert_eq!(again, answer);

            let at = model.observed;
            let live = slots.live(at);
            if let (Decision::Granted(lease), Op::Acquire { limit, .. }) = (answer.decision(), op) {
                prop_assert!(live <= limit, "{} live after a grant under a limit of {}", live, limit);
                let slot = answer.slot() as usize;
                if grants.len() <= slot {
                    grants.resize(slot + 1, Vec::new());
                }
                if let Some(&(last, _)) = grants[slot].last() {
                    prop_assert!(lease.token().value() > last, "slot {}: token {} after {}", slot, lease.token(), last);
                }
                grants[slot].push((lease.token().value(), lease.owner().value()));
            }
            // An owner is live in one slot at most.
            let semaphore = Semaphore::new(&slots.0).unwrap();
            let mut holders: Vec<u64> = (0..slots.0.len() as u32)
                .filter_map(|i| semaphore.row(i).checkpoint().lease().filter(|l| l.is_live(s(at))).map(|l| l.owner().value()))
                .collect();
            let count = holders.len();
            holders.sort_unstable();
            holders.dedup();
            prop_assert_eq!(holders.len(), count, "an owner live in two slots");
            // Each slot's fence refuses every earlier holder once its newest token wrote.
            for (slot, issued) in grants.iter().enumerate() {
                let row = semaphore.row(slot as u32);
                if let Some(&(newest, _)) = issued.last() {
                    let fence = Fence::new(Some(token(newest)));
                    for &(earlier, _) in &issued[..issued.len() - 1] {
                        prop_assert!(!row.check_write(fence, token(earlier), s(at)).is_admitted());
                    }
                }
            }
        }
    }

    #[test]
    fn a_limit_of_one_on_one_row_decides_as_that_row(steps in steps(), reject in any::<bool>()) {
        let policy = if reject { ClockPolicy::Reject } else { CLAMP };
        let mut slots = Slots::default();
        let mut row = LeaseRow::EMPTY;
        let mut now: u64 = 10;
        for (op, delta) in steps {
            now = now.saturating_add_signed(delta);
            let (one, plain) = match op {
                Op::Acquire { owner: who, ttl, .. } => (
                    SlotRequest::Acquire { owner: owner(who), ttl: s(ttl), limit: Limit::ONE },
                    Request::Acquire { owner: owner(who), ttl: s(ttl) },
                ),
                Op::Reacquire { owner: who, ttl, .. } => (
                    SlotRequest::Reacquire { owner: owner(who), ttl: s(ttl), limit: Limit::ONE },
                    Request::Reacquire { owner: owner(who), ttl: s(ttl) },
                ),
                Op::Renew { owner: who, token: t, ttl, .. } => (
                    SlotRequest::Renew { slot: 0, owner: owner(who), token: token(t), ttl: s(ttl) },
                    Request::Renew { owner: owner(who), token: token(t), ttl: s(ttl) },
                ),
                Op::Release { owner: who, token: t, .. } => (
                    SlotRequest::Release { slot: 0, owner: owner(who), token: token(t) },
                    Request::Release { owner: owner(who), token: token(t) },
                ),
            };
            let answer = slots.decide(one, s(now), policy);
            let expected = row.decide(plain, s(now), policy);
            prop_assert_eq!((answer.slot(), answer.decision(), answer.write()), (0, expected.decision(), expected.write()));
            if let Some(written) = expected.write() {
                row = written;
            }
        }
    }
}
