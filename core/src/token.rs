//! The number that only grows.

use core::fmt;
use core::num::NonZeroU64;

/// A fencing token: the serial number of one grant, in `1..=u64::MAX`.
///
/// An authority issues `1` first and every later grant a strictly greater token, so the order of tokens is the order
/// of grants. A protected resource that remembers the greatest token it has accepted (a [`Fence`](crate::Fence)) can
/// refuse any holder whose grant was superseded. `0` is never a token, which makes `Option<FencingToken>` as small
/// as a `u64` and lets "no token issued yet" be `None` rather than a magic value.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct FencingToken(NonZeroU64);

impl FencingToken {
    /// The first token an authority issues: `1`.
    pub const FIRST: Self = Self(NonZeroU64::MIN);

    /// The last token an authority can issue: `u64::MAX`. After it the token space is exhausted and the authority
    /// refuses every further grant ([`Rejection::TokenSpaceExhausted`](crate::Rejection::TokenSpaceExhausted)).
    pub const LAST: Self = Self(NonZeroU64::MAX);

    /// The token with this value, or `None` for `0`, which is never issued.
    #[must_use]
    pub const fn new(value: u64) -> Option<Self> {
        match NonZeroU64::new(value) {
            Some(value) => Some(Self(value)),
            None => None,
        }
    }

    /// The token's value, in `1..=u64::MAX`.
    #[must_use]
    pub const fn value(self) -> u64 {
        self.0.get()
    }

    /// The token issued after this one, or `None` when this is [`FencingToken::LAST`]. Tokens never wrap.
    #[must_use]
    pub const fn next(self) -> Option<Self> {
        match self.0.checked_add(1) {
            Some(value) => Some(Self(value)),
            None => None,
        }
    }
}

impl From<FencingToken> for u64 {
    fn from(token: FencingToken) -> Self {
        token.value()
    }
}

impl fmt::Display for FencingToken {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "token {}", self.0)
    }
}
