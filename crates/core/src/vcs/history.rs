//! The version history: list commits, show one as a diff, restore the tree to a version, and
//! revert one change. Every operation adds a commit; history is never rewritten.

use std::collections::{BinaryHeap, HashSet};
use std::path::Path;

use git2::{Delta, DiffFormat, DiffOptions, FileMode, Repository, build::CheckoutBuilder};
use serde::Serialize;

use super::{
    Result, VcsError, advance_head, commit_all, find_commit, head_commit, landing,
    paths_in_the_way, refresh_index, signature,
};
use crate::folder::{remove_file_and_emptied, write_file_atomic};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ChangeKind {
    Added,
    Modified,
    Deleted,
    Renamed,
    Other,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ChangedFile {
    pub path: String,
    pub kind: ChangeKind,
    /// For a rename, the path it had before.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub old_path: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Version {
    pub hash: String,
    /// Commit time, seconds since the Unix epoch.
    pub time: i64,
    pub message: String,
    pub files: Vec<ChangedFile>,
}

/// The newest `limit` commits reachable from HEAD, newest first, with the files each changed.
pub fn log(repo: &Repository, limit: usize) -> Result<Vec<Version>> {
    let Some(head) = head_commit(repo)? else {
        return Ok(Vec::new());
    };
    let mut versions = Vec::new();
    for commit in newest_first(repo, head).take(limit) {
        let commit = commit?;
        versions.push(Version {
            hash: commit.id().to_string(),
            time: commit.time().seconds(),
            message: String::from_utf8_lossy(commit.message_bytes())
                .trim_end()
                .to_string(),
            files: changed_files(repo, &commit)?,
        });
    }
    Ok(versions)
}

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

/// What the commit `id` says and changed: its subject (its message's first line) and the
/// files it added or changed, in path order. No files for the project's import (no parent),
/// a merge (its files came with the commits merged) or a mass change (see
/// [`MASS_CHANGE_FILES`]): they say nothing of which files a subject is about.
pub fn subject_and_files(repo: &Repository, id: &str) -> Result<(String, Vec<String>)> {
    let commit = git2::Oid::from_str(id)
        .and_then(|oid| repo.find_commit(oid))
        .map_err(|_| VcsError::UnknownCommit(id.to_string()))?;
    let subject = String::from_utf8_lossy(commit.summary_bytes().unwrap_or_default()).into_owned();
    if commit.parent_count() != 1 {
        return Ok((subject, Vec::new()));
    }
    let parent = commit.parent(0)?;
    let mut files = Vec::new();
    let within = changed_files_under(repo, Some(&parent.tree()?), &commit.tree()?, "", &mut files)?;
    if !within {
        files.clear();
    }
    Ok((subject, files))
}

/// The commits reachable from `head`, newest first as `git log` lists them (by commit time
/// among those whose children came already), each read only when it is asked for: a walk
/// sorted by libgit2 reads the whole history before it gives the first commit, which on a
/// long history (vite's 9,600 commits) cost a turn tens of milliseconds for five commits.
/// A parent that is not there (a shallow clone's edge) ends that line of history.
fn newest_first<'r>(
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
struct Newest<'r>(git2::Commit<'r>);

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

fn commit_diff<'r>(repo: &'r Repository, commit: &git2::Commit<'_>) -> Result<git2::Diff<'r>> {
    let tree = commit.tree()?;
    let parent_tree = match commit.parent(0) {
        Ok(parent) => Some(parent.tree()?),
        Err(_) => None,
    };
    let mut opts = DiffOptions::new();
    let mut diff = repo.diff_tree_to_tree(parent_tree.as_ref(), Some(&tree), Some(&mut opts))?;
    diff.find_similar(None)?;
    Ok(diff)
}

fn changed_files(repo: &Repository, commit: &git2::Commit<'_>) -> Result<Vec<ChangedFile>> {
    let diff = commit_diff(repo, commit)?;
    let path_of = |file: git2::DiffFile<'_>| {
        file.path()
            .map(|p| p.to_string_lossy().into_owned())
            .unwrap_or_default()
    };
    Ok(diff
        .deltas()
        .map(|delta| {
            let kind = match delta.status() {
                Delta::Added | Delta::Copied => ChangeKind::Added,
                Delta::Modified | Delta::Typechange => ChangeKind::Modified,
                Delta::Deleted => ChangeKind::Deleted,
                Delta::Renamed => ChangeKind::Renamed,
                _ => ChangeKind::Other,
            };
            let (path, old_path) = match kind {
                ChangeKind::Deleted => (path_of(delta.old_file()), None),
                ChangeKind::Renamed => (path_of(delta.new_file()), Some(path_of(delta.old_file()))),
                _ => (path_of(delta.new_file()), None),
            };
            ChangedFile {
                path,
                kind,
                old_path,
            }
        })
        .collect())
}

/// The unified diff of a commit against its first parent (the whole tree for a root commit).
pub fn commit_patch(repo: &Repository, spec: &str) -> Result<String> {
    commit_patch_head(repo, spec, usize::MAX)
}

/// The start of [`commit_patch`]: all of it, or, when it is longer, its first `max_bytes`
/// bytes and a line more. The rest is never made: the patch of a project's import holds every
/// file of the project.
pub fn commit_patch_head(repo: &Repository, spec: &str, max_bytes: usize) -> Result<String> {
    let commit = find_commit(repo, spec)?;
    let diff = commit_diff(repo, &commit)?;
    let mut out = Vec::new();
    let printed = diff.print(DiffFormat::Patch, |_, _, line| {
        if matches!(line.origin(), '+' | '-' | ' ') {
            out.push(line.origin() as u8);
        }
        out.extend_from_slice(line.content());
        out.len() <= max_bytes
    });
    // Stopping early is reported as an error; it is not one.
    if out.len() <= max_bytes {
        printed?;
    }
    Ok(String::from_utf8_lossy(&out).into_owned())
}

/// What a restore did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Restored {
    /// The full hash of the version restored.
    pub restored: String,
    /// The new commit; `None` when HEAD already had that tree.
    pub commit: Option<String>,
    /// Paths the version has that were left as they are on disk, and out of the restore
    /// commit, because a file git does not track (ignored, or a secret) is there.
    pub kept: Vec<String>,
    /// Secret-looking untracked files the save of uncommitted work left out.
    pub left_out: Vec<String>,
}

/// Brings the working tree to the tree of `spec` and records that as a new commit. Uncommitted
/// work is committed first so nothing is lost (secret-looking untracked files excepted, see
/// [`commit_all`]). Files the version does not have are removed. Files git does not track
/// (ignored, or those secrets) are never touched: a path of the version that one of them
/// occupies is left as it is on disk and out of the commit, and reported in `kept`.
pub fn restore(repo: &Repository, spec: &str) -> Result<Restored> {
    // A change a killed process left half-way is settled before anything is saved.
    landing::recover(repo)?;
    let target = find_commit(repo, spec)?;
    let target_id = target.id().to_string();
    let saved = commit_all(
        repo,
        "[tandem] Save uncommitted changes before restoring a version",
    )?;
    let head = head_commit(repo)?.ok_or(VcsError::NoCommits)?;
    let kept = paths_in_the_way(repo, &target.tree()?)?;
    let tree = without(repo, &target.tree()?, &kept)?;
    let mut restored = Restored {
        restored: target_id,
        commit: None,
        kept,
        left_out: saved.left_out,
    };
    if head.tree_id() == tree.id() {
        return Ok(restored);
    }
    let message = format!("[tandem] Restore {}", super::short(&restored.restored));
    let unlanded = commit_on(repo, &head, &tree, &message, Vec::new())?;
    land(repo, &unlanded)?;
    restored.commit = Some(unlanded.commit.to_string());
    Ok(restored)
}

/// `tree` without `paths`.
fn without<'r>(
    repo: &'r Repository,
    tree: &git2::Tree<'r>,
    paths: &[String],
) -> Result<git2::Tree<'r>> {
    if paths.is_empty() {
        return Ok(tree.clone());
    }
    let mut index = git2::Index::new()?;
    index.read_tree(tree)?;
    for path in paths {
        index.remove_path(std::path::Path::new(path))?;
    }
    Ok(repo.find_tree(index.write_tree_to(repo)?)?)
}

/// A commit made on top of HEAD and not landed yet: HEAD and the working tree are as they
/// were. [`land`] brings them to it.
#[derive(Debug, Clone)]
pub struct Unlanded {
    pub commit: git2::Oid,
    head: git2::Oid,
    message: String,
    /// Secret-looking untracked files the save of uncommitted work left out.
    pub left_out: Vec<String>,
}

/// Commits the revert of the change `spec` made (three-way, so later unrelated edits
/// survive) with `message`, without landing it: the caller records the commit, then
/// [`land`]s it. Uncommitted work is committed first. Conflicting later edits are refused,
/// and so is a revert that would write over a file git does not track: nothing is touched.
pub fn prepare_revert(repo: &Repository, spec: &str, message: &str) -> Result<Unlanded> {
    landing::recover(repo)?;
    let commit = find_commit(repo, spec)?;
    let saved = commit_all(
        repo,
        "[tandem] Save uncommitted changes before undoing a change",
    )?;
    let head = head_commit(repo)?.ok_or(VcsError::NoCommits)?;
    let mut index = repo.revert_commit(&commit, &head, 0, None)?;
    if index.has_conflicts() {
        let mut paths: Vec<String> = index
            .conflicts()?
            .filter_map(|c| c.ok())
            .filter_map(|c| c.our.or(c.their).or(c.ancestor))
            .map(|entry| String::from_utf8_lossy(&entry.path).into_owned())
            .collect();
        paths.dedup();
        return Err(VcsError::RevertConflict {
            commit: commit.id().to_string(),
            paths,
        });
    }
    let tree = repo.find_tree(index.write_tree_to(repo)?)?;
    let in_the_way = paths_in_the_way(repo, &tree)?;
    if !in_the_way.is_empty() {
        return Err(VcsError::WouldOverwrite(in_the_way));
    }
    commit_on(repo, &head, &tree, message, saved.left_out)
}

/// Commits `tree` on top of `head` without moving HEAD.
fn commit_on(
    repo: &Repository,
    head: &git2::Commit<'_>,
    tree: &git2::Tree<'_>,
    message: &str,
    left_out: Vec<String>,
) -> Result<Unlanded> {
    let sig = signature(repo)?;
    let commit = repo.commit(None, &sig, &sig, message, tree, &[head])?;
    Ok(Unlanded {
        commit,
        head: head.id(),
        message: message.to_string(),
        left_out,
    })
}

/// Brings the working tree and HEAD to `unlanded`'s commit. It is recorded as landing first
/// ([`landing`]), so a process killed during the checkout leaves a record by which the next
/// start puts the files back. On failure nothing is left changed (HEAD did not move).
pub fn land(repo: &Repository, unlanded: &Unlanded) -> Result<()> {
    let head = repo.find_commit(unlanded.head)?;
    let target = repo.find_commit(unlanded.commit)?;
    landing::begin(repo, unlanded.commit)?;
    let landed = checkout(repo, &head.tree()?, &target.tree()?)
        .and_then(|()| advance_head(repo, Some(head.id()), unlanded.commit, &unlanded.message));
    if let Err(err) = landed {
        // Put back what the checkout wrote; the record stays for the next start if that
        // fails too.
        let _ = landing::recover(repo);
        return Err(err);
    }
    crate::failpoint::hit("land-after-head");
    landing::finish(repo)?;
    Ok(())
}

/// Brings the working tree and the index from `from` to `to`. Callers commit all work first
/// and keep untracked files out of `to`'s way, so this only replaces committed content. Each
/// file is written whole (a temporary file renamed over it), so a process killed half-way
/// leaves every file at one version or the other, which the landing record puts back; links
/// and submodules, rare in a change, are left to git's own checkout.
fn checkout(repo: &Repository, from: &git2::Tree<'_>, to: &git2::Tree<'_>) -> Result<()> {
    let workdir = repo
        .workdir()
        .ok_or_else(|| VcsError::Bare(repo.path().to_path_buf()))?
        .to_path_buf();
    let io = |path: &Path| {
        let path = path.to_path_buf();
        move |source| VcsError::Io { path, source }
    };
    let regular = |mode: FileMode| matches!(mode, FileMode::Blob | FileMode::BlobExecutable);
    let diff = repo.diff_tree_to_tree(Some(from), Some(to), None)?;
    let mut changed = Vec::new();
    let mut special = Vec::new();
    for delta in diff.deltas() {
        let (old, new) = (delta.old_file(), delta.new_file());
        let Some(rel) = new.path().or(old.path()).and_then(Path::to_str) else {
            continue;
        };
        changed.push(rel.to_string());
        if (new.exists() && !regular(new.mode())) || (old.exists() && !regular(old.mode())) {
            special.push(rel.to_string());
            continue;
        }
        let abs = workdir.join(rel);
        if new.exists() {
            let blob = repo.find_blob(new.id())?;
            let mode = match new.mode() {
                FileMode::BlobExecutable => 0o755,
                _ => 0o644,
            };
            write_file_atomic(&abs, blob.content(), Some(mode)).map_err(io(&abs))?;
            crate::failpoint::hit("mid-checkout");
        } else {
            remove_file_and_emptied(&abs, &workdir).map_err(io(&abs))?;
            crate::failpoint::hit("mid-checkout");
        }
    }
    if !special.is_empty() {
        let mut opts = CheckoutBuilder::new();
        opts.force()
            .remove_untracked(false)
            .remove_ignored(false)
            .overwrite_ignored(false);
        for path in &special {
            opts.path(path);
        }
        crate::lockfile::mark_step();
        repo.checkout_tree(to.as_object(), Some(&mut opts))?;
    }
    let paths: Vec<&str> = changed.iter().map(String::as_str).collect();
    refresh_index(repo, &paths)
}
