//! What `stat` says of a path (without following a link), to tell cheaply whether it changed
//! since something was computed from it: its kind, size, modification time and identity. An
//! atomic write (Tandem's own included) replaces the file, so even a same-size edit within one
//! timestamp tick shows as a new identity; only an in-place, same-size rewrite within one tick
//! goes unseen, as it does for git.

use std::path::Path;
use std::time::SystemTime;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stamp {
    is_dir: bool,
    is_symlink: bool,
    len: u64,
    modified: Option<SystemTime>,
    identity: u64,
}

/// The path's stamp now; `None` when nothing is there (or it cannot be asked).
pub fn stamp(path: &Path) -> Option<Stamp> {
    let meta = std::fs::symlink_metadata(path).ok()?;
    Some(Stamp {
        is_dir: meta.is_dir(),
        is_symlink: meta.file_type().is_symlink(),
        len: meta.len(),
        modified: meta.modified().ok(),
        identity: super::platform::identity(&meta),
    })
}
