//! Model-based property test of the lease table: random multi-resource command sequences (grants, renewals,
//! releases, rotations, transfers, reaps, revision preconditions, batches, clock steps back, checkpoint and restore)
//! run against a small reference model written with integer nanoseconds. After every step the table's decision,
//! state and metrics must equal the model's; at the end the auditor must find nothing in the table's whole event log.
//!
//! `PROPTEST_CASES` sequences (CI: 4000), each of up to 64 steps.
#![cfg(test)] // test code throughout: clippy.toml lets it unwrap, expect, panic and index
#![cfg(feature = "alloc")]

use std::collections::BTreeMap;

use core::time::Duration;

use lease_machines::{
    audit, ClockPolicy, Command, Event, FencingToken, Lease, LeaseTable, OwnerId, Rejection, TableCheckpoint,
    TableDecision, TableLease, TimedCommand,
};
use proptest::prelude::*;
use proptest::test_runner::FileFailurePersistence;

mod support;
use support::token;

const RESOURCES: [&str; 3] = ["alpha", "beta", "gamma"];

fn config() -> ProptestConfig {
    ProptestConfig {
        failure_persistence: Some(Box::new(FileFailurePersistence::Direct("proptest-regressions/table_model.txt"))),
        ..ProptestConfig::default()
    }
}

fn ns(nanos: u128) -> Duration {
    Duration::from_nanos(u64::try_from(nanos).expect("model times stay small"))
}

/// An owner or a token as the test asks for it: the current holder's, or a given one.
#[derive(Clone, Copy, Debug)]
enum Pick {
    Current,
    Given(u64),
}

#[derive(Clone, Debug)]
enum Op {
    Acquire { owner: u64, ttl: u64, expected: Option<Pick> },
    Reacquire { owner: u64, ttl: u64 },
    Renew { owner: Pick, token: Pick, ttl: u64 },
    Release { owner: Pick, token: Pick },
    Transfer { owner: Pick, token: Pick, to: u64, ttl: u64 },
    Reap,
}

#[derive(Clone, Debug)]
enum Step {
    One { resource: usize, op: Op, at: Time },
    ReapExpired { at: Time },
    Batch(Vec<(usize, Op, Time)>),
    Restore,
}

/// A time relative to the model's watermark (forward by some milliseconds, or backwards), or at a resource's expiry
/// boundary: one nanosecond before, at, or after the instant its lease record expires.
#[derive(Clone, Copy, Debug)]
enum Time {
    Forward(u64),
    Back(u64),
    Expiry(usize, i8),
}

fn pick(range: core::ops::Range<u64>) -> impl Strategy<Value = Pick> {
    prop_oneof![3 => Just(Pick::Current), 1 => range.prop_map(Pick::Given)]
}

fn ttl() -> impl Strategy<Value = u64> {
    // Milliseconds; 0 is an invalid TTL.
    prop_oneof![8 => 1u64..3_000, 1 => Just(0u64)]
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        4 => (0u64..3, ttl(), proptest::option::weighted(0.3, pick(0..4))).prop_map(|(owner, ttl, expected)| Op::Acquire { owner, ttl, expected }),
        1 => (0u64..3, ttl()).prop_map(|(owner, ttl)| Op::Reacquire { owner, ttl }),
        3 => (pick(0..3), pick(1..5), ttl()).prop_map(|(owner, token, ttl)| Op::Renew { owner, token, ttl }),
        2 => (pick(0..3), pick(1..5)).prop_map(|(owner, token)| Op::Release { owner, token }),
        2 => (pick(0..3), pick(1..5), 0u64..3, ttl()).prop_map(|(owner, token, to, ttl)| Op::Transfer { owner, token, to, ttl }),
        1 => Just(Op::Reap),
    ]
}

fn time() -> impl Strategy<Value = Time> {
    prop_oneof![
        8 => (0u64..1_500).prop_map(Time::Forward),
        1 => (1u64..1_000).prop_map(Time::Back),
        3 => (0..RESOURCES.len(), -1i8..=1).prop_map(|(resource, offset)| Time::Expiry(resource, offset)),
    ]
}

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        12 => (0..RESOURCES.len(), op(), time()).prop_map(|(resource, op, at)| Step::One { resource, op, at }),
        1 => time().prop_map(|at| Step::ReapExpired { at }),
        2 => prop::collection::vec((0..RESOURCES.len(), op(), time()), 1..6).prop_map(Step::Batch),
        1 => Just(Step::Restore),
    ]
}

/// One resource in the model.
#[derive(Clone, Debug, Default)]
struct Slot {
    last_issued: u64,
    revision: u64,
    /// (owner, token, issued_at, expires_at), times in ns.
    lease: Option<(u64, u64, u128, u128)>,
}

#[derive(Clone, Debug)]
struct Model {
    clamp: bool,
    observed: u128,
    slots: BTreeMap<usize, Slot>,
    accepted: u64,
    rejected: u64,
    transitions: u64,
    rejections: BTreeMap<Rejection, u64>,
}

impl Model {
    fn new(clamp: bool) -> Self {
        Self {
            clamp,
            observed: 0,
            slots: BTreeMap::new(),
            accepted: 0,
            rejected: 0,
            transitions: 0,
            rejections: BTreeMap::new(),
        }
    }

    fn instant(&self, time: Time) -> u128 {
        match time {
            Time::Forward(ms) => self.observed + u128::from(ms) * 1_000_000,
            Time::Back(ms) => self.observed.saturating_sub(u128::from(ms) * 1_000_000),
            Time::Expiry(resource, offset) => match self.slots.get(&resource).and_then(|slot| slot.lease) {
                Some((_, _, _, expires)) => match offset {
                    -1 => expires.saturating_sub(1),
                    0 => expires,
                    _ => expires + 1,
                },
                None => self.observed,
            },
        }
    }

    fn resolve(&self, resource: usize, pick: Pick, owner: bool) -> u64 {
        match (pick, self.slots.get(&resource).and_then(|slot| slot.lease)) {
            (Pick::Given(value), _) => value,
            (Pick::Current, Some((holder, token, _, _))) => {
                if owner {
                    holder
                } else {
                    token
                }
            }
            (Pick::Current, None) => {
                if owner {
                    0
                } else {
                    1
                }
            }
        }
    }

    fn command(&self, resource: usize, op: &Op) -> Command<String> {
        let name = RESOURCES[resource].to_owned();
        let revision = self.slots.get(&resource).map_or(0, |slot| slot.revision);
        let ms = Duration::from_millis;
        match *op {
            Op::Acquire { owner, ttl, expected } => Command::Acquire {
                resource: name,
                owner: OwnerId::new(owner),
                ttl: ms(ttl),
                expected_revision: expected.map(|pick| match pick {
                    Pick::Current => revision,
                    Pick::Given(value) => value,
                }),
            },
            Op::Reacquire { owner, ttl } => {
                Command::Reacquire { resource: name, owner: OwnerId::new(owner), ttl: ms(ttl) }
            }
            Op::Renew { owner, token: t, ttl } => Command::Renew {
                resource: name,
                owner: OwnerId::new(self.resolve(resource, owner, true)),
                token: token(self.resolve(resource, t, false)),
                ttl: ms(ttl),
            },
            Op::Release { owner, token: t } => Command::Release {
                resource: name,
                owner: OwnerId::new(self.resolve(resource, owner, true)),
                token: token(self.resolve(resource, t, false)),
            },
            Op::Transfer { owner, token: t, to, ttl } => Command::Transfer {
                resource: name,
                owner: OwnerId::new(self.resolve(resource, owner, true)),
                token: token(self.resolve(resource, t, false)),
                new_owner: OwnerId::new(to),
                ttl: ms(ttl),
            },
            Op::Reap => Command::Reap { resource: name },
        }
    }

    /// The instant a command is decided at. The watermark itself moves only when a command is accepted.
    fn observe(&self, now: u128) -> Result<u128, Rejection> {
        if now >= self.observed {
            Ok(now)
        } else if self.clamp {
            Ok(self.observed)
        } else {
            Err(Rejection::ClockRegressed)
        }
    }

    /// The model's decision, written from the rules with no shared code.
    fn decide(&mut self, resource: usize, command: &Command<String>, now: u128) -> TableDecision<String> {
        let decision = self.rules(resource, command, now);
        match &decision {
            TableDecision::Rejected(reason) => {
                self.rejected += 1;
                *self.rejections.entry(*reason).or_default() += 1;
            }
            _ => self.accepted += 1,
        }
        decision
    }

    fn rules(&mut self, resource: usize, command: &Command<String>, now: u128) -> TableDecision<String> {
        let now = match self.observe(now) {
            Ok(now) => now,
            Err(reason) => return TableDecision::Rejected(reason),
        };
        let ttl = match command {
            Command::Acquire { ttl, .. }
            | Command::Reacquire { ttl, .. }
            | Command::Renew { ttl, .. }
            | Command::Transfer { ttl, .. } => Some(ttl.as_nanos()),
            _ => None,
        };
        if ttl == Some(0) {
            return TableDecision::Rejected(Rejection::InvalidTtl);
        }
        let deadline = now + ttl.unwrap_or(0);
        let slot = self.slots.get(&resource).cloned().unwrap_or_default();
        let live = slot.lease.filter(|&(_, _, _, expires)| now < expires);
        let held = |owner: OwnerId, presented: FencingToken| match slot.lease {
            None => Err(Rejection::NotHeld),
            Some((_, current, _, _)) if current != presented.value() => Err(Rejection::StaleToken),
            Some((holder, _, _, _)) if holder != owner.value() => Err(Rejection::WrongOwner),
            Some((_, _, _, expires)) if now >= expires => Err(Rejection::Expired),
            Some(lease) => Ok(lease),
        };
        let mut next = slot.clone();
        next.revision += 1;
        let name = RESOURCES[resource].to_owned();
        let lease_of = |next: &Slot| {
            next.lease.map(|(owner, value, issued, expires)| {
                TableLease::new(
                    name.clone(),
                    Lease::new(OwnerId::new(owner), token(value), ns(expires)),
                    ns(issued),
                    next.revision,
                    None,
                )
            })
        };
        if expected_revision_of(command).is_some_and(|expected| expected != slot.revision) {
            return TableDecision::Rejected(Rejection::RevisionMismatch);
        }
        let mut transition = false;
        let decision = match command {
            Command::Acquire { owner, .. } | Command::Reacquire { owner, .. } => {
                let rotate = matches!(command, Command::Reacquire { .. });
                if live.is_some_and(|(holder, _, _, _)| !(rotate && holder == owner.value())) {
                    return TableDecision::Rejected(Rejection::Occupied);
                }
                transition = !slot.lease.is_some_and(|(holder, _, _, _)| holder == owner.value());
                next.last_issued += 1;
                next.lease = Some((owner.value(), next.last_issued, now, deadline));
                TableDecision::Granted(lease_of(&next).expect("granted"))
            }
            Command::Renew { owner, token: presented, .. } => match held(*owner, *presented) {
                Err(reason) => return TableDecision::Rejected(reason),
                Ok((holder, value, issued, expires)) => {
                    next.lease = Some((holder, value, issued, expires.max(deadline)));
                    TableDecision::Renewed(lease_of(&next).expect("renewed"))
                }
            },
            Command::Release { owner, token: presented, .. } => match held(*owner, *presented) {
                Err(reason) => return TableDecision::Rejected(reason),
                Ok(_) => {
                    next.lease = None;
                    TableDecision::Released
                }
            },
            Command::Transfer { owner, token: presented, new_owner, .. } => match held(*owner, *presented) {
                Err(reason) => return TableDecision::Rejected(reason),
                Ok((holder, _, _, _)) => {
                    transition = holder != new_owner.value();
                    next.last_issued += 1;
                    next.lease = Some((new_owner.value(), next.last_issued, now, deadline));
                    TableDecision::Transferred(lease_of(&next).expect("transferred"))
                }
            },
            Command::Reap { .. } => match slot.lease {
                None => return TableDecision::Rejected(Rejection::NotHeld),
                Some(_) if live.is_some() => return TableDecision::Rejected(Rejection::Occupied),
                Some(_) => {
                    next.lease = None;
                    TableDecision::Reaped
                }
            },
        };
        if transition {
            self.transitions += 1;
        }
        self.observed = self.observed.max(now);
        self.slots.insert(resource, next);
        decision
    }
}

fn expected_revision_of(command: &Command<String>) -> Option<u64> {
    match command {
        Command::Acquire { expected_revision, .. } => *expected_revision,
        _ => None,
    }
}

fn resource_index(name: &str) -> usize {
    RESOURCES.iter().position(|candidate| *candidate == name).expect("known resource")
}

/// The table and the model must agree on every resource's state and on the metrics.
fn assert_same_state(table: &LeaseTable<String>, model: &Model) {
    assert_eq!(table.observed(), ns(model.observed));
    for (index, name) in RESOURCES.iter().enumerate() {
        let name = (*name).to_owned();
        let slot = model.slots.get(&index).cloned().unwrap_or_default();
        assert_eq!(table.revision(&name), slot.revision, "revision of {name}");
        assert_eq!(table.last_issued(&name).map_or(0, FencingToken::value), slot.last_issued, "high-water of {name}");
        let lease = table.lease(&name).map(|lease| {
            (lease.owner().value(), lease.token().value(), lease.issued_at().as_nanos(), lease.expires_at().as_nanos())
        });
        assert_eq!(lease, slot.lease, "lease of {name}");
    }
    let metrics = table.metrics(ns(model.observed));
    assert_eq!(
        (metrics.accepted, metrics.rejected, metrics.holder_transitions),
        (model.accepted, model.rejected, model.transitions)
    );
    for reason in Rejection::ALL {
        assert_eq!(metrics.rejected_with(reason), model.rejections.get(&reason).copied().unwrap_or(0), "{reason:?}");
    }
    let live = model
        .slots
        .values()
        .filter(|slot| slot.lease.is_some_and(|(_, _, _, expires)| model.observed < expires))
        .count();
    assert_eq!(metrics.live_leases, live as u64);
}

fn run(clamp: bool, steps: &[Step]) {
    let policy = if clamp { ClockPolicy::Clamp } else { ClockPolicy::Reject };
    let mut table: LeaseTable<String> = LeaseTable::new().with_clock_policy(policy);
    let mut model = Model::new(clamp);
    let mut log: Vec<Event<String>> = Vec::new();
    for step in steps {
        match step {
            Step::One { resource, op, at } => {
                let command = model.command(*resource, op);
                let now = model.instant(*at);
                let expected = model.decide(*resource, &command, now);
                assert_eq!(table.apply(&command, ns(now)), expected, "{command:?} at {now} ns");
            }
            Step::ReapExpired { at } => {
                let now = model.instant(*at);
                let expired: Vec<usize> = match model.observe(now) {
                    Err(reason) => {
                        model.rejected += 1;
                        *model.rejections.entry(reason).or_default() += 1;
                        assert_eq!(table.reap_expired(ns(now)), Err(reason));
                        continue;
                    }
                    Ok(now) => model
                        .slots
                        .iter()
                        .filter(|(_, slot)| slot.lease.is_some_and(|(_, _, _, expires)| now >= expires))
                        .map(|(index, _)| *index)
                        .collect(),
                };
                let reaped = table.reap_expired(ns(now)).expect("the clock check passed");
                let names: Vec<usize> = reaped.iter().map(|lease| resource_index(lease.resource())).collect();
                assert_eq!(names, expired);
                let at = model.observe(now).expect("checked above");
                for index in expired {
                    let reap = Command::Reap { resource: RESOURCES[index].to_owned() };
                    assert_eq!(model.decide(index, &reap, at), TableDecision::Reaped);
                }
            }
            Step::Batch(items) => {
                let mut expected = Vec::new();
                let mut commands = Vec::new();
                for (resource, op, at) in items {
                    // Resolve against the model as it will be when the command runs.
                    let command = model.command(*resource, op);
                    let now = model.instant(*at);
                    expected.push(model.decide(*resource, &command, now));
                    commands.push(TimedCommand { command, at: ns(now) });
                }
                let result = table.apply_batch(&commands);
                assert_eq!(result.decisions, expected);
                assert_eq!(result.accepted + result.rejected, items.len());
                assert_eq!(result.rejected, expected.iter().filter(|decision| !decision.is_accepted()).count());
            }
            Step::Restore => {
                log.extend(table.sink_mut().drain());
                // Whatever the table produced must pass the validation stored state goes through.
                let checkpoint = table.checkpoint();
                let validated = TableCheckpoint::from_records(checkpoint.observed(), checkpoint.records().to_vec());
                assert_eq!(validated.as_ref(), Ok(&checkpoint), "a table's own state is valid");
                table = LeaseTable::restore(checkpoint).with_clock_policy(policy);
                model.accepted = 0;
                model.rejected = 0;
                model.transitions = 0;
                model.rejections.clear();
            }
        }
        assert_same_state(&table, &model);
    }
    log.extend(table.sink_mut().drain());
    let report = audit(&log);
    assert!(report.is_valid(), "the table's own log broke a rule: {:?}", report.findings);
    assert_eq!(report.checked_events, log.len() as u64);
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn table_agrees_with_the_model_and_its_log_passes_the_audit(
        clamp in any::<bool>(),
        steps in prop::collection::vec(step(), 1..64),
    ) {
        run(clamp, &steps);
    }
}
