//! What the other modules of the extension share and that needs none of them: how an error message shows a value
//! (`messages`), how a wrapped Rust type becomes a Ruby class (`macros`), and the borrow of a mutable object's state
//! that never panics (`borrowed`). Nothing here imports from the rest of the crate, so every arrow into `helpers`
//! points down, and none points back up to `lib.rs`.

mod borrowed;
mod macros;
mod messages;

pub(crate) use borrowed::{borrowed, Borrowed};
pub(crate) use macros::{constructor, wrapped_class};
pub use messages::{class_name, shown, type_error};
