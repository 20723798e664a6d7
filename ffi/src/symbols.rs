//! The gem's Symbols and the enums they stand for, both ways, from one declaration per enum (see [`symbols!`]).
//!
//! A Symbol the Ruby layer hands back (a decision's status, a rejection's reason, an event's kind, ...) comes from
//! [`SymbolEnum::symbol`]; one it hands in from [`SymbolEnum::arg`], which raises a `TypeError` for a non-Symbol
//! and an `ArgumentError` listing the valid ones for any other Symbol; the lists Ruby shows (`REASONS`,
//! `Decision.statuses`, `Event.kinds`, `AuditReport.codes`) from [`SymbolEnum::symbols`], in the declared order.

use lease_machines::{
    CertificateStatus, ClockPolicy, EventKind, FenceMode, FindingCode, HolderState, Rejection, Scenario,
};
use magnus::{value::LazyId, Error, RArray, Ruby, StaticSymbol, Symbol, Value};

use crate::convert::shown;

/// An enum whose variants are Ruby Symbols. Implemented by [`symbols!`], never by hand.
pub trait SymbolEnum: Copy + PartialEq + 'static {
    /// Every variant, in the order Ruby lists them.
    const ALL: &'static [Self];
    /// The argument's name in error messages (`"clock_policy"`, `"kind"`).
    const ARG: &'static str;
    /// What a `TypeError` says the Symbol must be, when not the valid Symbols separated by commas.
    const EXPECTED: Option<&'static str>;

    /// The variant's Symbol, interned once.
    fn id(self) -> &'static LazyId;
    /// The variant's Symbol name (`"stale_token"`).
    fn name(self) -> &'static str;

    fn symbol(self, ruby: &Ruby) -> StaticSymbol {
        StaticSymbol::from(LazyId::get_inner_with(self.id(), ruby))
    }

    /// Every variant's Symbol, in order, as a new Array.
    fn symbols(ruby: &Ruby) -> RArray {
        ruby.ary_from_iter(Self::ALL.iter().map(|variant| variant.symbol(ruby)))
    }

    /// The variant `value` names; any other Symbol is an `ArgumentError` listing the valid ones, a non-Symbol a
    /// `TypeError`. A Symbol whose name is not valid UTF-8 is simply not one of ours.
    fn arg(ruby: &Ruby, value: Value) -> Result<Self, Error> {
        let valid = || Self::ALL.iter().map(|variant| format!(":{}", variant.name())).collect::<Vec<_>>().join(", ");
        let Some(given) = Symbol::from_value(value) else {
            let expected = Self::EXPECTED.map_or_else(valid, str::to_owned);
            return Err(Error::new(
                ruby.exception_type_error(),
                format!("{} must be a Symbol ({expected}), got {}", Self::ARG, shown(value)),
            ));
        };
        let found = given.name().ok().and_then(|text| Self::ALL.iter().copied().find(|variant| variant.name() == text));
        found.ok_or_else(|| {
            Error::new(
                ruby.exception_arg_error(),
                format!("unknown {} {} (valid: {})", Self::ARG, shown(value), valid()),
            )
        })
    }
}

/// A variant's Symbol name: the one written in the declaration, else the core's own `as_str` name.
macro_rules! symbol_name {
    ($enum:ident :: $variant:ident) => {
        $enum::$variant.as_str()
    };
    ($enum:ident :: $variant:ident = $name:literal) => {
        $name
    };
}

/// Declares each enum's Symbols once: `Enum(arg "name") { Variant, Variant = "symbol", ... }`, the variants in the
/// order Ruby lists them, each `core` (the core's enum) or `enum` (one the extension declares here). A variant
/// without a name takes the core's `as_str` name. `or "..."` after the argument name replaces the list of Symbols
/// a `TypeError` shows. Generates the [`SymbolEnum`] implementation and `intern_all`, which interns every Symbol when the
/// extension loads, so that no later use can fail.
macro_rules! symbols {
    (@enum enum $(#[$doc:meta])* $enum:ident { $($variant:ident)* }) => {
        $(#[$doc])*
        #[derive(Clone, Copy, PartialEq, Eq, Debug)]
        pub enum $enum { $($variant,)* }
    };
    (@enum core $(#[$doc:meta])* $enum:ident { $($variant:ident)* }) => {};
    (@expected) => { None };
    (@expected $expected:literal) => { Some($expected) };
    ($(
        $(#[$doc:meta])*
        $kind:ident $enum:ident(arg $arg:literal $(or $expected:literal)?) {
            $($variant:ident $(= $name:literal)?),+ $(,)?
        }
    )*) => {
        $(
            symbols!(@enum $kind $(#[$doc])* $enum { $($variant)+ });

            impl SymbolEnum for $enum {
                const ALL: &'static [Self] = &[$($enum::$variant),+];
                const ARG: &'static str = $arg;
                const EXPECTED: Option<&'static str> = symbols!(@expected $($expected)?);

                fn id(self) -> &'static LazyId {
                    match self {
                        $($enum::$variant => {
                            static ID: LazyId = LazyId::new(symbol_name!($enum::$variant $(= $name)?));
                            &ID
                        })+
                    }
                }

                fn name(self) -> &'static str {
                    match self {
                        $($enum::$variant => symbol_name!($enum::$variant $(= $name)?),)+
                    }
                }
            }
        )*

        /// Interns every Symbol up front, so that no later use can fail.
        pub fn intern_all(ruby: &Ruby) {
            $(for variant in <$enum as SymbolEnum>::ALL {
                LazyId::force(variant.id(), ruby);
            })*
        }
    };
}

symbols! {
    /// A decision's status (`Decision#status`), in the order a lease goes through them (`Decision.statuses`).
    enum Status(arg "status") {
        Granted = "granted",
        Renewed = "renewed",
        Transferred = "transferred",
        Released = "released",
        Reaped = "reaped",
        Rejected = "rejected",
    }

    /// Why a request was refused (`Decision#reason`), in the core's order (`Rejection::ALL`, `REASONS`).
    core Rejection(arg "reason") {
        ClockRegressed,
        InvalidTtl,
        DeadlineOverflow,
        Occupied,
        TokenSpaceExhausted,
        NotHeld,
        StaleToken,
        WrongOwner,
        Expired,
        RevisionMismatch,
        RevisionSpaceExhausted,
        NoQuorum,
        NotLeader,
        StaleTerm,
        LeadershipRequired,
    }

    /// `Authority.new(clock_policy:)` and `Table.new(clock_policy:)`.
    core ClockPolicy(arg "clock_policy" or ":reject or :clamp") {
        Reject = "reject",
        Clamp = "clamp",
    }

    /// `Holder#state`.
    core HolderState(arg "state") {
        Confirmed = "confirmed",
        Unconfirmed = "unconfirmed",
        AtRisk = "at_risk",
        Expired = "expired",
        Fenced = "fenced",
    }

    /// `Event#kind`, in the core's order (`EventKind::ALL`, `Event.kinds`).
    core EventKind(arg "kind") {
        Acquired,
        Reacquired,
        Renewed,
        Released,
        Transferred,
        Reaped,
    }

    /// `AuditReport::Finding#code`, in the core's order (`FindingCode::ALL`, `AuditReport.codes`).
    core FindingCode(arg "code") {
        TokenNotRising,
        RevisionNotRising,
        TimeBackwards,
        OverlappingLeases,
        GrantWhileLive,
        RenewalShortened,
        RenewalChangedToken,
        TokenMismatch,
        ReapUnexpired,
        NotLive,
    }

    /// The commands `Table#apply_batch` takes (`:command`).
    enum CommandName(arg "command") {
        Acquire = "acquire",
        Reacquire = "reacquire",
        Renew = "renew",
        Release = "release",
        Transfer = "transfer",
        Reap = "reap",
    }

    /// `QuorumCertificate#status`, in the core's order (`CertificateStatus::ALL`).
    core CertificateStatus(arg "status") {
        Certified,
        NoMembers,
        NoVotes,
        NoQuorum,
        Split,
    }

    /// `SimulationConfig#scenario`.
    core Scenario(arg "scenario") {
        Contention,
        Failover,
    }

    /// `SimulationConfig#fence`.
    core FenceMode(arg "fence") {
        Enforced,
        Disabled,
    }
}
