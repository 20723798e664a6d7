//! The rule for resource names: what a host that names resources with strings (the Ruby gem, the JSON documents)
//! accepts, so that a name's size, and with it every copy a table, its events and its documents hold, is bounded.

use core::fmt;

/// The most bytes (UTF-8) a resource name may have. A table keeps each name once, shared by its events, but every
/// record a host builds from it (a lease, an event, a document) carries a copy; the bound keeps those copies small.
pub const MAX_RESOURCE_BYTES: usize = 1024;

/// Why a resource name is refused ([`check_resource_name`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ResourceNameError {
    /// The name is the empty string.
    Empty,
    /// The name has more than [`MAX_RESOURCE_BYTES`] bytes; `bytes` is its size.
    TooLong {
        /// The name's size in bytes.
        bytes: usize,
    },
}

/// Checks a resource name: non-empty and at most [`MAX_RESOURCE_BYTES`] bytes of UTF-8.
///
/// # Errors
///
/// [`ResourceNameError::Empty`] or [`ResourceNameError::TooLong`].
pub const fn check_resource_name(name: &str) -> Result<(), ResourceNameError> {
    if name.is_empty() {
        Err(ResourceNameError::Empty)
    } else if name.len() > MAX_RESOURCE_BYTES {
        Err(ResourceNameError::TooLong { bytes: name.len() })
    } else {
        Ok(())
    }
}

/// What the name must be, to follow the field it is read from: "must not be empty", "must be at most 1024 bytes of
/// UTF-8, got 2048 bytes".
impl fmt::Display for ResourceNameError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Empty => f.write_str("must not be empty"),
            Self::TooLong { bytes } => {
                write!(f, "must be at most {MAX_RESOURCE_BYTES} bytes of UTF-8, got {bytes} bytes")
            }
        }
    }
}

impl core::error::Error for ResourceNameError {}
