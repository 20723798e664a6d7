//! Model-based property tests: a small reference model of each rule set, run against the crate over random
//! sequences of requests, with the safety invariants checked after every step.
//!
//! Scale with the environment: `PROPTEST_CASES` (proptest's own, default 256) sequences per test, each of up to
//! `LEASE_MACHINES_MODEL_STEPS` (default 64) steps. CI runs `PROPTEST_CASES=4000`: over 100,000 steps per test.
#![cfg(test)] // test code throughout: clippy.toml lets it unwrap, expect, panic and index

use core::time::Duration;

use lease_machines::{
    Cadence, Checkpoint, ClockPolicy, Decision, Fence, FencingToken, Holder, HolderState, Lease, LeaseAuthority,
    OwnerId, Rejection,
};
use proptest::prelude::*;
use proptest::test_runner::FileFailurePersistence;
use proptest_state_machine::{prop_state_machine, ReferenceStateMachine, StateMachineTest};

const MAX_NS: u128 = Duration::MAX.as_nanos();

fn max_steps() -> usize {
    std::env::var("LEASE_MACHINES_MODEL_STEPS").ok().and_then(|steps| steps.parse().ok()).unwrap_or(64)
}

/// proptest's defaults (so `PROPTEST_CASES` applies), with failing cases kept in `core/proptest-regressions/` and
/// replayed first on every later run.
fn config() -> ProptestConfig {
    ProptestConfig {
        failure_persistence: Some(Box::new(FileFailurePersistence::Direct("proptest-regressions/model.txt"))),
        ..ProptestConfig::default()
    }
}

fn ns(duration: Duration) -> u128 {
    duration.as_nanos()
}

fn duration(nanos: u128) -> Duration {
    let secs = u64::try_from(nanos / 1_000_000_000).expect("model times stay within Duration");
    Duration::new(secs, u32::try_from(nanos % 1_000_000_000).expect("below one second"))
}

fn token(value: u64) -> FencingToken {
    FencingToken::new(value).expect("generated tokens are non-zero")
}

/// An instant near `around`: mostly a little later, sometimes exactly it, earlier, at a boundary, or enormous.
fn instant_near(around: u128, boundary: Option<u128>) -> BoxedStrategy<Duration> {
    let boundary = boundary.unwrap_or(around);
    prop_oneof![
        6 => (0u128..=6_000).prop_map(move |ms| duration((around + ms * 1_000_000).min(MAX_NS))),
        1 => Just(duration(around)),
        2 => (1u128..=4_000).prop_map(move |ms| duration(around.saturating_sub(ms * 1_000_000))),
        2 => prop_oneof![
            Just(duration(boundary)),
            Just(duration(boundary.saturating_sub(1))),
            Just(duration((boundary + 1).min(MAX_NS))),
        ],
        1 => prop_oneof![Just(Duration::MAX), Just(Duration::MAX - Duration::from_secs(1))],
    ]
    .boxed()
}

fn ttl() -> BoxedStrategy<Duration> {
    prop_oneof![
        8 => (1u64..=10_000).prop_map(Duration::from_millis),
        1 => Just(Duration::ZERO),
        1 => Just(Duration::from_nanos(1)),
        1 => prop_oneof![Just(Duration::MAX), Just(Duration::from_secs(u64::MAX))],
    ]
    .boxed()
}

fn owner() -> BoxedStrategy<OwnerId> {
    prop_oneof![5 => (0u64..4).prop_map(OwnerId::new), 1 => Just(OwnerId::new(u64::MAX))].boxed()
}

// ---------------------------------------------------------------------------------------------------------------
// The authority
// ---------------------------------------------------------------------------------------------------------------

/// The reference model: the rules of the crate README, written with integer nanoseconds.
#[derive(Clone, Debug)]
struct AuthorityModel {
    clamp: bool,
    /// The greatest token issued; 0 when none was.
    last_issued: u64,
    /// (owner, token, expires_at in ns) of the current lease record.
    lease: Option<(OwnerId, u64, u128)>,
    observed: u128,
    /// The model's answer to the latest request.
    answer: Option<Decision>,
}

#[derive(Clone, Debug)]
enum Request {
    Acquire {
        owner: OwnerId,
        now: Duration,
        ttl: Duration,
    },
    Reacquire {
        owner: OwnerId,
        now: Duration,
        ttl: Duration,
    },
    Renew {
        owner: OwnerId,
        token: u64,
        now: Duration,
        ttl: Duration,
    },
    Release {
        owner: OwnerId,
        token: u64,
        now: Duration,
    },
    /// Checkpoint, then continue on `LeaseAuthority::restore`.
    Restore,
    /// Checkpoint, store its three parts, rebuild with `Checkpoint::from_parts`, restore.
    RestoreFromParts,
}

impl AuthorityModel {
    fn policy(&self) -> ClockPolicy {
        if self.clamp {
            ClockPolicy::Clamp
        } else {
            ClockPolicy::Reject
        }
    }

    fn lease(&self) -> Option<Lease> {
        self.lease.map(|(owner, value, expires)| Lease::new(owner, token(value), duration(expires)))
    }

    fn at(&mut self, now: Duration) -> Result<u128, Rejection> {
        let now = ns(now);
        if now >= self.observed {
            self.observed = now;
            Ok(now)
        } else if self.clamp {
            Ok(self.observed)
        } else {
            Err(Rejection::ClockRegressed)
        }
    }

    fn until(now: u128, ttl: Duration) -> Result<u128, Rejection> {
        match ns(ttl) {
            0 => Err(Rejection::InvalidTtl),
            ttl if now + ttl > MAX_NS => Err(Rejection::DeadlineOverflow),
            ttl => Ok(now + ttl),
        }
    }

    fn grant(&mut self, owner: OwnerId, now: Duration, ttl: Duration, rotate: bool) -> Result<Decision, Rejection> {
        let now = self.at(now)?;
        let until = Self::until(now, ttl)?;
        if let Some((holder, _, expires)) = self.lease {
            let live = now < expires;
            if live && !(rotate && holder == owner) {
                return Err(Rejection::Occupied);
            }
        }
        if self.last_issued == u64::MAX {
            return Err(Rejection::TokenSpaceExhausted);
        }
        self.last_issued += 1;
        self.lease = Some((owner, self.last_issued, until));
        Ok(Decision::Granted(Lease::new(owner, token(self.last_issued), duration(until))))
    }

    fn held(&self, owner: OwnerId, presented: u64, now: u128) -> Result<(OwnerId, u64, u128), Rejection> {
        match self.lease {
            None => Err(Rejection::NotHeld),
            Some((_, current, _)) if current != presented => Err(Rejection::StaleToken),
            Some((holder, _, _)) if holder != owner => Err(Rejection::WrongOwner),
            Some((_, _, expires)) if now >= expires => Err(Rejection::Expired),
            Some(lease) => Ok(lease),
        }
    }

    fn decide(&mut self, request: &Request) -> Result<Decision, Rejection> {
        match *request {
            Request::Acquire { owner, now, ttl } => self.grant(owner, now, ttl, false),
            Request::Reacquire { owner, now, ttl } => self.grant(owner, now, ttl, true),
            Request::Renew { owner, token: presented, now, ttl } => {
                let now = self.at(now)?;
                let until = Self::until(now, ttl)?;
                let (holder, value, expires) = self.held(owner, presented, now)?;
                let expires = expires.max(until);
                self.lease = Some((holder, value, expires));
                Ok(Decision::Renewed(Lease::new(holder, token(value), duration(expires))))
            }
            Request::Release { owner, token: presented, now } => {
                let now = self.at(now)?;
                self.held(owner, presented, now)?;
                self.lease = None;
                Ok(Decision::Released)
            }
            Request::Restore | Request::RestoreFromParts => unreachable!("handled by apply"),
        }
    }
}

impl ReferenceStateMachine for AuthorityModel {
    type State = Self;
    type Transition = Request;

    fn init_state() -> BoxedStrategy<Self> {
        let history = prop_oneof![
            4 => Just(0u64),
            1 => 1u64..5,
            1 => prop_oneof![Just(u64::MAX - 2), Just(u64::MAX)],
        ];
        (any::<bool>(), history, 0u128..10_000_000_000)
            .prop_map(|(clamp, last_issued, observed)| Self { clamp, last_issued, lease: None, observed, answer: None })
            .boxed()
    }

    fn transitions(state: &Self) -> BoxedStrategy<Request> {
        let boundary = state.lease.map(|(_, _, expires)| expires);
        let now = instant_near(state.observed, boundary);
        let current = state.lease.map_or(1, |(_, value, _)| value);
        let presented = prop_oneof![
            4 => Just(current),
            2 => 1..=state.last_issued.saturating_add(2).max(1),
            1 => Just(u64::MAX),
        ];
        let holder = state.lease.map_or(OwnerId::new(0), |(holder, _, _)| holder);
        let who = prop_oneof![2 => Just(holder), 3 => owner()];
        prop_oneof![
            4 => (owner(), now.clone(), ttl()).prop_map(|(owner, now, ttl)| Request::Acquire { owner, now, ttl }),
            2 => (who.clone(), now.clone(), ttl()).prop_map(|(owner, now, ttl)| Request::Reacquire { owner, now, ttl }),
            4 => (who.clone(), presented.clone(), now.clone(), ttl())
                .prop_map(|(owner, token, now, ttl)| Request::Renew { owner, token, now, ttl }),
            2 => (who, presented, now).prop_map(|(owner, token, now)| Request::Release { owner, token, now }),
            1 => Just(Request::Restore),
            1 => Just(Request::RestoreFromParts),
        ]
        .boxed()
    }

    fn apply(mut state: Self, request: &Request) -> Self {
        state.answer = match request {
            Request::Restore | Request::RestoreFromParts => None,
            request => Some(state.decide(request).unwrap_or_else(Decision::Rejected)),
        };
        state
    }
}

/// The crate, plus what the test saw of it: the history of decisions it returned.
struct AuthorityUnderTest {
    authority: LeaseAuthority,
    answer: Option<Decision>,
    /// The greatest token any decision granted.
    highest_granted: Option<FencingToken>,
    /// The lease as the decisions describe it: set by grants and renewals, cleared by release.
    open: Option<Lease>,
}

impl AuthorityUnderTest {
    fn step(&mut self, request: &Request) {
        let before = self.authority.checkpoint();
        let regressed = match request {
            Request::Acquire { now, .. }
            | Request::Reacquire { now, .. }
            | Request::Renew { now, .. }
            | Request::Release { now, .. } => *now < before.observed(),
            Request::Restore | Request::RestoreFromParts => false,
        };
        let effective_now = |now: Duration| now.max(before.observed());
        let decision = match *request {
            Request::Acquire { owner, now, ttl } => self.authority.acquire(owner, now, ttl),
            Request::Reacquire { owner, now, ttl } => self.authority.reacquire(owner, now, ttl),
            Request::Renew { owner, token: presented, now, ttl } => {
                self.authority.renew(owner, token(presented), now, ttl)
            }
            Request::Release { owner, token: presented, now } => self.authority.release(owner, token(presented), now),
            Request::Restore => {
                let policy = self.authority.clock_policy();
                self.authority = LeaseAuthority::restore(self.authority.checkpoint()).with_clock_policy(policy);
                assert_eq!(self.authority.checkpoint(), before, "restore changes nothing");
                self.answer = None;
                return;
            }
            Request::RestoreFromParts => {
                let policy = self.authority.clock_policy();
                let parts = Checkpoint::from_parts(before.last_issued(), before.lease(), before.observed())
                    .expect("every reachable checkpoint is consistent");
                self.authority = LeaseAuthority::restore(parts).with_clock_policy(policy);
                assert_eq!(self.authority.checkpoint(), before, "from_parts rebuilds the same checkpoint");
                self.answer = None;
                return;
            }
        };
        let after = self.authority.checkpoint();

        // Clock regressions never change state.
        assert!(after.observed() >= before.observed(), "the watermark never goes back");
        if regressed {
            assert_eq!(after.observed(), before.observed(), "a regressed request leaves the watermark");
            if self.authority.clock_policy() == ClockPolicy::Reject {
                assert_eq!(decision, Decision::Rejected(Rejection::ClockRegressed));
                assert_eq!(after, before, "a rejected regression changes nothing");
            }
        }
        match decision {
            Decision::Granted(lease) => {
                // Tokens strictly increase, hence never repeat.
                assert!(self.highest_granted.map_or(true, |highest| lease.token() > highest));
                self.highest_granted = Some(lease.token());
                assert_eq!(after.last_issued(), Some(lease.token()));
                // One live holder at any instant: the previous lease is released, expired, or rotated by its owner.
                let (at, rotating) = match *request {
                    Request::Acquire { now, .. } => (effective_now(now), false),
                    Request::Reacquire { owner, now, .. } => {
                        (effective_now(now), self.open.is_some_and(|open| open.owner() == owner))
                    }
                    _ => unreachable!("only acquire and reacquire grant"),
                };
                if let Some(open) = self.open {
                    assert!(!open.is_live(at) || rotating, "{open:?} was still live at {at:?}");
                }
                self.open = Some(lease);
            }
            Decision::Renewed(lease) => {
                let Request::Renew { now, .. } = *request else { unreachable!("only renew renews") };
                let open = self.open.expect("renewal of a lease the decisions granted");
                assert!(open.is_live(effective_now(now)), "no resurrection");
                assert_eq!((lease.owner(), lease.token()), (open.owner(), open.token()), "same owner, same token");
                assert!(lease.expires_at() >= open.expires_at(), "renewal never shortens");
                self.open = Some(lease);
            }
            Decision::Released => self.open = None,
            Decision::Rejected(_) => {
                assert_eq!(after.lease(), before.lease(), "a rejection never changes the lease");
                assert_eq!(after.last_issued(), before.last_issued(), "a rejection issues no token");
            }
        }
        self.answer = Some(decision);
    }
}

impl StateMachineTest for AuthorityUnderTest {
    type SystemUnderTest = Self;
    type Reference = AuthorityModel;

    fn init_test(model: &AuthorityModel) -> Self {
        let history = FencingToken::new(model.last_issued);
        let start = Checkpoint::from_parts(history, None, duration(model.observed)).expect("no lease, consistent");
        Self {
            authority: LeaseAuthority::restore(start).with_clock_policy(model.policy()),
            answer: None,
            highest_granted: history,
            open: None,
        }
    }

    fn apply(mut sut: Self, _model: &AuthorityModel, request: Request) -> Self {
        sut.step(&request);
        sut
    }

    fn check_invariants(sut: &Self, model: &AuthorityModel) {
        assert_eq!(sut.answer, model.answer, "the crate and the model decide alike");
        let checkpoint = sut.authority.checkpoint();
        assert_eq!(checkpoint.last_issued(), FencingToken::new(model.last_issued));
        assert_eq!(checkpoint.lease(), model.lease());
        assert_eq!(ns(checkpoint.observed()), model.observed);
    }
}

// ---------------------------------------------------------------------------------------------------------------
// The fence
// ---------------------------------------------------------------------------------------------------------------

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

// ---------------------------------------------------------------------------------------------------------------
// The holder
// ---------------------------------------------------------------------------------------------------------------

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
    fn authority_matches_the_model_and_keeps_every_invariant(sequential 1..max_steps() => AuthorityUnderTest);

    #[test]
    fn fence_matches_the_model_and_never_goes_backwards(sequential 1..max_steps() => FenceUnderTest);

    #[test]
    fn holder_matches_the_model_and_keeps_every_invariant(sequential 1..max_steps() => HolderUnderTest);
}

// ---------------------------------------------------------------------------------------------------------------
// Restore continues exactly
// ---------------------------------------------------------------------------------------------------------------

fn absolute_request() -> impl Strategy<Value = Request> {
    let now = (0u64..20_000).prop_map(Duration::from_millis);
    let presented = 1u64..6;
    prop_oneof![
        (owner(), now.clone(), ttl()).prop_map(|(owner, now, ttl)| Request::Acquire { owner, now, ttl }),
        (owner(), now.clone(), ttl()).prop_map(|(owner, now, ttl)| Request::Reacquire { owner, now, ttl }),
        (owner(), presented.clone(), now.clone(), ttl()).prop_map(|(owner, token, now, ttl)| Request::Renew {
            owner,
            token,
            now,
            ttl
        }),
        (owner(), presented, now).prop_map(|(owner, token, now)| Request::Release { owner, token, now }),
    ]
}

fn run(authority: &mut LeaseAuthority, request: &Request) -> Decision {
    match *request {
        Request::Acquire { owner, now, ttl } => authority.acquire(owner, now, ttl),
        Request::Reacquire { owner, now, ttl } => authority.reacquire(owner, now, ttl),
        Request::Renew { owner, token: presented, now, ttl } => authority.renew(owner, token(presented), now, ttl),
        Request::Release { owner, token: presented, now } => authority.release(owner, token(presented), now),
        Request::Restore | Request::RestoreFromParts => unreachable!("not generated here"),
    }
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn a_restored_authority_decides_every_later_request_as_the_original(
        requests in prop::collection::vec(absolute_request(), 0..80),
        cut in any::<prop::sample::Index>(),
        clamp in any::<bool>(),
    ) {
        let policy = if clamp { ClockPolicy::Clamp } else { ClockPolicy::Reject };
        let cut = cut.index(requests.len() + 1);
        let mut original = LeaseAuthority::new().with_clock_policy(policy);
        for request in &requests[..cut] {
            let _ = run(&mut original, request);
        }
        let stored = original.checkpoint();
        let parts = Checkpoint::from_parts(stored.last_issued(), stored.lease(), stored.observed());
        prop_assert_eq!(parts, Some(stored));
        let mut restored = LeaseAuthority::restore(stored).with_clock_policy(policy);
        for request in &requests[cut..] {
            prop_assert_eq!(run(&mut restored, request), run(&mut original, request));
        }
        prop_assert_eq!(restored, original);
    }

    #[test]
    fn a_checkpoint_issued_exactly_the_tokens_its_authority_granted(
        requests in prop::collection::vec(absolute_request(), 0..80),
    ) {
        let mut authority = LeaseAuthority::new().with_clock_policy(ClockPolicy::Clamp);
        let mut granted = Vec::new();
        for request in &requests {
            if let Decision::Granted(lease) = run(&mut authority, request) {
                granted.push(lease.token().value());
            }
        }
        let checkpoint = authority.checkpoint();
        let highest = granted.iter().copied().max().unwrap_or(0);
        for value in 1..=highest + 3 {
            let token = FencingToken::new(value).expect("not zero");
            prop_assert_eq!(checkpoint.issued(token), value <= highest, "token {}", value);
        }
        prop_assert!(granted.iter().all(|&value| (1..=highest).contains(&value)));
    }
}
