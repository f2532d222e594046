//! Locks between processes: an exclusive lock on a file (`flock(2)` on Unix, `LockFileEx` on
//! Windows, through std's `File::try_lock`). The kernel drops it when its holder exits,
//! however it exits, so a killed process never leaves anything locked, and a held lock
//! means its holder is alive and at work. Two opens of one file conflict even within one
//! process, so a lock also keeps two threads apart.
//!
//! A holder that says what it is doing ([`FileLock::begin`]) leaves that on the lock's file
//! until it finishes: a holder killed in between leaves it behind, and the next holder learns
//! from [`FileLock::unfinished`] that work was cut off, when it began and when it took its
//! last step ([`mark_step`]).
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
    /// The work a holder before this one began ([`FileLock::begin`]) and never finished: it
    /// was killed holding the lock. `None` when every holder finished.
    pub fn unfinished(&self) -> io::Result<Option<Unfinished>> {
        let meta = self.file.metadata()?;
        if meta.len() == 0 {
            return Ok(None);
        }
        let last_step = meta.modified()?;
        let mut text = String::new();
        (&self.file).seek(SeekFrom::Start(0))?;
        io::Read::read_to_string(&mut &self.file, &mut text)?;
        let began = (text
            .rsplit_once(" since ")
            .and_then(|(_, ns)| ns.trim().parse().ok()))
        .map(|ns| SystemTime::UNIX_EPOCH + Duration::from_nanos(ns))
        .map_or(last_step, |began| began.min(last_step));
        let what = text.split(" by process ").next().unwrap_or_default();
        Ok(Some(Unfinished {
            what: what.to_string(),
            began,
            last_step,
        }))
    }

    /// Says on the lock's file that work is in flight (`what`, with this process's id and
    /// the time) until the returned guard drops. A process killed before that leaves it
    /// there. Until then, [`mark_step`] on this thread stamps the file with the time of
    /// the work's latest step.
    pub fn begin(&self, what: &str) -> io::Result<InFlight<'_>> {
        let began = SystemTime::now()
            .duration_since(SystemTime::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos());
        let step = Step {
            file: self.file.try_clone()?,
            what: what.to_string(),
            began,
        };
        step.stamp()?;
        STEP.with_borrow_mut(|current| *current = Some(step));
        Ok(InFlight { file: &self.file })
    }
}

/// The work in flight on a thread: its lock's file, what it is doing now, when it began.
struct Step {
    file: File,
    what: String,
    began: u128,
}

impl Step {
    /// Writes the line that says so (a write: the file's time becomes the kernel's now).
    fn stamp(&self) -> io::Result<()> {
        let line = format!(
            "{} by process {} since {}\n",
            self.what,
            std::process::id(),
            self.began
        );
        let mut file = &self.file;
        file.set_len(0)?;
        file.seek(SeekFrom::Start(0))?;
        file.write_all(line.as_bytes())
    }
}

/// What a holder killed at work left: when its work began, and when it took its latest step
/// ([`mark_step`]), as the lock file's own modification time, so on the clock and at the
/// granularity of the times of the files that step made.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unfinished {
    /// What it said it was doing last ([`FileLock::begin`], [`note_step`]).
    pub what: String,
    pub began: SystemTime,
    pub last_step: SystemTime,
}

thread_local! {
    /// The work in flight on this thread.
    static STEP: std::cell::RefCell<Option<Step>> = const { std::cell::RefCell::new(None) };
}

/// Stamps the lock file of the work in flight on this thread (if any) with the time of a
/// step about to be taken, such as a write through git's lock files: a process killed in
/// that step leaves files made right after the stamp, which tells them from files made by
/// anyone later. The line is written again (a write, so the time is the kernel's, as the
/// step's files get).
pub fn mark_step() {
    STEP.with_borrow(|step| {
        if let Some(step) = step {
            let _ = step.stamp();
        }
    });
}

/// [`mark_step`], saying from now on that the work in flight on this thread is doing
/// `what`: the next holder reads it if this process is killed before the work ends.
pub fn note_step(what: &str) {
    STEP.with_borrow_mut(|step| {
        if let Some(step) = step {
            step.what = what.to_string();
            let _ = step.stamp();
        }
    });
}

/// Work in flight under a [`FileLock`]; dropping it says the work finished (however it
/// ended: an error or a panic leaves nothing half-way that a kill would).
#[derive(Debug)]
pub struct InFlight<'a> {
    file: &'a File,
}

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        STEP.with_borrow_mut(|step| *step = None);
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
            .read(true)
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
    fn work_begun_and_never_finished_is_seen_by_the_next_holder_with_its_times() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a.lock");
        let lock = try_take(&path).unwrap().unwrap();
        assert_eq!(lock.unfinished().unwrap(), None, "a new lock");
        // Finished (the guard dropped): nothing for the next holder.
        drop(lock.begin("approve").unwrap());
        drop(lock);
        let lock = try_take(&path).unwrap().unwrap();
        assert_eq!(lock.unfinished().unwrap(), None);
        // Cut off: the guard never drops, as in a process killed with the lock held.
        let before = SystemTime::now();
        std::mem::forget(lock.begin("restore").unwrap());
        let begun = fs::metadata(&path).unwrap().modified().unwrap();
        std::thread::sleep(Duration::from_millis(30));
        mark_step();
        let stepped = fs::metadata(&path).unwrap().modified().unwrap();
        assert!(stepped > begun, "a step stamps the file");
        STEP.with_borrow_mut(|step| *step = None);
        drop(lock);
        let lock = try_take(&path).unwrap().unwrap();
        let left = lock.unfinished().unwrap().expect("cut off");
        assert_eq!(left.what, "restore");
        assert_eq!(left.last_step, stepped);
        assert!(left.began >= before && left.began < stepped, "{left:?}");
        assert!(
            fs::read_to_string(&path)
                .unwrap()
                .starts_with("restore by process ")
        );
        // A step that says what it does is read back.
        let in_flight = lock.begin("add").unwrap();
        note_step("git init");
        let noted = fs::read_to_string(&path).unwrap();
        assert!(noted.starts_with("git init by process "), "{noted}");
        std::mem::forget(in_flight);
        STEP.with_borrow_mut(|step| *step = None);
        drop(lock);
        let lock = try_take(&path).unwrap().unwrap();
        assert_eq!(
            lock.unfinished().unwrap().expect("cut off").what,
            "git init"
        );
        // Its own work begun again and finished: the leftover is no longer reported, and a
        // step with no work in flight stamps nothing.
        drop(lock.begin("undo").unwrap());
        assert_eq!(lock.unfinished().unwrap(), None);
        mark_step();
        assert_eq!(fs::metadata(&path).unwrap().len(), 0);
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
