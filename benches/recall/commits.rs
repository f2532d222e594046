//! Which commits a repository's recall is measured on, and what each one's answer is.

use std::path::Path;
use std::process::Command;
use std::sync::LazyLock;

use regex::Regex;

/// Most files a commit may change to count (more is a mass change: a rename, a reformat).
pub const MAX_FILES: usize = 20;

/// One measured commit: its subject is the prompt, its parent the project as it was.
pub struct Case {
    pub commit: String,
    pub parent: String,
    pub subject: String,
    /// The files the commit changed that exist at the parent (modified or deleted; a rename
    /// is its old path deleted and its new one added): the files a model should be shown.
    /// Added files cannot be sent, so they are not in it.
    pub answer: Vec<String>,
    /// Files the commit added (not in the answer).
    pub added: usize,
}

/// Releases, version bumps and dependency updates: the subject names a version or
/// dependencies, not work a prompt would ask for.
static RELEASE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"(?ix)
        ^(release|publish|prepare\ release)\b
        | ^[\w.-]*?v?\d+\.\d+\.\d+\S*$        # the subject is a version: 14.1.1, ignore-0.4.33
        | ^changelog:\s*v?\d                  # changelog: 15.2.0
        | \bversion\b.*\d+\.\d                # start version 3.1.3, flit_core version to 3.11
        | \bbump\b | ^deps: | \(deps(-dev)?\) # deps: bump ignore, fix(deps):
        | \b(update|upgrade)\b.*\bdependenc
        | dependabot | renovate",
    )
    .expect("the release pattern is valid")
});

const LOCK_FILES: &[&str] = &[
    "Cargo.lock",
    "package-lock.json",
    "pnpm-lock.yaml",
    "yarn.lock",
    "bun.lockb",
    "poetry.lock",
    "uv.lock",
    "Pipfile.lock",
    "Gemfile.lock",
    "go.sum",
    "composer.lock",
];

fn is_lock_file(path: &str) -> bool {
    let name = path.rsplit('/').next().unwrap_or(path);
    LOCK_FILES.contains(&name)
}

/// The `count` most recent non-merge commits of `repo`'s HEAD (newest first) that change
/// between 1 and [`MAX_FILES`] files, at least one of which existed at the parent, and that
/// are neither a release or version bump nor a lock-file-only change.
pub fn recent(repo: &Path, count: usize) -> Vec<Case> {
    // Each commit: a record separator, "hash parent<US>subject", then its files' status lines.
    let log = git(
        repo,
        &[
            "log",
            "--no-merges",
            "--no-renames",
            "--name-status",
            "--format=%x1e%H %P%x1f%s",
            "-n",
            "5000",
            "HEAD",
        ],
    );
    let mut cases = Vec::new();
    for record in log.split('\x1e').skip(1) {
        let mut lines = record.lines();
        let head = lines.next().unwrap_or_default();
        let Some((hashes, subject)) = head.split_once('\x1f') else {
            continue;
        };
        let Some((commit, parent)) = hashes.split_once(' ') else {
            continue; // a root commit: no parent to stand at
        };
        let files: Vec<(char, &str)> = lines
            .filter_map(|line| line.split_once('\t'))
            .filter_map(|(status, path)| Some((status.chars().next()?, path)))
            .collect();
        let answer: Vec<String> = (files.iter())
            .filter(|(status, _)| *status != 'A')
            .map(|(_, path)| path.to_string())
            .collect();
        let wanted = (1..=MAX_FILES).contains(&files.len())
            && !answer.is_empty()
            && !files.iter().all(|(_, path)| is_lock_file(path))
            && !RELEASE.is_match(subject);
        if wanted {
            cases.push(Case {
                commit: commit.to_string(),
                parent: parent.to_string(),
                subject: subject.to_string(),
                added: files.len() - answer.len(),
                answer,
            });
            if cases.len() == count {
                break;
            }
        }
    }
    cases
}

/// `git args` in `dir`, which must succeed; its standard output.
pub fn git(dir: &Path, args: &[&str]) -> String {
    let output = Command::new("git")
        .args(["-c", "gc.auto=0", "-c", "core.quotePath=false"])
        .args(args)
        .current_dir(dir)
        .output()
        .expect("git runs");
    assert!(
        output.status.success(),
        "git {args:?} in {}: {}",
        dir.display(),
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8_lossy(&output.stdout).into_owned()
}
