//! Git through libgit2: the project's repository, commits of exactly the paths a change
//! touched, and the version history (log, diff, restore, revert).

mod history;

pub use history::{ChangeKind, ChangedFile, Version, commit_patch, log, restore, revert};

use std::path::{Path, PathBuf};

use git2::{Index, IndexAddOption, IndexEntry, IndexTime, Oid, Repository, Signature};

#[derive(Debug, thiserror::Error)]
pub enum VcsError {
    #[error("git: {0}")]
    Git(#[from] git2::Error),
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
    #[error("undoing {commit} conflicts with later changes to: {}", paths.join(", "))]
    RevertConflict { commit: String, paths: Vec<String> },
}

pub type Result<T, E = VcsError> = std::result::Result<T, E>;

/// What a commit sets a path to: new content with its mode, or nothing (deleted).
pub type PathContent<'a> = (&'a str, Option<(&'a [u8], u32)>);

/// Written to a project that had no `.gitignore` when Tandem put it under git, so that
/// dependencies, build output and secrets do not land in the first commit.
const DEFAULT_GITIGNORE: &str = "# Added by Tandem when it put this folder under git.\n\
node_modules/\ntarget/\ndist/\nbuild/\n.venv/\n__pycache__/\n.env\n.env.*\n.DS_Store\n";

/// Opens the repository whose working tree is exactly `root`, or creates one there: `git init`,
/// a default `.gitignore` if the folder had none, and an initial commit of everything else.
/// An existing repository is used as it is.
pub fn open_or_init(root: &Path) -> Result<(Repository, bool)> {
    if root.join(".git").exists() {
        // A repository that cannot be opened is reported, never re-initialised over.
        return Ok((open(root)?, false));
    }
    let repo = Repository::init(root)?;
    let gitignore = root.join(".gitignore");
    if !gitignore.exists() {
        std::fs::write(&gitignore, DEFAULT_GITIGNORE).map_err(|source| VcsError::Io {
            path: gitignore.clone(),
            source,
        })?;
    }
    commit_all(&repo, "[tandem] Initial commit")?;
    Ok((repo, true))
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

/// Brings the repository's own index in line with the working tree for `paths` (after they
/// were written and committed), so `git status` shows them clean.
pub fn refresh_index(repo: &Repository, paths: &[&str]) -> Result<()> {
    let mut index = repo.index()?;
    let workdir = repo
        .workdir()
        .ok_or_else(|| VcsError::Bare(repo.path().to_path_buf()))?
        .to_path_buf();
    for path in paths {
        if workdir.join(path).is_file() {
            index.add_path(Path::new(path))?;
        } else if index.get_path(Path::new(path), 0).is_some() {
            index.remove_path(Path::new(path))?;
        }
    }
    index.write()?;
    Ok(())
}

/// `git add -A && git commit`: commits every change in the working tree (untracked files
/// included, ignored files not). Returns `None` when the tree is clean.
pub fn commit_all(repo: &Repository, message: &str) -> Result<Option<Oid>> {
    let mut index = repo.index()?;
    index.add_all(["*"], IndexAddOption::DEFAULT, None)?;
    index.update_all(["*"], None)?;
    index.write()?;
    let tree_id = index.write_tree()?;
    let parent = head_commit(repo)?;
    if parent.as_ref().map(|p| p.tree_id()) == Some(tree_id) {
        return Ok(None);
    }
    let tree = repo.find_tree(tree_id)?;
    let sig = signature(repo)?;
    let parents: Vec<&git2::Commit<'_>> = parent.iter().collect();
    Ok(Some(repo.commit(
        Some("HEAD"),
        &sig,
        &sig,
        message,
        &tree,
        &parents,
    )?))
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
