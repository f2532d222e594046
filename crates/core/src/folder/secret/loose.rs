//! The secret-looking files of a project that git does not track (see [`loose_secrets`]):
//! what the agent's container leaves out of its world.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use super::looks_secret;

/// So many hidden entries of a folder holding nothing else are hidden as the folder (a
/// folder of fewer stays open to new files).
const FOLDED: usize = 16;

/// Folders of dependencies, caches and build output: not the person's secrets, and often
/// most of a project's files, so not walked.
const NOT_WALKED: &[&str] = &[
    ".git",
    "node_modules",
    "target",
    ".venv",
    "venv",
    "__pycache__",
    ".tox",
    ".mypy_cache",
    ".pytest_cache",
    ".gradle",
    ".next",
    ".cache",
];

/// The files below `root` whose names look secret ([`looks_secret`]) and whose content is
/// in no commit: a `.env`, a local key, credentials beside the code, whether ignored or not
/// yet added or only staged, and a tracked one whose content is not the last commit's (a
/// committed template filled in with real values, whatever git is told to ignore). A world
/// without them hides them whole; a tracked test key, unchanged, is in the history anyway,
/// and the project's tests may need it. A folder whose name looks secret
/// (`secrets/`, `credentials/`) is returned whole when git tracks nothing in it, else what in
/// it is in no commit. Without a repository nothing is tracked. A secret-looking link's
/// target inside `root` is returned too (a `.env` linking to `config/local.txt`). Folders of
/// dependencies and build output ([`NOT_WALKED`]) are not walked; neither are links.
pub fn loose_secrets(root: &Path) -> Vec<PathBuf> {
    loose_secrets_of(root, root)
}

/// [`loose_secrets`] of `tree`, a copy of the project at `project` (the agent's copy
/// workspace, where a command's renames stay), as the project's history has it.
pub fn loose_secrets_of(tree: &Path, project: &Path) -> Vec<PathBuf> {
    let Ok(root) = tree.canonicalize() else {
        return Vec::new();
    };
    let repo = git2::Repository::open(project).ok();
    let tracked = tracked_paths(repo.as_ref());
    let mut walk = Walk {
        root: &root,
        tracked: &tracked,
        found: Vec::new(),
        targets: Vec::new(),
    };
    walk.dir(&root, false);
    let mut found = walk.found;
    found.extend(walk.targets);
    found.extend(hard_links(&root, &found));
    if let Some(repo) = &repo {
        found.extend(git_objects(repo, &root, &found, &tracked));
    }
    found.sort();
    found.dedup();
    found
}

struct Walk<'a> {
    root: &'a Path,
    tracked: &'a HashMap<String, git2::Oid>,
    found: Vec<PathBuf>,
    /// The targets of secret-looking links.
    targets: Vec<PathBuf>,
}

impl Walk<'_> {
    /// Walks `dir`; `within_secret` when a folder above it looks secret (what it does not
    /// track is). Whether everything in it is to be hidden, and at least [`FOLDED`] entries:
    /// then the folder is found in place of them, one cover instead of many (a build's
    /// thousand generated keys).
    fn dir(&mut self, dir: &Path, within_secret: bool) -> bool {
        let Ok(entries) = std::fs::read_dir(dir) else {
            return false;
        };
        let first = self.found.len();
        let (mut all, mut any) = (true, false);
        for entry in entries.flatten() {
            let (Ok(kind), path) = (entry.file_type(), entry.path()) else {
                all = false;
                continue;
            };
            let name = entry.file_name();
            let secret = within_secret || looks_secret(&name.to_string_lossy());
            let relative = (path.strip_prefix(self.root).unwrap_or(&path))
                .to_string_lossy()
                .replace('\\', "/");
            if kind.is_dir() {
                let inside = format!("{relative}/");
                let hidden = if NOT_WALKED.iter().any(|n| name == *n) {
                    false
                } else if secret && !self.tracked.keys().any(|t| t.starts_with(&inside)) {
                    self.found.push(path);
                    true
                } else {
                    self.dir(&path, secret)
                };
                all &= hidden;
                any |= hidden;
                continue;
            }
            if !secret || self.committed(&relative, &path) {
                all = false;
                continue;
            }
            if kind.is_symlink()
                && let Ok(target) = path.canonicalize()
                && target.starts_with(self.root)
                && target.is_file()
            {
                self.targets.push(target);
            }
            self.found.push(path);
            any = true;
        }
        let whole = all && any && dir != self.root && self.found.len() - first >= FOLDED;
        if whole {
            self.found.truncate(first);
            self.found.push(dir.to_path_buf());
        }
        whole
    }

    /// Whether the file at `relative` (at `path`) is in the last commit as it is: hashed
    /// here, not asked of git's status, which a file marked `--assume-unchanged` or
    /// `--skip-worktree` would fool.
    fn committed(&self, relative: &str, path: &Path) -> bool {
        (self.tracked.get(relative)).is_some_and(|id| {
            git2::Oid::hash_file(git2::ObjectType::Blob, path).is_ok_and(|hash| hash == *id)
        })
    }
}

/// The other names, below `root`, of the files in `hidden` (a folder's files included): a
/// hard link is the same file under a name that need not look secret (`ln .env notes.txt`).
/// Only when one of them has another name is the tree walked again, every folder of it but
/// `.git`, each file's link count and inode asked.
#[cfg(unix)]
fn hard_links(root: &Path, hidden: &[PathBuf]) -> Vec<PathBuf> {
    use std::collections::HashSet;
    use std::os::unix::fs::MetadataExt;
    let mut linked: HashSet<(u64, u64)> = HashSet::new();
    let mut note = |_: PathBuf, meta: &std::fs::Metadata| {
        if meta.nlink() > 1 {
            linked.insert((meta.dev(), meta.ino()));
        }
    };
    for path in hidden {
        match std::fs::symlink_metadata(path) {
            Ok(meta) if meta.is_dir() => files(path, false, &mut note),
            Ok(meta) if meta.is_file() => note(path.clone(), &meta),
            _ => {}
        }
    }
    let mut found = Vec::new();
    if !linked.is_empty() {
        files(root, true, &mut |path, meta| {
            let linked = meta.nlink() > 1 && linked.contains(&(meta.dev(), meta.ino()));
            if linked && !hidden.iter().any(|h| path.starts_with(h)) {
                found.push(path);
            }
        });
    }
    found
}

#[cfg(not(unix))]
fn hard_links(_: &Path, _: &[PathBuf]) -> Vec<PathBuf> {
    Vec::new()
}

/// Calls `file` with every file below `dir` (links not followed) and its metadata; with
/// `skip_git`, not below a `.git` folder.
fn files(dir: &Path, skip_git: bool, file: &mut dyn FnMut(PathBuf, &std::fs::Metadata)) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let Ok(meta) = entry.metadata() else { continue };
        if meta.is_dir() {
            if !(skip_git && entry.file_name() == ".git") {
                files(&entry.path(), skip_git, file);
            }
        } else if meta.is_file() {
            file(entry.path(), &meta);
        }
    }
}

/// The loose objects in `repo`'s git directory that hold what `hidden` (below `tree`)
/// holds: the content of each hidden file as it is now, and as git's index has it staged (a
/// secret added and never committed is readable with `git show :prod.env` or `git cat-file`
/// without naming it). An object the last commit holds (`tracked`: the empty file's, a
/// template's) stays, as the history has it anyway. Packed objects are not reached: a
/// secret staged before a `git gc` stays readable (see SECURITY.md).
fn git_objects(
    repo: &git2::Repository,
    tree: &Path,
    hidden: &[PathBuf],
    tracked: &HashMap<String, git2::Oid>,
) -> Vec<PathBuf> {
    let objects = repo.path().join("objects");
    let committed: std::collections::HashSet<&git2::Oid> = tracked.values().collect();
    let mut ids: Vec<git2::Oid> = Vec::new();
    // Hidden files by relative path, and hidden folders (few: each a cover of its own).
    let mut hidden_files = std::collections::HashSet::new();
    let mut hidden_dirs = Vec::new();
    for path in hidden {
        let Ok(meta) = std::fs::symlink_metadata(path) else {
            continue;
        };
        if let Ok(inside) = path.strip_prefix(tree) {
            let inside = inside.to_string_lossy().replace('\\', "/");
            match meta.is_dir() {
                true => hidden_dirs.push(format!("{inside}/")),
                false => {
                    hidden_files.insert(inside);
                }
            }
        }
        let mut hash = |file: PathBuf, _: &std::fs::Metadata| {
            ids.extend(git2::Oid::hash_file(git2::ObjectType::Blob, file));
        };
        if meta.is_file() {
            hash(path.clone(), &meta);
        } else if meta.is_dir() {
            files(path, false, &mut hash);
        }
    }
    if let Ok(index) = repo.index() {
        for entry in index.iter() {
            let path = String::from_utf8_lossy(&entry.path);
            let is_hidden = hidden_files.contains(&*path)
                || hidden_dirs.iter().any(|dir| path.starts_with(dir.as_str()));
            if is_hidden {
                ids.push(entry.id);
            }
        }
    }
    ids.sort();
    ids.dedup();
    ids.into_iter()
        .filter(|id| !committed.contains(id))
        .map(|id| {
            let hex = id.to_string();
            objects.join(&hex[..2]).join(&hex[2..])
        })
        .filter(|loose| loose.is_file())
        .collect()
}

/// The files of the last commit (`/`-separated, relative to the work tree), each with its
/// content's id. Not the index: a file staged and never committed is in no commit.
fn tracked_paths(repo: Option<&git2::Repository>) -> HashMap<String, git2::Oid> {
    let mut tracked = HashMap::new();
    let Some(repo) = repo else {
        return tracked;
    };
    let Ok(tree) = repo.head().and_then(|head| head.peel_to_tree()) else {
        return tracked;
    };
    let walked = tree.walk(git2::TreeWalkMode::PreOrder, |dir, entry| {
        if entry.kind() == Some(git2::ObjectType::Blob) {
            let name = String::from_utf8_lossy(entry.name_bytes());
            tracked.insert(format!("{dir}{name}"), entry.id());
        }
        git2::TreeWalkResult::Ok
    });
    if walked.is_err() {
        tracked.clear();
    }
    tracked
}

#[cfg(all(test, unix))]
mod tests {
    use super::loose_secrets;

    fn git(root: &std::path::Path, args: &[&str]) {
        let ok = std::process::Command::new("git")
            .args(["-c", "user.name=T", "-c", "user.email=t@example.com"])
            .args(args)
            .current_dir(root)
            .status()
            .is_ok_and(|s| s.success());
        assert!(ok, "git {args:?}");
    }

    #[test]
    fn secret_looking_files_git_does_not_track_are_found_and_no_others() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let root = dir.path().canonicalize().unwrap_or_else(|e| panic!("{e}"));
        for (path, text) in [
            ("src/main.rs", "fn main() {}"),
            ("tests/certs/server.key", "test key, committed"),
            (".gitignore", ".env\nkeys/\nconfig/local.txt\n"),
            (".env", "TOKEN=1"),
            (".env.example", "TOKEN="),
            ("keys/prod.pem", "key"),
            ("config/local.txt", "TOKEN=2"),
            ("deploy/credentials.json", "{}"),
            ("node_modules/pkg/.env", "theirs"),
            ("tests/certs/.env", "TOKEN="),
            ("tests/fixture.env", "TOKEN="),
            ("secrets/db.txt", "password"),
            ("credentials/readme.md", "committed"),
            ("credentials/prod.txt", "password"),
        ] {
            let path = root.join(path);
            std::fs::create_dir_all(path.parent().unwrap_or(&root))
                .unwrap_or_else(|e| panic!("{e}"));
            std::fs::write(path, text).unwrap_or_else(|e| panic!("{e}"));
        }
        for i in 0..20 {
            let path = root.join(format!("build/certs/{i}.pem"));
            std::fs::create_dir_all(root.join("build/certs")).unwrap_or_else(|e| panic!("{e}"));
            std::fs::write(path, "generated").unwrap_or_else(|e| panic!("{e}"));
        }
        git(&root, &["init", "-q"]);
        git(
            &root,
            &["add", "src", "tests", ".gitignore", ".env.example"],
        );
        git(&root, &["add", "credentials/readme.md"]);
        git(&root, &["commit", "-qm", "init"]);
        // Staged, never committed.
        git(&root, &["add", "-f", "keys/prod.pem"]);
        // A committed template, filled in, and another one git is told not to look at.
        git(
            &root,
            &["update-index", "--skip-worktree", "tests/fixture.env"],
        );
        std::fs::write(root.join("tests/fixture.env"), "TOKEN=real")
            .unwrap_or_else(|e| panic!("{e}"));
        std::fs::write(root.join("tests/certs/.env"), "TOKEN=real")
            .unwrap_or_else(|e| panic!("{e}"));
        std::os::unix::fs::symlink("config/local.txt", root.join("app.env"))
            .unwrap_or_else(|e| panic!("{e}"));
        // The same files under innocent names: hard links, one of them where nothing is
        // walked for names.
        std::fs::hard_link(root.join(".env"), root.join("src/notes.txt"))
            .unwrap_or_else(|e| panic!("{e}"));
        std::fs::hard_link(
            root.join("secrets/db.txt"),
            root.join("node_modules/db.txt"),
        )
        .unwrap_or_else(|e| panic!("{e}"));
        let found: Vec<String> = loose_secrets(&root)
            .iter()
            .map(|p| p.strip_prefix(&root).unwrap_or(p).display().to_string())
            .collect();
        // The staged key's object, readable with `git show :keys/prod.pem`.
        let staged = std::process::Command::new("git")
            .args(["rev-parse", ":keys/prod.pem"])
            .current_dir(&root)
            .output()
            .unwrap_or_else(|e| panic!("{e}"));
        let staged = String::from_utf8_lossy(&staged.stdout).trim().to_string();
        let object = format!(".git/objects/{}/{}", &staged[..2], &staged[2..]);
        assert_eq!(
            found,
            [
                ".env",
                &object,
                "app.env",
                "build/certs",
                "config/local.txt",
                "credentials/prod.txt",
                "deploy/credentials.json",
                "keys/prod.pem",
                "node_modules/db.txt",
                "secrets",
                "src/notes.txt",
                "tests/certs/.env",
                "tests/fixture.env",
            ]
        );
        // Without a repository nothing is tracked.
        std::fs::remove_dir_all(root.join(".git")).unwrap_or_else(|e| panic!("{e}"));
        let found = loose_secrets(&root);
        assert!(
            found.contains(&root.join("tests/certs/server.key")),
            "{found:?}"
        );
    }
}
