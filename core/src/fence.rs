//! The check at the protected resource.

use crate::FencingToken;

/// The resource side of fencing: remembers the greatest token it has accepted and refuses any smaller one.
///
/// Keep one next to the data it protects and show it the holder's token before every mutation, ideally in the same
/// transaction as the write (and persist [`highest`](Self::highest) with it). A fence answers a single question,
/// "has a newer grant than this one been seen here?". It does not check that a lease is still live, who the owner
/// is, or whether a token is authentic, and it cannot refuse a newly stale holder before it has seen a greater token.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct Fence {
    highest: Option<FencingToken>,
}

impl Fence {
    /// A fence whose high-water mark is `highest`: `None` for a resource that has accepted no token yet, or the mark
    /// it persisted before a restart.
    #[must_use]
    pub const fn new(highest: Option<FencingToken>) -> Self {
        Self { highest }
    }

    /// Whether an operation carrying `token` may proceed: true iff `token` is greater than or equal to the highest
    /// token accepted so far (equal tokens stay valid for the many operations of one lease). An accepted token
    /// becomes the new mark; a refused one changes nothing. The mark never goes backwards.
    #[must_use = "a refused token means the operation must not happen"]
    pub fn accept(&mut self, token: FencingToken) -> bool {
        match self.highest {
            Some(highest) if token < highest => false,
            _ => {
                self.highest = Some(token);
                true
            }
        }
    }

    /// The high-water mark: the greatest token accepted so far, or `None` when none was.
    #[must_use]
    pub const fn highest(&self) -> Option<FencingToken> {
        self.highest
    }
}
