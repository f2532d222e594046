//! The project folder: the one safe way to turn a model's or a user's path into a real path,
//! and the engine's file I/O built on it.

pub mod context;
mod files;
pub mod journal;
mod listing;
pub(crate) mod outline;
mod paths;
mod platform;
mod regular;
pub mod search;
mod secret;
mod stamp;
mod walk;
pub mod watch;

pub use files::{
    FileState, Fs, RealFs, blob_hash, is_temp_file_name, read_state, remove_file,
    remove_file_and_emptied, remove_temp_files_made, write_file_atomic,
};
pub use listing::{ListError, list_files};
pub use paths::{PathError, ResolvedPath, is_view, normalize_relative, resolve, root_path};
#[cfg(all(test, unix))]
pub(crate) use regular::test_support;
pub use regular::{
    FileKind, OpenError, RegularFile, open_regular, read_project_text, read_regular,
};
#[cfg(test)]
pub(crate) use secret::key_body;
pub use secret::{holds_secret, looks_secret, loose_secrets, loose_secrets_of};
pub use stamp::{FileStamp, Stamp, stamp};
