//! The context walk on a big project, against what `rg --files` does measured in the same
//! run: a bare `.gitignore`-aware parallel listing (the `ignore` crate, which ripgrep is
//! built on), and the same listing reading every file (what `rg` searching does).
//!
//! The project is 15,000 source files in 150 folders with sizes spread like real code
//! (a few hundred bytes to ~40 KB), a `.gitignore`d build folder and a lock file; or set
//! `TANDEM_BENCH_PROJECT=/path` to measure a real one. A turn walks once and packs the walk
//! (more than once when fitting its window): both are measured alone too. The whole
//! `tandem context` process against the real `rg --files` is `benches/context_process.rs`.
//!
//! Run: `cargo bench --bench context`

use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use tandem_core::folder::context::{ContextCache, ContextOptions, Walk};
use tandem_core::folder::list_files;

mod support;

const RUNS: usize = 15;

/// `rg --files`: the ignore-aware listing, in parallel.
fn list_like_rg(root: &Path, read: bool) -> usize {
    let count = AtomicUsize::new(0);
    let bytes = AtomicUsize::new(0);
    ignore::WalkBuilder::new(root)
        .require_git(false)
        .build_parallel()
        .run(|| {
            Box::new(|entry| {
                if let Ok(entry) = entry
                    && entry.file_type().is_some_and(|t| t.is_file())
                {
                    count.fetch_add(1, Ordering::Relaxed);
                    if read && let Ok(data) = std::fs::read(entry.path()) {
                        bytes.fetch_add(data.len(), Ordering::Relaxed);
                    }
                }
                ignore::WalkState::Continue
            })
        });
    std::hint::black_box(bytes.into_inner());
    count.into_inner()
}

fn median(mut f: impl FnMut()) -> Duration {
    f(); // warm the page cache and the allocator
    let mut times: Vec<Duration> = (0..RUNS)
        .map(|_| {
            let start = Instant::now();
            f();
            start.elapsed()
        })
        .collect();
    times.sort();
    times[RUNS / 2]
}

fn main() {
    if std::env::args().any(|a| a == "--list") {
        return;
    }
    let dir = tempfile::tempdir().expect("dir");
    let root: PathBuf = match std::env::var_os("TANDEM_BENCH_PROJECT") {
        Some(path) => PathBuf::from(path),
        None => {
            support::synthetic(dir.path());
            dir.path().to_path_buf()
        }
    };
    let files = list_like_rg(&root, false);
    let listing = median(|| {
        list_like_rg(&root, false);
    });
    let reading = median(|| {
        list_like_rg(&root, true);
    });
    let held = Mutex::new(0usize);
    let collect = |budget: usize, cache: &ContextCache| {
        let options = ContextOptions {
            budget_tokens: budget,
            ..ContextOptions::default()
        };
        let context = cache.collect(&root, &options).expect("collect");
        *held.lock().expect("lock") = context.included.iter().map(|f| f.bytes as usize).sum();
    };
    // A fresh cache each run: what one `tandem context` or `tandem chat` process does.
    let cold_small = median(|| collect(6_000, &ContextCache::default()));
    let small_bytes = *held.lock().expect("lock");
    let cold_paths = median(|| collect(0, &ContextCache::default()));
    // The window keeps its cache between turns.
    let warm = ContextCache::default();
    let warm_large = median(|| collect(100_000, &warm));
    let cold_large = median(|| collect(100_000, &ContextCache::default()));
    let large_bytes = *held.lock().expect("lock");
    let tree = median(|| {
        list_files(&root).expect("list");
    });
    let by_name = ContextOptions {
        budget_tokens: 0,
        ..ContextOptions::default()
    };
    let unsized_walk = median(|| {
        Walk::new(&root, &by_name).expect("walk");
    });

    println!("context walk, {files} files listed by the reference, median of {RUNS} runs:");
    let row = |name: &str, time: Duration| {
        println!(
            "{name:<62} {time:>9.2?}  ({:.2}x rg --files)",
            time.as_secs_f64() / listing.as_secs_f64()
        );
    };
    row(
        "reference: ignore-aware parallel listing (rg --files)",
        listing,
    );
    row("reference: the same, reading every file (rg)", reading);
    row(
        &format!(
            "collect, 6,000-token budget ({} KB read), cold",
            small_bytes / 1024
        ),
        cold_small,
    );
    row(
        "collect, paths only (Agent mode, mention candidates), cold",
        cold_paths,
    );
    row(
        &format!(
            "collect, 100,000-token budget ({} KB read), cold",
            large_bytes / 1024
        ),
        cold_large,
    );
    row("the same, warm cache (the window, next turn)", warm_large);
    row("file tree listing (project open / refresh)", tree);
    row(
        "the walk alone (eligible files by name, a turn's one walk)",
        unsized_walk,
    );
    let walk = Walk::new(&root, &by_name).expect("walk");
    let warm = ContextCache::default();
    let packing = median(|| {
        let options = ContextOptions {
            budget_tokens: 24_000,
            listing_budget: 6_000,
            ..ContextOptions::default()
        };
        warm.pack(&walk, &options).expect("pack");
    });
    row(
        "packing a walk again, 24,000 tokens (a prompt's fitting)",
        packing,
    );
}
