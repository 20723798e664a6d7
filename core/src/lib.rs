#![doc = include_str!("../README.md")]
#![no_std]
#![forbid(unsafe_code)]
#![deny(missing_docs)]
// The workspace's lints (Cargo.toml), and unchecked arithmetic outside tests: every step of a decision is checked.
#![cfg_attr(not(test), deny(clippy::arithmetic_side_effects))]

#[cfg(feature = "alloc")]
extern crate alloc;

mod authority;
mod checkpoint;
mod clock;
mod decision;
#[cfg(feature = "alloc")]
mod election;
mod event;
mod fence;
#[cfg(feature = "alloc")]
mod fence_guard;
mod holder;
#[cfg(feature = "serde")]
pub mod json;
mod lease;
mod owner;
mod resource;
mod row;
mod rules;
mod semaphore;
#[cfg(feature = "alloc")]
mod table;
mod token;
mod token_epoch;
mod write_check;

pub use authority::LeaseAuthority;
pub use checkpoint::Checkpoint;
pub use clock::ClockPolicy;
pub use decision::{Decision, Rejection};
pub use event::{Event, EventKind};
pub use fence::Fence;
pub use holder::{Cadence, Holder, HolderState};
pub use lease::Lease;
pub use owner::OwnerId;
pub use resource::{check_resource_name, ResourceNameError, MAX_RESOURCE_BYTES};
pub use row::{LeaseRow, Request, RowDecision};
pub use semaphore::{Limit, Semaphore, SlotDecision, SlotRequest, MAX_LIMIT};
pub use token::FencingToken;
pub use token_epoch::{TokenEpoch, EPOCH_BITS, GENERATION_BITS};
pub use write_check::WriteCheck;

#[cfg(feature = "alloc")]
pub use election::{
    certify_votes, quorum_size, select_candidate, Candidate, CertificateStatus, ElectionVote, Equivocation,
    QuorumCertificate,
};
#[cfg(feature = "alloc")]
pub use fence_guard::{FenceGuard, FenceMark, FencedWrite};
#[cfg(feature = "alloc")]
pub use table::{
    audit, validate_record, AuditReport, BatchResult, Command, Discard, EventLog, EventSink, Finding, FindingCode,
    IssueCode, LeaseRecord, LeaseTable, Metrics, MetricsIssue, ResourceRecord, StateIssue, TableCheckpoint,
    TableDecision, TableLease, TimedCommand,
};
