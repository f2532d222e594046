//! The code index on the synthetic 15,000-file project (see `support`), against ripgrep
//! reading every file of the same project in the same run (`rg -l` with a pattern that never
//! matches: the walk, the reads and a scan of every byte).
//!
//! Measured, with the goals:
//! 1. building the index from nothing (every file read, parsed and split into words):
//!    ≤ 2× rg; beside it, the floor of any index of words: rg counting every identifier,
//!    and the index's own words alone (nothing parsed or stored);
//! 2. opening it from the data directory in a new process's registry, and a refresh that
//!    finds nothing changed (a warm turn);
//! 3. an incremental refresh after 20 files changed: ≤ 50 ms per changed file;
//! 4. ranking the files for a prompt: ≤ 50 ms;
//! 5. the index's memory (resident set growth while building it, Linux): ≤ 50 MB;
//!
//! and the build as `project add` makes it, in refreshes of 250 ms that let the index go
//! between them: each reading the next round ahead while it writes its last one, against
//! not, interleaved.
//!
//! Run: `cargo bench --bench index`. Needs `rg` on `PATH` (or `TANDEM_BENCH_RG`).
//! `TANDEM_BENCH_PROJECT=/path/to/a/git/repository` measures a clone of that project instead
//! of the synthetic one (its files are changed for the incremental refresh).

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use tandem_core::folder::context::{ContextOptions, Walk};
use tandem_core::index::{Changes, CodeIndex, Indexes, Signals, lock};

mod support;

const RUNS: usize = 5;
/// Builds in short refreshes, each way.
const SHORT_RUNS: usize = 3;
/// The deadline of each of `project add`'s refreshes.
const SHORT: Duration = Duration::from_millis(250);

/// A build from nothing into `stored` as `project add` makes it: refreshes of [`SHORT`] until
/// no file is left, each reading the next round ahead (`ahead`) or not.
fn short_refreshes(root: &Path, paths: &[&str], stored: &Path, ahead: bool) -> Duration {
    let mut index = CodeIndex::open(stored).expect("index");
    let start = Instant::now();
    loop {
        let deadline = Some(Instant::now() + SHORT);
        let files = paths.iter().map(|path| (*path, None));
        let done = match ahead {
            true => index.refresh_reading_ahead(root, files, &Changes::unknown(), deadline),
            false => index.refresh_until(root, files, &Changes::unknown(), deadline),
        };
        if done.expect("refresh").left == 0 {
            return start.elapsed();
        }
    }
}

/// The project measured, at `root`: a clone of `TANDEM_BENCH_PROJECT`, or the synthetic one.
fn project(root: &Path) -> String {
    let Some(source) = std::env::var_os("TANDEM_BENCH_PROJECT") else {
        support::synthetic(root);
        return "the synthetic project".into();
    };
    let status = Command::new("git")
        .args(["clone", "--quiet"])
        .arg(&source)
        .arg(root)
        .status()
        .expect("git runs");
    assert!(status.success(), "git clone {source:?}");
    format!("a clone of {}", source.to_string_lossy())
}

fn median(mut times: Vec<Duration>) -> Duration {
    times.sort();
    times[times.len() / 2]
}

fn rg_reads_everything(rg: &Path, root: &Path) -> Duration {
    // 1: nothing matched, as meant.
    rg_timed(
        rg,
        root,
        &["-l", "--no-messages", "zq_never_found_qz", "."],
        1,
    )
}

/// How long `rg args` takes in `root`, which must exit with `code`.
fn rg_timed(rg: &Path, root: &Path, args: &[&str], code: i32) -> Duration {
    let start = Instant::now();
    let status = Command::new(rg)
        .args(args)
        .current_dir(root)
        .stdout(Stdio::null())
        .status()
        .expect("rg runs");
    assert_eq!(status.code(), Some(code), "rg {args:?}");
    start.elapsed()
}

/// rg finding every identifier of every file (`--count-matches`, so none is printed).
fn rg_finds_every_word(rg: &Path, root: &Path) -> Duration {
    let args = [
        "--count-matches",
        "--no-messages",
        "[A-Za-z_][A-Za-z0-9_]*",
        ".",
    ];
    rg_timed(rg, root, &args, 0)
}

/// Every file of `paths` read and split into the index's words (`extract` of a format no
/// grammar reads: the words of its text and path, each counted), on every core: what any
/// index of the project's words costs before parsing or storing anything.
fn words_only(root: &Path, paths: &[&str]) -> Duration {
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let start = Instant::now();
    let words: usize = std::thread::scope(|s| {
        let threads: Vec<_> = (0..cores)
            .map(|core| {
                s.spawn(move || {
                    (paths.iter().skip(core).step_by(cores))
                        .filter_map(|path| std::fs::read_to_string(root.join(path)).ok())
                        .map(|text| tandem_core::index::extract("words.txt", &text).words.len())
                        .sum::<usize>()
                })
            })
            .collect();
        threads.into_iter().map(|t| t.join().expect("thread")).sum()
    });
    assert!(words > 0);
    start.elapsed()
}

/// The resident set, in bytes (Linux; 0 elsewhere).
fn resident() -> u64 {
    let statm = std::fs::read_to_string("/proc/self/statm").unwrap_or_default();
    let pages: u64 = statm
        .split(' ')
        .nth(1)
        .and_then(|p| p.parse().ok())
        .unwrap_or(0);
    pages * 4096
}

fn main() {
    if std::env::args().any(|a| a == "--list") {
        return;
    }
    let rg = std::env::var_os("TANDEM_BENCH_RG").map_or_else(|| PathBuf::from("rg"), PathBuf::from);
    let dir = tempfile::tempdir().expect("dir");
    let root = dir.path().join("project");
    let measured = project(&root);
    let root = root.canonicalize().expect("root");
    let walk = Walk::new(&root, &ContextOptions::default()).expect("walk");
    let paths: Vec<&str> = walk.paths().collect();
    println!("{measured}: {} files walked", paths.len());

    let (mut build, mut reference) = (Vec::new(), Vec::new());
    let mut built = 0;
    let mut grew = 0;
    for run in 0..RUNS {
        reference.push(rg_reads_everything(&rg, &root));
        let before = resident();
        let start = Instant::now();
        let stored = dir.path().join(format!("build-{run}.sqlite"));
        let mut index = CodeIndex::open(&stored).expect("index");
        index
            .refresh(&root, paths.iter().copied())
            .expect("refresh");
        build.push(start.elapsed());
        grew = grew.max(resident().saturating_sub(before));
        built = index.len().expect("len");
    }
    let (build, reference) = (median(build), median(reference));
    let size = std::fs::metadata(dir.path().join("build-0.sqlite")).map_or(0, |m| m.len());
    println!(
        "build: {built} files in {build:?} ({:.1} MB on disk); rg reading every file \
         {reference:?}; ratio {:.2} (goal ≤ 2)",
        size as f64 / 1e6,
        build.as_secs_f64() / reference.as_secs_f64()
    );
    // What any index of the files' words costs at least, against the same rg: rg itself
    // finding every identifier (none split, lower-cased or counted apart), and Tandem's
    // words alone (split and counted, nothing parsed or stored).
    let rg_words = median((0..RUNS).map(|_| rg_finds_every_word(&rg, &root)).collect());
    let words = median((0..RUNS).map(|_| words_only(&root, &paths)).collect());
    println!(
        "the floor of an index of words: rg counting every identifier {rg_words:?} (ratio \
         {:.2} to rg reading); every file read and split into the index's words on every \
         core, nothing parsed or stored, {words:?} (ratio {:.2})",
        rg_words.as_secs_f64() / reference.as_secs_f64(),
        words.as_secs_f64() / reference.as_secs_f64()
    );
    println!(
        "memory: resident set grew {:.1} MB building it (goal ≤ 50)",
        grew as f64 / 1e6
    );
    let (mut ahead, mut not) = (Vec::new(), Vec::new());
    for run in 0..SHORT_RUNS {
        let stored = |way: &str| dir.path().join(format!("short-{way}-{run}.sqlite"));
        ahead.push(short_refreshes(&root, &paths, &stored("ahead"), true));
        not.push(short_refreshes(&root, &paths, &stored("not"), false));
    }
    let (ahead, not) = (median(ahead), median(not));
    println!(
        "build in refreshes of {SHORT:?} (as `project add`): reading the next round ahead \
         {ahead:?}, not {not:?} (ratio {:.2}); {:.2}× rg reading",
        not.as_secs_f64() / ahead.as_secs_f64(),
        ahead.as_secs_f64() / reference.as_secs_f64()
    );

    let data = dir.path().join("data");
    let first = Indexes::new(Some(&data)).project(&root).expect("index");
    lock(&first)
        .refresh(&root, paths.iter().copied())
        .expect("refresh");
    drop(first);
    let start = Instant::now();
    let indexes = Indexes::new(Some(&data));
    let project = indexes.project(&root).expect("index");
    let loaded = start.elapsed();
    let mut project = lock(&project);
    let start = Instant::now();
    let warm = project
        .refresh(&root, paths.iter().copied())
        .expect("refresh");
    println!(
        "open from the data directory: {loaded:?}; warm refresh ({} unchanged): {:?}",
        warm.unchanged,
        start.elapsed()
    );

    let changed: Vec<&str> = paths
        .iter()
        .copied()
        .step_by(paths.len() / 20)
        .take(20)
        .collect();
    for (i, path) in changed.iter().enumerate() {
        let tmp = root.join(format!("{path}.tmp"));
        std::fs::write(
            &tmp,
            format!("pub fn changed_{i}() -> u32 {{ compute({i}) }}\n"),
        )
        .expect("write");
        std::fs::rename(&tmp, root.join(path)).expect("rename");
    }
    let start = Instant::now();
    let done = project
        .refresh(&root, paths.iter().copied())
        .expect("refresh");
    let took = start.elapsed();
    assert_eq!(done.extracted, changed.len());
    println!(
        "incremental: {} changed files in {took:?}, {:?} per file (goal ≤ 50 ms)",
        changed.len(),
        took / changed.len() as u32
    );

    let prompts = [
        "compute the value in module 42 wrongly",
        "changed_7 returns the wrong number",
        "text values are off by one in file 17",
    ];
    let ranks: Vec<Duration> = (0..RUNS)
        .flat_map(|_| prompts)
        .map(|prompt| {
            let start = Instant::now();
            let ranked = project
                .rank(
                    &Signals {
                        prompt,
                        ..Signals::default()
                    },
                    400,
                )
                .expect("rank");
            assert!(!ranked.is_empty());
            start.elapsed()
        })
        .collect();
    println!(
        "ranking for a prompt: median {:?} (goal ≤ 50 ms)",
        median(ranks)
    );
}
