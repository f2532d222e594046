//! From a reply's end to a checked proposal, against running the check alone, in the same run:
//! a 10-file change to a 1,000-file project, planned, written into the scratch copy (synced
//! from the project first) and checked there in the sandbox, vs the same command run directly
//! in the project. The ratio is what checking in a scratch copy costs beyond the check itself.
//!
//! The check is a grep over the sources: fast, so the overhead shows (a real `cargo check` or
//! `tsc` takes seconds, against which the overhead measured here is small).
//!
//! Run: `cargo bench --bench check`

use std::path::Path;
use std::time::{Duration, Instant};

use tandem_core::checks::{CheckSettings, check_plan};
use tandem_core::edits::{actions, parse, plan::plan_actions};
use tandem_core::process::{ShellRequest, run_shell};

const RUNS: usize = 9;

fn project(root: &Path) {
    for d in 0..20 {
        let dir = root.join(format!("src/m{d:02}"));
        std::fs::create_dir_all(&dir).expect("mkdir");
        for f in 0..50 {
            let text: String = (0..60)
                .map(|i| format!("pub fn f_{f}_{i}() -> u32 {{ {i} }}\n"))
                .collect();
            std::fs::write(dir.join(format!("f{f:02}.rs")), text).expect("write");
        }
    }
}

fn reply() -> String {
    (0..10)
        .map(|i| {
            let text: String = (0..60)
                .map(|n| format!("pub fn f_{i}_{n}() -> u32 {{ {n} + 1 }}\n"))
                .collect();
            format!("<tandem-write path=\"src/m00/f{i:02}.rs\">\n{text}</tandem-write>\n")
        })
        .collect()
}

fn median(mut times: Vec<Duration>) -> Duration {
    times.sort();
    times[times.len() / 2]
}

fn main() {
    if std::env::args().any(|a| a == "--list") {
        return;
    }
    let dir = tempfile::tempdir().expect("dir");
    let root = dir.path().join("project");
    project(&root);
    let root = root.canonicalize().expect("root");
    let command = "! grep -rn BROKEN src".to_string();
    let runtime = tokio::runtime::Runtime::new().expect("runtime");
    let settings = CheckSettings {
        command: command.clone(),
        timeout: Duration::from_secs(600),
        sandbox: tandem_core::sandbox::Settings::default(),
        scratch_base: Some(dir.path().join("scratch")),
    };
    let reply = reply();
    let mut pipeline = Vec::new();
    let mut alone = Vec::new();
    // The first run fills the scratch copy (a one-off per project); it is not counted.
    for run in 0..=RUNS {
        let start = Instant::now();
        let plan = plan_actions(&root, actions(&parse(&reply))).expect("plan");
        let checked = runtime
            .block_on(check_plan(&root, &plan, &settings, 1, Default::default()))
            .expect("check");
        assert!(checked.passed, "{}", checked.output);
        let took = start.elapsed();
        let start = Instant::now();
        let direct = runtime
            .block_on(run_shell(
                ShellRequest::new(command.clone(), &root),
                Default::default(),
            ))
            .expect("run");
        assert_eq!(direct.exit_code, Some(0));
        if run > 0 {
            pipeline.push(took);
            alone.push(start.elapsed());
        }
    }
    let (pipeline, alone) = (median(pipeline), median(alone));
    println!("checked proposal, 10 files changed in a 1,000-file project, median of {RUNS}:");
    println!("reference: the check alone in the project          {alone:>9.2?}");
    println!(
        "reply end -> checked proposal (plan, sync, write, check) {pipeline:>9.2?}  ({:.2}x)",
        pipeline.as_secs_f64() / alone.as_secs_f64()
    );
}
