//! What the authority answers.

use core::fmt;

use crate::Lease;

/// The outcome of one request to a [`LeaseAuthority`](crate::LeaseAuthority).
///
/// Refusals are ordinary values: every request returns a `Decision`, none panics or fails otherwise.
#[must_use = "a decision says whether the caller holds the lease; ignoring it is how stale writers happen"]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Decision {
    /// A new lease with a fresh fencing token, greater than every token issued before
    /// ([`acquire`](crate::LeaseAuthority::acquire), [`reacquire`](crate::LeaseAuthority::reacquire)).
    Granted(Lease),
    /// The current lease, same token, with its expiry moved to `max(expires_at, now + ttl)`
    /// ([`renew`](crate::LeaseAuthority::renew)).
    Renewed(Lease),
    /// The current lease was given back; the resource is vacant ([`release`](crate::LeaseAuthority::release)).
    Released,
    /// The request was refused and the lease record is unchanged (the clock watermark may still have advanced; see
    /// [`LeaseAuthority`](crate::LeaseAuthority)).
    Rejected(Rejection),
}

impl Decision {
    /// The lease a grant or renewal carries; `None` for [`Decision::Released`] and [`Decision::Rejected`].
    #[must_use]
    pub const fn lease(&self) -> Option<Lease> {
        match self {
            Self::Granted(lease) | Self::Renewed(lease) => Some(*lease),
            Self::Released | Self::Rejected(_) => None,
        }
    }

    /// The reason of a refusal; `None` when the request was accepted.
    #[must_use]
    pub const fn rejection(&self) -> Option<Rejection> {
        match self {
            Self::Rejected(rejection) => Some(*rejection),
            Self::Granted(_) | Self::Renewed(_) | Self::Released => None,
        }
    }

    /// Whether the request was accepted (granted, renewed or released).
    #[must_use]
    pub const fn is_accepted(&self) -> bool {
        !matches!(self, Self::Rejected(_))
    }
}

/// Why a request was refused. Each variant is one distinct reason; the crate documentation has a table of which
/// request can return which reason.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Rejection {
    /// `now` is earlier than the latest instant the authority has observed, under
    /// [`ClockPolicy::Reject`](crate::ClockPolicy::Reject). Nothing changed, the watermark included.
    ClockRegressed,
    /// The TTL is zero. A lease must last for some time.
    InvalidTtl,
    /// `now + ttl` is not representable as a [`Duration`](core::time::Duration): the deadline would overflow.
    DeadlineOverflow,
    /// Another lease is live at `now` (for [`acquire`](crate::LeaseAuthority::acquire), any live lease, the
    /// requester's own included).
    Occupied,
    /// Every token up to `u64::MAX` has been issued. The authority fails closed: tokens never wrap, so it refuses all
    /// further grants.
    TokenSpaceExhausted,
    /// There is no lease to renew or release: none was ever granted, or the last one was released.
    NotHeld,
    /// The token is not the current lease's token: superseded by a later grant, or never issued.
    StaleToken,
    /// The token is the current one, but the requester is not the owner it was granted to.
    WrongOwner,
    /// The current lease, presented with the right owner and token, expired at or before `now`. Renewal never
    /// resurrects an expired lease; the owner has to acquire again and gets a new token.
    Expired,
    /// A `LeaseTable` (feature `alloc`) acquire carried an expected revision (a compare-and-set precondition) and
    /// the resource's revision is another: something changed since the caller looked. Never returned by a
    /// [`LeaseAuthority`](crate::LeaseAuthority).
    RevisionMismatch,
    /// A `LeaseTable` (feature `alloc`) resource's revision is `u64::MAX`, so no further change can be numbered.
    /// Like tokens, revisions never wrap: the resource fails closed. Never returned by a
    /// [`LeaseAuthority`](crate::LeaseAuthority).
    RevisionSpaceExhausted,
    /// `LeaseTable::acquire_leadership` (feature `alloc`) was shown a
    /// `QuorumCertificate` that is not valid: no candidate has a strict majority.
    NoQuorum,
    /// The certificate is valid, but it elected another candidate than the owner asking.
    NotLeader,
    /// The certificate's term is not greater than every term already used for the resource: a stale election cannot
    /// take leadership back.
    StaleTerm,
    /// A plain grant (acquire, reacquire) or a transfer on a resource that has had a leadership lease: from then on
    /// only `LeaseTable::acquire_leadership`, with a newer term, may grant it, so that no stale leader takes it back
    /// around the election.
    LeadershipRequired,
}

impl Rejection {
    /// Every reason, in declaration order; `ALL[r.index()] == r`.
    pub const ALL: [Self; 15] = [
        Self::ClockRegressed,
        Self::InvalidTtl,
        Self::DeadlineOverflow,
        Self::Occupied,
        Self::TokenSpaceExhausted,
        Self::NotHeld,
        Self::StaleToken,
        Self::WrongOwner,
        Self::Expired,
        Self::RevisionMismatch,
        Self::RevisionSpaceExhausted,
        Self::NoQuorum,
        Self::NotLeader,
        Self::StaleTerm,
        Self::LeadershipRequired,
    ];

    /// The reason's position in [`Rejection::ALL`], for tallies indexed by reason.
    #[must_use]
    pub const fn index(self) -> usize {
        self as usize
    }

    /// The reason's stable name in snake_case (`"stale_token"`), the same name the Ruby gem uses as a Symbol.
    #[must_use]
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::ClockRegressed => "clock_regressed",
            Self::InvalidTtl => "invalid_ttl",
            Self::DeadlineOverflow => "deadline_overflow",
            Self::Occupied => "occupied",
            Self::TokenSpaceExhausted => "token_space_exhausted",
            Self::NotHeld => "not_held",
            Self::StaleToken => "stale_token",
            Self::WrongOwner => "wrong_owner",
            Self::Expired => "expired",
            Self::RevisionMismatch => "revision_mismatch",
            Self::RevisionSpaceExhausted => "revision_space_exhausted",
            Self::NoQuorum => "no_quorum",
            Self::NotLeader => "not_leader",
            Self::StaleTerm => "stale_term",
            Self::LeadershipRequired => "leadership_required",
        }
    }
}

impl fmt::Display for Rejection {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::ClockRegressed => "the clock went backwards",
            Self::InvalidTtl => "the ttl must be greater than zero",
            Self::DeadlineOverflow => "now + ttl overflows",
            Self::Occupied => "another lease is live",
            Self::TokenSpaceExhausted => "every fencing token has been issued",
            Self::NotHeld => "no lease is held",
            Self::StaleToken => "the token is not the current lease's token",
            Self::WrongOwner => "the current lease belongs to another owner",
            Self::Expired => "the lease has expired",
            Self::RevisionMismatch => "the resource's revision is not the expected one",
            Self::RevisionSpaceExhausted => "every revision of the resource has been used",
            Self::NoQuorum => "the certificate shows no quorum",
            Self::NotLeader => "the certificate elected another candidate",
            Self::StaleTerm => "the term is not newer than every term already used",
            Self::LeadershipRequired => "the resource is granted only by election",
        })
    }
}

impl core::error::Error for Rejection {}
