//! Engine benchmarks (criterion), plus a printed ratio against the git CLI measured in the
//! same run:
//! - parse a 1 MB reply;
//! - plan + apply + commit a 50-file proposal vs writing the same files and running
//!   `git add -A && git commit` with the git CLI on an identical repository;
//! - diff a 10,000-line file with 1% of its lines changed.

use std::hint::black_box;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use criterion::{BatchSize, Criterion, criterion_group, criterion_main};
use tandem_core::Engine;
use tandem_core::edits::{build_plan, diff, parse};
use tandem_core::store::Project;

const FILES: usize = 50;

fn file_text(i: usize, version: &str) -> String {
    (0..40)
        .map(|line| format!("// file {i} line {line} {version}\n"))
        .collect()
}

fn git(root: &Path, args: &[&str]) {
    let status = Command::new("git")
        .args(args)
        .current_dir(root)
        .env("GIT_AUTHOR_NAME", "Bench")
        .env("GIT_AUTHOR_EMAIL", "bench@example.com")
        .env("GIT_COMMITTER_NAME", "Bench")
        .env("GIT_COMMITTER_EMAIL", "bench@example.com")
        .status()
        .expect("git runs");
    assert!(status.success(), "git {args:?}");
}

/// A repository with 50 committed files.
fn repo() -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("temp dir");
    let root = dir.path().join("p");
    std::fs::create_dir_all(root.join("src")).expect("mkdir");
    for i in 0..FILES {
        std::fs::write(root.join(format!("src/f{i}.rs")), file_text(i, "v1")).expect("write");
    }
    git(&root, &["init", "-q"]);
    git(&root, &["add", "-A"]);
    git(&root, &["commit", "-q", "-m", "init"]);
    dir
}

fn fifty_file_reply() -> String {
    let mut reply = String::from("Updating every file.\n");
    for i in 0..FILES {
        reply.push_str(&format!(
            "<tandem-write path=\"src/f{i}.rs\" description=\"bump\">\n{}</tandem-write>\n",
            file_text(i, "v2")
        ));
    }
    reply.push_str("<tandem-chat-summary>Bump every file</tandem-chat-summary>\n");
    reply
}

fn one_megabyte_reply() -> String {
    let mut reply = String::new();
    let mut i = 0;
    while reply.len() < 1_000_000 {
        reply.push_str(&format!(
            "Prose paragraph {i} explaining the change with `code` and <b>html</b>.\n\
             ```rust\nlet example = {i};\n```\n\
             <tandem-write path=\"src/m{i}.rs\">\n{}</tandem-write>\n",
            file_text(i, "x")
        ));
        i += 1;
    }
    reply
}

type Setup = (tempfile::TempDir, Engine, Project);

/// A repository with its engine and project (opening the database is not measured).
fn engine_repo() -> Setup {
    let dir = repo();
    let engine = Engine::open(Some(&dir.path().join("data"))).expect("engine");
    let project = engine
        .add_project(&dir.path().join("p"), None)
        .expect("project")
        .project;
    (dir, engine, project)
}

/// Engine path: propose (store + plan) and approve (re-plan, re-check, apply, commit).
fn engine_apply((_dir, engine, project): &Setup, reply: &str) {
    let proposal = engine.propose(project, None, None, reply).expect("propose");
    let outcome = engine.approve(proposal.message.id, None).expect("approve");
    assert!(outcome.commit.is_some());
}

/// Reference: write the same files, then `git add -A && git commit` with the git CLI.
fn cli_apply(dir: &Path) {
    let root = dir.join("p");
    for i in 0..FILES {
        std::fs::write(root.join(format!("src/f{i}.rs")), file_text(i, "v2")).expect("write");
    }
    git(&root, &["add", "-A"]);
    git(&root, &["commit", "-q", "-m", "bump"]);
}

fn median(mut samples: Vec<Duration>) -> Duration {
    samples.sort();
    samples[samples.len() / 2]
}

fn benches(c: &mut Criterion) {
    let big = one_megabyte_reply();
    c.bench_function("parse 1 MB reply", |b| b.iter(|| black_box(parse(&big))));

    let reply = fifty_file_reply();
    let mut group = c.benchmark_group("apply 50 files");
    group.sample_size(10);
    group.bench_function("tandem: propose + approve (plan, apply, commit)", |b| {
        b.iter_batched(
            engine_repo,
            |setup| engine_apply(&setup, &reply),
            BatchSize::PerIteration,
        )
    });
    group.bench_function("reference: write + git add -A && git commit", |b| {
        b.iter_batched(repo, |dir| cli_apply(dir.path()), BatchSize::PerIteration)
    });
    group.finish();

    // The same comparison, interleaved, reported as one ratio.
    let (mut ours, mut theirs) = (Vec::new(), Vec::new());
    for _ in 0..15 {
        let setup = engine_repo();
        let t = Instant::now();
        engine_apply(&setup, &reply);
        ours.push(t.elapsed());
        let dir = repo();
        let t = Instant::now();
        cli_apply(dir.path());
        theirs.push(t.elapsed());
    }
    let (ours, theirs) = (median(ours), median(theirs));
    println!(
        "\nratio: tandem plan+apply+commit of 50 files = {:.2}x the git CLI reference \
         (median {:?} vs {:?}, same run)\n",
        ours.as_secs_f64() / theirs.as_secs_f64(),
        ours,
        theirs
    );

    let old: String = (0..10_000)
        .map(|i| format!("line {i} of a long file\n"))
        .collect();
    let new: String = old
        .lines()
        .enumerate()
        .map(|(i, l)| {
            if i % 100 == 7 {
                format!("{l} changed\n")
            } else {
                format!("{l}\n")
            }
        })
        .collect();
    c.bench_function("diff 10,000 lines, 1% changed", |b| {
        b.iter(|| black_box(diff::hunks(&old, &new)))
    });
    let dir = repo();
    let root = dir.path().join("p").canonicalize().expect("root");
    c.bench_function("plan 50-file reply (no apply)", |b| {
        b.iter(|| black_box(build_plan(&root, &reply).expect("plan")))
    });
}

criterion_group!(engine, benches);
criterion_main!(engine);
