//! The holder's half of the conversation: when to renew, when to worry, when to stop.

use core::time::Duration;

use crate::FencingToken;

/// A holder's renewal schedule: the lease TTL it asks for, how often it renews, and how long before the end of the
/// TTL it starts to worry. All three are [`Duration`]s on the holder's own clock.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Cadence {
    ttl: Duration,
    renew_every: Duration,
    warn_before: Duration,
}

impl Cadence {
    /// A schedule, or `None` unless `0 < renew_every < ttl` and `warn_before < ttl` (a renewal has to start while the
    /// lease still runs, and a warning that came before the lease began would be meaningless).
    #[must_use]
    pub fn new(ttl: Duration, renew_every: Duration, warn_before: Duration) -> Option<Self> {
        if renew_every.is_zero() || renew_every >= ttl || warn_before >= ttl {
            return None;
        }
        Some(Self { ttl, renew_every, warn_before })
    }

    /// The TTL the holder asks the authority for on every grant and renewal.
    #[must_use]
    pub const fn ttl(&self) -> Duration {
        self.ttl
    }

    /// How long after a confirmed renewal the next one is due.
    #[must_use]
    pub const fn renew_every(&self) -> Duration {
        self.renew_every
    }

    /// How long before the end of the TTL the holder counts as [`HolderState::AtRisk`].
    #[must_use]
    pub const fn warn_before(&self) -> Duration {
        self.warn_before
    }

    /// `ttl - warn_before`: how long after a confirmed renewal the warning deadline falls.
    #[must_use]
    pub const fn warn_after(&self) -> Duration {
        self.ttl.saturating_sub(self.warn_before)
    }
}

/// Where a [`Holder`] stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum HolderState {
    /// The last renewal (or the grant) was confirmed before its warning deadline, and no renewal is outstanding.
    Confirmed,
    /// A renewal is outstanding; it started before the warning deadline.
    Unconfirmed,
    /// Past the warning deadline with no confirmation that moved it: a renewal outstanding past the deadline, or a
    /// confirmation that arrived after it. Finish or abandon the work in hand; the lease may already be gone.
    AtRisk,
    /// The authority said the lease is gone (expired, superseded or refused). Only
    /// [`Holder::reacquire`] with a strictly newer token recovers.
    Expired,
    /// The holder stopped for good (a fence refused its token, or it shut down). Terminal.
    Fenced,
}

impl HolderState {
    /// Every state, in declaration order.
    pub const ALL: [Self; 5] = [Self::Confirmed, Self::Unconfirmed, Self::AtRisk, Self::Expired, Self::Fenced];

    /// The state's stable snake_case name (`"confirmed"`, ..., `"at_risk"`, ...), as the Ruby gem's Symbols spell it.
    #[must_use]
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Confirmed => "confirmed",
            Self::Unconfirmed => "unconfirmed",
            Self::AtRisk => "at_risk",
            Self::Expired => "expired",
            Self::Fenced => "fenced",
        }
    }
}

/// The holder side of one lease: its token, its renewal schedule and how much it can trust the lease right now.
///
/// A `Holder` runs on the holder's own monotonic clock (a [`Duration`] from an origin of its choosing) and never
/// compares instants with the authority. It is a pure state machine like the authority: callers pass `now` and act
/// on the answers.
///
/// # Which instant the deadlines count from
///
/// The authority counts a TTL from its own `now` when it handles a request, and a reply can arrive long after that:
/// a grant can already be stale when it is received. So the holder counts every deadline from the instant the
/// confirmed request was **sent** (the `at` given to [`new`](Self::new) and [`reacquire`](Self::reacquire), or the
/// first [`refresh`](Self::refresh) of the attempt that [`confirm`](Self::confirm) closes), never from when the reply
/// arrived. The authority handled the request after it was sent, so on clocks that run at the same rate its expiry is
/// never earlier than `renewed_at + ttl`, and the warning deadline `renewed_at + ttl - warn_before` comes before the
/// authority's expiry by at least `warn_before`. Choose `warn_before` to cover the clocks' drift over one TTL plus the
/// time a write needs to land.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Holder {
    token: FencingToken,
    cadence: Cadence,
    renewed_at: Duration,
    /// `renewed_at + renew_every` and `renewed_at + warn_after`, saturating: kept with `renewed_at` (set wherever it
    /// is), so that a poll compares and never adds.
    renew_at: Duration,
    warn_at: Duration,
    outstanding_since: Option<Duration>,
    state: HolderState,
}

impl Holder {
    /// A holder of a fresh grant with `token`, whose acquire request was sent at `at` on the holder's clock.
    /// Starts [`HolderState::Confirmed`].
    #[must_use]
    pub const fn new(token: FencingToken, at: Duration, cadence: Cadence) -> Self {
        Self {
            token,
            cadence,
            renewed_at: at,
            renew_at: at.saturating_add(cadence.renew_every()),
            warn_at: at.saturating_add(cadence.warn_after()),
            outstanding_since: None,
            state: HolderState::Confirmed,
        }
    }

    /// The token of the lease held (the last one, once expired or fenced).
    #[must_use]
    pub const fn token(&self) -> FencingToken {
        self.token
    }

    /// The renewal schedule.
    #[must_use]
    pub const fn cadence(&self) -> Cadence {
        self.cadence
    }

    /// Where the holder stands.
    #[must_use]
    pub const fn state(&self) -> HolderState {
        self.state
    }

    /// The instant every deadline currently counts from: when the last confirmed request was sent.
    #[must_use]
    pub const fn renewed_at(&self) -> Duration {
        self.renewed_at
    }

    /// `renewed_at + ttl - warn_before`, from which on the holder is at risk; `None` once expired or fenced.
    /// Saturates at [`Duration::MAX`].
    #[must_use]
    pub fn warning_deadline(&self) -> Option<Duration> {
        self.is_holding().then_some(self.warn_at)
    }

    /// `renewed_at + renew_every`, when the next renewal is due; `None` once expired or fenced. Saturates at
    /// [`Duration::MAX`].
    #[must_use]
    pub fn next_renewal(&self) -> Option<Duration> {
        self.is_holding().then_some(self.renew_at)
    }

    /// Whether the holder should send a renewal at `now`: it still holds the lease, and a renewal is outstanding
    /// (so a failed attempt is retried on the next poll), or `now` reached [`next_renewal`](Self::next_renewal) or
    /// the [`warning_deadline`](Self::warning_deadline). False once expired or fenced.
    #[must_use]
    pub fn renewal_due(&self, now: Duration) -> bool {
        match (self.next_renewal(), self.warning_deadline()) {
            (Some(next), Some(warning)) => self.outstanding_since.is_some() || now >= next || now >= warning,
            _ => false,
        }
    }

    /// Whether the holder should distrust its lease at `now`: [`HolderState::AtRisk`], expired or fenced, or `now` at
    /// or past the warning deadline.
    #[must_use]
    pub fn at_risk(&self, now: Duration) -> bool {
        match self.state {
            HolderState::AtRisk | HolderState::Expired | HolderState::Fenced => true,
            HolderState::Confirmed | HolderState::Unconfirmed => {
                self.warning_deadline().map_or(true, |deadline| now >= deadline)
            }
        }
    }

    /// Records that a renewal request is being sent at `now`. The state becomes [`HolderState::Unconfirmed`], or
    /// [`HolderState::AtRisk`] at or past the warning deadline (and stays at risk until a confirmation). A retry keeps
    /// the first send of the attempt, the earliest instant the authority can have counted from. Returns false, and
    /// changes nothing, once expired or fenced.
    pub fn refresh(&mut self, now: Duration) -> bool {
        let Some(deadline) = self.warning_deadline() else {
            return false;
        };
        self.outstanding_since.get_or_insert(now);
        if now >= deadline || self.state == HolderState::AtRisk {
            self.state = HolderState::AtRisk;
        } else {
            self.state = HolderState::Unconfirmed;
        }
        true
    }

    /// Records the authority's confirmation, received at `at`, of a lease with `token` (a grant or a renewal).
    ///
    /// A reply with an older token than the holder's is stale and ignored (returns false), and so is any reply once
    /// expired or fenced. The same or a newer token is accepted (returns true): deadlines then count from the first
    /// send of the outstanding attempt (unchanged when none is outstanding), and the state becomes
    /// [`HolderState::Confirmed`], or [`HolderState::AtRisk`] when the reply arrived at or past the new warning
    /// deadline.
    pub fn confirm(&mut self, token: FencingToken, at: Duration) -> bool {
        if !self.is_holding() || token < self.token {
            return false;
        }
        self.token = token;
        if let Some(sent) = self.outstanding_since.take() {
            self.renewed_at = self.renewed_at.max(sent);
            self.renew_at = self.renewed_at.saturating_add(self.cadence.renew_every());
            self.warn_at = self.renewed_at.saturating_add(self.cadence.warn_after());
        }
        let deadline = self.warn_at;
        self.state = if at >= deadline { HolderState::AtRisk } else { HolderState::Confirmed };
        true
    }

    /// Records that the authority said the lease is gone. Returns true when the holder was holding it; false, with
    /// nothing changed, when already expired or fenced.
    pub fn expire(&mut self) -> bool {
        if !self.is_holding() {
            return false;
        }
        self.state = HolderState::Expired;
        self.outstanding_since = None;
        true
    }

    /// Records a new grant with `token`, whose request was sent at `at`: after [`expire`](Self::expire), or a
    /// rotation of a held lease. Accepted only with a token strictly newer than the holder's (returns true, state
    /// [`HolderState::Confirmed`]); refused once fenced.
    pub fn reacquire(&mut self, token: FencingToken, at: Duration) -> bool {
        if self.state == HolderState::Fenced || token <= self.token {
            return false;
        }
        *self = Self::new(token, at, self.cadence);
        true
    }

    /// Stops the holder for good: [`HolderState::Fenced`] is terminal, and calling this again changes nothing.
    pub fn fence(&mut self) {
        self.state = HolderState::Fenced;
        self.outstanding_since = None;
    }

    fn is_holding(&self) -> bool {
        !matches!(self.state, HolderState::Expired | HolderState::Fenced)
    }
}
