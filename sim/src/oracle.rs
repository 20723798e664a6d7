//! The simulated storage: its [`FenceGuard`] (unless the fence is disabled), and the oracle that checks, on its own,
//! every write the storage accepted.

use alloc::vec::Vec;

use lease_machines::{FenceGuard, FencedWrite, FencingToken, OwnerId};

use crate::FenceMode;

/// What became of a write the storage received.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Verdict {
    /// The fence refused it: it did not happen.
    Refused,
    /// Accepted, and safe by the oracle's rule.
    Accepted,
    /// Accepted, and unsafe: its token is below that of a write already accepted for the resource, or equal to it
    /// from another owner.
    Violation,
}

/// The storage the workers write to.
pub(crate) struct Storage {
    fence: FenceMode,
    guard: FenceGuard<u64>,
    /// Per resource, the token and owner of the newest write accepted.
    newest: Vec<Option<(FencingToken, OwnerId)>>,
}

impl Storage {
    /// The storage of `resources` resources (`0..resources`), nothing written yet.
    pub(crate) fn new(fence: FenceMode, resources: usize) -> Self {
        let mut newest = Vec::with_capacity(resources);
        newest.resize(resources, None);
        Self { fence, guard: FenceGuard::new(), newest }
    }

    /// The storage receives `write`: the fence (unless disabled) decides, and the oracle checks what was accepted.
    pub(crate) fn receive(&mut self, write: &FencedWrite<u64, u64>) -> Verdict {
        let accepted = match self.fence {
            FenceMode::Enforced => self.guard.check(write),
            FenceMode::Disabled => true,
        };
        if !accepted {
            return Verdict::Refused;
        }
        let (token, owner) = (write.token(), write.owner());
        let newest = usize::try_from(*write.resource()).ok().and_then(|index| self.newest.get_mut(index));
        match newest {
            // Resources are 0..resources: a write for any other is unsafe by definition.
            None => Verdict::Violation,
            Some(Some((newest, by))) if token < *newest || (token == *newest && owner != *by) => Verdict::Violation,
            Some(slot) => {
                *slot = Some((token, owner));
                Verdict::Accepted
            }
        }
    }
}
