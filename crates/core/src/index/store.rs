//! The indexes of the projects, one per root, opened once per process: on disk in the data
//! directory (`index/<hash of the root>.sqlite`), so that a restart and every other process
//! use what was built, or in memory without a data directory.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use super::{Changes, CodeIndex, Refreshed, Result};
use crate::folder::context::Walk;
use crate::folder::journal::Journal;

/// The longest a refresh without a deadline waits for another process's (a first build
/// of a big project takes minutes).
pub const REFRESH_WAIT: Duration = Duration::from_secs(600);

/// The projects' indexes of this process, each opened when first asked for.
#[derive(Default)]
pub struct Indexes {
    dir: Option<PathBuf>,
    projects: Mutex<HashMap<PathBuf, Arc<Mutex<CodeIndex>>>>,
}

impl Indexes {
    /// Indexes stored under `data_dir/index`; in memory only without a data directory.
    pub fn new(data_dir: Option<&Path>) -> Self {
        Indexes {
            dir: data_dir.map(|d| d.join("index")),
            projects: Mutex::default(),
        }
    }

    /// The index of the project at `root` (canonical), opened on first use. A stored index
    /// that cannot be opened (damaged) is deleted and built again: it is derived from the
    /// files. When even that fails, the index lives in memory for this process.
    pub fn project(&self, root: &Path) -> Result<Arc<Mutex<CodeIndex>>> {
        let mut projects = lock(&self.projects);
        if let Some(found) = projects.get(root) {
            return Ok(Arc::clone(found));
        }
        let index = match &self.dir {
            Some(dir) => {
                let path = dir.join(db_name(root));
                match CodeIndex::open(&path) {
                    Ok(index) => index,
                    Err(_) => {
                        remove_store(&path);
                        CodeIndex::open(&path).or_else(|_| CodeIndex::in_memory())?
                    }
                }
            }
            None => CodeIndex::in_memory()?,
        };
        let index = Arc::new(Mutex::new(index));
        projects.insert(root.to_path_buf(), Arc::clone(&index));
        Ok(index)
    }

    /// The lock that keeps refreshes of the project's stored index one at a time across
    /// processes, taken by `deadline` (without one, within [`REFRESH_WAIT`]): `None` when
    /// another process still holds it then. SQLite alone would let two builders take turns
    /// round by round until one gives up ("database is locked"), and a turn wait for a
    /// build. Readers need no lock. In memory (no data directory), nothing to keep apart.
    fn refreshing(
        &self,
        root: &Path,
        deadline: Option<Instant>,
    ) -> Result<Option<Option<crate::lockfile::FileLock>>> {
        let Some(dir) = &self.dir else {
            return Ok(Some(None));
        };
        let wait = deadline.map_or(REFRESH_WAIT, |d| {
            d.saturating_duration_since(Instant::now())
        });
        let path = dir.join(format!("{}.refresh.lock", root_hash(root)));
        Ok(crate::lockfile::take(&path, wait)?.map(Some))
    }

    /// Forgets the index of the project at `root` when `error` says its store is damaged (a
    /// page of it corrupt: opening reads only its header, so the damage shows when the page
    /// is read): its files are deleted and the next use builds it again, as for a store that
    /// cannot be opened. Says whether it did.
    pub fn forget_if_damaged(&self, root: &Path, error: &super::IndexError) -> bool {
        if !error.is_damage() {
            return false;
        }
        lock(&self.projects).remove(root);
        if let Some(dir) = &self.dir {
            remove_store(&dir.join(db_name(root)));
        }
        true
    }

    /// What changed in the project at `root` since its index last looked, as its change
    /// journal says (asked before the walk: whether the walk must ask every file's stamp
    /// depends on it). Without an answer (no keeper yet, none can be), a keeper is started
    /// for the next turns, and this one compares every stamp.
    pub fn changes(&self, root: &Path) -> Changes {
        let Ok(index) = self.project(root) else {
            return Changes::unknown();
        };
        let Ok(stored) = super::tables::journal(&lock(&index).db) else {
            return Changes::unknown();
        };
        let journal =
            (self.dir.as_ref()).and_then(|dir| Journal::new(root, dir.join(journal_name(root))));
        let answer = journal.as_ref().and_then(|journal| {
            let answer = journal.ask(stored.token);
            if answer.is_none() {
                journal.start_keeper();
            }
            answer
        });
        Changes { stored, answer }
    }

    /// The walk an index refresh needs: every file's stamp asked on the walker's threads,
    /// unless `changes` say which files changed.
    pub fn walk(
        root: &Path,
        options: &crate::folder::context::ContextOptions,
        changes: &Changes,
    ) -> Result<Walk, crate::folder::context::ContextError> {
        match changes.needs_stamps() {
            true => Walk::stamped(root, options),
            false => Walk::new(root, options),
        }
    }

    /// Asks `query` of the index of the project at `root`, brought up to date now (no
    /// deadline) with a walk of its own, with `options` (the project's include and exclude):
    /// for a question that needs the index, not the walk. A store the question finds damaged
    /// is forgotten: the next question builds it again.
    pub fn ask<T>(
        &self,
        root: &Path,
        options: &crate::folder::context::ContextOptions,
        query: impl FnOnce(&CodeIndex) -> Result<T>,
    ) -> Result<T> {
        let changes = self.changes(root);
        let walk = Indexes::walk(root, options, &changes)?;
        let (index, _) = self.refreshed(root, &walk, &changes, None)?;
        let answer = query(&lock(&index));
        if let Err(e) = &answer {
            self.forget_if_damaged(root, e);
        }
        answer
    }

    /// The index of the project at `root` brought up to date with `walk` (its files, with
    /// their stamps when it asked them) and `changes`, reading until `deadline`. Every
    /// caller walks with the project's own include and exclude
    /// ([`ProjectSettings::context_options`](crate::store::ProjectSettings::context_options)),
    /// so that no refresh puts back what another one dropped.
    pub fn refreshed(
        &self,
        root: &Path,
        walk: &Walk,
        changes: &Changes,
        deadline: Option<Instant>,
    ) -> Result<(Arc<Mutex<CodeIndex>>, Refreshed)> {
        let Some(_refreshing) = self.refreshing(root, deadline)? else {
            // Another process is at it: this turn uses the index as it is (what changed
            // since is read by a later refresh).
            return Ok((self.project(root)?, Refreshed::default()));
        };
        self.again_if_damaged(root, |index| {
            let done = lock(&index).refresh_until(root, walk.stamped_paths(), changes, deadline);
            done.map(|done| (index, done))
        })
    }

    /// [`refreshed`](Self::refreshed) as one of the short refreshes of a build, reading the
    /// next round ahead (see [`CodeIndex::refresh_reading_ahead`]).
    pub fn refreshed_reading_ahead(
        &self,
        root: &Path,
        walk: &Walk,
        changes: &Changes,
        deadline: Option<Instant>,
    ) -> Result<Refreshed> {
        // A build waits for another process's refresh (a round of its own would only find
        // what that one reads).
        let Some(_refreshing) = self.refreshing(root, None)? else {
            return Err(super::IndexError::Busy);
        };
        self.again_if_damaged(root, |index| {
            lock(&index).refresh_reading_ahead(root, walk.stamped_paths(), changes, deadline)
        })
    }

    /// `refresh` of the project's index at `root`, and once more on one built again from
    /// nothing when it finds the store damaged.
    fn again_if_damaged<T>(
        &self,
        root: &Path,
        refresh: impl Fn(Arc<Mutex<CodeIndex>>) -> Result<T>,
    ) -> Result<T> {
        match refresh(self.project(root)?) {
            Err(e) if self.forget_if_damaged(root, &e) => refresh(self.project(root)?),
            done => done,
        }
    }
}

/// Locks `mutex`; a panic while it was held can only have left a write undone (SQLite rolls
/// it back), which the next refresh does again.
pub fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// Deletes the store at `path` with its write-ahead log.
fn remove_store(path: &Path) {
    for suffix in ["", "-wal", "-shm"] {
        let mut name = path.to_path_buf().into_os_string();
        name.push(suffix);
        let _ = std::fs::remove_file(name);
    }
}

/// The store's file name for a project root: a hash of its path.
fn db_name(root: &Path) -> String {
    format!("{}.sqlite", root_hash(root))
}

/// The name of the socket of the project's change journal, beside its index. The number is
/// the journal's wire version: a keeper left running by an older Tandem is not asked (it
/// leaves once nobody asks it).
fn journal_name(root: &Path) -> String {
    format!("{}-1.journal", root_hash(root))
}

fn root_hash(root: &Path) -> String {
    let hash = crate::folder::blob_hash(root.to_string_lossy().as_bytes());
    hash[..hash.len().min(16)].to_string()
}

#[cfg(test)]
mod tests;
