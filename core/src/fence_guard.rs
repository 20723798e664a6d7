//! The fence for many resources, and the writes it checks.

use alloc::collections::BTreeMap;

use crate::{Fence, FencingToken, OwnerId};

/// A write to `resource`, made by `owner` under the lease with `token`, described by `operation` (whatever the
/// caller's storage needs: a key, a statement, a job id).
///
/// Built from a live lease with [`TableLease::fenced_write`](crate::TableLease::fenced_write), or by hand from a token
/// a writer presents.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct FencedWrite<R, O> {
    resource: R,
    owner: OwnerId,
    token: FencingToken,
    operation: O,
}

impl<R, O> FencedWrite<R, O> {
    /// A write request; building one checks nothing.
    #[must_use]
    pub const fn new(resource: R, owner: OwnerId, token: FencingToken, operation: O) -> Self {
        Self { resource, owner, token, operation }
    }

    /// The resource written to.
    #[must_use]
    pub const fn resource(&self) -> &R {
        &self.resource
    }

    /// The owner making the write.
    #[must_use]
    pub const fn owner(&self) -> OwnerId {
        self.owner
    }

    /// The fencing token the write carries.
    #[must_use]
    pub const fn token(&self) -> FencingToken {
        self.token
    }

    /// What the write does.
    #[must_use]
    pub const fn operation(&self) -> &O {
        &self.operation
    }
}

/// The highest token a [`FenceGuard`] accepted for one resource, and the owner whose write carried it: what the
/// guard persists, and what [`FenceGuard::from_marks`] restores it from.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct FenceMark<R> {
    /// The resource.
    pub resource: R,
    /// The highest token accepted for it.
    pub token: FencingToken,
    /// The owner of the write that set the mark.
    pub owner: OwnerId,
}

/// A [`Fence`] per resource, for storage that protects many resources: the storage side of fencing, with nothing
/// about leases, clocks or owners' identities in it.
///
/// A write is accepted iff its token is greater than or equal to the highest token accepted for its resource so far
/// (equal tokens stay valid for the many writes of one lease); the owner is recorded with the mark, not checked
/// (tokens, not owners, order the grants). Each resource's mark only rises. Checking costs
/// O(log n) in the number of resources seen.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
pub struct FenceGuard<R> {
    marks: BTreeMap<R, (Fence, OwnerId)>,
}

impl<R: Ord + Clone> FenceGuard<R> {
    /// A guard that has accepted nothing: every resource's first write is accepted.
    #[must_use]
    pub const fn new() -> Self {
        Self { marks: BTreeMap::new() }
    }

    /// A guard restored from the marks it persisted. Refused (returns the repeated resource) when two marks name the
    /// same resource: which one is the truth cannot be known.
    pub fn from_marks(marks: impl IntoIterator<Item = FenceMark<R>>) -> Result<Self, R> {
        let mut guard = Self::new();
        for mark in marks {
            if guard.marks.contains_key(&mark.resource) {
                return Err(mark.resource);
            }
            guard.marks.insert(mark.resource, (Fence::new(Some(mark.token)), mark.owner));
        }
        Ok(guard)
    }

    /// Checks `write`: true, and the resource's mark becomes its token, iff the token is at least the resource's
    /// mark; false, and nothing changes, when a newer grant has already written.
    #[must_use = "a refused write must not happen"]
    pub fn check<O>(&mut self, write: &FencedWrite<R, O>) -> bool {
        match self.marks.get_mut(&write.resource) {
            Some((fence, owner)) => {
                let accepted = fence.accept(write.token);
                if accepted {
                    *owner = write.owner;
                }
                accepted
            }
            None => {
                self.marks.insert(write.resource.clone(), (Fence::new(Some(write.token)), write.owner));
                true
            }
        }
    }

    /// The highest token accepted for `resource`, or `None` when it has accepted no write.
    #[must_use]
    pub fn highest(&self, resource: &R) -> Option<FencingToken> {
        self.marks.get(resource).and_then(|(fence, _)| fence.highest())
    }

    /// Every resource's mark, in resource order: what to persist.
    pub fn marks(&self) -> impl Iterator<Item = FenceMark<R>> + '_ {
        self.marks.iter().filter_map(|(resource, (fence, owner))| {
            fence.highest().map(|token| FenceMark { resource: resource.clone(), token, owner: *owner })
        })
    }

    /// How many resources have a mark.
    #[must_use]
    pub fn len(&self) -> usize {
        self.marks.len()
    }

    /// Whether no resource has a mark.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.marks.is_empty()
    }
}
