//! The gem's Symbols and the enums they stand for, both ways, from one declaration per enum (see [`symbols!`]).
//!
//! A Symbol the Ruby layer hands back (a decision's status, a rejection's reason, an event's kind, ...) comes from
//! [`SymbolEnum::symbol`]; one it hands in from [`SymbolEnum::arg`], which raises a `TypeError` for a non-Symbol
//! and an `ArgumentError` listing the valid ones for any other Symbol; the lists Ruby shows (`REASONS`,
//! `Decision.statuses`, `Event.kinds`, `AuditReport.codes`) from [`SymbolEnum::symbols`]: a core enum's in the core's
//! own order (its `ALL`), an enum declared here in the declared order.

use std::sync::OnceLock;

use lease_machines::{CertificateStatus, ClockPolicy, EventKind, FindingCode, HolderState, Rejection};
use lease_machines_sim::{FenceMode, Scenario};
use magnus::value::{Id, IntoId, LazyId, OpaqueId};
use magnus::{Error, RArray, Ruby, StaticSymbol, Symbol, Value};

use crate::helpers::shown;

/// An enum whose variants are Ruby Symbols. Implemented by [`symbols!`], never by hand.
pub trait SymbolEnum: Copy + PartialEq + 'static {
    /// Every variant, in the order Ruby lists them.
    const ALL: &'static [Self];
    /// The argument's name in error messages (`"clock_policy"`, `"kind"`).
    const ARG: &'static str;
    /// What a `TypeError` says the Symbol must be, when not the valid Symbols separated by commas.
    const EXPECTED: Option<&'static str>;

    /// The variant's Symbol name (`"stale_token"`).
    fn name(self) -> &'static str;
    /// The variant's Symbol, interned once.
    fn id(self, ruby: &Ruby) -> Id;

    /// Interns every variant's Symbol, so that no later use can fail.
    fn intern(ruby: &Ruby) {
        for variant in Self::ALL {
            variant.id(ruby);
        }
    }

    fn symbol(self, ruby: &Ruby) -> StaticSymbol {
        StaticSymbol::from(self.id(ruby))
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

/// Declares each enum's Symbols once, in one of two forms, each with the argument name its error messages use
/// (`or "..."` after it replaces the list of Symbols a `TypeError` shows):
///
/// - `core Enum(arg "name");`: a core enum with `ALL` and `as_str`, whose order and names Ruby takes as they are;
/// - `enum Enum(arg "name") { Variant = "symbol", ... }`: an enum of the extension's own, declared here.
///
/// Generates each [`SymbolEnum`] implementation, and `intern_all`, which interns every Symbol when the extension
/// loads.
macro_rules! symbols {
    (@all [$($enum:ident)*]) => {
        /// Interns every Symbol up front, so that no later use can fail.
        pub fn intern_all(ruby: &Ruby) {
            $(<$enum as SymbolEnum>::intern(ruby);)*
        }
    };
    (@all [$($done:ident)*]
        $(#[$doc:meta])* enum $enum:ident(arg $arg:literal) { $($variant:ident = $name:literal),+ $(,)? }
        $($rest:tt)*
    ) => {
        $(#[$doc])*
        #[derive(Clone, Copy, PartialEq, Eq, Debug)]
        pub enum $enum { $($variant),+ }
        symbols!(@listed $enum, $arg, None, $($variant = $name),+);
        symbols!(@all [$($done)* $enum] $($rest)*);
    };
    (@all [$($done:ident)*]
        $(#[$doc:meta])* core $enum:ident(arg $arg:literal $(or $expected:literal)?); $($rest:tt)*
    ) => {
        impl SymbolEnum for $enum {
            const ALL: &'static [Self] = &$enum::ALL;
            const ARG: &'static str = $arg;
            const EXPECTED: Option<&'static str> = symbols!(@expected $($expected)?);

            fn name(self) -> &'static str {
                self.as_str()
            }

            fn id(self, ruby: &Ruby) -> Id {
                // One Symbol per entry of the core's `ALL`, in its order.
                static IDS: OnceLock<Vec<OpaqueId>> = OnceLock::new();
                let ids = IDS.get_or_init(|| {
                    $enum::ALL.iter().map(|variant| ruby.intern(variant.as_str()).into()).collect()
                });
                let position = $enum::ALL.iter().position(|variant| *variant == self);
                position
                    .and_then(|position| ids.get(position))
                    .map_or_else(|| ruby.intern(self.as_str()), |id| id.into_id_with(ruby))
            }

        }
        symbols!(@all [$($done)* $enum] $($rest)*);
    };
    (@listed $enum:ident, $arg:literal, $expected:expr, $($variant:ident = $name:literal),+) => {
        impl SymbolEnum for $enum {
            const ALL: &'static [Self] = &[$($enum::$variant),+];
            const ARG: &'static str = $arg;
            const EXPECTED: Option<&'static str> = $expected;

            fn name(self) -> &'static str {
                match self {
                    $($enum::$variant => $name,)+
                }
            }

            fn id(self, ruby: &Ruby) -> Id {
                match self {
                    $($enum::$variant => {
                        static ID: LazyId = LazyId::new($name);
                        LazyId::get_inner_with(&ID, ruby)
                    })+
                }
            }

        }
    };
    (@expected) => { None };
    (@expected $expected:literal) => { Some($expected) };
    ($($entries:tt)*) => {
        symbols!(@all [] $($entries)*);
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

    /// Why a request was refused (`Decision#reason`, `REASONS`).
    core Rejection(arg "reason");

    /// `Authority.new(clock_policy:)` and `Table.new(clock_policy:)`.
    core ClockPolicy(arg "clock_policy" or ":reject or :clamp");

    /// `Holder#state`.
    core HolderState(arg "state");

    /// `Event#kind` (`Event.kinds`).
    core EventKind(arg "kind");

    /// `AuditReport::Finding#code` (`AuditReport.codes`).
    core FindingCode(arg "code");

    /// The commands `Table#apply_batch` takes (`:command`).
    enum CommandName(arg "command") {
        Acquire = "acquire",
        Reacquire = "reacquire",
        Renew = "renew",
        Release = "release",
        Transfer = "transfer",
        Reap = "reap",
    }

    /// What the fence beside a store's record answers for a write, besides a refusal's reason (the store's
    /// `fenced`, from `Checkpoint#_check_write`).
    enum WriteVerdict(arg "verdict") {
        Admitted = "admitted",
        NeverIssued = "never_issued",
        InconsistentMark = "inconsistent_mark",
    }

    /// `QuorumCertificate#status`.
    core CertificateStatus(arg "status");

    /// `SimulationConfig#scenario`.
    core Scenario(arg "scenario");

    /// `SimulationConfig#fence`.
    core FenceMode(arg "fence");
}
