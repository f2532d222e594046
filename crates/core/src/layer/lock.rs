//! Who uses a layer: a [`Workspace`](super::Workspace) holds the lock of a file beside its
//! layer (`workspaces/<chat>.lock`, a [`crate::lockfile`]) for as long as it is open, in this
//! process or another (a window's turn, a `tandem run`). Two overlays over one upper
//! directory at once would be undefined, and a layer in use must never be cleaned away: both
//! ask here. The lock's file goes with its layer.

use std::fs;
use std::path::{Path, PathBuf};
use std::time::Duration;

use super::{LayerError, io};
use crate::lockfile::{self, FileLock};

/// How long opening a workspace waits for the lock (a turn that just ended is still
/// dropping its workspace).
const WAIT: Duration = Duration::from_secs(2);

/// A held lock; released when dropped.
pub(super) type Lock = FileLock;

/// The lock's file of the layer at `dir`.
pub(super) fn path_of(dir: &Path) -> PathBuf {
    dir.with_extension("lock")
}

/// Takes the lock of the layer at `dir` now: `Ok(None)` when another holds it.
pub(super) fn try_take(dir: &Path) -> Result<Option<Lock>, LayerError> {
    let path = path_of(dir);
    lockfile::try_take(&path).map_err(io(&path))
}

/// Takes the lock of the layer at `dir`, waiting a little for a holder that is finishing;
/// [`LayerError::Busy`] when it stays held.
pub(super) fn take(dir: &Path) -> Result<Lock, LayerError> {
    let path = path_of(dir);
    lockfile::take(&path, WAIT)
        .map_err(io(&path))?
        .ok_or(LayerError::Busy)
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
    lockfile::held(&path_of(dir))
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
