//! The auditor: checks any sequence of events against the rules a table never breaks.

use alloc::collections::BTreeMap;
use alloc::vec::Vec;
use core::fmt;
use core::time::Duration;

use crate::{Event, EventKind, FencingToken, OwnerId};

/// Which rule an event breaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum FindingCode {
    /// A grant's token is not greater than every token granted before on the resource.
    TokenNotRising,
    /// An event's revision is not greater than the resource's previous event's.
    RevisionNotRising,
    /// An event is earlier than the event before it (the table has one clock watermark for all resources).
    TimeBackwards,
    /// A reacquire or a transfer left another live lease in place: two leases live at once.
    OverlappingLeases,
    /// A plain grant while a lease on the resource was still live.
    GrantWhileLive,
    /// A renewal moved the expiry earlier.
    RenewalShortened,
    /// A renewal carried another token or owner than the current lease's.
    RenewalChangedToken,
    /// A release or reap named another lease than the current one.
    TokenMismatch,
    /// A lease was reaped before it expired.
    ReapUnexpired,
    /// A renewal, release or transfer of a lease that was not live at the event: expired, released or reaped.
    /// Renewal never resurrects a lease.
    NotLive,
}

impl FindingCode {
    /// Every code, in declaration order.
    pub const ALL: [Self; 10] = [
        Self::TokenNotRising,
        Self::RevisionNotRising,
        Self::TimeBackwards,
        Self::OverlappingLeases,
        Self::GrantWhileLive,
        Self::RenewalShortened,
        Self::RenewalChangedToken,
        Self::TokenMismatch,
        Self::ReapUnexpired,
        Self::NotLive,
    ];

    /// The code's stable snake_case name.
    #[must_use]
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::TokenNotRising => "token_not_rising",
            Self::RevisionNotRising => "revision_not_rising",
            Self::TimeBackwards => "time_backwards",
            Self::OverlappingLeases => "overlapping_leases",
            Self::GrantWhileLive => "grant_while_live",
            Self::RenewalShortened => "renewal_shortened",
            Self::RenewalChangedToken => "renewal_changed_token",
            Self::TokenMismatch => "token_mismatch",
            Self::ReapUnexpired => "reap_unexpired",
            Self::NotLive => "not_live",
        }
    }

    /// The code named `name`, as [`as_str`](Self::as_str) spells it.
    #[must_use]
    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|code| code.as_str() == name)
    }
}

impl fmt::Display for FindingCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::TokenNotRising => "a grant's token is not above every earlier token of the resource",
            Self::RevisionNotRising => "the revision is not above the resource's previous revision",
            Self::TimeBackwards => "the event is earlier than the event before it",
            Self::OverlappingLeases => "a new lease was granted while another lease was still live",
            Self::GrantWhileLive => "a lease was acquired while the previous one was still live",
            Self::RenewalShortened => "a renewal moved the expiry earlier",
            Self::RenewalChangedToken => "a renewal carried another token or owner than the current lease",
            Self::TokenMismatch => "a release or reap named another lease than the current one",
            Self::ReapUnexpired => "a lease was reaped before it expired",
            Self::NotLive => "a lease that was not live was renewed, released or transferred",
        })
    }
}

/// One broken rule: which, for which resource, at which event (its index in the sequence audited).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Finding<R> {
    /// The rule broken.
    pub code: FindingCode,
    /// The resource of the offending event.
    pub resource: R,
    /// The offending event's position in the sequence, from 0.
    pub event_index: u64,
}

impl<R: fmt::Debug> fmt::Display for Finding<R> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "event {} ({:?}): {} ({})", self.event_index, self.resource, self.code, self.code.as_str())
    }
}

/// The result of [`audit`]: how many events were checked and what was found. Valid when nothing was.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
pub struct AuditReport<R> {
    /// Events checked.
    pub checked_events: u64,
    /// Broken rules, in event order.
    pub findings: Vec<Finding<R>>,
}

impl<R> AuditReport<R> {
    /// Whether no rule was broken.
    #[must_use]
    pub fn is_valid(&self) -> bool {
        self.findings.is_empty()
    }
}

/// The lease record of one resource as the events so far tell it.
#[derive(Clone, Copy, Default)]
enum Record {
    /// No event of the resource seen yet (the log may start mid-history).
    #[default]
    Unknown,
    /// Released or reaped.
    Vacant,
    /// A lease on record, neither released nor reaped: owner, token, expiry. Live until its expiry, expired after.
    Leased(OwnerId, FencingToken, Duration),
}

/// What the auditor knows of one resource from the events so far.
#[derive(Default)]
struct Seen {
    highest_token: Option<FencingToken>,
    revision: Option<u64>,
    record: Record,
}

/// Checks `events`, in order, against the rules every [`LeaseTable`](crate::LeaseTable) history satisfies, and
/// returns every violation found: tokens rising per resource, revisions rising per resource, time never going
/// backwards, at most one live lease per resource, renewals that keep the token and never shorten, no renewal,
/// release or transfer of a lease that is not live, reaps only of expired leases.
///
/// The sequence may start anywhere in a history (a bounded [`EventLog`](crate::EventLog) drops the oldest events):
/// a resource's first event is taken as it is, and checked against the events that follow. Costs O(n log r) for n
/// events over r resources.
#[must_use]
pub fn audit<'a, R: Ord + Clone + 'a>(events: impl IntoIterator<Item = &'a Event<R>>) -> AuditReport<R> {
    let mut resources: BTreeMap<&R, Seen> = BTreeMap::new();
    let mut findings = Vec::new();
    let mut last_at: Option<Duration> = None;
    let mut checked: u64 = 0;
    for (index, event) in events.into_iter().enumerate() {
        checked = checked.saturating_add(1);
        let mut found =
            |code| findings.push(Finding { code, resource: event.resource.clone(), event_index: index as u64 });
        if last_at.is_some_and(|last| event.at < last) {
            found(FindingCode::TimeBackwards);
        }
        last_at = Some(last_at.map_or(event.at, |last| last.max(event.at)));
        let seen = resources.entry(&event.resource).or_default();
        if seen.revision.is_some_and(|revision| event.revision <= revision) {
            found(FindingCode::RevisionNotRising);
        }
        seen.revision = Some(seen.revision.map_or(event.revision, |revision| revision.max(event.revision)));
        let needs_live = matches!(event.kind, EventKind::Renewed | EventKind::Released | EventKind::Transferred);
        let live = match seen.record {
            Record::Leased(owner, token, expires_at) if event.at < expires_at => Some((owner, token)),
            _ => None,
        };
        if needs_live && live.is_none() && !matches!(seen.record, Record::Unknown) {
            found(FindingCode::NotLive);
        }
        if event.kind.grants() && seen.highest_token.is_some_and(|highest| event.token <= highest) {
            found(FindingCode::TokenNotRising);
        }
        if matches!(seen.record, Record::Unknown) {
            // A log that starts mid-history learns the resource's tokens from its first event.
            let tokens = [Some(event.token), event.replaced.map(|lease| lease.token())];
            seen.highest_token = tokens.into_iter().fold(seen.highest_token, |highest, token| highest.max(token));
        } else if event.kind.grants() {
            seen.highest_token = seen.highest_token.max(Some(event.token));
        }
        match event.kind {
            EventKind::Acquired | EventKind::Reacquired | EventKind::Transferred => {
                if let Some((owner, token)) = live {
                    let handed_over = match event.kind {
                        EventKind::Reacquired => owner == event.owner,
                        _ => event.replaced.is_some_and(|replaced| replaced.token() == token),
                    };
                    if event.kind == EventKind::Acquired {
                        found(FindingCode::GrantWhileLive);
                    } else if !handed_over {
                        found(FindingCode::OverlappingLeases);
                    }
                }
                seen.record = Record::Leased(event.owner, event.token, event.expires_at);
            }
            EventKind::Renewed => match seen.record {
                // A renewal of another lease than the current one is reported, and the current one kept.
                Record::Leased(owner, token, _) if owner != event.owner || token != event.token => {
                    found(FindingCode::RenewalChangedToken);
                }
                // A shortening renewal is reported; the lease is taken to last until the later of the two.
                Record::Leased(owner, token, expires_at) => {
                    if event.expires_at < expires_at {
                        found(FindingCode::RenewalShortened);
                    }
                    seen.record = Record::Leased(owner, token, expires_at.max(event.expires_at));
                }
                Record::Unknown | Record::Vacant => {
                    seen.record = Record::Leased(event.owner, event.token, event.expires_at);
                }
            },
            EventKind::Released | EventKind::Reaped => {
                let expires_at = match seen.record {
                    Record::Leased(owner, token, expires_at) => {
                        if owner != event.owner || token != event.token {
                            found(FindingCode::TokenMismatch);
                        }
                        expires_at
                    }
                    // Nothing to end.
                    Record::Vacant if event.kind == EventKind::Reaped => {
                        found(FindingCode::TokenMismatch);
                        event.expires_at
                    }
                    Record::Vacant | Record::Unknown => event.expires_at,
                };
                if event.kind == EventKind::Reaped && (event.at < expires_at || event.at < event.expires_at) {
                    found(FindingCode::ReapUnexpired);
                }
                seen.record = Record::Vacant;
            }
        }
    }
    AuditReport { checked_events: checked, findings }
}
