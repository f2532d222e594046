//! Git through libgit2: the project's repository, commits of exactly the paths a change
//! touched, and the version history (log, diff, restore, revert).

mod history;
pub mod landing;
pub mod leftover;
mod past;

pub use history::{
    ChangeKind, ChangedFile, Restored, Unlanded, Version, commit_patch, commit_patch_head, land,
    log, prepare_revert, restore,
};
pub use past::{CommitChanges, commit_changes, newest_commits, recently_edited};

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use git2::{Index, IndexAddOption, IndexEntry, IndexTime, Oid, Repository, Signature, Status};

#[derive(Debug, thiserror::Error)]
pub enum VcsError {
    #[error("git: {0}")]
    Git(git2::Error),
    #[error(
        "git: {0}: another git is at work in this repository, or one was killed and left its \
         lock file behind (`.git/index.lock`, or a `.lock` file under `.git/refs`); if no git \
         is running, remove it"
    )]
    Locked(String),
    #[error("{0} is a bare repository; Tandem needs a working tree")]
    Bare(PathBuf),
    #[error("cannot prepare {path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("the repository has no commits yet")]
    NoCommits,
    #[error("no commit {0} in this repository")]
    UnknownCommit(String),
    #[error("HEAD moved while Tandem was committing; nothing was committed")]
    HeadMoved,
    #[error(
        "this would overwrite files git does not track (ignored, or left out as secrets): {}; \
         move them aside first",
        .0.join(", ")
    )]
    WouldOverwrite(Vec<String>),
    #[error("undoing {commit} conflicts with later changes to: {}", paths.join(", "))]
    RevertConflict { commit: String, paths: Vec<String> },
}

impl From<git2::Error> for VcsError {
    fn from(e: git2::Error) -> Self {
        match e.code() {
            git2::ErrorCode::Locked => {
                let message = e.message().trim_end_matches([' ', ':', ';']);
                Self::Locked(message.to_string())
            }
            _ => Self::Git(e),
        }
    }
}

pub type Result<T, E = VcsError> = std::result::Result<T, E>;

/// What a commit sets a path to: new content with its mode, or nothing (deleted).
pub type PathContent<'a> = (&'a str, Option<(&'a [u8], u32)>);

/// Written to a project that had no `.gitignore` when Tandem put it under git, so that
/// dependencies, build output and secrets do not land in the first commit.
const DEFAULT_GITIGNORE: &str = "# Added by Tandem when it put this folder under git.\n\
node_modules/\ntarget/\ndist/\nbuild/\n.venv/\n__pycache__/\n.env\n.env.*\n.DS_Store\n";

/// Opens the repository whose working tree is exactly `root`, or creates one there: `git init`,
/// a default `.gitignore` if the folder had none, and an initial commit of everything else
/// (but secret-looking files, see [`commit_all`]); that commit is returned. An existing
/// repository is used as it is.
pub fn open_or_init(root: &Path) -> Result<(Repository, Option<CommitAll>)> {
    if root.join(".git").exists() {
        // A repository that cannot be opened is reported, never re-initialised over.
        return Ok((open(root)?, None));
    }
    crate::lockfile::note_step(INIT_STEP);
    let repo = Repository::init(root)?;
    crate::failpoint::hit("add-after-init");
    let gitignore = root.join(".gitignore");
    if !gitignore.exists() {
        std::fs::write(&gitignore, DEFAULT_GITIGNORE).map_err(|source| VcsError::Io {
            path: gitignore.clone(),
            source,
        })?;
    }
    let initial = commit_all(&repo, "[tandem] Initial commit")?;
    Ok((repo, Some(initial)))
}

/// What the project lock says while [`open_or_init`] makes a repository and its first commit.
pub const INIT_STEP: &str = "putting the folder under git";

/// After a process killed while [`open_or_init`] made the repository at `root` (the project
/// lock said [`INIT_STEP`]): removes that `.git` if it holds no commit (or cannot even be
/// opened), so that the next attempt makes it whole. One with a commit is kept. Whether one
/// was removed.
pub fn remove_unfinished_init(root: &Path) -> bool {
    let dotgit = root.join(".git");
    if !std::fs::symlink_metadata(&dotgit).is_ok_and(|m| m.is_dir()) {
        return false;
    }
    let no_commit = match Repository::open(root) {
        Ok(repo) => repo
            .references()
            .is_ok_and(|mut refs| refs.next().is_none()),
        Err(_) => true,
    };
    no_commit && std::fs::remove_dir_all(&dotgit).is_ok()
}

pub fn open(root: &Path) -> Result<Repository> {
    let repo = Repository::open(root)?;
    if repo.is_bare() {
        return Err(VcsError::Bare(root.to_path_buf()));
    }
    Ok(repo)
}

/// The HEAD commit's full hash, `None` while the branch is unborn.
pub fn head(repo: &Repository) -> Result<Option<String>> {
    Ok(head_commit(repo)?.map(|c| c.id().to_string()))
}

fn head_commit(repo: &Repository) -> Result<Option<git2::Commit<'_>>> {
    match repo.head() {
        Ok(head) => Ok(Some(head.peel_to_commit()?)),
        Err(e)
            if e.code() == git2::ErrorCode::UnbornBranch
                || e.code() == git2::ErrorCode::NotFound =>
        {
            Ok(None)
        }
        Err(e) => Err(e.into()),
    }
}

/// The author for Tandem's commits: the user's git identity, else a clear default.
pub fn signature(repo: &Repository) -> Result<Signature<'static>> {
    match repo.signature() {
        Ok(sig) => Ok(sig.to_owned()),
        Err(_) => Ok(Signature::now("Tandem", "tandem@localhost")?),
    }
}

/// The content of `path` in the HEAD commit, `None` if absent (or no commits yet).
pub fn head_blob(repo: &Repository, path: &str) -> Result<Option<Vec<u8>>> {
    let Some(commit) = head_commit(repo)? else {
        return Ok(None);
    };
    let tree = commit.tree()?;
    match tree.get_path(Path::new(path)) {
        Ok(entry) => match entry.to_object(repo)?.into_blob() {
            Ok(blob) => Ok(Some(blob.content().to_vec())),
            Err(_) => Ok(None),
        },
        Err(e) if e.code() == git2::ErrorCode::NotFound => Ok(None),
        Err(e) => Err(e.into()),
    }
}

/// Commits HEAD's tree with exactly `changes` applied, leaving every other path (and anything
/// the user has staged) alone. Content comes from memory, not the working tree, so a commit
/// can record a state the disk no longer has. Returns `None` when nothing differs from HEAD.
pub fn commit_paths(
    repo: &Repository,
    changes: &[PathContent<'_>],
    message: &str,
) -> Result<Option<Oid>> {
    let parent = head_oid(repo)?;
    let oid = prepare_commit(repo, parent, changes, message)?;
    if let Some(oid) = oid {
        advance_head(repo, parent, oid, message)?;
    }
    Ok(oid)
}

/// Writes the commit `commit_paths` would make on top of `parent` (`None`: a root commit)
/// without moving HEAD: its id is known before anything points at it, so a caller can record
/// what it is about to do first. `None` when nothing differs from `parent`.
pub fn prepare_commit(
    repo: &Repository,
    parent: Option<Oid>,
    changes: &[PathContent<'_>],
    message: &str,
) -> Result<Option<Oid>> {
    let parent = parent.map(|oid| repo.find_commit(oid)).transpose()?;
    let mut index = Index::new()?;
    if let Some(parent) = &parent {
        index.read_tree(&parent.tree()?)?;
    }
    for (path, content) in changes {
        match content {
            Some((bytes, mode)) => {
                let mut entry = entry(path, *mode);
                entry.id = repo.blob(bytes)?;
                entry.file_size = u32::try_from(bytes.len()).unwrap_or(u32::MAX);
                index.add(&entry)?;
            }
            None => {
                if index.get_path(Path::new(path), 0).is_some() {
                    index.remove_path(Path::new(path))?;
                }
            }
        }
    }
    let tree_id = index.write_tree_to(repo)?;
    if parent.as_ref().map(|p| p.tree_id()) == Some(tree_id) {
        return Ok(None);
    }
    let tree = repo.find_tree(tree_id)?;
    let sig = signature(repo)?;
    let parents: Vec<&git2::Commit<'_>> = parent.iter().collect();
    Ok(Some(
        repo.commit(None, &sig, &sig, message, &tree, &parents)?,
    ))
}

/// Moves HEAD (the branch it names, or HEAD itself when detached) from `from` to `to` in one
/// atomic reference update, as `git commit` would. Refused, moving nothing, when HEAD is no
/// longer at `from`: something else committed meanwhile.
pub fn advance_head(repo: &Repository, from: Option<Oid>, to: Oid, message: &str) -> Result<()> {
    let summary = message.lines().next().unwrap_or_default();
    let log = format!("commit: {summary}");
    let head = repo.find_reference("HEAD")?;
    crate::lockfile::mark_step();
    match head.symbolic_target()? {
        Some(branch) => {
            match from {
                Some(from) => repo.reference_matching(branch, to, true, from, &log)?,
                // An unborn branch: creating it fails if it appeared meanwhile.
                None => repo.reference(branch, to, false, &log)?,
            };
        }
        None => {
            if head_oid(repo)? != from {
                return Err(VcsError::HeadMoved);
            }
            repo.set_head_detached(to)?;
        }
    }
    Ok(())
}

/// The HEAD commit's id, `None` while the branch is unborn.
pub fn head_oid(repo: &Repository) -> Result<Option<Oid>> {
    Ok(head_commit(repo)?.map(|c| c.id()))
}

/// Whether `commit` (a full hash) is HEAD or one of its ancestors: the change it made is
/// part of the project's history. A commit that does not exist is not.
pub fn in_history(repo: &Repository, commit: &str) -> Result<bool> {
    let Ok(oid) = Oid::from_str(commit) else {
        return Ok(false);
    };
    if repo.find_commit(oid).is_err() {
        return Ok(false);
    }
    match head_oid(repo)? {
        Some(head) => Ok(head == oid || repo.graph_descendant_of(head, oid)?),
        None => Ok(false),
    }
}

/// How long a write of the index waits for a `git` that holds it: `git status` (an editor's
/// git panel, a shell prompt showing the branch) takes the index's lock for a moment to
/// refresh it, and would otherwise make a change fail, or leave the index behind HEAD.
const INDEX_WAIT: Duration = Duration::from_secs(2);

/// Waits up to [`INDEX_WAIT`] for a `git` that holds the index (its `index.lock` is there):
/// a change that would write the index later waits before it changes anything, instead of
/// failing half-way or leaving the index behind HEAD. [`VcsError::Locked`] when it is still
/// held then.
pub fn wait_for_index(repo: &Repository) -> Result<()> {
    let lock = repo.path().join("index.lock");
    let start = Instant::now();
    let mut pause = Duration::from_millis(5);
    while lock.exists() {
        if start.elapsed() >= INDEX_WAIT {
            return Err(VcsError::Locked(format!("{} is held", lock.display())));
        }
        std::thread::sleep(pause);
        pause = (pause * 2).min(Duration::from_millis(100));
    }
    Ok(())
}

/// Brings the repository's own index in line with the working tree for `paths` (after they
/// were written and committed), so `git status` shows them clean. A `git` holding the index
/// is waited for up to [`INDEX_WAIT`].
pub fn refresh_index(repo: &Repository, paths: &[&str]) -> Result<()> {
    let workdir = repo
        .workdir()
        .ok_or_else(|| VcsError::Bare(repo.path().to_path_buf()))?
        .to_path_buf();
    while_index_held(|| {
        // Read again each time: the git that held the index may have changed it.
        let mut index = repo.index()?;
        for path in paths {
            if workdir.join(path).is_file() {
                index.add_path(Path::new(path))?;
            } else if index.get_path(Path::new(path), 0).is_some() {
                index.remove_path(Path::new(path))?;
            }
        }
        crate::lockfile::mark_step();
        index.write()
    })
}

/// Runs `attempt` (one that ends by writing the index) again while a `git` holds the index,
/// up to [`INDEX_WAIT`]; then its last error.
fn while_index_held(mut attempt: impl FnMut() -> Result<(), git2::Error>) -> Result<()> {
    let start = Instant::now();
    let mut pause = Duration::from_millis(5);
    loop {
        match attempt() {
            Err(e) if e.code() == git2::ErrorCode::Locked && start.elapsed() < INDEX_WAIT => {
                std::thread::sleep(pause);
                pause = (pause * 2).min(Duration::from_millis(100));
            }
            done => return Ok(done?),
        }
    }
}

/// What [`commit_all`] did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CommitAll {
    /// `None` when there was nothing to commit.
    pub commit: Option<Oid>,
    /// Untracked files whose names look like secrets ([`crate::folder::looks_secret`]): left
    /// out of the commit and left on disk as they are.
    pub left_out: Vec<String>,
}

/// `git add -A && git commit`: commits every change in the working tree (untracked files
/// included, ignored files not), except untracked files whose names look like secrets — an
/// automatic commit must not put a key into history, where it stays for good.
pub fn commit_all(repo: &Repository, message: &str) -> Result<CommitAll> {
    let left_out: Vec<String> = loose_files(repo, false)?
        .into_iter()
        .filter(|path| crate::folder::looks_secret(path))
        .collect();
    let mut index = repo.index()?;
    // 0 adds the path, 1 skips it.
    let mut skip_secrets = |path: &Path, _: &[u8]| -> i32 {
        let path = path.to_string_lossy();
        i32::from(left_out.iter().any(|p| *p == path))
    };
    index.add_all(["*"], IndexAddOption::DEFAULT, Some(&mut skip_secrets))?;
    index.update_all(["*"], None)?;
    // The tree is written from the index in memory: the repository's index is written only
    // once the commit holds it, so a process killed before that leaves the person's changes
    // as they were (not staged), and one killed after it leaves an index the next start
    // brings to HEAD (`leftover::settle_index`).
    let tree_id = index.write_tree()?;
    let parent = head_commit(repo)?;
    if parent.as_ref().map(|p| p.tree_id()) == Some(tree_id) {
        write_index(&mut index)?;
        return Ok(CommitAll {
            commit: None,
            left_out,
        });
    }
    let tree = repo.find_tree(tree_id)?;
    let sig = signature(repo)?;
    let parents: Vec<&git2::Commit<'_>> = parent.iter().collect();
    crate::failpoint::hit("commit-all-before-commit");
    crate::lockfile::mark_step();
    let commit = repo.commit(Some("HEAD"), &sig, &sig, message, &tree, &parents)?;
    write_index(&mut index)?;
    Ok(CommitAll {
        commit: Some(commit),
        left_out,
    })
}

/// Writes `index` to the repository, waiting up to [`INDEX_WAIT`] for a `git` that holds it.
fn write_index(index: &mut Index) -> Result<()> {
    while_index_held(|| {
        crate::lockfile::mark_step();
        index.write()
    })
}

/// Files on disk that git does not track: untracked ones (each file) and, with `ignored`,
/// ignored ones (an ignored folder as one entry ending in `/`, never walked into).
fn loose_files(repo: &Repository, ignored: bool) -> Result<Vec<String>> {
    let mut opts = git2::StatusOptions::new();
    opts.include_untracked(true)
        .recurse_untracked_dirs(true)
        .include_ignored(ignored)
        .recurse_ignored_dirs(false);
    let statuses = repo.statuses(Some(&mut opts))?;
    Ok(statuses
        .iter()
        .filter(|s| s.status().intersects(Status::WT_NEW | Status::IGNORED))
        .map(|s| String::from_utf8_lossy(s.path_bytes()).into_owned())
        .collect())
}

/// The paths of `tree` that checking it out would write over a file git does not track
/// (ignored, or untracked): the same path, a file where the tree has a folder, or a folder
/// where it has a file.
pub(crate) fn paths_in_the_way(repo: &Repository, tree: &git2::Tree<'_>) -> Result<Vec<String>> {
    let loose = loose_files(repo, true)?;
    if loose.is_empty() {
        return Ok(Vec::new());
    }
    let mut in_the_way = Vec::new();
    tree.walk(git2::TreeWalkMode::PreOrder, |dir, entry| {
        if entry.kind() != Some(git2::ObjectType::Tree) {
            let path = format!("{dir}{}", String::from_utf8_lossy(entry.name_bytes()));
            if loose.iter().any(|l| clashes(&path, l)) {
                in_the_way.push(path);
            }
        }
        git2::TreeWalkResult::Ok
    })?;
    Ok(in_the_way)
}

/// Whether a tracked file at `tracked` and a loose path `loose` (a folder ends in `/`)
/// occupy the same place on disk.
fn clashes(tracked: &str, loose: &str) -> bool {
    let inside = |path: &str, dir: &str| {
        path.strip_prefix(dir)
            .is_some_and(|rest| rest.starts_with('/'))
    };
    match loose.strip_suffix('/') {
        Some(dir) => tracked == dir || inside(tracked, dir),
        None => tracked == loose || inside(tracked, loose) || inside(loose, tracked),
    }
}

/// Whether the working tree has changes git would commit (tracked or untracked, not ignored).
pub fn is_dirty(repo: &Repository) -> Result<bool> {
    let mut opts = git2::StatusOptions::new();
    opts.include_untracked(true)
        .recurse_untracked_dirs(true)
        .include_ignored(false);
    Ok(!repo.statuses(Some(&mut opts))?.is_empty())
}

fn entry(path: &str, mode: u32) -> IndexEntry {
    let git_mode = if mode & 0o111 != 0 {
        0o100755
    } else {
        0o100644
    };
    IndexEntry {
        ctime: IndexTime::new(0, 0),
        mtime: IndexTime::new(0, 0),
        dev: 0,
        ino: 0,
        mode: git_mode,
        uid: 0,
        gid: 0,
        file_size: 0,
        id: Oid::ZERO_SHA1,
        flags: 0,
        flags_extended: 0,
        path: path.as_bytes().to_vec(),
    }
}

/// Resolves a full or abbreviated commit hash.
pub fn find_commit<'r>(repo: &'r Repository, spec: &str) -> Result<git2::Commit<'r>> {
    let spec = spec.trim();
    if spec.is_empty() || !spec.chars().all(|c| c.is_ascii_hexdigit()) {
        return Err(VcsError::UnknownCommit(spec.to_string()));
    }
    repo.revparse_single(spec)
        .and_then(|obj| obj.peel_to_commit())
        .map_err(|_| VcsError::UnknownCommit(spec.to_string()))
}

pub fn short(hash: &str) -> &str {
    hash.get(..7).unwrap_or(hash)
}

#[cfg(test)]
mod tests {
    use super::clashes;

    /// A `git status` elsewhere holds the index for a moment: the refresh waits for it
    /// instead of failing (which left the index behind HEAD after an approval). One held
    /// past the wait is reported as locked.
    #[test]
    fn a_git_holding_the_index_for_a_moment_is_waited_for() {
        let dir = tempfile::tempdir().expect("dir");
        let (repo, _) = super::open_or_init(dir.path()).expect("repository");
        std::fs::write(dir.path().join("a.txt"), "a").expect("write");
        let lock = repo.path().join("index.lock");
        std::fs::write(&lock, "").expect("a git takes the index");
        let released = {
            let lock = lock.clone();
            std::thread::spawn(move || {
                std::thread::sleep(std::time::Duration::from_millis(300));
                std::fs::remove_file(&lock).expect("the git lets go");
            })
        };
        super::refresh_index(&repo, &["a.txt"]).expect("refreshed once the git let go");
        released.join().expect("thread");
        let index = repo.index().expect("index");
        assert!(index.get_path(std::path::Path::new("a.txt"), 0).is_some());

        std::fs::write(dir.path().join("b.txt"), "b").expect("write");
        std::fs::write(&lock, "").expect("held for good");
        let started = std::time::Instant::now();
        let err = super::refresh_index(&repo, &["b.txt"]).expect_err("still held");
        assert!(started.elapsed() >= super::INDEX_WAIT);
        assert!(matches!(err, super::VcsError::Locked(_)), "{err}");
    }

    #[test]
    fn paths_that_occupy_the_same_place() {
        assert!(clashes(".env", ".env"));
        assert!(clashes("build", "build/"));
        assert!(clashes("build/x.js", "build/"));
        assert!(clashes("logs/app.log", "logs"));
        assert!(clashes("out", "out/a.bin"));
        assert!(!clashes("builder", "build/"));
        assert!(!clashes("build.rs", "build"));
        assert!(!clashes("a/.env", ".env"));
    }
}
