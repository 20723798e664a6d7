//! Point-in-time numbers about a table.

use crate::{FencingToken, Rejection};

/// A table's figures at one instant ([`LeaseTable::metrics`](crate::LeaseTable::metrics)). Counts of commands and
/// events cover the table's life since it was created or restored (they are not part of a checkpoint).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct Metrics {
    /// Resources the table knows (every resource ever granted keeps its token high-water, so it stays known).
    pub resources: u64,
    /// Lease records kept, live or expired (released and reaped leases are gone).
    pub stored_leases: u64,
    /// Lease records live at the instant asked.
    pub live_leases: u64,
    /// Lease records expired at the instant asked but not yet reaped.
    pub expired_leases: u64,
    /// The greatest token issued on any resource, or `None` when none was.
    pub highest_token: Option<FencingToken>,
    /// Events the table produced (whatever its sink kept of them).
    pub events: u64,
    /// Commands accepted.
    pub accepted: u64,
    /// Commands rejected.
    pub rejected: u64,
    /// Commands rejected, by reason, indexed by [`Rejection::index`].
    pub rejections: [u64; Rejection::ALL.len()],
    /// Grants and transfers that gave a resource to another owner than the one holding its lease record (a grant on
    /// a resource without a record counts; renewals and an owner's own reacquire never do).
    pub holder_transitions: u64,
}

impl Metrics {
    /// How many commands were rejected with `reason`.
    #[must_use]
    pub fn rejected_with(&self, reason: Rejection) -> u64 {
        self.rejections.get(reason.index()).copied().unwrap_or(0)
    }
}
