//! The event digest: 64-bit FNV-1a taken over 64-bit words instead of bytes, the words of each event as
//! [`simulate`](crate::simulate) lists them.

use core::time::Duration;

use lease_machines::{Event, EventKind};

/// The digest of no event (FNV-1a's offset basis).
pub(crate) const EMPTY: u64 = 0xcbf2_9ce4_8422_2325;
const FNV_PRIME: u64 = 0x0000_0100_0000_01b3;

/// `hash` with `event`'s words folded in.
pub(crate) fn fold_event(mut hash: u64, event: &Event<u64>) -> u64 {
    hash = fold(hash, event.resource);
    hash = fold(hash, kind_index(event.kind));
    hash = fold_instant(hash, event.at);
    hash = fold(hash, event.owner.value());
    hash = fold(hash, event.token.value());
    hash = fold(hash, event.revision);
    hash = fold_instant(hash, event.expires_at);
    hash = match event.term {
        None => fold(hash, 0),
        Some(term) => fold(fold(hash, 1), term),
    };
    match event.replaced {
        None => fold(hash, 0),
        Some(lease) => {
            let hash = fold(fold(fold(hash, 1), lease.owner().value()), lease.token().value());
            fold_instant(hash, lease.expires_at())
        }
    }
}

fn fold(hash: u64, word: u64) -> u64 {
    (hash ^ word).wrapping_mul(FNV_PRIME)
}

/// An instant as two words: its nanoseconds' low 64 bits, then their high 64 bits.
fn fold_instant(hash: u64, instant: Duration) -> u64 {
    let nanos = instant.as_nanos();
    fold(fold(hash, nanos as u64), nanos.wrapping_shr(64) as u64)
}

fn kind_index(kind: EventKind) -> u64 {
    EventKind::ALL.iter().position(|each| *each == kind).map_or(u64::MAX, |index| index as u64)
}
