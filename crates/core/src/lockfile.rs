//! Locks between processes: an exclusive lock on a file (`flock(2)` on Unix, `LockFileEx` on
//! Windows, through std's `File::try_lock`). The kernel drops it when its holder exits,
//! however it exits, so a killed process never leaves anything locked, and a held lock
//! means its holder is alive and at work. Two opens of one file conflict even within one
//! process, so a lock also keeps two threads apart.
//!
//! A holder that says what it is doing ([`FileLock::begin`]) leaves that on the lock's file
//! until it finishes: a holder killed in between leaves it behind, and the next holder learns
//! from [`FileLock::unfinished_since`] that work was cut off, and since when.
//!
//! A lock's file stays where it is (removing it would let a second process lock a new file
//! while a third still holds the old one), except where its owner goes away as a whole (a
//! layer's lock, see `layer::lock`): a lock taken on a file removed meanwhile is taken again
//! on the new one.

use std::fs::{self, File, OpenOptions, TryLockError};
use std::io::{self, Seek, SeekFrom, Write};
use std::path::Path;
use std::time::{Duration, Instant, SystemTime};

/// A held lock; released when dropped (or when its process ends).
#[derive(Debug)]
pub struct FileLock {
    file: File,
}

impl FileLock {
    /// When a holder before this one began work ([`FileLock::begin`]) and never finished
    /// it: it was killed holding the lock. The time is the lock file's own modification
    /// time, written by that `begin`, so it compares with the times of files the cut-off
    /// work made after it (one clock, one granularity). `None` when every holder finished.
    pub fn unfinished_since(&self) -> io::Result<Option<SystemTime>> {
        let meta = self.file.metadata()?;
        if meta.len() == 0 {
            return Ok(None);
        }
        meta.modified().map(Some)
    }

    /// Says on the lock's file that work is in flight (`what`, with this process's id) until
    /// the returned guard drops. A process killed before that leaves it there.
    pub fn begin(&self, what: &str) -> io::Result<InFlight<'_>> {
        let mut file = &self.file;
        file.set_len(0)?;
        file.seek(SeekFrom::Start(0))?;
        file.write_all(format!("{what} by process {}\n", std::process::id()).as_bytes())?;
        Ok(InFlight { file })
    }
}

/// Work in flight under a [`FileLock`]; dropping it says the work finished (however it
/// ended: an error or a panic leaves nothing half-way that a kill would).
#[derive(Debug)]
pub struct InFlight<'a> {
    file: &'a File,
}

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        // Not cleared (a full disk cannot refuse a truncation, but a vanished mount can):
        // the next holder then looks for leftovers it will not find.
        let _ = self.file.set_len(0);
    }
}

/// Takes the lock on the file at `path` (made, with its folder, when missing) now:
/// `Ok(None)` when another open file holds it, in this process or another.
pub fn try_take(path: &Path) -> io::Result<Option<FileLock>> {
    if let Some(parent) = path.parent() {
        fs::create_dir_all(parent)?;
    }
    // A file removed between our open and our lock locks nothing anyone else sees: open
    // the new one.
    for _ in 0..3 {
        let file = OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(path)?;
        match file.try_lock() {
            Ok(()) if same_file(&file, path) => return Ok(Some(FileLock { file })),
            Ok(()) => continue,
            Err(TryLockError::WouldBlock) => return Ok(None),
            Err(TryLockError::Error(e)) => return Err(e),
        }
    }
    Ok(None)
}

/// Takes the lock at `path`, waiting up to `wait` for its holder to finish: `Ok(None)`
/// when it is still held then.
pub fn take(path: &Path, wait: Duration) -> io::Result<Option<FileLock>> {
    let start = Instant::now();
    let mut pause = Duration::from_millis(5);
    loop {
        if let Some(lock) = try_take(path)? {
            return Ok(Some(lock));
        }
        if start.elapsed() >= wait {
            return Ok(None);
        }
        std::thread::sleep(pause);
        pause = (pause * 2).min(Duration::from_millis(100));
    }
}

/// Whether the lock at `path` is held (by an open file other than one this call makes).
pub fn held(path: &Path) -> bool {
    path.exists() && matches!(try_take(path), Ok(None))
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
        // Windows cannot remove a file another process has open without delete sharing:
        // the name still names it.
        let _ = (file, path);
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_held_lock_keeps_every_other_open_out_until_dropped() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("locks").join("a.lock");
        let lock = try_take(&path).unwrap().expect("free at first");
        assert!(held(&path));
        assert!(try_take(&path).unwrap().is_none(), "one holder at a time");
        let start = Instant::now();
        assert!(take(&path, Duration::from_millis(60)).unwrap().is_none());
        assert!(start.elapsed() >= Duration::from_millis(60), "it waited");
        drop(lock);
        assert!(!held(&path));
        assert!(take(&path, Duration::ZERO).unwrap().is_some());
    }

    #[test]
    fn work_begun_and_never_finished_is_seen_by_the_next_holder_and_since_when() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a.lock");
        let lock = try_take(&path).unwrap().unwrap();
        assert_eq!(lock.unfinished_since().unwrap(), None, "a new lock");
        // Finished (the guard dropped): nothing for the next holder.
        drop(lock.begin("approve").unwrap());
        drop(lock);
        let lock = try_take(&path).unwrap().unwrap();
        assert_eq!(lock.unfinished_since().unwrap(), None);
        // Cut off: the guard never drops, as in a process killed with the lock held.
        std::mem::forget(lock.begin("restore").unwrap());
        let begun = fs::metadata(&path).unwrap().modified().unwrap();
        drop(lock);
        let lock = try_take(&path).unwrap().unwrap();
        assert_eq!(lock.unfinished_since().unwrap(), Some(begun));
        assert!(
            fs::read_to_string(&path)
                .unwrap()
                .starts_with("restore by process ")
        );
        // Its own work begun again and finished: the leftover is no longer reported.
        drop(lock.begin("undo").unwrap());
        assert_eq!(lock.unfinished_since().unwrap(), None);
    }

    #[test]
    fn a_lock_on_a_removed_file_is_not_a_lock() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a.lock");
        let old = try_take(&path).unwrap().unwrap();
        fs::remove_file(&path).unwrap();
        // The old holder locks a file no one can open any more: the new one is free.
        let new = try_take(&path).unwrap().expect("the new file is free");
        assert!(try_take(&path).unwrap().is_none());
        drop((old, new));
    }
}
