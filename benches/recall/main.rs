//! Recall of `tandem context` on real repositories (issue 25): does the context Tandem packs
//! for a prompt hold the files the work needs?
//!
//! For each repository: the 25 most recent non-merge commits that change 1 to 20 files, at
//! least one of which existed at the parent (no releases, version bumps, dependency updates or
//! lock-file-only changes; see `commits.rs`). At each commit's parent, with the
//! commit's subject as the prompt, the release `tandem` runs `context --json` as a whole
//! process (a throwaway data directory, sealed from this machine's settings) for models of
//! 8,192, 32,768 and 131,072 tokens.
//!
//! - The answer: the files the commit changed that existed at the parent (files it added
//!   cannot be sent, so they are not counted).
//! - Tandem's pick: `breakdown.included` entries sent `"as": "whole"`.
//! - The reference, in the same run: BM25 (k1 1.2, b 0.75) over the files Tandem considered
//!   (included or listed by path), words = identifiers split at `_`, camelCase and digits, and
//!   the path's segments, lower-cased; the files packed whole in score order into the tokens
//!   Tandem had for file content in that run (the window less the reply's reserve, the system
//!   prompt, the prompt and what the codebase section took besides file content: headings and
//!   the list of paths), each file costing `tandem_core::tokens::estimate` of its text.
//! - Recall: per commit (found / answer), its mean over commits, and micro-averaged (all found
//!   / all answer files). "eligible" is the share of the answer Tandem considered at all (the
//!   ceiling for both: hidden, ignored, binary and non-source files are never sent).
//!
//! Run: `TANDEM_RECALL_REPOS=/path/a,/path/b cargo bench --bench recall` (git clones or bare
//! git directories: each is cloned into a temporary folder, never changed).
//! `TANDEM_RECALL_COMMITS` (default 25) sets the commits per repository;
//! `TANDEM_RECALL_VERBOSE=1` prints each commit's result; `TANDEM_RECALL_FILES=1` prints each
//! answer file's, one tab-separated line a file and window: `file`, repository, commit,
//! window, path, sent whole by Tandem (1/0), by BM25 (1/0), its place among the files Tandem
//! considered (included in their order, then listed; -1: not eligible), its tokens and the
//! content budget (where the misses go: too big, ranked low, not eligible);
//! `TANDEM_RECALL_BIN` measures another build's `tandem` (one that reports
//! `breakdown.included`) instead of this one's.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

mod bm25;
mod commits;
#[path = "../support/ollama.rs"]
mod ollama;
mod tandem_cli;

const WINDOWS: [u32; 3] = [8_192, 32_768, 131_072];

/// What one repository at one window came to.
#[derive(Default)]
struct Tally {
    commits: usize,
    answer: usize,
    eligible: usize,
    found_tandem: usize,
    found_bm25: usize,
    /// Sums of per-commit recall (0 to 1), for the means.
    recall_tandem: f64,
    recall_bm25: f64,
    budget: usize,
    times: Vec<Duration>,
}

impl Tally {
    fn add(&mut self, answer: usize, eligible: usize, tandem: usize, bm25: usize) {
        self.commits += 1;
        self.answer += answer;
        self.eligible += eligible;
        self.found_tandem += tandem;
        self.found_bm25 += bm25;
        self.recall_tandem += tandem as f64 / answer as f64;
        self.recall_bm25 += bm25 as f64 / answer as f64;
    }

    fn merge(&mut self, other: &Tally) {
        self.commits += other.commits;
        self.answer += other.answer;
        self.eligible += other.eligible;
        self.found_tandem += other.found_tandem;
        self.found_bm25 += other.found_bm25;
        self.recall_tandem += other.recall_tandem;
        self.recall_bm25 += other.recall_bm25;
        self.budget += other.budget;
        self.times.extend(&other.times);
    }

    fn row(&self, window: u32) -> String {
        let pct = |part: f64, whole: usize| 100.0 * part / whole.max(1) as f64;
        let mut times = self.times.clone();
        times.sort();
        let median = times.get(times.len() / 2).copied().unwrap_or_default();
        format!(
            "| {window:>7} | {:>5.1}% | {:>5.1}% | {:>5.1}% | {:>5.1}% | {:>4} | {:>5.1}% | {:>7} | {:>7.0?} |",
            pct(self.recall_tandem, self.commits),
            pct(self.recall_bm25, self.commits),
            pct(self.found_tandem as f64, self.answer),
            pct(self.found_bm25 as f64, self.answer),
            self.answer,
            pct(self.eligible as f64, self.answer),
            self.budget / self.commits.max(1),
            median,
        )
    }
}

const HEADER: &str = "| window | Tandem (mean) | BM25 (mean) | Tandem (micro) | BM25 (micro) | answer files | eligible | content budget (mean tokens) | `tandem context` (median) |\n\
                      |---:|---:|---:|---:|---:|---:|---:|---:|---:|";

fn repositories() -> Vec<PathBuf> {
    let Some(list) = std::env::var_os("TANDEM_RECALL_REPOS") else {
        eprintln!(
            "error: set TANDEM_RECALL_REPOS to the repositories to measure, comma-separated \
             (git clones or bare git directories; each is cloned into a temporary folder). \
             For example:\n  git clone https://github.com/vitejs/vite /tmp/vite\n  \
             git clone https://github.com/BurntSushi/ripgrep /tmp/ripgrep\n  \
             git clone https://github.com/pallets/flask /tmp/flask\n  \
             TANDEM_RECALL_REPOS=/tmp/vite,/tmp/ripgrep,/tmp/flask cargo bench --bench recall"
        );
        std::process::exit(1);
    };
    let list = list
        .to_str()
        .expect("TANDEM_RECALL_REPOS is UTF-8")
        .to_string();
    list.split(',')
        .filter(|s| !s.trim().is_empty())
        .map(|s| PathBuf::from(s.trim()))
        .collect()
}

fn env_number(name: &str, default: usize) -> usize {
    std::env::var(name).map_or(default, |v| {
        v.parse()
            .unwrap_or_else(|_| panic!("{name} is a number: {v}"))
    })
}

/// What to print besides the tallies.
#[derive(Clone, Copy)]
struct Show {
    /// Each commit's result.
    commits: bool,
    /// Each answer file's.
    files: bool,
}

/// Measures one repository: a tally per window.
fn measure(repo: &Path, count: usize, show: Show) -> [Tally; 3] {
    let scratch = tempfile::tempdir().expect("a temporary folder");
    let clone = scratch.path().join("project");
    let source = repo.to_str().expect("a UTF-8 repository path");
    let clone_arg = clone.to_str().expect("a UTF-8 temporary path");
    commits::git(
        scratch.path(),
        &["clone", "-q", "--no-checkout", source, clone_arg],
    );
    // The source's replacements too (a clone leaves them): a mirror missing its largest
    // files stands an empty blob in for each (`git replace`) to be checked out at all.
    commits::git(
        &clone,
        &["fetch", "-q", source, "refs/replace/*:refs/replace/*"],
    );
    let cases = commits::recent(&clone, count);
    assert!(
        !cases.is_empty(),
        "{}: no commit to measure",
        repo.display()
    );
    let checkout = |rev: &str| {
        commits::git(&clone, &["checkout", "-q", "-f", "--detach", rev]);
        commits::git(&clone, &["clean", "-q", "-f", "-d", "-x"]);
    };
    checkout(&cases[0].parent);
    let root = clone.canonicalize().expect("the clone's path");
    let tandem = tandem_cli::Tandem::new(scratch.path(), &root);

    let mut tallies: [Tally; 3] = Default::default();
    for case in &cases {
        checkout(&case.parent);
        let mut docs: HashMap<String, Option<bm25::Doc>> = HashMap::new();
        let mut line = format!("  {} {:<60.60}", &case.commit[..10], case.subject);
        line.push_str(&format!(
            " answer {:>2} (+{} added)",
            case.answer.len(),
            case.added
        ));
        for (tally, window) in tallies.iter_mut().zip(WINDOWS) {
            let sent = tandem.context(&case.subject, window);
            for path in &sent.eligible {
                docs.entry(path.clone())
                    .or_insert_with(|| bm25::Doc::read(&root, path));
            }
            let eligible: Vec<&str> = sent.eligible.iter().map(String::as_str).collect();
            let picked = bm25::pack(&case.subject, &eligible, &docs, sent.content_budget);
            let found = |set: &dyn Fn(&str) -> bool| case.answer.iter().filter(|p| set(p)).count();
            let ours = found(&|p| sent.whole.iter().any(|w| w == p));
            let theirs = found(&|p| picked.contains(p));
            let considered = found(&|p| eligible.contains(&p));
            tally.add(case.answer.len(), considered, ours, theirs);
            tally.budget += sent.content_budget;
            tally.times.push(sent.took);
            line.push_str(&format!(" | {window}: T {ours} B {theirs}"));
            if show.files {
                for path in &case.answer {
                    let place = eligible.iter().position(|e| *e == path.as_str());
                    let tokens = docs
                        .get(path)
                        .and_then(Option::as_ref)
                        .map_or(0, |d| d.tokens);
                    println!(
                        "file\t{}\t{}\t{window}\t{path}\t{}\t{}\t{}\t{tokens}\t{}",
                        repo.display(),
                        &case.commit[..10],
                        u8::from(sent.whole.contains(path)),
                        u8::from(picked.contains(path)),
                        place.map_or(-1, |i| i as i64),
                        sent.content_budget,
                    );
                }
            }
        }
        if show.commits {
            println!("{line}");
        }
    }
    tallies
}

fn main() {
    if std::env::args().any(|a| a == "--list") {
        return;
    }
    let repos = repositories();
    let count = env_number("TANDEM_RECALL_COMMITS", 25);
    let show = Show {
        commits: std::env::var_os("TANDEM_RECALL_VERBOSE").is_some(),
        files: std::env::var_os("TANDEM_RECALL_FILES").is_some(),
    };
    let mut all: [Tally; 3] = Default::default();
    for repo in &repos {
        let tallies = measure(repo, count, show);
        println!(
            "\n{} ({} commits; recall = changed files sent whole, of those that existed at the parent):\n{HEADER}",
            repo.display(),
            tallies[0].commits
        );
        for ((tally, window), sum) in tallies.iter().zip(WINDOWS).zip(all.iter_mut()) {
            println!("{}", tally.row(window));
            sum.merge(tally);
        }
    }
    if repos.len() > 1 {
        println!("\nAll {} repositories:\n{HEADER}", repos.len());
        for (tally, window) in all.iter().zip(WINDOWS) {
            println!("{}", tally.row(window));
        }
    }
}
