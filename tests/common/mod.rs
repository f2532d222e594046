//! Shared helpers for the integration tests: real temporary git repositories (made and
//! checked with the `git` CLI) and engines on real SQLite files.
#![allow(dead_code, clippy::unwrap_used)]

use std::path::{Path, PathBuf};
use std::process::Command;

use tandem_core::Engine;
use tandem_core::store::Project;

/// Whether a test keeps the environment variable `name` from Tandem: provider keys
/// (`*_API_KEY`), Tandem's own variables (`TANDEM_*`), where Ollama listens (`OLLAMA_HOST`)
/// and the XDG directories (`XDG_*`). Whatever the machine running the tests has set there
/// must not change what a test sees.
pub fn sealed(name: &str) -> bool {
    name.ends_with("_API_KEY")
        || name.starts_with("TANDEM_")
        || name == "OLLAMA_HOST"
        || name.starts_with("XDG_")
}

/// `command` without this process's [`sealed`] variables, and with keys stored in the data
/// directory's secrets file (never the machine's keychain). A test sets what it needs after.
pub fn seal(command: &mut Command) -> &mut Command {
    for (name, _) in std::env::vars_os() {
        if name.to_str().is_some_and(sealed) {
            command.env_remove(&name);
        }
    }
    command.env(tandem_core::environment::KEYCHAIN_ENV, "off")
}

/// The `tandem` binary, [`seal`]ed.
pub fn tandem() -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_tandem"));
    seal(&mut command);
    command
}

/// The `tandem` binary on the data directory `data`, each call run to its end, as a script
/// or another tool would drive it.
pub struct Cli {
    pub data: PathBuf,
}

impl Cli {
    /// `args` on the data directory, [`seal`]ed, with no input.
    pub fn command(&self, args: &[&str]) -> Command {
        let mut command = tandem();
        command
            .arg("--data-dir")
            .arg(&self.data)
            .args(args)
            .stdin(std::process::Stdio::null());
        command
    }

    pub fn run(&self, args: &[&str]) -> std::process::Output {
        self.command(args).output().unwrap()
    }

    /// Runs with `--json`, expects success and exactly one JSON object on stdout.
    pub fn json(&self, args: &[&str]) -> serde_json::Value {
        let mut all = vec!["--json"];
        all.extend_from_slice(args);
        let output = self.run(&all);
        assert!(
            output.status.success(),
            "{args:?} failed: {}",
            String::from_utf8_lossy(&output.stderr)
        );
        let stdout = String::from_utf8(output.stdout).unwrap();
        assert_eq!(
            stdout.trim().lines().count(),
            1,
            "one line of JSON: {stdout}"
        );
        serde_json::from_str(&stdout).unwrap()
    }
}

/// `tandem provider add` arguments for the fake provider server at `url`: an Ollama
/// provider named `fake`, model `tiny`, 8,192 tokens of context.
pub fn fake_provider_args(url: &str) -> Vec<String> {
    [
        "provider",
        "add",
        "--name",
        "fake",
        "--kind",
        "ollama",
        "--base-url",
        url,
        "--default-model",
        "tiny",
        "--context-length",
        "8192",
    ]
    .map(str::to_string)
    .to_vec()
}

/// What an app built in the test process reads as its environment: nothing of this
/// process's, keys in the data directory's file.
pub fn environment() -> tandem_core::Environment {
    tandem_core::Environment::isolated()
}

/// A number of seconds (`sleep` takes it) that no other process on the machine has on its
/// command line: `whole_seconds`, then this process's id and the clock's nanoseconds as the
/// fraction. A test finds its own processes by it, not those of a suite running beside it.
pub fn marker(whole_seconds: u32) -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .subsec_nanos();
    format!("{whole_seconds}.{}{nanos:09}", std::process::id())
}

pub struct Fixture {
    pub dir: tempfile::TempDir,
    pub root: PathBuf,
    pub data: PathBuf,
    pub engine: Engine,
    pub project: Project,
}

/// What a process that had to succeed printed; its stdout and stderr are the failure's
/// message when it did not.
#[track_caller]
pub fn succeeded(output: &std::process::Output) -> String {
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    assert!(
        output.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    stdout
}

/// Runs git in `root` with a fixed identity and returns its stdout; panics on failure.
pub fn git(root: &Path, args: &[&str]) -> String {
    // Fixed dates: the same files give the same commit ids (the GUI snapshots show them).
    git_at(root, "2025-01-01T00:00:00Z", args)
}

/// [`git`] with the commits dated `date` (as `GIT_COMMITTER_DATE` takes it: `@1750000000
/// +0000`).
pub fn git_at(root: &Path, date: &str, args: &[&str]) -> String {
    let output = Command::new("git")
        .args(args)
        .current_dir(root)
        .env("GIT_AUTHOR_NAME", "Test")
        .env("GIT_AUTHOR_EMAIL", "test@example.com")
        .env("GIT_COMMITTER_NAME", "Test")
        .env("GIT_COMMITTER_EMAIL", "test@example.com")
        .env("GIT_AUTHOR_DATE", date)
        .env("GIT_COMMITTER_DATE", date)
        .output()
        .expect("git runs");
    assert!(
        output.status.success(),
        "git {args:?} failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8_lossy(&output.stdout).into_owned()
}

/// Writes `text` to the file `rel` under `root`, making its folders.
pub fn write_file(root: &Path, rel: &str, text: &str) {
    let path = root.join(rel);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

/// A git repository with `files` committed by the git CLI.
pub fn repo_with(root: &Path, files: &[(&str, &str)]) {
    std::fs::create_dir_all(root).unwrap();
    git(root, &["init", "-q", "-b", "main"]);
    git(root, &["config", "user.name", "Test User"]);
    git(root, &["config", "user.email", "test@example.com"]);
    for (path, content) in files {
        write_file(root, path, content);
    }
    git(root, &["add", "-A"]);
    git(root, &["commit", "-q", "-m", "initial", "--allow-empty"]);
}

/// A project with `files`, added to an engine whose database lives in the same temp dir.
pub fn fixture(files: &[(&str, &str)]) -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("project");
    repo_with(&root, files);
    let data = dir.path().join("data");
    let engine = Engine::open(Some(&data)).unwrap();
    let project = engine.add_project(&root, None).unwrap().project;
    let root = root.canonicalize().unwrap();
    Fixture {
        dir,
        root,
        data,
        engine,
        project,
    }
}

impl Fixture {
    pub fn git(&self, args: &[&str]) -> String {
        git(&self.root, args)
    }

    pub fn read(&self, path: &str) -> String {
        std::fs::read_to_string(self.root.join(path)).unwrap()
    }

    pub fn head(&self) -> String {
        self.git(&["rev-parse", "HEAD"]).trim().to_string()
    }

    pub fn commit_count(&self) -> usize {
        self.git(&["rev-list", "--count", "HEAD"])
            .trim()
            .parse()
            .unwrap()
    }

    /// `git status --porcelain` is empty and `git fsck` finds nothing wrong.
    pub fn assert_clean(&self) {
        assert_eq!(
            self.git(&["status", "--porcelain"]),
            "",
            "working tree not clean"
        );
        self.git(&["fsck", "--strict", "--no-progress"]);
    }

    /// Every file under the root (but .git) with its bytes: to prove nothing changed.
    pub fn snapshot(&self) -> Vec<(String, Vec<u8>)> {
        let mut files = Vec::new();
        collect(&self.root, &self.root, &mut files);
        files.sort();
        files
    }
}

fn collect(root: &Path, dir: &Path, out: &mut Vec<(String, Vec<u8>)>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.file_name().is_some_and(|n| n == ".git") {
            continue;
        }
        if path.is_dir() {
            out.push((
                format!("{}/", path.strip_prefix(root).unwrap().display()),
                Vec::new(),
            ));
            collect(root, &path, out);
        } else {
            out.push((
                path.strip_prefix(root).unwrap().display().to_string(),
                std::fs::read(&path).unwrap(),
            ));
        }
    }
}

/// Whether this system lets an unprivileged process make the namespaces the agent's
/// container is built from (asked through util-linux, not through Tandem). Where it does not,
/// what needs the container cannot be proven: CI fails; elsewhere the test says so and
/// passes.
pub fn container_here() -> bool {
    let made = Command::new("unshare")
        .args(["-Urmnpf", "--mount-proc", "true"])
        .status()
        .is_ok_and(|s| s.success());
    if !made {
        assert!(
            std::env::var_os("CI").is_none(),
            "CI must prove the agent's container, but this kernel lacks namespaces"
        );
        println!("KERNEL FEATURE UNAVAILABLE: the agent's container could not be proven");
    }
    made
}
