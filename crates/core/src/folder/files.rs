//! File reads and writes for the engine. Paths here are already resolved by
//! [`super::resolve`]; this module only does the I/O, atomically where it writes.
//!
//! The writes go through the [`Fs`] trait so tests can make one fail midway and prove that an
//! apply leaves nothing behind (running as root, a read-only directory is no obstacle).

use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use super::{FileKind, OpenError};

/// Mode for files Tandem creates.
const NEW_FILE_MODE: u32 = 0o644;

/// How [`write_file_atomic`] names its temporary files: `.tandem-write-XXXXXX.tmp`, six
/// random letters or digits in the middle.
const TEMP_PREFIX: &str = ".tandem-write-";
const TEMP_SUFFIX: &str = ".tmp";
const TEMP_RANDOM: usize = 6;

/// What is at a path: nothing, or a file with its bytes and permission bits.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FileState {
    Missing,
    File { bytes: Vec<u8>, mode: u32 },
}

impl FileState {
    pub fn bytes(&self) -> Option<&[u8]> {
        match self {
            FileState::Missing => None,
            FileState::File { bytes, .. } => Some(bytes),
        }
    }

    pub fn mode(&self) -> Option<u32> {
        match self {
            FileState::Missing => None,
            FileState::File { mode, .. } => Some(*mode),
        }
    }

    /// The git blob hash of the content (`None` when missing): the identity a proposal
    /// records for "the file as it was when planned".
    pub fn hash(&self) -> Option<String> {
        self.bytes().map(blob_hash)
    }
}

/// Git's blob id for `bytes`, as 40 hex digits.
pub fn blob_hash(bytes: &[u8]) -> String {
    match git2::Oid::hash_object(git2::ObjectType::Blob, bytes) {
        Ok(oid) => oid.to_string(),
        // Hashing memory cannot fail in libgit2; keep a distinct, never-matching value.
        Err(_) => String::from("unhashable"),
    }
}

/// Reads what is at `path` (resolved: its links already followed). Anything but a regular
/// file is an error, a directory as before, and a named pipe or a device without being read
/// (see [`super::open_regular`]): the engine only edits files.
pub fn read_state(path: &Path) -> io::Result<FileState> {
    match super::read_regular(path) {
        Ok((bytes, meta)) => Ok(FileState::File {
            bytes,
            mode: super::platform::mode(&meta),
        }),
        Err(OpenError::Io(e)) if e.kind() == io::ErrorKind::NotFound => Ok(FileState::Missing),
        Err(OpenError::NotRegular(FileKind::Directory)) => Err(io::Error::new(
            io::ErrorKind::IsADirectory,
            format!("{} is a directory", path.display()),
        )),
        Err(e) => Err(e.into()),
    }
}

/// Writes `bytes` to `path` through a temporary file in the same directory and a rename, so a
/// reader never sees a half-written file. Missing parent directories are created.
pub fn write_file_atomic(path: &Path, bytes: &[u8], mode: Option<u32>) -> io::Result<()> {
    let parent = path.parent().ok_or_else(|| {
        io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("{} has no parent directory", path.display()),
        )
    })?;
    std::fs::create_dir_all(parent)?;
    let mut temp = tempfile::Builder::new()
        .prefix(TEMP_PREFIX)
        .suffix(TEMP_SUFFIX)
        .rand_bytes(TEMP_RANDOM)
        .tempfile_in(parent)?;
    temp.write_all(bytes)?;
    super::platform::set_mode(temp.as_file(), mode.unwrap_or(NEW_FILE_MODE))?;
    crate::failpoint::hit("write-before-rename");
    temp.persist(path).map_err(|e| e.error)?;
    Ok(())
}

/// Whether `name` is a temporary file of [`write_file_atomic`]'s: a write killed between
/// making it and renaming it over its target leaves one.
pub fn is_temp_file_name(name: &str) -> bool {
    name.strip_prefix(TEMP_PREFIX)
        .and_then(|rest| rest.strip_suffix(TEMP_SUFFIX))
        .is_some_and(|random| {
            random.len() == TEMP_RANDOM && random.bytes().all(|b| b.is_ascii_alphanumeric())
        })
}

/// Removes the temporary files of [`write_file_atomic`] made between `since` and `until`
/// under `root`, in the folders the project is made of (those `.gitignore` leaves out,
/// `.git`, and other repositories nested inside are not looked in), but those `keep` says
/// are someone's (a file committed or staged under such a name); returns the ones removed.
/// For a change that was killed: the writes it had under way are what made them.
pub fn remove_temp_files_made(
    root: &Path,
    since: SystemTime,
    until: SystemTime,
    keep: &dyn Fn(&str) -> bool,
) -> Vec<PathBuf> {
    let mut walk = ignore::WalkBuilder::new(root);
    walk.standard_filters(true)
        .hidden(false)
        .require_git(false)
        .follow_links(false)
        .filter_entry(|entry| {
            let nested_repository = entry.depth() > 0
                && entry.file_type().is_some_and(|t| t.is_dir())
                && entry.path().join(".git").exists();
            entry.file_name() != ".git" && !nested_repository
        });
    let mut removed = Vec::new();
    for entry in walk.build().flatten() {
        let is_temp = entry.file_type().is_some_and(|t| t.is_file())
            && entry.file_name().to_str().is_some_and(is_temp_file_name);
        let made = || entry.metadata().ok().and_then(|m| m.modified().ok());
        let rel = || {
            let rel = entry.path().strip_prefix(root).ok()?.to_str()?;
            Some(rel.replace(std::path::MAIN_SEPARATOR, "/"))
        };
        if is_temp
            && made().is_some_and(|t| t >= since && t <= until)
            && rel().is_some_and(|rel| !keep(&rel))
            && std::fs::remove_file(entry.path()).is_ok()
        {
            removed.push(entry.into_path());
        }
    }
    removed
}

/// Removes the file at `path`; a file that is already gone is not an error.
pub fn remove_file(path: &Path) -> io::Result<()> {
    match std::fs::remove_file(path) {
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
        other => other,
    }
}

/// Removes the file at `path` ([`remove_file`]), then the folders that removal emptied, up
/// to `root` (which stays), as git's checkout does: a file added in a new folder leaves
/// nothing behind when it goes.
pub fn remove_file_and_emptied(path: &Path, root: &Path) -> io::Result<()> {
    remove_file(path)?;
    let mut dir = path.parent();
    while let Some(d) = dir.filter(|d| *d != root && d.starts_with(root)) {
        if std::fs::remove_dir(d).is_err() {
            break;
        }
        dir = d.parent();
    }
    Ok(())
}

/// The file operations an apply performs. [`RealFs`] is the disk; tests wrap it to fail.
pub trait Fs: Send + Sync {
    fn write(&self, path: &Path, bytes: &[u8], mode: Option<u32>) -> io::Result<()>;
    fn remove(&self, path: &Path) -> io::Result<()>;
}

#[derive(Debug, Default, Clone, Copy)]
pub struct RealFs;

impl Fs for RealFs {
    fn write(&self, path: &Path, bytes: &[u8], mode: Option<u32>) -> io::Result<()> {
        write_file_atomic(path, bytes, mode)
    }

    fn remove(&self, path: &Path) -> io::Result<()> {
        remove_file(path)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn removing_a_file_removes_the_folders_it_emptied_up_to_the_root() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("project");
        for path in ["gen/r1/new.rs", "gen/keep.rs"] {
            std::fs::create_dir_all(root.join(path).parent().unwrap()).unwrap();
            std::fs::write(root.join(path), "x").unwrap();
        }
        remove_file_and_emptied(&root.join("gen/r1/new.rs"), &root).unwrap();
        assert!(!root.join("gen/r1").exists());
        // A folder with something left in it stays.
        assert!(root.join("gen/keep.rs").is_file());
        remove_file_and_emptied(&root.join("gen/keep.rs"), &root).unwrap();
        assert!(!root.join("gen").exists() && root.is_dir());
        // Already gone: not an error.
        remove_file_and_emptied(&root.join("gen/keep.rs"), &root).unwrap();
    }

    #[test]
    fn atomic_write_keeps_mode_and_leaves_no_temp_files() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a/b/script.sh");
        write_file_atomic(&path, b"#!/bin/sh\n", Some(0o755)).unwrap();
        let state = read_state(&path).unwrap();
        assert_eq!(state.mode(), Some(0o755));
        assert_eq!(state.bytes(), Some(&b"#!/bin/sh\n"[..]));
        write_file_atomic(&path, b"echo hi\n", state.mode()).unwrap();
        assert_eq!(read_state(&path).unwrap().mode(), Some(0o755));
        let names: Vec<_> = std::fs::read_dir(dir.path().join("a/b"))
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names, vec![std::ffi::OsString::from("script.sh")]);
    }

    #[test]
    fn blob_hash_matches_git() {
        // `printf 'hello\n' | git hash-object --stdin`
        assert_eq!(
            blob_hash(b"hello\n"),
            "ce013625030ba8dba906f756967f9e9ca394464a"
        );
        assert_eq!(FileState::Missing.hash(), None);
    }

    #[test]
    fn reading_a_directory_is_an_error() {
        let dir = tempfile::tempdir().unwrap();
        assert!(read_state(dir.path()).is_err());
        assert_eq!(
            read_state(&dir.path().join("nope")).unwrap(),
            FileState::Missing
        );
    }

    /// What an edit is checked and applied against is read without waiting on a pipe.
    #[cfg(unix)]
    #[test]
    fn a_named_pipe_is_an_error_at_once_not_a_read() {
        let dir = tempfile::tempdir().unwrap();
        let pipe = dir.path().join("pipe.rs");
        crate::folder::test_support::fifo(&pipe);
        let read = crate::folder::test_support::promptly(move || read_state(&pipe));
        let message = read.unwrap_err().to_string();
        assert_eq!(message, "a named pipe, not a regular file; it was not read");
    }
}
