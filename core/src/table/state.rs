//! A table's whole state, for storage and restore, and the checks that stored state must pass.

use alloc::collections::BTreeSet;
use alloc::vec::Vec;
use core::fmt;
use core::time::Duration;

/// One resource's state as stored: plain numbers, so that anything storage can hold can be represented and then
/// checked ([`TableCheckpoint::from_records`]).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ResourceRecord<R> {
    /// The resource.
    pub resource: R,
    /// The token high-water: the greatest token ever issued for the resource, `None` when none was. Kept after
    /// releases and reaps.
    pub last_issued: Option<u64>,
    /// The resource's revision: how many accepted changes it has seen.
    pub revision: u64,
    /// The greatest election term used for the resource, `None` when no leadership lease was granted.
    pub term: Option<u64>,
    /// The current lease record, live or expired, or `None` when vacant.
    pub lease: Option<LeaseRecord>,
}

/// A lease record as stored.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct LeaseRecord {
    /// The owner.
    pub owner: u64,
    /// The fencing token, `1..=u64::MAX`.
    pub token: u64,
    /// When it was issued, from the table's clock origin.
    pub issued_at: Duration,
    /// When it expires, from the table's clock origin.
    pub expires_at: Duration,
    /// The election term of a leadership lease.
    pub term: Option<u64>,
}

/// What is wrong with stored state. Each code is one rule a table's own state always satisfies.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum IssueCode {
    /// A token is `0`, which is never issued.
    ZeroToken,
    /// A lease record exists but no token was ever issued.
    LeaseWithoutHighWater,
    /// The lease's token is greater than the token high-water: a token the history never issued.
    TokenAboveHighWater,
    /// The lease's token is below the token high-water: a later grant superseded it, so it cannot be the current
    /// lease (every grant replaces the record, every release or reap removes it).
    TokenBelowHighWater,
    /// The lease expires at or before the instant it was issued.
    ExpiryNotAfterIssue,
    /// The lease was issued after the table's clock watermark: a grant from the future.
    IssuedAfterWatermark,
    /// The revision is lower than the token high-water (or, with no lease record, not above it). Every grant raises
    /// both by one and every release or reap the revision alone, so a lower revision means the revision went
    /// backwards (or the tokens forwards) outside the table.
    RevisionBehindTokens,
    /// The lease's term is not the resource's latest term: once a resource has had a leadership lease, every lease
    /// on it is one, of the latest term; before, none has a term.
    TermMismatch,
    /// A term is recorded for a resource that was never granted.
    TermWithoutGrant,
    /// A resource is recorded with no token, lease or term: a table knows a resource only once it granted it (its
    /// first accepted change is a grant), and keeps its token high-water from then on.
    NeverGranted,
    /// Two records name the same resource.
    DuplicateResource,
}

impl IssueCode {
    /// Every code, in declaration order.
    pub const ALL: [Self; 11] = [
        Self::ZeroToken,
        Self::LeaseWithoutHighWater,
        Self::TokenAboveHighWater,
        Self::TokenBelowHighWater,
        Self::ExpiryNotAfterIssue,
        Self::IssuedAfterWatermark,
        Self::RevisionBehindTokens,
        Self::TermMismatch,
        Self::TermWithoutGrant,
        Self::NeverGranted,
        Self::DuplicateResource,
    ];

    /// The code's stable snake_case name.
    #[must_use]
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::ZeroToken => "zero_token",
            Self::LeaseWithoutHighWater => "lease_without_high_water",
            Self::TokenAboveHighWater => "token_above_high_water",
            Self::TokenBelowHighWater => "token_below_high_water",
            Self::ExpiryNotAfterIssue => "expiry_not_after_issue",
            Self::IssuedAfterWatermark => "issued_after_watermark",
            Self::RevisionBehindTokens => "revision_behind_tokens",
            Self::TermMismatch => "term_mismatch",
            Self::TermWithoutGrant => "term_without_grant",
            Self::NeverGranted => "never_granted",
            Self::DuplicateResource => "duplicate_resource",
        }
    }
}

impl fmt::Display for IssueCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::ZeroToken => "token 0 is never issued",
            Self::LeaseWithoutHighWater => "a lease is stored but no token was ever issued",
            Self::TokenAboveHighWater => "the lease's token is above the token high-water",
            Self::TokenBelowHighWater => "the lease's token is below the token high-water: a later grant superseded it",
            Self::ExpiryNotAfterIssue => "the lease expires at or before it was issued",
            Self::IssuedAfterWatermark => "the lease was issued after the clock watermark",
            Self::RevisionBehindTokens => "the revision is below the token high-water",
            Self::TermMismatch => "the lease's term is not the resource's latest term",
            Self::TermWithoutGrant => "a term is recorded but no token was ever issued",
            Self::NeverGranted => "the resource is recorded but was never granted",
            Self::DuplicateResource => "the resource appears more than once",
        })
    }
}

/// One problem found in stored state: which resource, and which rule it breaks.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct StateIssue<R> {
    /// The resource whose record breaks the rule.
    pub resource: R,
    /// The rule.
    pub code: IssueCode,
}

impl<R: fmt::Debug> fmt::Display for StateIssue<R> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:?}: {} ({})", self.resource, self.code, self.code.as_str())
    }
}

/// Checks one resource's stored state against the table's invariants, with `observed` the table's clock watermark.
/// Returns every issue found, none when the record is one a table could have produced.
#[must_use]
pub fn validate_record<R: Clone>(record: &ResourceRecord<R>, observed: Duration) -> Vec<StateIssue<R>> {
    let mut codes = Vec::new();
    if record.last_issued == Some(0) {
        codes.push(IssueCode::ZeroToken);
    }
    let high_water = record.last_issued.unwrap_or(0);
    // With no lease record, the last grant was ended by a release or a reap, which raised the revision once more.
    let least_revision =
        if record.lease.is_none() && high_water > 0 { high_water.saturating_add(1) } else { high_water };
    if record.revision < least_revision || (record.lease.is_none() && high_water == u64::MAX) {
        codes.push(IssueCode::RevisionBehindTokens);
    }
    if record.term.is_some() && record.last_issued.is_none() {
        codes.push(IssueCode::TermWithoutGrant);
    }
    if record.last_issued.is_none() && record.term.is_none() && record.lease.is_none() {
        codes.push(IssueCode::NeverGranted);
    }
    if let Some(lease) = record.lease {
        if lease.token == 0 {
            codes.push(IssueCode::ZeroToken);
        }
        match record.last_issued {
            None => codes.push(IssueCode::LeaseWithoutHighWater),
            Some(high_water) if lease.token > high_water => codes.push(IssueCode::TokenAboveHighWater),
            Some(high_water) if lease.token < high_water && lease.token > 0 => {
                codes.push(IssueCode::TokenBelowHighWater);
            }
            Some(_) => {}
        }
        if lease.expires_at <= lease.issued_at {
            codes.push(IssueCode::ExpiryNotAfterIssue);
        }
        if lease.issued_at > observed {
            codes.push(IssueCode::IssuedAfterWatermark);
        }
        if lease.term != record.term {
            codes.push(IssueCode::TermMismatch);
        }
    }
    codes.dedup();
    codes.into_iter().map(|code| StateIssue { resource: record.resource.clone(), code }).collect()
}

/// A [`LeaseTable`](crate::LeaseTable)'s whole state: its clock watermark and every resource's record, in resource
/// order. Only valid state can be a `TableCheckpoint`: build one with [`from_records`](Self::from_records) or take one
/// with [`LeaseTable::checkpoint`](crate::LeaseTable::checkpoint). The clock policy, the event sink and the counters
/// behind [`Metrics`](crate::Metrics) are not part of it.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct TableCheckpoint<R> {
    observed: Duration,
    records: Vec<ResourceRecord<R>>,
}

impl<R: Ord + Clone> TableCheckpoint<R> {
    /// A checkpoint from stored parts, checked by [`validate_record`] and for repeated resources; refused with every
    /// issue found.
    pub fn from_records(
        observed: Duration,
        records: impl IntoIterator<Item = ResourceRecord<R>>,
    ) -> Result<Self, Vec<StateIssue<R>>> {
        let mut records: Vec<ResourceRecord<R>> = records.into_iter().collect();
        let mut issues = Vec::new();
        let mut seen = BTreeSet::new();
        for record in &records {
            issues.extend(validate_record(record, observed));
            if !seen.insert(&record.resource) {
                issues.push(StateIssue { resource: record.resource.clone(), code: IssueCode::DuplicateResource });
            }
        }
        if !issues.is_empty() {
            return Err(issues);
        }
        records.sort_by(|a, b| a.resource.cmp(&b.resource));
        Ok(Self { observed, records })
    }

    /// Made by a running table, whose state is valid by construction.
    pub(crate) const fn from_table(observed: Duration, records: Vec<ResourceRecord<R>>) -> Self {
        Self { observed, records }
    }
}

impl<R> TableCheckpoint<R> {
    /// The clock watermark: the latest `now` the table observed.
    #[must_use]
    pub const fn observed(&self) -> Duration {
        self.observed
    }

    /// Every resource's record, in resource order.
    #[must_use]
    pub fn records(&self) -> &[ResourceRecord<R>] {
        &self.records
    }

    /// Takes the records out.
    #[must_use]
    pub fn into_records(self) -> Vec<ResourceRecord<R>> {
        self.records
    }
}
