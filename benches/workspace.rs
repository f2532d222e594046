//! What the agent's workspace costs, against references in the same run, on a 15,000-file
//! project (and a 1,500-file one, to show what grows with the size):
//! 1. creating a chat's workspace: an overlay, against a copy of the project (the fallback,
//!    and what the end-of-turn check and the CLI agents used to make every turn);
//! 2. starting a command in the workspace, against the same command in the container
//!    without one;
//! 3. collecting what a command changed (10 files written, a build directory ignored),
//!    against `git status` on the same tree.
//!
//! Goals: creating ≤ 50 ms with the overlay whatever the size; starting ≤ 1.2×; collecting
//! ≤ 1.2× `git status`.
//!
//! Run: `cargo bench --bench workspace`

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use tandem_core::layer::{Layer, Tracker, Workspace};
use tandem_core::process::{Sandbox, ShellRequest, run_shell};
use tandem_core::sandbox::Confinement;

fn median(mut times: Vec<Duration>) -> Duration {
    times.sort();
    times[times.len() / 2]
}

fn project(root: &Path, files: usize) {
    for i in 0..files {
        let dir = root.join(format!("src/m{:03}", i / 50));
        std::fs::create_dir_all(&dir).expect("mkdir");
        let text: String = (0..20)
            .map(|l| format!("pub fn f_{i}_{l}() -> u32 {{ {l} }}\n"))
            .collect();
        std::fs::write(dir.join(format!("f{i:05}.rs")), text).expect("write");
    }
    std::fs::write(root.join(".gitignore"), "target/\n").expect("write");
    let git = |args: &[&str]| {
        let ok = std::process::Command::new("git")
            .args(args)
            .current_dir(root)
            .env("GIT_AUTHOR_NAME", "b")
            .env("GIT_AUTHOR_EMAIL", "b@example.com")
            .env("GIT_COMMITTER_NAME", "b")
            .env("GIT_COMMITTER_EMAIL", "b@example.com")
            .output()
            .expect("git")
            .status
            .success();
        assert!(ok, "git {args:?}");
    };
    git(&["init", "-q"]);
    git(&["add", "-A"]);
    git(&["commit", "-qm", "import"]);
}

fn main() {
    if std::env::args().any(|a| a == "--list") {
        return;
    }
    if let Err(why) = tandem_core::sandbox::overlay::supported() {
        println!("no overlays here ({why}): only the copy can be measured");
    }
    let runtime = tokio::runtime::Runtime::new().expect("runtime");
    for files in [1_500, 15_000] {
        let dir = tempfile::tempdir().expect("dir");
        let root = dir.path().join("project");
        project(&root, files);
        let root = root.canonicalize().expect("root");
        let data = dir.path().join("data");
        println!("{files}-file project:");

        // 1. Creating.
        let (mut overlay, mut copy) = (Vec::new(), Vec::new());
        for run in 0..7 {
            let start = Instant::now();
            let w = Workspace::open(Layer::of(&data, run), &root, false).expect("overlay");
            overlay.push(start.elapsed());
            drop(w);
            let start = Instant::now();
            let w = Workspace::open(Layer::of(&data, 100 + run), &root, true).expect("copy");
            copy.push(start.elapsed());
            drop(w);
            let _ = Layer::of(&data, run).discard();
            let _ = Layer::of(&data, 100 + run).discard();
        }
        let (overlay, copy) = (median(overlay), median(copy));
        println!("  creating a chat's workspace, median of 7:");
        println!("    a copy of the project (reference)   {copy:>10.2?}");
        println!(
            "    the overlay                          {overlay:>10.2?}  ({:.3}x; goal ≤ 50 ms)",
            overlay.as_secs_f64() / copy.as_secs_f64()
        );

        // 2. Starting a command.
        let workspace = Arc::new(Workspace::open(Layer::of(&data, 1), &root, false).expect("open"));
        let temp = tempfile::tempdir().expect("temp");
        let plain = Confinement::new(&root, temp.path());
        let viewed = Confinement {
            view: Some(workspace.project_view()),
            ..plain.clone()
        };
        let run = |c: &Confinement, command: &str| {
            let start = Instant::now();
            let outcome = runtime
                .block_on(run_shell(
                    ShellRequest {
                        sandbox: Sandbox::Confined(c.clone()),
                        ..ShellRequest::new(command, &root)
                    },
                    Default::default(),
                ))
                .expect("run");
            assert_eq!(outcome.exit_code, Some(0), "{outcome:?}");
            start.elapsed()
        };
        run(&plain, "true");
        let (mut with, mut without) = (Vec::new(), Vec::new());
        for _ in 0..31 {
            without.push(run(&plain, "true"));
            with.push(run(&viewed, "true"));
        }
        let (with, without) = (median(with), median(without));
        println!("  starting `true`, median of 31:");
        println!("    in the container (reference)         {without:>10.2?}");
        println!(
            "    in the container, in the workspace   {with:>10.2?}  ({:.2}x; goal ≤ 1.2x)",
            with.as_secs_f64() / without.as_secs_f64()
        );

        // 3. Collecting after a command.
        let (tracker, _) = Tracker::start(Arc::clone(&workspace)).expect("tracker");
        let (mut ours, mut git) = (Vec::new(), Vec::new());
        for round in 0..9 {
            let write = format!(
                "mkdir -p target && for i in 0 1 2 3 4 5 6 7 8 9; do echo {round} >> src/m000/f0000$i.rs; \
                 echo x > target/o$i; done"
            );
            run(&viewed, &write);
            let start = Instant::now();
            let changes = tracker.collect().expect("collect");
            ours.push(start.elapsed());
            assert_eq!(changes.len(), 10, "{changes:?}");
            let start = Instant::now();
            let status = std::process::Command::new("git")
                .args(["status", "--porcelain"])
                .current_dir(&root)
                .output()
                .expect("git status");
            git.push(start.elapsed());
            assert!(status.status.success());
        }
        let (ours, git) = (median(ours), median(git));
        println!("  what a command changed (10 files), median of 9:");
        println!("    `git status` on the tree (reference) {git:>10.2?}");
        println!(
            "    collected from the workspace         {ours:>10.2?}  ({:.2}x; goal ≤ 1.2x)",
            ours.as_secs_f64() / git.as_secs_f64()
        );
        drop(tracker);
        drop(workspace);
        let _ = Layer::of(&data, 1).discard();
    }
}
