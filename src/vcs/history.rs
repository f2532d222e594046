//! The version history: list commits, show one as a diff, restore the tree to a version, and
//! revert one change. Every operation adds a commit; history is never rewritten.

use git2::{Delta, DiffFormat, DiffOptions, Repository, build::CheckoutBuilder};
use serde::Serialize;

use super::{Result, VcsError, commit_all, find_commit, head_commit, paths_in_the_way, signature};

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
    if head_commit(repo)?.is_none() {
        return Ok(Vec::new());
    }
    let mut walk = repo.revwalk()?;
    walk.push_head()?;
    walk.set_sorting(git2::Sort::TOPOLOGICAL | git2::Sort::TIME)?;
    let mut versions = Vec::new();
    for oid in walk.take(limit) {
        let commit = repo.find_commit(oid?)?;
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
    let commit = find_commit(repo, spec)?;
    let diff = commit_diff(repo, &commit)?;
    let mut out = Vec::new();
    diff.print(DiffFormat::Patch, |_, _, line| {
        if matches!(line.origin(), '+' | '-' | ' ') {
            out.push(line.origin() as u8);
        }
        out.extend_from_slice(line.content());
        true
    })?;
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
    checkout(repo, &tree)?;
    let sig = signature(repo)?;
    let message = format!("[tandem] Restore {}", super::short(&restored.restored));
    let oid = repo.commit(Some("HEAD"), &sig, &sig, &message, &tree, &[&head])?;
    restored.commit = Some(oid.to_string());
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

/// Reverts the change `spec` made (three-way, so later unrelated edits survive) and commits
/// the result with `message`; returns it with the secret-looking files the save of
/// uncommitted work left out. Conflicting later edits are refused, touching nothing, and so
/// is a revert that would write over a file git does not track.
pub fn revert(repo: &Repository, spec: &str, message: &str) -> Result<(String, Vec<String>)> {
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
    checkout(repo, &tree)?;
    let sig = signature(repo)?;
    let oid = repo.commit(Some("HEAD"), &sig, &sig, message, &tree, &[&head])?;
    Ok((oid.to_string(), saved.left_out))
}

/// Makes the working tree and the index match `tree` (removing tracked files it lacks).
/// Callers commit all work first and keep untracked files out of `tree`'s way, so forcing
/// only replaces committed content; ignored and untracked files are still never removed or
/// overwritten, should one appear meanwhile.
fn checkout(repo: &Repository, tree: &git2::Tree<'_>) -> Result<()> {
    let mut opts = CheckoutBuilder::new();
    opts.force()
        .remove_untracked(false)
        .remove_ignored(false)
        .overwrite_ignored(false);
    repo.checkout_tree(tree.as_object(), Some(&mut opts))?;
    Ok(())
}
