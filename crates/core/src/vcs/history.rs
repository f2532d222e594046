//! The version history: list commits, show one as a diff, restore the tree to a version, and
//! revert one change. Every operation adds a commit; history is never rewritten.

use std::path::Path;

use git2::{Delta, DiffFormat, DiffOptions, FileMode, Repository, build::CheckoutBuilder};
use serde::Serialize;

use super::past::newest_first;
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
