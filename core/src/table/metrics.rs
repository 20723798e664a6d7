//! Point-in-time numbers about a table.

use core::fmt;

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

/// Counts no table can report together ([`Metrics::check`]). Each is a sum or a bound every table's own figures keep.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum MetricsIssue {
    /// `live_leases + expired_leases` is not `stored_leases`: every stored lease is one or the other.
    LeasesDoNotAdd,
    /// More stored leases than resources: a resource stores at most one lease.
    StoredAboveResources,
    /// `events` is not `accepted`: every accepted command records exactly one event, and no rejected one does.
    EventsNotAccepted,
    /// The counts by reason do not add up to `rejected`: every rejection has exactly one reason.
    RejectionsDoNotAdd,
    /// More holder transitions than accepted commands: each is an accepted grant or transfer.
    TransitionsAboveAccepted,
    /// A `highest_token` with no resource, or stored leases without one: every token belongs to a resource, every
    /// lease has a token.
    TokenWithoutResource,
}

impl fmt::Display for MetricsIssue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::LeasesDoNotAdd => "live_leases + expired_leases must equal stored_leases",
            Self::StoredAboveResources => "stored_leases cannot exceed resources",
            Self::EventsNotAccepted => "events must equal accepted (one event per accepted command)",
            Self::RejectionsDoNotAdd => "rejections must add up to rejected",
            Self::TransitionsAboveAccepted => "holder_transitions cannot exceed accepted",
            Self::TokenWithoutResource => "highest_token must be null without resources and set with stored leases",
        })
    }
}

impl Metrics {
    /// Whether these figures are ones a table can report: the first rule they break, if any. Readers of stored or
    /// hand-built metrics (the JSON document, the Ruby gem's `Metrics`) refuse figures that fail.
    ///
    /// # Errors
    ///
    /// The first [`MetricsIssue`] found, in declaration order.
    pub fn check(&self) -> Result<(), MetricsIssue> {
        if self.live_leases.checked_add(self.expired_leases) != Some(self.stored_leases) {
            return Err(MetricsIssue::LeasesDoNotAdd);
        }
        if self.stored_leases > self.resources {
            return Err(MetricsIssue::StoredAboveResources);
        }
        if self.events != self.accepted {
            return Err(MetricsIssue::EventsNotAccepted);
        }
        let reasons = self.rejections.iter().try_fold(0_u64, |sum, count| sum.checked_add(*count));
        if reasons != Some(self.rejected) {
            return Err(MetricsIssue::RejectionsDoNotAdd);
        }
        if self.holder_transitions > self.accepted {
            return Err(MetricsIssue::TransitionsAboveAccepted);
        }
        let token_without_resource = self.highest_token.is_some() && self.resources == 0;
        if token_without_resource || (self.stored_leases > 0 && self.highest_token.is_none()) {
            return Err(MetricsIssue::TokenWithoutResource);
        }
        Ok(())
    }
}
