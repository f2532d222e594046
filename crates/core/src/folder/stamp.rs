//! What `stat` says of a path (without following a link), to tell cheaply whether it changed
//! since something was computed from it: its kind, size, modification time and identity. An
//! atomic write (Tandem's own included) replaces the file, so even a same-size edit within one
//! timestamp tick shows as a new identity; only an in-place, same-size rewrite within one tick
//! goes unseen, as it does for git. The stored stamp also has the status change time (Unix):
//! a tool that puts the old modification time back after an edit (`touch -d`) cannot put
//! that one back, as git's index knows.

use std::path::Path;
use std::time::{SystemTime, UNIX_EPOCH};

/// A file version as `stat` sees it, in a form that is stored (the code index keeps one per
/// file): modification and status change times in nanoseconds (the latter 0 where there is
/// none), length and identity (the inode on Unix).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct FileStamp {
    pub mtime_ns: i64,
    pub ctime_ns: i64,
    pub len: u64,
    pub inode: u64,
}

impl FileStamp {
    pub fn of(meta: &std::fs::Metadata) -> FileStamp {
        let mtime_ns = (meta.modified().ok())
            .and_then(|t| t.duration_since(UNIX_EPOCH).ok())
            .map_or(0, |d| i64::try_from(d.as_nanos()).unwrap_or(i64::MAX));
        FileStamp {
            mtime_ns,
            ctime_ns: super::platform::change_time_ns(meta),
            len: meta.len(),
            inode: super::platform::identity(meta),
        }
    }
}

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
