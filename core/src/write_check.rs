//! The fence beside the authority's own record: a write is checked against the grant history, not only against
//! the tokens earlier writes carried.

use core::time::Duration;

use crate::{Checkpoint, Fence, FencingToken, Rejection};

/// What [`Checkpoint::check_write`] answers for a write that carries a token.
#[must_use = "only an admitted write may happen"]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum WriteCheck {
    /// The write may proceed, in the same transaction as the check; the fence to persist with it (its mark is the
    /// write's token).
    Admitted(Fence),
    /// The write must not happen; nothing changes:
    ///
    /// - [`Rejection::StaleToken`]: a newer token was issued or written (the grant was superseded);
    /// - [`Rejection::NotHeld`]: the token's lease was released, and no other was granted since;
    /// - [`Rejection::Expired`]: the token's lease ran out at or before `now`, and no other was granted since.
    Refused(Rejection),
    /// The token is above every token the history issued (or it issued none): made up, or from another history.
    /// An input fault of the caller's, not a stale writer.
    NeverIssued,
    /// The fence's mark is above every token the history issued: fence and record do not come from one history
    /// (storage is corrupt, or the two were restored from different points).
    InconsistentMark,
}

impl Checkpoint {
    /// Checks a write carrying `token` at `now` against this history and `fence`, the mark that earlier writes of
    /// the resource left. This is the check for a store that keeps its lease record in the same transaction as the
    /// protected write, as a database does: it refuses every token but the one of the lease live at `now`, so a
    /// superseded, released or expired holder is refused at once, before any successor has written (a bare
    /// [`Fence`] can refuse a stale holder only after a newer token reached it).
    ///
    /// Evaluated in this order, the first failing check being the answer:
    ///
    /// 1. the fence's mark was issued by this history, else [`WriteCheck::InconsistentMark`];
    /// 2. `token` was issued by this history, else [`WriteCheck::NeverIssued`];
    /// 3. `token` is at least the fence's mark, else [`Rejection::StaleToken`];
    /// 4. no newer token was issued ([`Rejection::StaleToken`]: a later grant, since ended, or a token epoch's floor
    ///    above it), the current lease record exists ([`Rejection::NotHeld`]), carries `token`
    ///    ([`Rejection::StaleToken`]), and is live at `now` ([`Rejection::Expired`]).
    ///
    /// `now` earlier than the clock watermark is read as the watermark, as [`ClockPolicy::Clamp`] reads it: a clock
    /// that stepped back can neither revive a lease nor refuse on its own. The check reads no clock and moves no
    /// watermark: a write is not a request to the authority.
    ///
    /// [`ClockPolicy::Clamp`]: crate::ClockPolicy::Clamp
    pub fn check_write(&self, fence: Fence, token: FencingToken, now: Duration) -> WriteCheck {
        if fence.highest().is_some_and(|mark| !self.issued(mark)) {
            return WriteCheck::InconsistentMark;
        }
        if !self.issued(token) {
            return WriteCheck::NeverIssued;
        }
        let mut fence = fence;
        if !fence.accept(token) {
            return WriteCheck::Refused(Rejection::StaleToken);
        }
        let refusal = match self.lease() {
            // A newer grant came and went since: superseded, as a token below a row's epoch floor is.
            None if self.last_issued() != Some(token) => Some(Rejection::StaleToken),
            None => Some(Rejection::NotHeld),
            Some(lease) if lease.token() != token => Some(Rejection::StaleToken),
            Some(lease) if !lease.is_live(now.max(self.observed())) => Some(Rejection::Expired),
            Some(_) => None,
        };
        refusal.map_or(WriteCheck::Admitted(fence), WriteCheck::Refused)
    }
}

impl WriteCheck {
    /// Whether the write may proceed.
    #[must_use]
    pub const fn is_admitted(&self) -> bool {
        matches!(self, Self::Admitted(_))
    }

    /// The fence to persist with an admitted write; `None` otherwise.
    #[must_use]
    pub const fn fence(&self) -> Option<Fence> {
        match self {
            Self::Admitted(fence) => Some(*fence),
            Self::Refused(_) | Self::NeverIssued | Self::InconsistentMark => None,
        }
    }
}
