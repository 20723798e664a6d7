//! The gem's Symbols and the core's enums, one `match` per direction.

use lease_machines::{CertificateStatus, ClockPolicy, EventKind, FindingCode, HolderState, Rejection};
use lease_machines_sim::{FenceMode, Scenario};
use magnus::{prelude::*, value::LazyId, Error, RModule, Ruby, StaticSymbol, Symbol, TryConvert, Value};

use crate::convert::shown;

macro_rules! ids {
    ($($name:ident = $text:expr;)*) => {
        $(static $name: LazyId = LazyId::new($text);)*
        /// Interns every Symbol up front, so that no later use can fail.
        pub fn intern_all(ruby: &Ruby) {
            $(LazyId::force(&$name, ruby);)*
        }
    };
}

ids! {
    GRANTED = "granted";
    RENEWED = "renewed";
    RELEASED = "released";
    REJECTED = "rejected";
    TRANSFERRED = "transferred";
    REAPED = "reaped";
    CERTIFIED = CertificateStatus::Certified.as_str();
    NO_MEMBERS = CertificateStatus::NoMembers.as_str();
    NO_VOTES = CertificateStatus::NoVotes.as_str();
    SPLIT = CertificateStatus::Split.as_str();
    ACQUIRED = "acquired";
    REACQUIRED = "reacquired";
    TOKEN_NOT_RISING = FindingCode::TokenNotRising.as_str();
    REVISION_NOT_RISING = FindingCode::RevisionNotRising.as_str();
    TIME_BACKWARDS = FindingCode::TimeBackwards.as_str();
    OVERLAPPING_LEASES = FindingCode::OverlappingLeases.as_str();
    GRANT_WHILE_LIVE = FindingCode::GrantWhileLive.as_str();
    RENEWAL_SHORTENED = FindingCode::RenewalShortened.as_str();
    RENEWAL_CHANGED_TOKEN = FindingCode::RenewalChangedToken.as_str();
    TOKEN_MISMATCH = FindingCode::TokenMismatch.as_str();
    REAP_UNEXPIRED = FindingCode::ReapUnexpired.as_str();
    NOT_LIVE = FindingCode::NotLive.as_str();
    CLOCK_REGRESSED = Rejection::ClockRegressed.as_str();
    INVALID_TTL = Rejection::InvalidTtl.as_str();
    DEADLINE_OVERFLOW = Rejection::DeadlineOverflow.as_str();
    OCCUPIED = Rejection::Occupied.as_str();
    TOKEN_SPACE_EXHAUSTED = Rejection::TokenSpaceExhausted.as_str();
    NOT_HELD = Rejection::NotHeld.as_str();
    STALE_TOKEN = Rejection::StaleToken.as_str();
    WRONG_OWNER = Rejection::WrongOwner.as_str();
    EXPIRED = Rejection::Expired.as_str();
    REVISION_MISMATCH = Rejection::RevisionMismatch.as_str();
    REVISION_SPACE_EXHAUSTED = Rejection::RevisionSpaceExhausted.as_str();
    NO_QUORUM = Rejection::NoQuorum.as_str();
    NOT_LEADER = Rejection::NotLeader.as_str();
    STALE_TERM = Rejection::StaleTerm.as_str();
    LEADERSHIP_REQUIRED = Rejection::LeadershipRequired.as_str();
    REJECT = "reject";
    CLAMP = "clamp";
    CONFIRMED = "confirmed";
    UNCONFIRMED = "unconfirmed";
    AT_RISK = "at_risk";
    HOLDER_EXPIRED = "expired";
    FENCED = "fenced";
    CONTENTION = Scenario::Contention.as_str();
    FAILOVER = Scenario::Failover.as_str();
    ENFORCED = FenceMode::Enforced.as_str();
    DISABLED = FenceMode::Disabled.as_str();
}

fn symbol(ruby: &Ruby, id: &LazyId) -> StaticSymbol {
    StaticSymbol::from(LazyId::get_inner_with(id, ruby))
}

/// The statuses of a decision.
#[derive(Clone, Copy)]
pub enum Status {
    Granted,
    Renewed,
    Released,
    Transferred,
    Reaped,
    Rejected,
}

pub fn status(ruby: &Ruby, status: Status) -> StaticSymbol {
    symbol(
        ruby,
        match status {
            Status::Granted => &GRANTED,
            Status::Renewed => &RENEWED,
            Status::Released => &RELEASED,
            Status::Transferred => &TRANSFERRED,
            Status::Reaped => &REAPED,
            Status::Rejected => &REJECTED,
        },
    )
}

pub fn reason(ruby: &Ruby, rejection: Rejection) -> StaticSymbol {
    symbol(
        ruby,
        match rejection {
            Rejection::ClockRegressed => &CLOCK_REGRESSED,
            Rejection::InvalidTtl => &INVALID_TTL,
            Rejection::DeadlineOverflow => &DEADLINE_OVERFLOW,
            Rejection::Occupied => &OCCUPIED,
            Rejection::TokenSpaceExhausted => &TOKEN_SPACE_EXHAUSTED,
            Rejection::NotHeld => &NOT_HELD,
            Rejection::StaleToken => &STALE_TOKEN,
            Rejection::WrongOwner => &WRONG_OWNER,
            Rejection::Expired => &EXPIRED,
            Rejection::RevisionMismatch => &REVISION_MISMATCH,
            Rejection::RevisionSpaceExhausted => &REVISION_SPACE_EXHAUSTED,
            Rejection::NoQuorum => &NO_QUORUM,
            Rejection::NotLeader => &NOT_LEADER,
            Rejection::StaleTerm => &STALE_TERM,
            Rejection::LeadershipRequired => &LEADERSHIP_REQUIRED,
        },
    )
}

/// `LeaseMachines::REASONS`: every rejection's Symbol, in the core's order (`Rejection::ALL`), frozen.
pub fn define_reasons(ruby: &Ruby, module: RModule) -> Result<(), Error> {
    let reasons = ruby.ary_from_iter(Rejection::ALL.into_iter().map(|rejection| reason(ruby, rejection)));
    reasons.freeze();
    module.const_set("REASONS", reasons)
}

pub fn holder_state(ruby: &Ruby, state: HolderState) -> StaticSymbol {
    symbol(
        ruby,
        match state {
            HolderState::Confirmed => &CONFIRMED,
            HolderState::Unconfirmed => &UNCONFIRMED,
            HolderState::AtRisk => &AT_RISK,
            HolderState::Expired => &HOLDER_EXPIRED,
            HolderState::Fenced => &FENCED,
        },
    )
}

pub fn clock_policy(ruby: &Ruby, policy: ClockPolicy) -> StaticSymbol {
    symbol(
        ruby,
        match policy {
            ClockPolicy::Reject => &REJECT,
            ClockPolicy::Clamp => &CLAMP,
        },
    )
}

/// `:reject` or `:clamp`; any other Symbol is an `ArgumentError` listing the valid ones, a non-Symbol a `TypeError`.
pub fn clock_policy_arg(ruby: &Ruby, value: Value) -> Result<ClockPolicy, Error> {
    let Ok(given) = Symbol::try_convert(value) else {
        return Err(Error::new(
            ruby.exception_type_error(),
            format!("clock_policy must be a Symbol (:reject or :clamp), got {}", shown(value)),
        ));
    };
    // A Symbol whose name is not valid UTF-8 is simply not one of ours.
    match given.name().as_deref() {
        Ok("reject") => Ok(ClockPolicy::Reject),
        Ok("clamp") => Ok(ClockPolicy::Clamp),
        _ => Err(Error::new(
            ruby.exception_arg_error(),
            format!("unknown clock_policy {} (valid: :reject, :clamp)", shown(value)),
        )),
    }
}

pub fn event_kind(ruby: &Ruby, kind: EventKind) -> StaticSymbol {
    symbol(
        ruby,
        match kind {
            EventKind::Acquired => &ACQUIRED,
            EventKind::Reacquired => &REACQUIRED,
            EventKind::Renewed => &RENEWED,
            EventKind::Released => &RELEASED,
            EventKind::Transferred => &TRANSFERRED,
            EventKind::Reaped => &REAPED,
        },
    )
}

pub fn finding_code(ruby: &Ruby, code: FindingCode) -> StaticSymbol {
    symbol(
        ruby,
        match code {
            FindingCode::TokenNotRising => &TOKEN_NOT_RISING,
            FindingCode::RevisionNotRising => &REVISION_NOT_RISING,
            FindingCode::TimeBackwards => &TIME_BACKWARDS,
            FindingCode::OverlappingLeases => &OVERLAPPING_LEASES,
            FindingCode::GrantWhileLive => &GRANT_WHILE_LIVE,
            FindingCode::RenewalShortened => &RENEWAL_SHORTENED,
            FindingCode::RenewalChangedToken => &RENEWAL_CHANGED_TOKEN,
            FindingCode::TokenMismatch => &TOKEN_MISMATCH,
            FindingCode::ReapUnexpired => &REAP_UNEXPIRED,
            FindingCode::NotLive => &NOT_LIVE,
        },
    )
}

/// One of a closed set of Symbols, named by the core's own `as_str` names: any other Symbol is an `ArgumentError`
/// listing the valid ones, a non-Symbol a `TypeError`.
fn one_of<T: Copy>(
    ruby: &Ruby,
    name: &str,
    value: Value,
    all: &[T],
    as_str: fn(T) -> &'static str,
) -> Result<T, Error> {
    let valid = || all.iter().map(|item| format!(":{}", as_str(*item))).collect::<Vec<_>>().join(", ");
    let Ok(given) = Symbol::try_convert(value) else {
        return Err(Error::new(
            ruby.exception_type_error(),
            format!("{name} must be a Symbol ({}), got {}", valid(), shown(value)),
        ));
    };
    let found = given.name().ok().and_then(|text| all.iter().copied().find(|item| as_str(*item) == text));
    found.ok_or_else(|| {
        Error::new(ruby.exception_arg_error(), format!("unknown {name} {} (valid: {})", shown(value), valid()))
    })
}

pub fn event_kind_arg(ruby: &Ruby, value: Value) -> Result<EventKind, Error> {
    one_of(ruby, "kind", value, &EventKind::ALL, EventKind::as_str)
}

pub fn finding_code_arg(ruby: &Ruby, value: Value) -> Result<FindingCode, Error> {
    one_of(ruby, "code", value, &FindingCode::ALL, FindingCode::as_str)
}

/// The commands a batch may hold.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum CommandName {
    Acquire,
    Reacquire,
    Renew,
    Release,
    Transfer,
    Reap,
}

impl CommandName {
    const ALL: [Self; 6] = [Self::Acquire, Self::Reacquire, Self::Renew, Self::Release, Self::Transfer, Self::Reap];

    fn as_str(self) -> &'static str {
        match self {
            Self::Acquire => "acquire",
            Self::Reacquire => "reacquire",
            Self::Renew => "renew",
            Self::Release => "release",
            Self::Transfer => "transfer",
            Self::Reap => "reap",
        }
    }
}

pub fn command_arg(ruby: &Ruby, value: Value) -> Result<CommandName, Error> {
    one_of(ruby, "command", value, &CommandName::ALL, CommandName::as_str)
}

pub fn certificate_status(ruby: &Ruby, status: CertificateStatus) -> StaticSymbol {
    symbol(
        ruby,
        match status {
            CertificateStatus::Certified => &CERTIFIED,
            CertificateStatus::NoMembers => &NO_MEMBERS,
            CertificateStatus::NoVotes => &NO_VOTES,
            // The same name as the rejection it leads to.
            CertificateStatus::NoQuorum => &NO_QUORUM,
            CertificateStatus::Split => &SPLIT,
        },
    )
}

pub fn certificate_status_arg(ruby: &Ruby, value: Value) -> Result<CertificateStatus, Error> {
    one_of(ruby, "status", value, &CertificateStatus::ALL, CertificateStatus::as_str)
}

pub fn scenario(ruby: &Ruby, scenario: Scenario) -> StaticSymbol {
    symbol(
        ruby,
        match scenario {
            Scenario::Contention => &CONTENTION,
            Scenario::Failover => &FAILOVER,
        },
    )
}

pub fn scenario_arg(ruby: &Ruby, value: Value) -> Result<Scenario, Error> {
    one_of(ruby, "scenario", value, &Scenario::ALL, Scenario::as_str)
}

pub fn fence_mode(ruby: &Ruby, mode: FenceMode) -> StaticSymbol {
    symbol(
        ruby,
        match mode {
            FenceMode::Enforced => &ENFORCED,
            FenceMode::Disabled => &DISABLED,
        },
    )
}

pub fn fence_mode_arg(ruby: &Ruby, value: Value) -> Result<FenceMode, Error> {
    one_of(ruby, "fence", value, &FenceMode::ALL, FenceMode::as_str)
}
