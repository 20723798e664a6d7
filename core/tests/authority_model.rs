//! Model-based property tests of the lease authority: a small reference model of its rules, run against
//! `LeaseAuthority` over random sequences of requests, with the safety invariants checked after every step; and
//! restore equivalence: an authority restored from a checkpoint decides every later request as the original.
//!
//! Scale with the environment: `PROPTEST_CASES` (proptest's own, default 256) sequences per test, each of up to
//! `LEASE_MACHINES_MODEL_STEPS` (default 64) steps (see `support::max_steps`).
#![cfg(test)] // test code throughout: clippy.toml lets it unwrap, expect, panic and index

use core::time::Duration;

use lease_machines::{Checkpoint, ClockPolicy, Decision, FencingToken, Lease, LeaseAuthority, OwnerId, Rejection};
use proptest::prelude::*;
use proptest_state_machine::{prop_state_machine, ReferenceStateMachine, StateMachineTest};

mod support;
use support::{duration, max_steps, model_config, ns, token, MAX_NS};

fn config() -> ProptestConfig {
    model_config("proptest-regressions/authority_model.txt")
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

prop_state_machine! {
    #![proptest_config(config())]

    #[test]
    fn authority_matches_the_model_and_keeps_every_invariant(sequential 1..max_steps() => AuthorityUnderTest);
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
