//! Many resources, one decision engine.

mod audit;
mod command;
mod event;
mod lease;
mod metrics;
mod state;

use alloc::collections::BTreeMap;
use alloc::vec::Vec;
use core::time::Duration;

pub use audit::{audit, AuditReport, Finding, FindingCode};
pub use command::{BatchResult, Command, TimedCommand};
pub use event::{Discard, Event, EventKind, EventLog, EventSink};
pub use lease::TableLease;
pub use metrics::Metrics;
pub use state::{validate_record, IssueCode, LeaseRecord, ResourceRecord, StateIssue, TableCheckpoint};

use crate::rules;
use crate::{quorum_size, CertificateStatus, ClockPolicy, FencingToken, Lease, OwnerId, QuorumCertificate, Rejection};

/// The answer to every [`LeaseTable`] command. Refusals are values, as with [`Decision`](crate::Decision).
#[must_use = "a decision says whether the caller holds the lease; ignoring it is how stale writers happen"]
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum TableDecision<R> {
    /// A new lease with a fresh token ([`acquire`](LeaseTable::acquire), [`reacquire`](LeaseTable::reacquire)).
    Granted(TableLease<R>),
    /// The lease, same token, expiring at `max(expires_at, now + ttl)` ([`renew`](LeaseTable::renew)).
    Renewed(TableLease<R>),
    /// The new owner's lease, with a fresh token ([`transfer`](LeaseTable::transfer)).
    Transferred(TableLease<R>),
    /// The lease was given back ([`release`](LeaseTable::release)).
    Released,
    /// The expired lease record was dropped ([`reap`](LeaseTable::reap)).
    Reaped,
    /// Refused; the resource is unchanged.
    Rejected(Rejection),
}

impl<R> TableDecision<R> {
    /// The lease a grant, renewal or transfer carries.
    #[must_use]
    pub const fn lease(&self) -> Option<&TableLease<R>> {
        match self {
            Self::Granted(lease) | Self::Renewed(lease) | Self::Transferred(lease) => Some(lease),
            Self::Released | Self::Reaped | Self::Rejected(_) => None,
        }
    }

    /// The reason of a refusal; `None` when the command was accepted.
    #[must_use]
    pub const fn rejection(&self) -> Option<Rejection> {
        match self {
            Self::Rejected(rejection) => Some(*rejection),
            _ => None,
        }
    }

    /// Whether the command was accepted.
    #[must_use]
    pub const fn is_accepted(&self) -> bool {
        !matches!(self, Self::Rejected(_))
    }
}

/// One resource's state inside the table.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
struct Slot {
    last_issued: Option<FencingToken>,
    revision: u64,
    term: Option<u64>,
    held: Option<Held>,
}

/// A lease record inside the table (its resource is the key, its revision the slot's).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
struct Held {
    lease: Lease,
    issued_at: Duration,
    term: Option<u64>,
}

/// Whether `certificate` says what [`certify_votes`](crate::certify_votes) says of a valid election: its fields are
/// public, so a certificate built by hand is checked for consistency rather than trusted.
fn certifies(certificate: &QuorumCertificate<OwnerId>) -> bool {
    let mut voters = certificate.voters.clone();
    voters.sort_unstable();
    voters.dedup();
    certificate.valid
        && certificate.status == CertificateStatus::Certified
        && certificate.leader.is_some()
        && certificate.members > 0
        && certificate.quorum == quorum_size(certificate.members)
        && voters.len() >= certificate.quorum
        && voters.len() <= certificate.members
        && certificate.equivocations.iter().all(|equivocation| voters.binary_search(&equivocation.voter).is_err())
}

/// What a grant requires beyond a vacant resource.
#[derive(Clone, Copy)]
enum Precondition {
    None,
    Revision(u64),
    Elected { valid: bool, leader: Option<OwnerId>, term: u64 },
}

/// What an accepted command does to a slot.
enum Change {
    Grant { kind: EventKind, owner: OwnerId, deadline: Duration, term: Option<u64> },
    Renew { deadline: Duration },
    End { kind: EventKind },
}

/// The running totals behind [`Metrics`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
struct Counters {
    events: u64,
    accepted: u64,
    rejected: u64,
    rejections: [u64; Rejection::ALL.len()],
    holder_transitions: u64,
}

/// Leases on many resources, decided by the same rules as a [`LeaseAuthority`](crate::LeaseAuthority), with a
/// revision per resource, transfers, reaping, batches, audit events and metrics.
///
/// Each resource (any `R: Ord + Clone`, such as a `String` name) has its own token namespace, kept for good once the
/// resource has been granted: tokens start at 1 and rise by one per grant, never reused after a release or a reap.
/// Each resource also has a **revision**, raised by one on every accepted change, which callers can use as a
/// compare-and-set precondition ([`acquire_at_revision`](Self::acquire_at_revision)). The table has one clock
/// watermark for all resources, the latest instant an accepted command was decided at, with the authority's
/// [`ClockPolicy`] rules for a `now` before it.
///
/// Every command checks, in order: the clock, the TTL, the precondition (revision, election), the lease record,
/// and that the token and the revision can still rise. A rejected command changes nothing at all: no resource, no
/// event, and, unlike a [`LeaseAuthority`](crate::LeaseAuthority), not the watermark either, so one caller's bad
/// request (a far-future `now` with a zero TTL, say) cannot refuse every other resource's callers. Once a resource
/// has had a leadership lease, only [`acquire_leadership`](Self::acquire_leadership) grants it
/// ([`Rejection::LeadershipRequired`] for a plain grant or a transfer). An accepted command changes one
/// resource and sends one [`Event`] to the sink `S` ([`EventLog`] by default). Commands cost O(log n) in the number
/// of resources; nothing reads a clock or panics.
#[derive(Debug, Clone)]
pub struct LeaseTable<R, S = EventLog<R>> {
    resources: BTreeMap<R, Slot>,
    observed: Duration,
    clock_policy: ClockPolicy,
    round_up: Option<fn(Duration) -> Duration>,
    sink: S,
    counters: Counters,
}

impl<R: Ord + Clone> LeaseTable<R> {
    /// An empty table, [`ClockPolicy::Reject`], watermark at zero, events kept in an [`EventLog`] of
    /// [`EventLog::DEFAULT_CAPACITY`].
    #[must_use]
    pub const fn new() -> Self {
        Self::with_sink(EventLog::new(EventLog::<R>::DEFAULT_CAPACITY))
    }

    /// An empty table whose event log keeps the newest `capacity` events.
    #[must_use]
    pub const fn with_event_capacity(capacity: usize) -> Self {
        Self::with_sink(EventLog::new(capacity))
    }

    /// A table continuing the state in `checkpoint`, with [`ClockPolicy::Reject`], an empty default event log and
    /// zeroed counters. It decides every later command as the table that produced the checkpoint would have.
    #[must_use]
    pub fn restore(checkpoint: TableCheckpoint<R>) -> Self {
        Self::new().restored(checkpoint)
    }

    /// The events the table's log keeps, oldest first.
    pub fn events(&self) -> impl ExactSizeIterator<Item = &Event<R>> + DoubleEndedIterator {
        self.sink.events()
    }
}

impl<R: Ord + Clone> Default for LeaseTable<R> {
    fn default() -> Self {
        Self::new()
    }
}

impl<R: Ord + Clone, S: EventSink<R>> LeaseTable<R, S> {
    /// An empty table that sends its events to `sink`.
    #[must_use]
    pub const fn with_sink(sink: S) -> Self {
        Self {
            resources: BTreeMap::new(),
            observed: Duration::ZERO,
            clock_policy: ClockPolicy::Reject,
            round_up: None,
            sink,
            counters: Counters {
                events: 0,
                accepted: 0,
                rejected: 0,
                rejections: [0; Rejection::ALL.len()],
                holder_transitions: 0,
            },
        }
    }

    /// The same table with its resources and watermark replaced by `checkpoint`'s.
    #[must_use]
    pub fn restored(mut self, checkpoint: TableCheckpoint<R>) -> Self {
        self.observed = checkpoint.observed();
        self.resources = checkpoint
            .into_records()
            .into_iter()
            .map(|record| {
                let held = record.lease.and_then(|lease| {
                    Some(Held {
                        lease: Lease::new(OwnerId::new(lease.owner), FencingToken::new(lease.token)?, lease.expires_at),
                        issued_at: lease.issued_at,
                        term: lease.term,
                    })
                });
                let last_issued = record.last_issued.and_then(FencingToken::new);
                (record.resource, Slot { last_issued, revision: record.revision, term: record.term, held })
            })
            .collect();
        self
    }

    /// The same table sending its events to another sink.
    #[must_use]
    pub fn with_events_to<T: EventSink<R>>(self, sink: T) -> LeaseTable<R, T> {
        LeaseTable {
            resources: self.resources,
            observed: self.observed,
            clock_policy: self.clock_policy,
            round_up: self.round_up,
            sink,
            counters: self.counters,
        }
    }

    /// The same table with another [`ClockPolicy`].
    #[must_use]
    pub const fn with_clock_policy(mut self, clock_policy: ClockPolicy) -> Self {
        self.clock_policy = clock_policy;
        self
    }

    /// The same table with every computed deadline (`now + ttl`) passed through `round_up` before it is kept: for
    /// callers whose storage or language keeps coarser instants (whole milliseconds, `f64` seconds), so that the
    /// deadline they store is exactly the one the table enforces. A result earlier than the deadline is ignored:
    /// rounding can only lengthen a lease.
    #[must_use]
    pub const fn with_deadline_rounding(mut self, round_up: fn(Duration) -> Duration) -> Self {
        self.round_up = Some(round_up);
        self
    }

    /// The table's [`ClockPolicy`].
    #[must_use]
    pub const fn clock_policy(&self) -> ClockPolicy {
        self.clock_policy
    }

    /// The clock watermark: the latest instant an accepted command was decided at.
    #[must_use]
    pub const fn observed(&self) -> Duration {
        self.observed
    }

    /// The event sink.
    #[must_use]
    pub const fn sink(&self) -> &S {
        &self.sink
    }

    /// The event sink, mutably (to drain a log, say).
    pub fn sink_mut(&mut self) -> &mut S {
        &mut self.sink
    }

    /// How many resources the table knows.
    #[must_use]
    pub fn len(&self) -> usize {
        self.resources.len()
    }

    /// Whether the table knows no resource.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.resources.is_empty()
    }

    /// The lease record of `resource`, live or expired, or `None` when vacant or unknown.
    #[must_use]
    pub fn lease(&self, resource: &R) -> Option<TableLease<R>> {
        self.resources.get(resource).and_then(|slot| Self::table_lease(resource, slot))
    }

    /// The lease live on `resource` at `now`, if any. A pure query: the watermark does not move.
    #[must_use]
    pub fn live_lease(&self, resource: &R, now: Duration) -> Option<TableLease<R>> {
        self.lease(resource).filter(|lease| lease.is_live(now))
    }

    /// Every lease live at `now`, in resource order. O(n).
    pub fn live_leases(&self, now: Duration) -> impl Iterator<Item = TableLease<R>> + '_ {
        self.resources
            .iter()
            .filter_map(move |(resource, slot)| Self::table_lease(resource, slot).filter(|lease| lease.is_live(now)))
    }

    /// The revision of `resource`: how many accepted changes it has seen (`0` when unknown).
    #[must_use]
    pub fn revision(&self, resource: &R) -> u64 {
        self.resources.get(resource).map_or(0, |slot| slot.revision)
    }

    /// The greatest token issued for `resource`, `None` when none was.
    #[must_use]
    pub fn last_issued(&self, resource: &R) -> Option<FencingToken> {
        self.resources.get(resource).and_then(|slot| slot.last_issued)
    }

    /// The greatest election term used for `resource`, `None` when no leadership lease was granted on it.
    #[must_use]
    pub fn term(&self, resource: &R) -> Option<u64> {
        self.resources.get(resource).and_then(|slot| slot.term)
    }

    /// The table's whole state, for storage. O(n).
    #[must_use]
    pub fn checkpoint(&self) -> TableCheckpoint<R> {
        let records = self
            .resources
            .iter()
            .map(|(resource, slot)| ResourceRecord {
                resource: resource.clone(),
                last_issued: slot.last_issued.map(FencingToken::value),
                revision: slot.revision,
                term: slot.term,
                lease: slot.held.map(|held| LeaseRecord {
                    owner: held.lease.owner().value(),
                    token: held.lease.token().value(),
                    issued_at: held.issued_at,
                    expires_at: held.lease.expires_at(),
                    term: held.term,
                }),
            })
            .collect();
        TableCheckpoint::from_table(self.observed, records)
    }

    /// The table's figures at `now` (a pure query: the watermark does not move). O(n).
    #[must_use]
    pub fn metrics(&self, now: Duration) -> Metrics {
        let mut metrics = Metrics {
            resources: self.resources.len() as u64,
            events: self.counters.events,
            accepted: self.counters.accepted,
            rejected: self.counters.rejected,
            rejections: self.counters.rejections,
            holder_transitions: self.counters.holder_transitions,
            ..Metrics::default()
        };
        for slot in self.resources.values() {
            metrics.highest_token = metrics.highest_token.max(slot.last_issued);
            if let Some(held) = slot.held {
                metrics.stored_leases = metrics.stored_leases.saturating_add(1);
                if held.lease.is_live(now) {
                    metrics.live_leases = metrics.live_leases.saturating_add(1);
                } else {
                    metrics.expired_leases = metrics.expired_leases.saturating_add(1);
                }
            }
        }
        metrics
    }

    /// Asks for `resource` for `owner` at `now`, to last `ttl`: [`LeaseAuthority::acquire`](crate::LeaseAuthority::acquire)'s
    /// rules on the resource's own token namespace. Granted (with an [`EventKind::Acquired`] event) when no lease is
    /// live on the resource; refused with `ClockRegressed`, `InvalidTtl`, `DeadlineOverflow`, `Occupied`,
    /// `TokenSpaceExhausted` or `RevisionSpaceExhausted`.
    pub fn acquire(&mut self, resource: &R, owner: OwnerId, now: Duration, ttl: Duration) -> TableDecision<R> {
        self.grant(resource, owner, now, ttl, Precondition::None, EventKind::Acquired)
    }

    /// Grants `owner` a leadership lease on `resource` on the strength of an election: only for a valid
    /// `certificate` ([`certify_votes`](crate::certify_votes)) whose leader is `owner` and whose term is greater than
    /// every term already used for the resource, so a stale election can never take leadership back. The grant is an
    /// ordinary lease with a fresh fencing token; the term is recorded in the lease, its event and the checkpoint.
    ///
    /// Checks, in order: the clock and the TTL, then [`Rejection::NoQuorum`] (the certificate is not valid),
    /// [`Rejection::NotLeader`] (it elected someone else), [`Rejection::StaleTerm`], then the lease record as
    /// [`reacquire`](Self::reacquire) does: another owner's live lease is [`Rejection::Occupied`] (an election does
    /// not cut a live lease short: the new leader waits for it to expire or be released), the owner's own live lease
    /// is rotated to the new token and term ([`EventKind::Reacquired`]); then `TokenSpaceExhausted` and
    /// `RevisionSpaceExhausted`.
    pub fn acquire_leadership(
        &mut self,
        resource: &R,
        certificate: &QuorumCertificate<OwnerId>,
        owner: OwnerId,
        now: Duration,
        ttl: Duration,
    ) -> TableDecision<R> {
        let precondition =
            Precondition::Elected { valid: certifies(certificate), leader: certificate.leader, term: certificate.term };
        self.grant(resource, owner, now, ttl, precondition, EventKind::Reacquired)
    }

    /// [`acquire`](Self::acquire) under a compare-and-set precondition: refused with [`Rejection::RevisionMismatch`]
    /// (after the clock and TTL checks) unless the resource's revision is `expected_revision` (`0` for a resource
    /// the table has never changed).
    pub fn acquire_at_revision(
        &mut self,
        resource: &R,
        owner: OwnerId,
        expected_revision: u64,
        now: Duration,
        ttl: Duration,
    ) -> TableDecision<R> {
        self.grant(resource, owner, now, ttl, Precondition::Revision(expected_revision), EventKind::Acquired)
    }

    /// [`acquire`](Self::acquire), except that the owner of the live lease gets a new lease with a new, greater
    /// token ([`EventKind::Reacquired`]), which makes its old token stale.
    pub fn reacquire(&mut self, resource: &R, owner: OwnerId, now: Duration, ttl: Duration) -> TableDecision<R> {
        self.grant(resource, owner, now, ttl, Precondition::None, EventKind::Reacquired)
    }

    /// Extends the live lease on `resource`: same owner, same token, same `issued_at`, expiry
    /// `max(expires_at, now + ttl)`. Refused as [`LeaseAuthority::renew`](crate::LeaseAuthority::renew) refuses
    /// (`NotHeld`, `StaleToken`, `WrongOwner`, `Expired`), or with `RevisionSpaceExhausted`.
    pub fn renew(
        &mut self,
        resource: &R,
        owner: OwnerId,
        token: FencingToken,
        now: Duration,
        ttl: Duration,
    ) -> TableDecision<R> {
        self.decide(resource, now, Some(ttl), |slot, now, deadline| {
            rules::held(slot.lease(), owner, token, now)?;
            Ok(Change::Renew { deadline })
        })
    }

    /// Gives the lease on `resource` back; the token high-water stays. Refused as
    /// [`LeaseAuthority::release`](crate::LeaseAuthority::release) refuses, or with `RevisionSpaceExhausted`.
    pub fn release(&mut self, resource: &R, owner: OwnerId, token: FencingToken, now: Duration) -> TableDecision<R> {
        self.decide(resource, now, None, |slot, now, _| {
            rules::held(slot.lease(), owner, token, now)?;
            Ok(Change::End { kind: EventKind::Released })
        })
    }

    /// The holder of the live lease on `resource` (`owner` with `token`) hands it to `new_owner`, who gets a new
    /// lease with a new, greater token, issued at `now` and expiring at `now + ttl` ([`EventKind::Transferred`]). The
    /// old token is stale from then on, so the old holder is fenced. Refused as [`renew`](Self::renew) refuses, or
    /// with `TokenSpaceExhausted`.
    pub fn transfer(
        &mut self,
        resource: &R,
        owner: OwnerId,
        token: FencingToken,
        new_owner: OwnerId,
        now: Duration,
        ttl: Duration,
    ) -> TableDecision<R> {
        self.decide(resource, now, Some(ttl), |slot, now, deadline| {
            if slot.term.is_some() {
                return Err(Rejection::LeadershipRequired);
            }
            rules::held(slot.lease(), owner, token, now)?;
            rules::next_token(slot.last_issued)?;
            Ok(Change::Grant { kind: EventKind::Transferred, owner: new_owner, deadline, term: None })
        })
    }

    /// Drops the lease record of `resource` once it has expired at `now` ([`EventKind::Reaped`]); the token
    /// high-water stays, so the next grant still gets a greater token. Refused with `ClockRegressed`, `NotHeld`
    /// (no record), `Occupied` (the lease is live: reaping never ends a live lease) or `RevisionSpaceExhausted`.
    pub fn reap(&mut self, resource: &R, now: Duration) -> TableDecision<R> {
        self.decide(resource, now, None, |slot, now, _| match slot.held {
            None => Err(Rejection::NotHeld),
            Some(held) if held.lease.is_live(now) => Err(Rejection::Occupied),
            Some(_) => Ok(Change::End { kind: EventKind::Reaped }),
        })
    }

    /// Reaps every lease record expired at `now`, in resource order, and returns the leases reaped. O(n). Refused
    /// as a whole with [`Rejection::ClockRegressed`] under [`ClockPolicy::Reject`]; a resource whose revision cannot
    /// rise is skipped (and counted as a `RevisionSpaceExhausted` rejection).
    pub fn reap_expired(&mut self, now: Duration) -> Result<Vec<TableLease<R>>, Rejection> {
        let now = match rules::observe(&mut self.observed.clone(), self.clock_policy, now) {
            Ok(now) => now,
            Err(rejection) => {
                self.count_rejection(rejection);
                return Err(rejection);
            }
        };
        let expired: Vec<R> = self
            .resources
            .iter()
            .filter(|(_, slot)| slot.held.is_some_and(|held| !held.lease.is_live(now)))
            .map(|(resource, _)| resource.clone())
            .collect();
        let mut reaped = Vec::with_capacity(expired.len());
        for resource in &expired {
            let lease = self.lease(resource);
            if self.reap(resource, now).is_accepted() {
                reaped.extend(lease);
            }
        }
        Ok(reaped)
    }

    /// Decides `command` at `now`, exactly as the method of the same name.
    pub fn apply(&mut self, command: &Command<R>, now: Duration) -> TableDecision<R> {
        match command {
            Command::Acquire { resource, owner, ttl, expected_revision } => {
                let precondition = expected_revision.map_or(Precondition::None, Precondition::Revision);
                self.grant(resource, *owner, now, *ttl, precondition, EventKind::Acquired)
            }
            Command::Reacquire { resource, owner, ttl } => self.reacquire(resource, *owner, now, *ttl),
            Command::Renew { resource, owner, token, ttl } => self.renew(resource, *owner, *token, now, *ttl),
            Command::Release { resource, owner, token } => self.release(resource, *owner, *token, now),
            Command::Transfer { resource, owner, token, new_owner, ttl } => {
                self.transfer(resource, *owner, *token, *new_owner, now, *ttl)
            }
            Command::Reap { resource } => self.reap(resource, now),
        }
    }

    /// Applies `commands` in order, each at its own `at`, and keeps every decision. A rejected command changes
    /// nothing and does not stop the batch: the later commands are decided on the state the accepted ones left.
    pub fn apply_batch<'a>(&mut self, commands: impl IntoIterator<Item = &'a TimedCommand<R>>) -> BatchResult<R>
    where
        R: 'a,
    {
        let mut result = BatchResult { decisions: Vec::new(), accepted: 0, rejected: 0 };
        for timed in commands {
            let decision = self.apply(&timed.command, timed.at);
            if decision.is_accepted() {
                result.accepted = result.accepted.saturating_add(1);
            } else {
                result.rejected = result.rejected.saturating_add(1);
            }
            result.decisions.push(decision);
        }
        result
    }

    /// Every grant: the precondition, then the lease record, then the token space. `rotation` is
    /// [`EventKind::Reacquired`] when the owner's own live lease may be replaced, [`EventKind::Acquired`] otherwise.
    fn grant(
        &mut self,
        resource: &R,
        owner: OwnerId,
        now: Duration,
        ttl: Duration,
        precondition: Precondition,
        rotation: EventKind,
    ) -> TableDecision<R> {
        self.decide(resource, now, Some(ttl), |slot, now, deadline| {
            let term = match precondition {
                Precondition::None | Precondition::Revision(_) if slot.term.is_some() => {
                    return Err(Rejection::LeadershipRequired)
                }
                Precondition::None => None,
                Precondition::Revision(expected) if expected != slot.revision => {
                    return Err(Rejection::RevisionMismatch)
                }
                Precondition::Revision(_) => None,
                Precondition::Elected { valid: false, .. } => return Err(Rejection::NoQuorum),
                Precondition::Elected { leader, .. } if leader != Some(owner) => return Err(Rejection::NotLeader),
                Precondition::Elected { term, .. } if slot.term.is_some_and(|used| term <= used) => {
                    return Err(Rejection::StaleTerm)
                }
                Precondition::Elected { term, .. } => Some(term),
            };
            let rotate = rotation == EventKind::Reacquired;
            rules::vacant_for(slot.lease(), owner, now, rotate)?;
            rules::next_token(slot.last_issued)?;
            let live_own = slot.held.filter(|held| held.lease.is_live(now) && held.lease.owner() == owner);
            let kind = if live_own.is_some() && rotate { EventKind::Reacquired } else { EventKind::Acquired };
            Ok(Change::Grant { kind, owner, deadline, term })
        })
    }

    /// Runs one command: the clock and TTL checks, then `check` on the resource's slot (an empty one for a resource
    /// the table does not know), then the revision; commits the change and records its event only if all pass.
    fn decide(
        &mut self,
        resource: &R,
        now: Duration,
        ttl: Option<Duration>,
        check: impl FnOnce(&Slot, Duration, Duration) -> Result<Change, Rejection>,
    ) -> TableDecision<R> {
        match self.evaluate(resource, now, ttl, check) {
            Ok((slot, event, decision, transition)) => {
                self.observed = self.observed.max(event.at);
                if transition {
                    self.counters.holder_transitions = self.counters.holder_transitions.saturating_add(1);
                }
                if let Some(current) = self.resources.get_mut(resource) {
                    *current = slot;
                } else {
                    self.resources.insert(resource.clone(), slot);
                }
                self.counters.accepted = self.counters.accepted.saturating_add(1);
                self.counters.events = self.counters.events.saturating_add(1);
                self.sink.record(event);
                decision
            }
            Err(rejection) => {
                self.count_rejection(rejection);
                TableDecision::Rejected(rejection)
            }
        }
    }

    fn evaluate(
        &mut self,
        resource: &R,
        now: Duration,
        ttl: Option<Duration>,
        check: impl FnOnce(&Slot, Duration, Duration) -> Result<Change, Rejection>,
    ) -> Result<(Slot, Event<R>, TableDecision<R>, bool), Rejection> {
        let now = rules::observe(&mut self.observed.clone(), self.clock_policy, now)?;
        let deadline = match ttl {
            Some(ttl) => {
                let deadline = rules::deadline(now, ttl)?;
                self.round_up.map_or(deadline, |round_up| round_up(deadline).max(deadline))
            }
            None => now,
        };
        let before = self.resources.get(resource).copied().unwrap_or_default();
        let change = check(&before, now, deadline)?;
        let revision = before.revision.checked_add(1).ok_or(Rejection::RevisionSpaceExhausted)?;
        let mut after = Slot { revision, ..before };
        let replaced = before.held.map(|held| held.lease);
        let mut transition = false;
        let (kind, ended) = match change {
            Change::Grant { kind, owner, deadline, term } => {
                let token = rules::next_token(before.last_issued)?;
                transition = !matches!(replaced, Some(lease) if lease.owner() == owner);
                after.last_issued = Some(token);
                after.term = after.term.max(term);
                after.held = Some(Held { lease: Lease::new(owner, token, deadline), issued_at: now, term });
                (kind, None)
            }
            Change::Renew { deadline } => {
                after.held = before.held.map(|held| Held {
                    lease: Lease::new(held.lease.owner(), held.lease.token(), held.lease.expires_at().max(deadline)),
                    ..held
                });
                (EventKind::Renewed, None)
            }
            Change::End { kind } => {
                after.held = None;
                (kind, before.held)
            }
        };
        let shown = after.held.or(ended).ok_or(Rejection::NotHeld)?;
        let event = Event {
            resource: resource.clone(),
            kind,
            at: now,
            owner: shown.lease.owner(),
            token: shown.lease.token(),
            revision,
            expires_at: shown.lease.expires_at(),
            term: shown.term,
            replaced: if ended.is_some() { None } else { replaced },
        };
        let decision = match (kind, Self::table_lease(resource, &after)) {
            (EventKind::Acquired | EventKind::Reacquired, Some(lease)) => TableDecision::Granted(lease),
            (EventKind::Transferred, Some(lease)) => TableDecision::Transferred(lease),
            (EventKind::Renewed, Some(lease)) => TableDecision::Renewed(lease),
            (EventKind::Released, _) => TableDecision::Released,
            _ => TableDecision::Reaped,
        };
        Ok((after, event, decision, transition))
    }

    fn count_rejection(&mut self, rejection: Rejection) {
        self.counters.rejected = self.counters.rejected.saturating_add(1);
        if let Some(count) = self.counters.rejections.get_mut(rejection.index()) {
            *count = count.saturating_add(1);
        }
    }

    fn table_lease(resource: &R, slot: &Slot) -> Option<TableLease<R>> {
        slot.held.map(|held| TableLease::new(resource.clone(), held.lease, held.issued_at, slot.revision, held.term))
    }
}

impl Slot {
    fn lease(&self) -> Option<Lease> {
        self.held.map(|held| held.lease)
    }
}
