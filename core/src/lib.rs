#![doc = include_str!("../README.md")]
#![no_std]
#![forbid(unsafe_code)]
#![deny(missing_docs)]
#![cfg_attr(
    not(test),
    deny(
        clippy::unwrap_used,
        clippy::expect_used,
        clippy::panic,
        clippy::indexing_slicing,
        clippy::arithmetic_side_effects
    )
)]

mod authority;
mod checkpoint;
mod clock;
mod decision;
mod fence;
mod holder;
mod lease;
mod owner;
mod token;

pub use authority::LeaseAuthority;
pub use checkpoint::Checkpoint;
pub use clock::ClockPolicy;
pub use decision::{Decision, Rejection};
pub use fence::Fence;
pub use holder::{Cadence, Holder, HolderState};
pub use lease::Lease;
pub use owner::OwnerId;
pub use token::FencingToken;
