//! The secret-looking files of a project that git does not track (see [`loose_secrets`]):
//! what the agent's container leaves out of its world.

use std::collections::HashSet;
use std::path::{Path, PathBuf};

use super::looks_secret;

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

/// The files below `root` whose names look secret ([`looks_secret`]) and that git does not
/// track: a `.env`, a local key, credentials beside the code, whether ignored or not yet
/// added. They are in no commit, so a world without them hides them whole; a tracked test
/// key is in the history anyway, and the project's tests may need it. Without a repository
/// nothing is tracked. A secret-looking link's target inside `root` is returned too (a
/// `.env` linking to `config/local.txt`). Folders of dependencies and build output
/// ([`NOT_WALKED`]) are not walked; neither are links.
pub fn loose_secrets(root: &Path) -> Vec<PathBuf> {
    let Ok(root) = root.canonicalize() else {
        return Vec::new();
    };
    let tracked = tracked_paths(&root);
    let mut found = Vec::new();
    let walk = ignore::WalkBuilder::new(&root)
        .standard_filters(false)
        .follow_links(false)
        .filter_entry(|entry| {
            let dir = entry.file_type().is_some_and(|t| t.is_dir());
            !(dir && entry.depth() > 0 && NOT_WALKED.iter().any(|n| entry.file_name() == *n))
        })
        .build();
    for entry in walk.flatten() {
        let Some(kind) = entry.file_type() else {
            continue;
        };
        if kind.is_dir() || !looks_secret(&entry.file_name().to_string_lossy()) {
            continue;
        }
        let path = entry.path();
        let relative = path.strip_prefix(&root).unwrap_or(path);
        if tracked.contains(&relative.to_string_lossy().replace('\\', "/")) {
            continue;
        }
        if kind.is_symlink()
            && let Ok(target) = path.canonicalize()
            && target.starts_with(&root)
            && target.is_file()
        {
            found.push(target);
        }
        found.push(path.to_path_buf());
    }
    found.sort();
    found.dedup();
    found
}

/// The paths git's index of the repository at `root` holds (`/`-separated, relative).
fn tracked_paths(root: &Path) -> HashSet<String> {
    let Ok(repo) = git2::Repository::open(root) else {
        return HashSet::new();
    };
    let Ok(index) = repo.index() else {
        return HashSet::new();
    };
    index
        .iter()
        .map(|entry| String::from_utf8_lossy(&entry.path).into_owned())
        .collect()
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
        ] {
            let path = root.join(path);
            std::fs::create_dir_all(path.parent().unwrap_or(&root))
                .unwrap_or_else(|e| panic!("{e}"));
            std::fs::write(path, text).unwrap_or_else(|e| panic!("{e}"));
        }
        git(&root, &["init", "-q"]);
        git(
            &root,
            &["add", "src", "tests", ".gitignore", ".env.example"],
        );
        git(&root, &["commit", "-qm", "init"]);
        std::os::unix::fs::symlink("config/local.txt", root.join("app.env"))
            .unwrap_or_else(|e| panic!("{e}"));
        let found: Vec<String> = loose_secrets(&root)
            .iter()
            .map(|p| p.strip_prefix(&root).unwrap_or(p).display().to_string())
            .collect();
        assert_eq!(
            found,
            [
                ".env",
                "app.env",
                "config/local.txt",
                "deploy/credentials.json",
                "keys/prod.pem"
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
