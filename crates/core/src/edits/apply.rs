//! Applying a plan: choose what to apply (whole plan, some files, some hunks), then write it
//! all-or-nothing. Every touched path is re-checked against the hash recorded when planned;
//! writes go through temporary files and renames; on any failure every touched path is put
//! back as it was.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::diff::apply_hunks;
use super::plan::{EditPlan, FileChange, FileChangeKind};
use crate::folder::{FileState, Fs, read_state};

/// What the person chose to apply. `files` lists paths (the new path of a rename); `hunks`
/// `None` means the whole file.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct Selection {
    pub files: Vec<FileSelection>,
    pub dependencies: bool,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FileSelection {
    pub path: String,
    pub hunks: Option<Vec<usize>>,
}

/// One path's intended end state, with the hash it must still have before we touch it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PathWrite {
    pub rel: String,
    pub abs: PathBuf,
    pub expected: Option<String>,
    pub new: Option<(Vec<u8>, u32)>,
}

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum SelectionError {
    #[error("the proposal has no file {0}")]
    UnknownFile(String),
    #[error("{path} cannot be applied: {reason}")]
    NotApplicable { path: String, reason: String },
    #[error("{path} has no hunk {hunk} (it has {count})")]
    UnknownHunk {
        path: String,
        hunk: usize,
        count: usize,
    },
}

#[derive(Debug, thiserror::Error)]
pub enum ApplyError {
    #[error("changed on disk since the proposal was made: {}", .0.join(", "))]
    Conflict(Vec<String>),
    #[error("could not write {path}: {source}; every file was restored and nothing was committed")]
    RolledBack {
        path: String,
        source: std::io::Error,
    },
    #[error(
        "could not write {path}: {source}; restoring also failed for {}: check these files",
        failed.join(", ")
    )]
    RollbackIncomplete {
        path: String,
        source: std::io::Error,
        failed: Vec<String>,
    },
}

impl EditPlan {
    /// The path writes for `selection` (`None`: everything). Files with errors or conflicts
    /// can never be selected.
    pub fn writes(&self, selection: Option<&Selection>) -> Result<Vec<PathWrite>, SelectionError> {
        let chosen: Vec<(&FileChange, Option<&[usize]>)> = match selection {
            None => self.files.iter().map(|f| (f, None)).collect(),
            Some(selection) => selection
                .files
                .iter()
                .map(|choice| {
                    let file = self
                        .file(&choice.path)
                        .ok_or_else(|| SelectionError::UnknownFile(choice.path.clone()))?;
                    Ok((file, choice.hunks.as_deref()))
                })
                .collect::<Result<_, _>>()?,
        };
        let mut writes = Vec::new();
        for (file, hunks) in chosen {
            if let Some(reason) = file.error.as_ref().or(file.conflict.as_ref()) {
                return Err(SelectionError::NotApplicable {
                    path: file.path.clone(),
                    reason: reason.clone(),
                });
            }
            self.file_writes(file, hunks, &mut writes)?;
        }
        Ok(writes)
    }

    fn file_writes(
        &self,
        file: &FileChange,
        hunks: Option<&[usize]>,
        out: &mut Vec<PathWrite>,
    ) -> Result<(), SelectionError> {
        if let Some(&bad) = hunks
            .unwrap_or_default()
            .iter()
            .find(|&&h| h >= file.hunks.len())
        {
            return Err(SelectionError::UnknownHunk {
                path: file.path.clone(),
                hunk: bad,
                count: file.hunks.len(),
            });
        }
        let partial = hunks.filter(|chosen| chosen.len() < file.hunks.len());
        let new = match (partial, &file.kind) {
            // No hunk chosen: the file is left out. (A new or deleted file is one change: with
            // any hunk chosen it is applied whole, by the last arm.)
            (
                Some([]),
                FileChangeKind::Added | FileChangeKind::Deleted | FileChangeKind::Modified,
            ) => return Ok(()),
            (Some(chosen), FileChangeKind::Modified | FileChangeKind::Renamed) if !file.binary => {
                let old = file.old_text.as_deref().unwrap_or_default();
                let new = file.new_text.as_deref().unwrap_or_default();
                let mode = file.new_content.as_ref().map_or(0o644, |(_, m)| *m);
                Some((
                    apply_hunks(old, new, &file.hunks, chosen).into_bytes(),
                    mode,
                ))
            }
            _ => file.new_content.clone(),
        };
        if let Some(old_path) = &file.old_path {
            out.push(self.path_write(old_path, None));
        }
        out.push(self.path_write(&file.path, new));
        Ok(())
    }

    fn path_write(&self, rel: &str, new: Option<(Vec<u8>, u32)>) -> PathWrite {
        PathWrite {
            rel: rel.to_string(),
            abs: self.root.join(rel),
            expected: self.base.get(rel).cloned().flatten(),
            new,
        }
    }
}

/// Everything an apply changed, to undo it or to commit it.
#[derive(Debug)]
pub struct Applied {
    /// Each touched path with what it held before.
    pub before: Vec<(PathWrite, FileState)>,
    created_dirs: Vec<PathBuf>,
}

impl Applied {
    /// Puts every touched path back as it was. Returns the paths that could not be restored.
    pub fn rollback(&self, fs: &dyn Fs) -> Vec<String> {
        let mut failed = Vec::new();
        for (write, before) in self.before.iter().rev() {
            let result = match before {
                FileState::Missing => fs.remove(&write.abs),
                FileState::File { bytes, mode } => fs.write(&write.abs, bytes, Some(*mode)),
            };
            if result.is_err() {
                failed.push(write.rel.clone());
            }
        }
        for dir in self.created_dirs.iter().rev() {
            // Only empty directories go; a failure here loses nothing.
            let _ = std::fs::remove_dir(dir);
        }
        failed
    }
}

/// Writes `writes` atomically as a set: removals first (a rename's source may be in the way of
/// a new directory), then files. Nothing is left changed if any step fails.
pub fn apply_writes(fs: &dyn Fs, writes: &[PathWrite]) -> Result<Applied, ApplyError> {
    check_writes(writes)?.apply(fs)
}

/// The paths a set of writes will touch, each as it is now, every one found as the plan
/// expects: what [`Checked::apply`] writes over, known before anything is written.
#[derive(Debug)]
pub struct Checked {
    before: Vec<(PathWrite, FileState)>,
}

/// Reads the state of every path `writes` touch; a path not as the plan expects is a conflict.
pub fn check_writes(writes: &[PathWrite]) -> Result<Checked, ApplyError> {
    let mut before = Vec::with_capacity(writes.len());
    let mut conflicts = Vec::new();
    for write in writes {
        match read_state(&write.abs) {
            Ok(state) if state.hash() == write.expected && !through_link(write) => {
                before.push((write.clone(), state))
            }
            _ => conflicts.push(write.rel.clone()),
        }
    }
    if !conflicts.is_empty() {
        return Err(ApplyError::Conflict(conflicts));
    }
    Ok(Checked { before })
}

/// Whether a folder between the project and `write` is a symbolic link leading out of the
/// project: a command may have put one in place of a folder since the proposal was made,
/// and writing through it would land outside.
fn through_link(write: &PathWrite) -> bool {
    let folders = Path::new(&write.rel).components().count().saturating_sub(1);
    let root = write
        .abs
        .ancestors()
        .nth(folders + 1)
        .and_then(|r| r.canonicalize().ok());
    write
        .abs
        .ancestors()
        .skip(1)
        .take(folders)
        .filter(|dir| std::fs::symlink_metadata(dir).is_ok_and(|m| m.file_type().is_symlink()))
        .any(|dir| match (dir.canonicalize(), &root) {
            (Ok(real), Some(root)) => !real.starts_with(root),
            _ => true,
        })
}

impl Checked {
    /// Each path with what it holds now.
    pub fn before(&self) -> &[(PathWrite, FileState)] {
        &self.before
    }

    /// Writes them as a set (see [`apply_writes`]).
    pub fn apply(self, fs: &dyn Fs) -> Result<Applied, ApplyError> {
        let before = self.before;
        let mut created_dirs = Vec::new();
        for (write, _) in before.iter().filter(|(w, _)| w.new.is_some()) {
            if let Some(parent) = write.abs.parent() {
                missing_ancestors(parent, &mut created_dirs);
            }
        }
        let mut applied = Applied {
            before: Vec::with_capacity(before.len()),
            created_dirs,
        };
        let ordered = before
            .iter()
            .filter(|(w, _)| w.new.is_none())
            .chain(before.iter().filter(|(w, _)| w.new.is_some()));
        for (write, state) in ordered {
            // Record first: a write that fails halfway may already have replaced the file.
            applied.before.push((write.clone(), state.clone()));
            let result = match &write.new {
                None => fs.remove(&write.abs),
                Some((bytes, mode)) => fs.write(&write.abs, bytes, Some(*mode)),
            };
            if result.is_ok() {
                crate::failpoint::hit("apply-after-files");
            }
            if let Err(source) = result {
                let failed = applied.rollback(fs);
                let path = write.rel.clone();
                return Err(if failed.is_empty() {
                    ApplyError::RolledBack { path, source }
                } else {
                    ApplyError::RollbackIncomplete {
                        path,
                        source,
                        failed,
                    }
                });
            }
        }
        Ok(applied)
    }
}

/// Directories that do not exist yet between `dir` and the first existing ancestor,
/// outermost first.
fn missing_ancestors(dir: &Path, out: &mut Vec<PathBuf>) {
    let mut missing = Vec::new();
    let mut current = Some(dir);
    while let Some(path) = current {
        if path.exists() {
            break;
        }
        missing.push(path.to_path_buf());
        current = path.parent();
    }
    for path in missing.into_iter().rev() {
        if !out.contains(&path) {
            out.push(path);
        }
    }
}
