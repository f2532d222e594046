//! The version history: list commits, show one as a diff, restore the tree to a version, and
//! revert one change. Every operation adds a commit; history is never rewritten.

use git2::{Delta, DiffFormat, DiffOptions, Repository, build::CheckoutBuilder};
use serde::Serialize;

use super::{Result, VcsError, commit_all, find_commit, head_commit, signature};

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

/// Brings the working tree to the tree of `spec` and records that as a new commit. Uncommitted
/// work is committed first so nothing is lost. Files the version does not have are removed;
/// ignored files are left alone. Returns the restored commit's full hash and the new commit,
/// `None` when HEAD already had that tree.
pub fn restore(repo: &Repository, spec: &str) -> Result<(String, Option<String>)> {
    let target = find_commit(repo, spec)?;
    let target_id = target.id().to_string();
    commit_all(
        repo,
        "[tandem] Save uncommitted changes before restoring a version",
    )?;
    let head = head_commit(repo)?.ok_or(VcsError::NoCommits)?;
    let tree = target.tree()?;
    if head.tree_id() == tree.id() {
        return Ok((target_id, None));
    }
    checkout(repo, &tree)?;
    let sig = signature(repo)?;
    let message = format!("[tandem] Restore {}", super::short(&target_id));
    let oid = repo.commit(Some("HEAD"), &sig, &sig, &message, &tree, &[&head])?;
    Ok((target_id, Some(oid.to_string())))
}

/// Reverts the change `spec` made (three-way, so later unrelated edits survive) and commits
/// the result with `message`. Conflicting later edits are refused, touching nothing.
pub fn revert(repo: &Repository, spec: &str, message: &str) -> Result<String> {
    let commit = find_commit(repo, spec)?;
    commit_all(
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
    checkout(repo, &tree)?;
    let sig = signature(repo)?;
    let oid = repo.commit(Some("HEAD"), &sig, &sig, message, &tree, &[&head])?;
    Ok(oid.to_string())
}

/// Makes the working tree and the index match `tree` (removing tracked files it lacks).
fn checkout(repo: &Repository, tree: &git2::Tree<'_>) -> Result<()> {
    let mut opts = CheckoutBuilder::new();
    opts.force();
    repo.checkout_tree(tree.as_object(), Some(&mut opts))?;
    Ok(())
}
