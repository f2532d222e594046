//! A change of the working tree in flight. Before Tandem writes the files of a commit it is
//! about to land (an approved proposal, a restored version), it records that commit in
//! `.git/tandem-landing`; the record goes once HEAD points at the commit. A process killed in
//! between leaves the record behind, and [`recover`] (at the next start, and before the next
//! change) puts back the files it had written, so the working tree is never left half-way:
//! it is HEAD's, or HEAD's with the whole change committed.

use std::fs;
use std::io::{self, Write};
use std::path::{Path, PathBuf};

use git2::{FileMode, ObjectType, Oid, Repository};

use super::{Result, VcsError};
use crate::folder::{
    OpenError, is_temp_file_name, read_regular, remove_file_and_emptied, write_file_atomic,
};

const RECORD: &str = "tandem-landing";

fn record(repo: &Repository) -> PathBuf {
    repo.path().join(RECORD)
}

fn io_error(path: &Path) -> impl FnOnce(io::Error) -> VcsError + '_ {
    move |source| VcsError::Io {
        path: path.to_path_buf(),
        source,
    }
}

/// Records that the files of `target` (a commit not yet in HEAD's history, whose first parent
/// holds the working tree as it is now) are about to be written. Durable before it returns.
pub fn begin(repo: &Repository, target: Oid) -> Result<()> {
    let path = record(repo);
    let write = || -> io::Result<()> {
        let mut temp = tempfile::NamedTempFile::new_in(repo.path())?;
        temp.write_all(format!("{target}\n").as_bytes())?;
        temp.as_file().sync_all()?;
        temp.persist(&path).map_err(|e| e.error)?;
        Ok(())
    };
    write().map_err(io_error(&path))
}

/// The change landed (HEAD points at it): forget the record.
pub fn finish(repo: &Repository) -> Result<()> {
    let path = record(repo);
    match fs::remove_file(&path) {
        Err(e) if e.kind() != io::ErrorKind::NotFound => Err(io_error(&path)(e)),
        _ => Ok(()),
    }
}

/// What [`recover`] found and did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Recovered {
    /// The commit that was being landed (`None` when the record was unreadable).
    pub commit: Option<String>,
    /// It had landed: only the record (and the index) were left to tidy.
    pub landed: bool,
    /// Files put back as HEAD has them.
    pub restored: Vec<String>,
    /// Files changed since by something else: left as they are.
    pub kept: Vec<String>,
}

/// Finishes or undoes a change a killed process left in flight; `None` when there was none.
/// Landed: the index is brought up to date. Not landed: every file the change touched that
/// holds the change's version gets the version from before it back (added files removed,
/// with the folders that leaves empty),
/// and the temporary files of interrupted writes are removed. A file holding anything else
/// was changed since by someone else and is left alone.
pub fn recover(repo: &Repository) -> Result<Option<Recovered>> {
    let path = record(repo);
    let text = match fs::read_to_string(&path) {
        Ok(text) => text,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(io_error(&path)(e)),
    };
    // Folders changed since the record was written were made (or emptied) by the landing.
    let begun = fs::metadata(&path)
        .and_then(|m| m.modified())
        .map_err(io_error(&path))?;
    let target = Oid::from_str(text.trim())
        .ok()
        .and_then(|oid| repo.find_commit(oid).ok());
    let Some(target) = target else {
        // Written by no Tandem that got far enough to make the commit: nothing was touched.
        finish(repo)?;
        return Ok(Some(Recovered::default()));
    };
    let workdir = repo
        .workdir()
        .ok_or_else(|| VcsError::Bare(repo.path().to_path_buf()))?
        .to_path_buf();
    let landed = super::in_history(repo, &target.id().to_string())?;
    let before = target.parent(0).ok().map(|p| p.tree()).transpose()?;
    let diff = repo.diff_tree_to_tree(before.as_ref(), Some(&target.tree()?), None)?;
    let mut recovered = Recovered {
        commit: Some(target.id().to_string()),
        landed,
        ..Recovered::default()
    };
    let mut paths = Vec::new();
    for delta in diff.deltas() {
        let Some(rel) = delta
            .new_file()
            .path()
            .or(delta.old_file().path())
            .and_then(Path::to_str)
        else {
            continue;
        };
        let abs = workdir.join(rel);
        if let Some(dir) = abs.parent() {
            remove_temp_files(dir);
        }
        paths.push(rel.to_string());
        if landed {
            continue;
        }
        let (old, new) = (delta.old_file(), delta.new_file());
        let current = blob_id(&abs)?;
        let old_id = old.exists().then(|| old.id());
        let new_id = new.exists().then(|| new.id());
        if current == old_id {
            if old_id.is_none() {
                // Killed between making the folders of an added file and writing it.
                remove_emptied_since(&abs, &workdir, begun);
            }
            continue;
        }
        let regular = |mode: FileMode| matches!(mode, FileMode::Blob | FileMode::BlobExecutable);
        // Only regular files are put back by hand (a link or submodule is reported kept).
        let special = old.exists() && !regular(old.mode());
        if current != new_id || special {
            recovered.kept.push(rel.to_string());
            continue;
        }
        match old_id {
            Some(id) => {
                let blob = repo.find_blob(id)?;
                let mode = match old.mode() {
                    FileMode::BlobExecutable => 0o755,
                    _ => 0o644,
                };
                write_file_atomic(&abs, blob.content(), Some(mode)).map_err(io_error(&abs))?;
            }
            None => remove_file_and_emptied(&abs, &workdir).map_err(io_error(&abs))?,
        }
        recovered.restored.push(rel.to_string());
    }
    // A kept file is the person's work in progress: not staged on their behalf.
    let refs: Vec<&str> = paths
        .iter()
        .filter(|p| !recovered.kept.contains(p))
        .map(String::as_str)
        .collect();
    super::refresh_index(repo, &refs)?;
    finish(repo)?;
    Ok(Some(recovered))
}

/// The git blob id of the file at `abs`; `None` when there is no regular file. It is read
/// through the handle whose kind was checked: a named pipe put there would block the
/// recovery for ever.
pub(super) fn blob_id(abs: &Path) -> Result<Option<Oid>> {
    match read_regular(abs) {
        Ok((bytes, _)) => Ok(Some(Oid::hash_object(ObjectType::Blob, &bytes)?)),
        Err(OpenError::NotRegular(_)) => Ok(None),
        Err(OpenError::Io(e)) if e.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(OpenError::Io(e)) => Err(io_error(abs)(e)),
    }
}

/// Removes the empty folders above `path`, up to `root`, that changed after `begun`: the
/// ones the landing made. An empty folder that was there before is left alone. A folder that
/// is not there is passed over: a kill inside the making of the folders (`a` made, `a/b` not
/// yet) leaves the upper ones only.
fn remove_emptied_since(path: &Path, root: &Path, begun: std::time::SystemTime) {
    let mut dir = path.parent();
    while let Some(d) = dir.filter(|d| *d != root && d.starts_with(root)) {
        match fs::symlink_metadata(d) {
            Err(e) if e.kind() == io::ErrorKind::NotFound => {}
            Ok(meta) if meta.is_dir() && meta.modified().is_ok_and(|t| t >= begun) => {
                if fs::remove_dir(d).is_err() {
                    break;
                }
            }
            _ => break,
        }
        dir = d.parent();
    }
}

/// Removes what an interrupted atomic write leaves: `.tandem-write-*.tmp` files (Tandem's own
/// temporary names) in `dir`.
fn remove_temp_files(dir: &Path) {
    let Ok(entries) = fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        if entry.file_name().to_str().is_some_and(is_temp_file_name) {
            let _ = fs::remove_file(entry.path());
        }
    }
}
