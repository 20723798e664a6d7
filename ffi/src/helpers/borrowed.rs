//! The state of a mutable Ruby object, borrowed without a panic.

use std::cell::{Ref, RefCell, RefMut};

use magnus::{Error, Ruby};

/// The state behind a mutable Ruby object (`Authority`, `Table`, `FenceGuard`), borrowed; a re-entrant call (from
/// a callback inside a conversion) is a `RuntimeError` ("LeaseMachines::Table is busy"), never a panic.
pub trait Borrowed {
    type State;
    /// The Ruby class name, for the message.
    const CLASS: &'static str;
    fn cell(&self) -> &RefCell<Self::State>;

    fn busy(ruby: &Ruby) -> Error {
        Error::new(ruby.exception_runtime_error(), format!("{} is busy", Self::CLASS))
    }

    fn borrowed(&self, ruby: &Ruby) -> Result<Ref<'_, Self::State>, Error> {
        self.cell().try_borrow().map_err(|_| Self::busy(ruby))
    }

    fn borrowed_mut(&self, ruby: &Ruby) -> Result<RefMut<'_, Self::State>, Error> {
        self.cell().try_borrow_mut().map_err(|_| Self::busy(ruby))
    }
}

/// Implements [`Borrowed`] for a wrapped type whose only field is the `RefCell` of its state.
macro_rules! borrowed {
    ($type:ty, $state:ty, $class:literal) => {
        impl $crate::helpers::Borrowed for $type {
            type State = $state;
            const CLASS: &'static str = $class;
            fn cell(&self) -> &std::cell::RefCell<$state> {
                &self.0
            }
        }
    };
}
pub(crate) use borrowed;
