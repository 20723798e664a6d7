//! Who asks for a lease.

use core::fmt;

/// The identity of a lease owner (a worker, a process, a node), as a plain `u64`.
///
/// Any `u64` is a valid owner, `0` included. The authority only compares owners for equality; it never interprets
/// them. Callers whose owners are strings hash them to a `u64` on their side and keep the mapping stable for as long
/// as a history lives.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct OwnerId(u64);

impl OwnerId {
    /// The owner with this number. Total: every `u64` is accepted.
    #[must_use]
    pub const fn new(value: u64) -> Self {
        Self(value)
    }

    /// The number this owner was made from.
    #[must_use]
    pub const fn value(self) -> u64 {
        self.0
    }
}

impl From<u64> for OwnerId {
    fn from(value: u64) -> Self {
        Self(value)
    }
}

impl From<OwnerId> for u64 {
    fn from(owner: OwnerId) -> Self {
        owner.0
    }
}

impl fmt::Display for OwnerId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "owner {}", self.0)
    }
}
