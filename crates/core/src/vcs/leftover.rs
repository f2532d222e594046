//! Git's lock files a killed writer left. Git (and libgit2) writes the index, a ref or the
//! configuration through `NAME.lock`, renamed over `NAME` when done; a process killed in
//! between leaves the `.lock`, and every later writer, Tandem or `git`, refuses to go on
//! ("index.lock: File exists") until someone removes it.
//!
//! A writer killed after it moved HEAD and before it wrote the index leaves the index at
//! the commit before: `git status` shows the change as undone and the undoing staged.
//! [`settle_index`] brings those entries to HEAD.
//!
//! Only the caller knows whose a lock file is. Tandem's project lock says when a change that
//! was cut off took its last step through git ([`crate::lockfile::Unfinished`]: every write
//! through git's lock files is stamped first, [`crate::lockfile::mark_step`]); the lock files
//! made in the repository in the moments after that stamp are that step's, and
//! [`remove_since`] removes them. One made later (a `git commit` the person started after
//! the kill, waiting for its message) or still being written (its time moves while we look,
//! or it goes away) belongs to a live `git` and is left alone.

use std::fs;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use git2::Repository;

use super::{Result, VcsError};

/// How long a lock file must stay as it is to count as left: a live `git` renames its lock
/// over the file within this in all but the largest writes.
const SETTLE: Duration = Duration::from_millis(250);

/// How long one step through git's lock files takes at most, from its stamp to the last
/// write of its lock file (the index of a very large project is written in a fraction of
/// this). A lock file made later than this after the cut-off step's stamp is not its: only
/// a `git` started within this of the kill can be taken for the step.
pub const STEP_WITHIN: Duration = Duration::from_secs(2);

/// Removes the lock files in the git folder `git_dir` (its own files, and those under `refs`
/// and `logs`) made at or after `since` (the cut-off step's stamp) and within
/// [`STEP_WITHIN`] of it; returns the ones removed.
pub fn remove_since(git_dir: &Path, since: SystemTime) -> Vec<PathBuf> {
    let mut found = Vec::new();
    locks_in(git_dir, false, &mut found);
    for sub in ["refs", "logs"] {
        locks_in(&git_dir.join(sub), true, &mut found);
    }
    found.retain(|(_, modified)| {
        modified
            .duration_since(since)
            .is_ok_and(|after| after <= STEP_WITHIN)
    });
    let youngest = found
        .iter()
        .filter_map(|(_, modified)| SystemTime::now().duration_since(*modified).ok())
        .min();
    if let Some(age) = youngest.filter(|age| *age < SETTLE) {
        std::thread::sleep(SETTLE - age);
    }
    found
        .into_iter()
        .filter(|(path, modified)| {
            let unchanged = modified_time(path).is_some_and(|now| now == *modified);
            unchanged && fs::remove_file(path).is_ok()
        })
        .map(|(path, _)| path)
        .collect()
}

/// Brings to HEAD the index entries a change that began at `began` and was cut off between
/// moving HEAD and writing the index left behind. Only when HEAD's commit is Tandem's
/// (`[tandem] …`) and made since `began`: the paths it changed whose index entry is still
/// the one from before it while the working tree holds its content. Any other entry (the
/// person's staged work, a `git rm --cached`, a staged edit since undone on disk) is left as
/// it is. Returns the paths brought to HEAD.
pub fn settle_index(repo: &Repository, began: SystemTime) -> Result<Vec<String>> {
    let Some(head) = super::head_commit(repo)? else {
        return Ok(Vec::new());
    };
    // A commit's time is in whole seconds.
    let began = began
        .duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let made = u64::try_from(head.committer().when().seconds()).unwrap_or(0);
    let tandems = head.message_bytes().starts_with(b"[tandem] ");
    if !tandems || made < began {
        return Ok(Vec::new());
    }
    // A first commit has nothing before it that an index could still show.
    let Ok(parent) = head.parent(0) else {
        return Ok(Vec::new());
    };
    let workdir = repo
        .workdir()
        .ok_or_else(|| VcsError::Bare(repo.path().to_path_buf()))?
        .to_path_buf();
    let index = repo.index()?;
    let diff = repo.diff_tree_to_tree(Some(&parent.tree()?), Some(&head.tree()?), None)?;
    let mut settled = Vec::new();
    for delta in diff.deltas() {
        let (before, after) = (delta.old_file(), delta.new_file());
        let Some(rel) = (after.path().or(before.path())).and_then(Path::to_str) else {
            continue;
        };
        let indexed = index.get_path(Path::new(rel), 0).map(|entry| entry.id);
        let before_id = before.exists().then(|| before.id());
        let after_id = after.exists().then(|| after.id());
        if indexed == before_id && super::landing::blob_id(&workdir.join(rel))? == after_id {
            settled.push(rel.to_string());
        }
    }
    if !settled.is_empty() {
        let paths: Vec<&str> = settled.iter().map(String::as_str).collect();
        super::refresh_index(repo, &paths)?;
    }
    Ok(settled)
}

/// Whether `rel` is a file of HEAD's commit or of the index: a file someone committed or
/// staged is theirs, whatever its name looks like.
pub fn is_tracked(repo: &Repository, rel: &str) -> bool {
    let path = Path::new(rel);
    let in_index = repo
        .index()
        .is_ok_and(|index| index.get_path(path, 0).is_some());
    let in_head = super::head_commit(repo)
        .ok()
        .flatten()
        .and_then(|head| head.tree().ok())
        .is_some_and(|tree| tree.get_path(path).is_ok());
    in_index || in_head
}

/// The `*.lock` files in `dir` (and its subfolders when `deep`), with their times.
fn locks_in(dir: &Path, deep: bool, found: &mut Vec<(PathBuf, SystemTime)>) {
    let Ok(entries) = fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let Ok(kind) = entry.file_type() else {
            continue;
        };
        let path = entry.path();
        if kind.is_dir() && deep {
            locks_in(&path, true, found);
        } else if kind.is_file()
            && path.extension().is_some_and(|e| e == "lock")
            && let Some(modified) = modified_time(&path)
        {
            found.push((path, modified));
        }
    }
}

fn modified_time(path: &Path) -> Option<SystemTime> {
    fs::symlink_metadata(path).and_then(|m| m.modified()).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn touch(path: &Path) {
        fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
        fs::write(path, "").expect("write");
    }

    #[test]
    fn the_lock_files_made_since_the_cut_are_removed_and_older_ones_kept() {
        let dir = tempfile::tempdir().expect("dir");
        let git = dir.path();
        let older = git.join("config.lock");
        touch(&older);
        std::thread::sleep(Duration::from_millis(30));
        // The cut-off change began here (a file's time, as the project lock gives it).
        let mark = git.join("mark");
        touch(&mark);
        let since = modified_time(&mark).expect("time");
        let left = [
            git.join("index.lock"),
            git.join("HEAD.lock"),
            git.join("refs/heads/main.lock"),
            git.join("refs/heads/topic/deep.lock"),
            git.join("logs/refs/heads/main.lock"),
        ];
        for path in &left {
            touch(path);
        }
        // Not git's lock files: kept whatever their time.
        let others = [git.join("index"), git.join("objects/ab/cd.lock")];
        for path in &others {
            touch(path);
        }
        let mut removed = remove_since(git, since);
        removed.sort();
        let mut expected = left.to_vec();
        expected.sort();
        assert_eq!(removed, expected);
        assert!(left.iter().all(|p| !p.exists()));
        assert!(older.exists(), "a lock from before the change is not its");
        assert!(others.iter().all(|p| p.exists()));

        // Made well after the step's stamp: a `git commit` started after the kill.
        let later = git.join("index.lock");
        touch(&later);
        let long_before = modified_time(&later).expect("time") - STEP_WITHIN * 2;
        assert_eq!(remove_since(git, long_before), Vec::<PathBuf>::new());
        assert!(later.exists());
    }

    #[test]
    fn a_lock_file_still_being_written_is_left_to_its_writer() {
        let dir = tempfile::tempdir().expect("dir");
        let git = dir.path().to_path_buf();
        let since = SystemTime::now() - Duration::from_secs(1);
        let lock = git.join("index.lock");
        touch(&lock);
        // A live writer: the file changes while the settling wait lasts.
        let writer = {
            let lock = lock.clone();
            std::thread::spawn(move || {
                for i in 0..10 {
                    std::thread::sleep(Duration::from_millis(40));
                    fs::write(&lock, "x".repeat(i + 1)).expect("write");
                }
            })
        };
        assert_eq!(remove_since(&git, since), Vec::<PathBuf>::new());
        writer.join().expect("writer");
        assert!(lock.exists());
    }
}
