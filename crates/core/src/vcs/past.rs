//! What past commits said and changed, read newest first from HEAD: the files the last few
//! changed (what the person is working on), and per commit its subject, files and moves (what
//! the code index's history learns).

use std::collections::{BinaryHeap, HashMap, HashSet};
use std::path::Path;

use git2::{Delta, Repository};

use super::{Result, VcsError, head_commit};

/// Commits looked at for [`recently_edited`].
const RECENT_COMMITS: usize = 5;
/// A commit changing more files than this is a mass change (a reformat, a rename of a folder,
/// vendored code): it says nothing of what the person is working on.
const MASS_CHANGE_FILES: usize = 50;

/// Files the last few commits on HEAD added or changed, newest first, each once: likely what
/// the person is working on. A commit without a parent (the project's import, every file at
/// once) and a mass change are passed over, as are files since deleted.
pub fn recently_edited(repo: &Repository) -> Result<Vec<String>> {
    let Some(head) = head_commit(repo)? else {
        return Ok(Vec::new());
    };
    let mut seen = HashSet::new();
    let mut paths = Vec::new();
    for commit in newest_first(repo, head).take(RECENT_COMMITS) {
        let commit = commit?;
        let Ok(parent) = commit.parent(0) else {
            continue;
        };
        let mut changed = Vec::new();
        let within = changed_files_under(
            repo,
            Some(&parent.tree()?),
            &commit.tree()?,
            "",
            &mut changed,
        )?;
        if within {
            paths.extend(changed.into_iter().filter(|path| seen.insert(path.clone())));
        }
    }
    Ok(paths)
}

/// The newest `limit` commits reachable from HEAD, newest first: their ids only (nothing
/// else of them is read). None while the branch is unborn.
pub fn newest_commits(repo: &Repository, limit: usize) -> Result<Vec<String>> {
    let Some(head) = head_commit(repo)? else {
        return Ok(Vec::new());
    };
    (newest_first(repo, head).take(limit))
        .map(|commit| commit.map(|c| c.id().to_string()))
        .collect()
}

/// What one commit says and changed, as the code index's history learns it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CommitChanges {
    /// Its message's first line.
    pub subject: String,
    /// The files it added or changed, in path order. None for the project's import (no
    /// parent), a merge (its files came with the commits merged) or a mass change (see
    /// [`MASS_CHANGE_FILES`]): they say nothing of which files a subject is about.
    pub files: Vec<String>,
    /// The files it moved, (from, to) in the order of `to`, as git finds renames: the same
    /// or mostly the same content at a new path. A mass change's moves count too (a folder
    /// moved is where following a file's past matters most); a merge's do not.
    pub moved: Vec<(String, String)>,
}

/// A commit whose added files times deleted files is more than this has its moves found by
/// identical content only: comparing every added file with every deleted one costs their
/// product (a folder of 100 files moved and edited is still followed).
const SIMILAR_PAIRS: usize = 100 * 100;

/// What the commit `id` says and changed (see [`CommitChanges`]).
pub fn commit_changes(repo: &Repository, id: &str) -> Result<CommitChanges> {
    let commit = git2::Oid::from_str(id)
        .and_then(|oid| repo.find_commit(oid))
        .map_err(|_| VcsError::UnknownCommit(id.to_string()))?;
    let subject = String::from_utf8_lossy(commit.summary_bytes().unwrap_or_default()).into_owned();
    if commit.parent_count() != 1 {
        return Ok(CommitChanges {
            subject,
            ..CommitChanges::default()
        });
    }
    let (old, new) = (commit.parent(0)?.tree()?, commit.tree()?);
    let mut files = Vec::new();
    let within = changed_files_under(repo, Some(&old), &new, "", &mut files)?;
    // Only a commit that added a path may have moved a file there.
    let added = !within || files.iter().any(|f| old.get_path(Path::new(f)).is_err());
    let moved = match added {
        true => moves(repo, &old, &new)?,
        false => Vec::new(),
    };
    if !within {
        files.clear();
    }
    Ok(CommitChanges {
        subject,
        files,
        moved,
    })
}

/// The files moved from `old` to `new`: (from, to), in the order of `to`. Paths that are not
/// UTF-8 are left out, as [`changed_files_under`] leaves them out.
fn moves(
    repo: &Repository,
    old: &git2::Tree<'_>,
    new: &git2::Tree<'_>,
) -> Result<Vec<(String, String)>> {
    let mut diff = repo.diff_tree_to_tree(Some(old), Some(new), None)?;
    let path = |file: git2::DiffFile<'_>| file.path().and_then(Path::to_str).map(str::to_string);
    let mut moved = Vec::new();
    let count = |status| diff.deltas().filter(|d| d.status() == status).count();
    if count(Delta::Added) * count(Delta::Deleted) <= SIMILAR_PAIRS {
        let mut find = git2::DiffFindOptions::new();
        find.renames(true);
        diff.find_similar(Some(&mut find))?;
        for delta in diff.deltas().filter(|d| d.status() == Delta::Renamed) {
            if let (Some(from), Some(to)) = (path(delta.old_file()), path(delta.new_file())) {
                moved.push((from, to));
            }
        }
    } else {
        // Identical content only: each deleted file's content matched to a file added with it.
        let mut gone: HashMap<git2::Oid, Vec<String>> = HashMap::new();
        for delta in diff.deltas().filter(|d| d.status() == Delta::Deleted) {
            if let Some(from) = path(delta.old_file()) {
                gone.entry(delta.old_file().id()).or_default().push(from);
            }
        }
        for delta in diff.deltas().filter(|d| d.status() == Delta::Added) {
            let from = gone.get_mut(&delta.new_file().id()).and_then(Vec::pop);
            if let (Some(from), Some(to)) = (from, path(delta.new_file())) {
                moved.push((from, to));
            }
        }
    }
    moved.sort_by(|a, b| a.1.cmp(&b.1));
    Ok(moved)
}

/// The commits reachable from `head`, newest first as `git log` lists them (by commit time
/// among those whose children came already), each read only when it is asked for: a walk
/// sorted by libgit2 reads the whole history before it gives the first commit, which on a
/// long history (vite's 9,600 commits) cost a turn tens of milliseconds for five commits.
/// A parent that is not there (a shallow clone's edge) ends that line of history.
pub(super) fn newest_first<'r>(
    repo: &'r Repository,
    head: git2::Commit<'r>,
) -> impl Iterator<Item = Result<git2::Commit<'r>>> + 'r {
    let mut seen = HashSet::from([head.id()]);
    let mut next = BinaryHeap::from([Newest(head)]);
    std::iter::from_fn(move || {
        let Newest(commit) = next.pop()?;
        for parent in commit.parent_ids() {
            if !seen.insert(parent) {
                continue;
            }
            match repo.find_commit(parent) {
                Ok(parent) => next.push(Newest(parent)),
                Err(e) if e.code() == git2::ErrorCode::NotFound => {}
                Err(e) => return Some(Err(e.into())),
            }
        }
        Some(Ok(commit))
    })
}

/// A commit ordered by its time (then its id, so that the order is always the same).
pub(super) struct Newest<'r>(git2::Commit<'r>);

impl Newest<'_> {
    fn key(&self) -> (i64, git2::Oid) {
        (self.0.time().seconds(), self.0.id())
    }
}

impl PartialEq for Newest<'_> {
    fn eq(&self, other: &Self) -> bool {
        self.key() == other.key()
    }
}

impl Eq for Newest<'_> {}

impl PartialOrd for Newest<'_> {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Newest<'_> {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.key().cmp(&other.key())
    }
}

/// Adds to `out` the files of `new` (under `prefix`) that `old` does not have as they are, in
/// path order: a renamed file is at its new path, a deleted one is not there. Only folders
/// whose content differs are read (a big project's unchanged folders cost nothing), and it
/// stops past [`MASS_CHANGE_FILES`], returning false.
fn changed_files_under(
    repo: &Repository,
    old: Option<&git2::Tree<'_>>,
    new: &git2::Tree<'_>,
    prefix: &str,
    out: &mut Vec<String>,
) -> Result<bool> {
    for entry in new.iter() {
        let Ok(name) = entry.name() else {
            continue;
        };
        let before = old.and_then(|tree| tree.get_name(name));
        if before.as_ref().is_some_and(|b| b.id() == entry.id()) {
            continue;
        }
        let path = format!("{prefix}{name}");
        match entry.kind() {
            Some(git2::ObjectType::Tree) => {
                let tree = repo.find_tree(entry.id())?;
                let was = match before.filter(|b| b.kind() == Some(git2::ObjectType::Tree)) {
                    Some(b) => Some(repo.find_tree(b.id())?),
                    None => None,
                };
                if !changed_files_under(repo, was.as_ref(), &tree, &format!("{path}/"), out)? {
                    return Ok(false);
                }
            }
            Some(git2::ObjectType::Blob) => {
                out.push(path);
                if out.len() > MASS_CHANGE_FILES {
                    return Ok(false);
                }
            }
            // A submodule's commit: not a file of this project.
            _ => {}
        }
    }
    Ok(true)
}
