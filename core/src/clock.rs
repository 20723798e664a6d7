//! What an authority does when time seems to run backwards.

/// How a [`LeaseAuthority`](crate::LeaseAuthority) treats a request whose `now` is earlier than the latest instant it
/// has observed.
///
/// Either way a backwards step never changes a lease: it cannot revive an expired lease, shorten a live one, or move
/// the watermark back.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub enum ClockPolicy {
    /// Refuse the request with [`Rejection::ClockRegressed`](crate::Rejection::ClockRegressed) and change nothing.
    /// The default: a regression usually means the caller mixed clocks or origins, which deserves attention.
    #[default]
    Reject,
    /// Evaluate the request at the latest observed instant instead, as if it arrived then: expiry checks and new
    /// deadlines use the later time. For clocks that may step back a little, such as a wall clock shared by several
    /// processes.
    Clamp,
}

impl ClockPolicy {
    /// Every policy, in declaration order.
    pub const ALL: [Self; 2] = [Self::Reject, Self::Clamp];

    /// The policy's stable snake_case name (`"reject"`, `"clamp"`), used in JSON and by the Ruby gem's Symbols.
    #[must_use]
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Reject => "reject",
            Self::Clamp => "clamp",
        }
    }

    /// The policy named `name`, as [`as_str`](Self::as_str) spells it.
    #[must_use]
    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|policy| policy.as_str() == name)
    }
}
