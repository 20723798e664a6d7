//! Model-based property test of the fence: a small reference model (the greatest accepted token), run against
//! `Fence` over random sequences of tokens and restarts, with its one safety invariant checked after every step:
//! the fence never goes backwards.
//!
//! Scale with the environment: `PROPTEST_CASES` (proptest's own, default 256) sequences, each of up to
//! `LEASE_MACHINES_MODEL_STEPS` (default 64) steps (see `support::max_steps`).
#![cfg(test)] // test code throughout: clippy.toml lets it unwrap, expect, panic and index

use lease_machines::{Fence, FencingToken};
use proptest::prelude::*;
use proptest_state_machine::{prop_state_machine, ReferenceStateMachine, StateMachineTest};

mod support;
use support::{max_steps, model_config, token};

fn config() -> ProptestConfig {
    model_config("proptest-regressions/fence_model.txt")
}

#[derive(Clone, Debug)]
struct FenceModel {
    /// The greatest accepted token; 0 when none was.
    highest: u64,
    answer: Option<bool>,
}

#[derive(Clone, Debug)]
enum FenceStep {
    Accept(u64),
    /// The resource restarts from its persisted mark.
    Restart,
}

impl ReferenceStateMachine for FenceModel {
    type State = Self;
    type Transition = FenceStep;

    fn init_state() -> BoxedStrategy<Self> {
        prop_oneof![Just(0u64), 1u64..10, Just(u64::MAX)].prop_map(|highest| Self { highest, answer: None }).boxed()
    }

    fn transitions(state: &Self) -> BoxedStrategy<FenceStep> {
        let low = state.highest.saturating_sub(2).max(1);
        let high = state.highest.saturating_add(2);
        prop_oneof![
            8 => (low..=high).prop_map(FenceStep::Accept),
            1 => Just(FenceStep::Accept(u64::MAX)),
            1 => Just(FenceStep::Restart),
        ]
        .boxed()
    }

    fn apply(mut state: Self, step: &FenceStep) -> Self {
        state.answer = match *step {
            FenceStep::Accept(value) if value >= state.highest => {
                state.highest = value;
                Some(true)
            }
            FenceStep::Accept(_) => Some(false),
            FenceStep::Restart => None,
        };
        state
    }
}

struct FenceUnderTest {
    fence: Fence,
    answer: Option<bool>,
}

impl StateMachineTest for FenceUnderTest {
    type SystemUnderTest = Self;
    type Reference = FenceModel;

    fn init_test(model: &FenceModel) -> Self {
        Self { fence: Fence::new(FencingToken::new(model.highest)), answer: None }
    }

    fn apply(mut sut: Self, _model: &FenceModel, step: FenceStep) -> Self {
        let before = sut.fence.highest();
        sut.answer = match step {
            FenceStep::Accept(value) => {
                let accepted = sut.fence.accept(token(value));
                if !accepted {
                    assert_eq!(sut.fence.highest(), before, "a refusal changes nothing");
                }
                Some(accepted)
            }
            FenceStep::Restart => {
                sut.fence = Fence::new(sut.fence.highest());
                None
            }
        };
        assert!(sut.fence.highest() >= before, "the fence never goes backwards");
        sut
    }

    fn check_invariants(sut: &Self, model: &FenceModel) {
        assert_eq!(sut.answer, model.answer);
        assert_eq!(sut.fence.highest(), FencingToken::new(model.highest));
    }
}

prop_state_machine! {
    #![proptest_config(config())]

    #[test]
    fn fence_matches_the_model_and_never_goes_backwards(sequential 1..max_steps() => FenceUnderTest);
}
