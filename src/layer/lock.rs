//! Who uses a layer: a [`Workspace`](super::Workspace) holds an exclusive lock on a file
//! beside its layer (`workspaces/<chat>.lock`) for as long as it is open, in this process
//! or another (a window's turn, a `tandem run`). Two overlays over one upper directory at
//! once would be undefined, and a layer in use must never be cleaned away: both ask here.
//!
//! The lock is `flock(2)`'s: the kernel drops it when its holder exits, however it exits,
//! so a killed process never leaves a layer locked. Its file goes with its layer; a lock
//! taken on a file removed meanwhile is taken again on the new one.

use std::fs::{self, File, OpenOptions};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use super::{LayerError, io};

/// How long opening a workspace waits for the lock (a turn that just ended is still
/// dropping its workspace).
const WAIT: Duration = Duration::from_secs(2);

/// A held lock; released when dropped.
#[derive(Debug)]
pub(super) struct Lock {
    _file: File,
}

/// The lock's file of the layer at `dir`.
pub(super) fn path_of(dir: &Path) -> PathBuf {
    dir.with_extension("lock")
}

/// Takes the lock of the layer at `dir` now: `Ok(None)` when another holds it.
pub(super) fn try_take(dir: &Path) -> Result<Option<Lock>, LayerError> {
    let path = path_of(dir);
    if let Some(parent) = path.parent() {
        fs::create_dir_all(parent).map_err(io(parent))?;
    }
    // A file removed between our open and our lock (its layer was cleaned) locks nothing
    // anyone else sees: open it again.
    for _ in 0..3 {
        let file = OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&path)
            .map_err(io(&path))?;
        match exclusive(&file) {
            Ok(true) if same_file(&file, &path) => return Ok(Some(Lock { _file: file })),
            Ok(true) => continue,
            Ok(false) => return Ok(None),
            Err(e) => return Err(io(&path)(e)),
        }
    }
    Ok(None)
}

/// Whether `path` still names the open `file`.
fn same_file(file: &File, path: &Path) -> bool {
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        match (file.metadata(), fs::metadata(path)) {
            (Ok(a), Ok(b)) => a.dev() == b.dev() && a.ino() == b.ino(),
            _ => false,
        }
    }
    #[cfg(not(unix))]
    {
        let _ = (file, path);
        true
    }
}

/// Takes the lock of the layer at `dir`, waiting a little for a holder that is finishing;
/// [`LayerError::Busy`] when it stays held.
pub(super) fn take(dir: &Path) -> Result<Lock, LayerError> {
    let start = Instant::now();
    loop {
        if let Some(lock) = try_take(dir)? {
            return Ok(lock);
        }
        if start.elapsed() >= WAIT {
            return Err(LayerError::Busy);
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Removes the lock's file of a layer that is gone, unless someone holds it.
pub(super) fn remove_if_free(dir: &Path) {
    if dir.exists() || !path_of(dir).exists() {
        return;
    }
    if let Ok(Some(lock)) = try_take(dir) {
        let _ = fs::remove_file(path_of(dir));
        drop(lock);
    }
}

/// Whether the layer at `dir` is in use (its lock held, here or elsewhere).
pub(super) fn held(dir: &Path) -> bool {
    if !path_of(dir).exists() {
        return false;
    }
    matches!(try_take(dir), Ok(None))
}

/// `flock(LOCK_EX | LOCK_NB)`: `Ok(false)` when another open file holds it.
#[cfg(unix)]
#[allow(unsafe_code)]
fn exclusive(file: &File) -> std::io::Result<bool> {
    use std::os::fd::AsRawFd;
    // SAFETY: flock(2) on a descriptor this function borrows from an open file.
    let r = unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) };
    if r == 0 {
        return Ok(true);
    }
    let e = std::io::Error::last_os_error();
    match e.raw_os_error() {
        Some(libc::EWOULDBLOCK) => Ok(false),
        _ => Err(e),
    }
}

/// Elsewhere layers are copies used by one process at a time: no lock.
#[cfg(not(unix))]
fn exclusive(_file: &File) -> std::io::Result<bool> {
    Ok(true)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_held_lock_keeps_others_out_until_dropped() {
        let dir = tempfile::tempdir().unwrap();
        let layer = dir.path().join("7");
        let lock = try_take(&layer).unwrap().expect("free at first");
        assert!(held(&layer));
        assert!(try_take(&layer).unwrap().is_none(), "one holder at a time");
        drop(lock);
        assert!(!held(&layer));
        let again = take(&layer).unwrap();
        drop(again);
        remove_if_free(&layer);
        assert!(
            !path_of(&layer).exists(),
            "the layer is gone: its lock's file too"
        );
    }
}
