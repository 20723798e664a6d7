//! Token epochs: the ranges of tokens a store issues in one history of its database, so that a history that lost
//! rows (a failover to a replica that lagged, a restart without persistence) never issues a token again.

use crate::{FencingToken, LeaseRow};

/// How many bits of a token count within its epoch: epoch `E` issues the tokens above `E * 2^40` and below
/// `(E + 1) * 2^40`, about 1.1 trillion per resource.
pub const EPOCH_BITS: u32 = 40;

/// How many epochs one generation of a database's histories spans ([`TokenEpoch::first_of_generation`]): 2^10.
pub const GENERATION_BITS: u32 = 10;

/// One history of a store's database, and the tokens it issues: above [`floor`](Self::floor), at most
/// [`last_token`](Self::last_token).
///
/// A store whose rows can be lost (Redis after a restart without persistence or a failover, a database promoted from
/// a replica that lagged) counts its tokens again from what it kept, and would issue a token that a holder from before
/// the loss still carries: two holders with one token, both admitted by the fence. So a store that notices its
/// database's history changed moves to a new epoch, above every one used before, and from then on decides every
/// request on its rows raised to that epoch's floor ([`LeaseRow::in_epoch`]). Every token it issues is then above
/// every token issued before the loss, whatever was lost: a holder from before is refused as stale
/// ([`Rejection::StaleToken`](crate::Rejection::StaleToken)), never admitted beside the new one.
///
/// Epoch `0` is the first, whose floor is no token: a store that never changed history issues `1, 2, 3, ...` as a
/// store without epochs does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct TokenEpoch(u64);

impl TokenEpoch {
    /// The first epoch, `0`: its tokens are `1` to `2^40 - 1`.
    pub const FIRST: Self = Self(0);

    /// The last epoch, `2^24 - 1`: its tokens end at [`FencingToken::LAST`].
    pub const LAST: Self = Self(u64::MAX >> EPOCH_BITS);

    /// The epoch numbered `number`, or `None` above [`TokenEpoch::LAST`] (its tokens would not fit 64 bits).
    #[must_use]
    pub const fn new(number: u64) -> Option<Self> {
        if number <= Self::LAST.0 {
            Some(Self(number))
        } else {
            None
        }
    }

    /// The epoch's number, from `0` to `2^24 - 1`.
    #[must_use]
    pub const fn number(self) -> u64 {
        self.0
    }

    /// The epoch whose range holds `token`.
    #[must_use]
    pub const fn of(token: FencingToken) -> Self {
        Self(token.value() >> EPOCH_BITS)
    }

    /// The epoch after this one, or `None` after [`TokenEpoch::LAST`]. Epochs never wrap.
    #[must_use]
    pub const fn next(self) -> Option<Self> {
        Self::new(self.0.saturating_add(1))
    }

    /// The greatest token counted as issued before this epoch began, `E * 2^40`: every token of the epoch is above
    /// it. `None` for the first epoch.
    #[must_use]
    pub const fn floor(self) -> Option<FencingToken> {
        FencingToken::new(self.0 << EPOCH_BITS)
    }

    /// The last token of the epoch, `(E + 1) * 2^40 - 1`: a grant beyond it belongs to the next epoch, which the
    /// store must move to before it issues one.
    #[must_use]
    pub const fn last_token(self) -> FencingToken {
        match FencingToken::new((self.0 << EPOCH_BITS) | (u64::MAX >> (u64::BITS - EPOCH_BITS))) {
            Some(token) => token,
            None => FencingToken::LAST, // unreachable: the low bits are never all 0
        }
    }

    /// Whether `token` is one of the epoch's: above its floor, at most its last token.
    #[must_use]
    pub const fn contains(self, token: FencingToken) -> bool {
        Self::of(token).0 == self.0 && token.value() != self.0 << EPOCH_BITS
    }

    /// The epoch a store takes when it finds its database in a new history: one above `recorded` (the epoch last
    /// recorded there, `None` for none) and no lower than the first epoch of the history's `generation`
    /// ([`TokenEpoch::first_of_generation`]). `None` past [`TokenEpoch::LAST`].
    #[must_use]
    pub const fn after(recorded: Option<Self>, generation: u64) -> Option<Self> {
        let next = match recorded {
            Some(epoch) => epoch.next(),
            None => Some(Self::FIRST),
        };
        match (next, Self::first_of_generation(generation)) {
            (Some(next), Some(first)) => Some(if next.0 > first.0 { next } else { first }),
            _ => None,
        }
    }

    /// The first epoch of generation `generation` of a database's line of histories, `generation * 2^10`: a number
    /// that rises with every history the line takes and never comes back (PostgreSQL's timeline, less one: a
    /// promotion takes a timeline above the one it followed). So the first epoch a later generation takes is above
    /// every epoch an earlier one took, unless that one moved through 2^10 histories of its own. `None` past
    /// [`TokenEpoch::LAST`].
    #[must_use]
    pub const fn first_of_generation(generation: u64) -> Option<Self> {
        match generation.checked_mul(1 << GENERATION_BITS) {
            Some(number) => Self::new(number),
            None => None,
        }
    }

    /// The epoch a decision that issued `issued` would open, when that token is an epoch's floor
    /// ([`TokenEpoch::is_floor`]): the store must not commit it, and moves to that epoch first. `None` when it issued
    /// none, or one that opens nothing.
    #[must_use]
    pub const fn opened_by(issued: Option<FencingToken>) -> Option<Self> {
        match issued {
            Some(token) if Self::is_floor(token) => Some(Self::of(token)),
            _ => None,
        }
    }

    /// Whether `token` is an epoch's floor, `E * 2^40` for `E` from 1: the token after an epoch's last, which no
    /// epoch issues. A decision that would issue it must not commit: the store moves to the epoch it opens
    /// ([`TokenEpoch::of`]) and decides again, above that epoch's floor.
    #[must_use]
    pub const fn is_floor(token: FencingToken) -> bool {
        token.value() & (u64::MAX >> (u64::BITS - EPOCH_BITS)) == 0
    }
}

impl LeaseRow {
    /// This row as the epoch `epoch` decides on it: a high-water below the epoch's floor (or none, for a row that
    /// never issued a token, or a row the database lost) raised to the floor, so that the next grant is above every
    /// token of an earlier epoch, and the revision raised with it (a row has seen at least as many changes as it
    /// issued tokens). The lease record and the clock watermark are kept: a holder whose row survived holds on. A
    /// row already at or above the floor is returned unchanged, and so is every row in the first epoch.
    #[must_use]
    pub const fn in_epoch(self, epoch: TokenEpoch) -> Self {
        let Some(floor) = epoch.floor() else { return self };
        let checkpoint = self.checkpoint();
        match checkpoint.last_issued() {
            Some(issued) if issued.value() >= floor.value() => self,
            _ => {
                let revision = if self.revision() > floor.value() { self.revision() } else { floor.value() };
                Self::raised(checkpoint.raised_to(floor), revision)
            }
        }
    }
}
