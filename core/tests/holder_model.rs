//! Model-based property test of the holder: a small reference model of its phases and cadence, written with integer
//! nanoseconds, run against `Holder` over random sequences of refreshes, confirmations, expiries, reacquisitions,
//! fencings and polls, with the safety invariants checked after every step.
//!
//! Scale with the environment: `PROPTEST_CASES` (proptest's own, default 256) sequences, each of up to
//! `LEASE_MACHINES_MODEL_STEPS` (default 64) steps (see `support::max_steps`).
#![cfg(test)] // test code throughout: clippy.toml lets it unwrap, expect, panic and index

use core::time::Duration;

use lease_machines::{Cadence, Holder, HolderState};
use proptest::prelude::*;
use proptest_state_machine::{prop_state_machine, ReferenceStateMachine, StateMachineTest};

mod support;
use support::{duration, max_steps, model_config, ns, token, MAX_NS};

fn config() -> ProptestConfig {
    model_config("proptest-regressions/holder_model.txt")
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Phase {
    Confirmed,
    Unconfirmed,
    AtRisk,
    Expired,
    Fenced,
}

#[derive(Clone, Debug)]
struct HolderModel {
    ttl: u128,
    renew_every: u128,
    warn_before: u128,
    token: u64,
    renewed_at: u128,
    sent: Option<u128>,
    phase: Phase,
    answer: Option<HolderAnswer>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum HolderAnswer {
    Changed(bool),
    /// (renewal_due, at_risk, warning_deadline, next_renewal) at an instant.
    Poll(bool, bool, Option<Duration>, Option<Duration>),
}

#[derive(Clone, Debug)]
enum HolderStep {
    Refresh(Duration),
    Confirm(u64, Duration),
    Expire,
    Reacquire(u64, Duration),
    Fence,
    Poll(Duration),
}

impl HolderModel {
    fn holding(&self) -> bool {
        !matches!(self.phase, Phase::Expired | Phase::Fenced)
    }

    fn warning(&self) -> u128 {
        (self.renewed_at + (self.ttl - self.warn_before)).min(MAX_NS)
    }

    fn next(&self) -> u128 {
        (self.renewed_at + self.renew_every).min(MAX_NS)
    }

    fn poll(&self, now: u128) -> HolderAnswer {
        if !self.holding() {
            return HolderAnswer::Poll(false, true, None, None);
        }
        let due = self.sent.is_some() || now >= self.next() || now >= self.warning();
        let at_risk = self.phase == Phase::AtRisk || now >= self.warning();
        HolderAnswer::Poll(due, at_risk, Some(duration(self.warning())), Some(duration(self.next())))
    }
}

impl ReferenceStateMachine for HolderModel {
    type State = Self;
    type Transition = HolderStep;

    fn init_state() -> BoxedStrategy<Self> {
        (2u128..=60, 1u64..5, 0u128..30)
            .prop_flat_map(|(ttl, token, start)| (Just(ttl), 1..ttl, 0..ttl, Just(token), Just(start)))
            .prop_map(|(ttl, renew_every, warn_before, token, start)| Self {
                ttl: ttl * 1_000_000_000,
                renew_every: renew_every * 1_000_000_000,
                warn_before: warn_before * 1_000_000_000,
                token,
                renewed_at: start * 1_000_000_000,
                sent: None,
                phase: Phase::Confirmed,
                answer: None,
            })
            .boxed()
    }

    fn transitions(state: &Self) -> BoxedStrategy<HolderStep> {
        let base = state.sent.unwrap_or(state.renewed_at);
        let when = (0u128..=80).prop_map(move |half_secs| duration(base + half_secs * 500_000_000));
        let tokens = state.token.saturating_sub(1).max(1)..=state.token.saturating_add(2);
        prop_oneof![
            3 => when.clone().prop_map(HolderStep::Refresh),
            3 => (tokens.clone(), when.clone()).prop_map(|(value, at)| HolderStep::Confirm(value, at)),
            1 => Just(HolderStep::Expire),
            2 => (tokens, when.clone()).prop_map(|(value, at)| HolderStep::Reacquire(value, at)),
            1 => Just(HolderStep::Fence),
            3 => when.prop_map(HolderStep::Poll),
        ]
        .boxed()
    }

    fn apply(mut state: Self, step: &HolderStep) -> Self {
        let answer = match *step {
            HolderStep::Refresh(now) if state.holding() => {
                let now = ns(now);
                let sent = *state.sent.get_or_insert(now);
                let _ = sent;
                state.phase = if now >= state.warning() || state.phase == Phase::AtRisk {
                    Phase::AtRisk
                } else {
                    Phase::Unconfirmed
                };
                HolderAnswer::Changed(true)
            }
            HolderStep::Confirm(value, at) if state.holding() && value >= state.token => {
                state.token = value;
                if let Some(sent) = state.sent.take() {
                    state.renewed_at = state.renewed_at.max(sent);
                }
                state.phase = if ns(at) >= state.warning() { Phase::AtRisk } else { Phase::Confirmed };
                HolderAnswer::Changed(true)
            }
            HolderStep::Expire if state.holding() => {
                state.phase = Phase::Expired;
                state.sent = None;
                HolderAnswer::Changed(true)
            }
            HolderStep::Reacquire(value, at) if state.phase != Phase::Fenced && value > state.token => {
                state.token = value;
                state.renewed_at = ns(at);
                state.sent = None;
                state.phase = Phase::Confirmed;
                HolderAnswer::Changed(true)
            }
            HolderStep::Fence => {
                state.phase = Phase::Fenced;
                state.sent = None;
                HolderAnswer::Changed(true)
            }
            HolderStep::Poll(now) => state.poll(ns(now)),
            HolderStep::Refresh(_) | HolderStep::Confirm(..) | HolderStep::Expire | HolderStep::Reacquire(..) => {
                HolderAnswer::Changed(false)
            }
        };
        state.answer = Some(answer);
        state
    }
}

struct HolderUnderTest {
    holder: Holder,
    answer: Option<HolderAnswer>,
}

impl StateMachineTest for HolderUnderTest {
    type SystemUnderTest = Self;
    type Reference = HolderModel;

    fn init_test(model: &HolderModel) -> Self {
        let cadence = Cadence::new(duration(model.ttl), duration(model.renew_every), duration(model.warn_before))
            .expect("generated cadences are valid");
        Self { holder: Holder::new(token(model.token), duration(model.renewed_at), cadence), answer: None }
    }

    fn apply(mut sut: Self, _model: &HolderModel, step: HolderStep) -> Self {
        let before = sut.holder;
        let answer = match step {
            HolderStep::Refresh(now) => HolderAnswer::Changed(sut.holder.refresh(now)),
            HolderStep::Confirm(value, at) => HolderAnswer::Changed(sut.holder.confirm(token(value), at)),
            HolderStep::Expire => HolderAnswer::Changed(sut.holder.expire()),
            HolderStep::Reacquire(value, at) => HolderAnswer::Changed(sut.holder.reacquire(token(value), at)),
            HolderStep::Fence => {
                sut.holder.fence();
                HolderAnswer::Changed(true)
            }
            HolderStep::Poll(now) => {
                let warning = sut.holder.warning_deadline();
                if let Some(deadline) = warning {
                    assert!(!sut.holder.at_risk(now) || now >= deadline || sut.holder.state() == HolderState::AtRisk);
                    assert!(now < deadline || sut.holder.at_risk(now), "past the deadline is always at risk");
                }
                HolderAnswer::Poll(
                    sut.holder.renewal_due(now),
                    sut.holder.at_risk(now),
                    warning,
                    sut.holder.next_renewal(),
                )
            }
        };
        // Safety invariants of the holder.
        if before.state() == HolderState::Fenced {
            assert_eq!(sut.holder, before, "fenced is terminal");
        }
        assert!(sut.holder.token() >= before.token(), "the holder's token never goes back");
        if answer == HolderAnswer::Changed(false) {
            assert_eq!(sut.holder, before, "a refused step changes nothing");
        }
        sut.answer = Some(answer);
        sut
    }

    fn check_invariants(sut: &Self, model: &HolderModel) {
        assert_eq!(sut.answer, model.answer);
        let phase = match sut.holder.state() {
            HolderState::Confirmed => Phase::Confirmed,
            HolderState::Unconfirmed => Phase::Unconfirmed,
            HolderState::AtRisk => Phase::AtRisk,
            HolderState::Expired => Phase::Expired,
            HolderState::Fenced => Phase::Fenced,
        };
        assert_eq!(phase, model.phase);
        assert_eq!(sut.holder.token(), token(model.token));
        assert_eq!(sut.holder.warning_deadline().is_some(), model.holding());
    }
}

prop_state_machine! {
    #![proptest_config(config())]

    #[test]
    fn holder_matches_the_model_and_keeps_every_invariant(sequential 1..max_steps() => HolderUnderTest);
}
