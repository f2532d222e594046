//! `tandem context` as a person waits for it, the whole process (start, database, git, the
//! walk, the packing, the printing), against `rg --files` on the same project in the same
//! run, the two interleaved so that the machine's load falls on both alike.
//!
//! The project is the synthetic 15,000-file one (see `support`), imported with `tandem project
//! add` (a folder without `.git`: `git init` and one commit of every file). Measured:
//! 1. the fresh import: the first `tandem context` after it, then repeated runs;
//! 2. warm: after five small edits committed on top (what recently edited files then mean);
//! 3. a long history: 20,000 more commits on top (each changing one file), as a real project's
//!    years of history (a turn reads only the last few commits, however long it is).
//!
//! The model's provider is a local stand-in for Ollama: the first run asks it for the model's
//! window and keeps the answer (as with a real server); the later runs do not ask.
//!
//! Goal: ≤ 1.5× `rg --files`.
//!
//! Run: `cargo bench --bench context_process`. Needs ripgrep's `rg` on `PATH` (or its path in
//! `TANDEM_BENCH_RG`): `cargo install ripgrep --locked`, or the system's `ripgrep` package.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

mod support;

#[path = "support/ollama.rs"]
mod ollama;

const RUNS: usize = 21;

fn rg() -> PathBuf {
    let rg = std::env::var_os("TANDEM_BENCH_RG").map_or_else(|| PathBuf::from("rg"), PathBuf::from);
    let found = Command::new(&rg)
        .arg("--version")
        .stdout(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !found {
        eprintln!(
            "error: this benchmark compares with ripgrep, and `{}` cannot be run.\n\
             Install it with `cargo install ripgrep --locked` (or the system's `ripgrep` \
             package), or set TANDEM_BENCH_RG=/path/to/rg.",
            rg.display()
        );
        std::process::exit(1);
    }
    rg
}

/// Runs `program args` in `dir` with its output read (as a terminal or a pipe would), and
/// returns how long the process took and what it printed.
fn timed(program: &Path, args: &[&str], dir: &Path) -> (Duration, String) {
    let start = Instant::now();
    let output = Command::new(program)
        .args(args)
        .current_dir(dir)
        .env_remove("TANDEM_DATA_DIR")
        .env_remove("OLLAMA_HOST")
        .stdin(Stdio::null())
        .output()
        .expect("the program starts");
    let took = start.elapsed();
    assert!(
        output.status.success(),
        "{} {args:?}: {}",
        program.display(),
        String::from_utf8_lossy(&output.stderr)
    );
    (took, String::from_utf8_lossy(&output.stdout).into_owned())
}

fn median(mut times: Vec<Duration>) -> Duration {
    times.sort();
    times[times.len() / 2]
}

/// Runs `git args` in `root`; its output.
fn git(root: &Path, args: &[&str]) -> String {
    // No automatic `git gc`: packing the import's 15,000 loose objects in the background
    // would run during the measurements.
    let output = Command::new("git")
        .args(["-c", "gc.auto=0"])
        .args(args)
        .current_dir(root)
        .env("GIT_AUTHOR_NAME", "b")
        .env("GIT_AUTHOR_EMAIL", "b@example.com")
        .env("GIT_COMMITTER_NAME", "b")
        .env("GIT_COMMITTER_EMAIL", "b@example.com")
        .output()
        .expect("git");
    assert!(output.status.success(), "git {args:?}");
    String::from_utf8(output.stdout).expect("utf-8")
}

struct Subjects {
    tandem: PathBuf,
    rg: PathBuf,
    data: String,
    root: PathBuf,
}

impl Subjects {
    fn context(&self) -> (Duration, String) {
        let root = self.root.to_str().expect("utf-8 path");
        let args = ["--data-dir", &self.data, "context", "--project", root];
        let (took, out) = timed(&self.tandem, &args, &self.root);
        assert!(out.contains("listed by path only"), "{out}");
        (took, out)
    }

    fn rg_files(&self) -> (Duration, usize) {
        let (took, out) = timed(&self.rg, &["--files"], &self.root);
        (took, out.lines().count())
    }

    /// Medians of `RUNS` interleaved runs: (tandem, rg).
    fn compare(&self) -> (Duration, Duration) {
        let (mut ours, mut theirs) = (Vec::new(), Vec::new());
        for _ in 0..RUNS {
            ours.push(self.context().0);
            theirs.push(self.rg_files().0);
        }
        (median(ours), median(theirs))
    }
}

fn row(name: &str, ours: Duration, theirs: Duration) {
    println!(
        "{name:<44} {ours:>9.2?} vs rg --files {theirs:>8.2?}  ({:.2}x)",
        ours.as_secs_f64() / theirs.as_secs_f64()
    );
}

fn main() {
    if std::env::args().any(|a| a == "--list") {
        return;
    }
    let rg = rg();
    let dir = tempfile::tempdir().expect("dir");
    let root = dir.path().join("project");
    support::synthetic(&root);
    let data = dir.path().join("data");
    let s = Subjects {
        tandem: PathBuf::from(env!("CARGO_BIN_EXE_tandem")),
        rg,
        data: data.to_str().expect("utf-8 path").to_string(),
        root: root.canonicalize().expect("root"),
    };
    let tandem = |args: &[&str]| {
        let mut all = vec!["--data-dir", &s.data];
        all.extend_from_slice(args);
        timed(&s.tandem, &all, &s.root)
    };
    let root_arg = s.root.to_str().expect("utf-8 path");
    let (import, _) = tandem(&["project", "add", root_arg]);
    let url = format!("http://127.0.0.1:{}", ollama::serve(|_| 32768));
    tandem(&[
        "provider",
        "add",
        "--name",
        "bench",
        "--kind",
        "ollama",
        "--base-url",
        &url,
        "--default-model",
        "bench-model",
    ]);
    tandem(&["config", "set", "chat.default_provider", "bench"]);

    let (first, out) = s.context();
    let (first_rg, files) = s.rg_files();
    let summary = out.lines().take(2).collect::<Vec<_>>().join("; ");
    println!(
        "`tandem context` on a fresh import of {files} files (`tandem project add`: {import:.1?}), \
         median of {RUNS} runs each, interleaved with `rg --files`:\n  {summary}"
    );
    row("fresh import, the first run", first, first_rg);
    let (ours, theirs) = s.compare();
    row("fresh import, repeated", ours, theirs);

    // Five small edits committed on top: recently edited files now exist.
    for i in 0..5 {
        for f in 0..3 {
            let path = s
                .root
                .join(format!("src/module_{:03}/file_{f:03}.rs", i * 7));
            let mut text = std::fs::read_to_string(&path).expect("read");
            text.push_str(&format!("    let edited_{i} = {f};\n"));
            std::fs::write(&path, text).expect("write");
        }
        git(&s.root, &["commit", "-qam", &format!("edit {i}")]);
    }
    let (ours, theirs) = s.compare();
    row("after five edits committed", ours, theirs);

    long_history(&s.root, 20_000);
    let (ours, theirs) = s.compare();
    row("after 20,000 more commits", ours, theirs);
}

/// `count` commits on top of HEAD, each changing `HISTORY.txt`, written by `git fast-import`
/// (a pack, as a cloned history is), then checked out.
fn long_history(root: &Path, count: usize) {
    use std::fmt::Write as _;
    let head = git(root, &["rev-parse", "HEAD"]);
    let branch = git(root, &["symbolic-ref", "HEAD"]);
    let mut stream = String::new();
    for i in 0..count {
        let message = format!("change {i}\n");
        let content = format!("{i}\n");
        let _ = write!(
            stream,
            "commit {}\ncommitter b <b@example.com> {} +0000\ndata {}\n{message}",
            branch.trim(),
            1_700_000_000 + i,
            message.len()
        );
        if i == 0 {
            let _ = writeln!(stream, "from {}", head.trim());
        }
        let _ = write!(
            stream,
            "M 100644 inline HISTORY.txt\ndata {}\n{content}\n",
            content.len()
        );
    }
    let mut import = Command::new("git")
        .args(["fast-import", "--quiet"])
        .current_dir(root)
        .stdin(Stdio::piped())
        .spawn()
        .expect("git fast-import");
    {
        use std::io::Write as _;
        let mut stdin = import.stdin.take().expect("stdin");
        stdin
            .write_all(stream.as_bytes())
            .expect("write the stream");
    }
    assert!(import.wait().expect("git fast-import").success());
    git(root, &["reset", "-q", "--hard"]);
}
