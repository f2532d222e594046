//! Noticing changes made outside: a `tandem` command in a terminal, `git commit`, another
//! editor, a formatter. A [`Watch`] asks the kernel (`notify`: inotify, FSEvents,
//! ReadDirectoryChangesW) about the project's folders and reports, at most every quarter
//! second, whether its files or its history changed.
//!
//! What is watched is what the project is made of: every folder the walk for the file tree
//! visits (ignored and always-excluded folders such as `node_modules` are not, so a build's
//! output costs nothing), folders made later as they appear, and of `.git` only what says
//! where the history stands (`HEAD`, `packed-refs`, `refs/`): the index and the objects
//! change under every `git status` and would report Tandem's own reads.

use std::path::{Path, PathBuf};
use std::sync::mpsc::{self, RecvTimeoutError};
use std::sync::{Arc, Mutex, Weak};
use std::time::{Duration, Instant};

use ignore::gitignore::{Gitignore, GitignoreBuilder};
use notify::event::{CreateKind, EventKind};
use notify::{RecommendedWatcher, RecursiveMode, Watcher};

/// Changes arriving closer together than this are reported once.
const QUIET: Duration = Duration::from_millis(250);
/// A stream of changes (a checkout, an install) is still reported this often.
const MOST: Duration = Duration::from_secs(1);

/// What changed since the last report.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Changed {
    /// A file or folder of the project (one not ignored).
    pub files: bool,
    /// Where the history stands: a commit, a checkout, a reset, a branch.
    pub history: bool,
}

impl Changed {
    fn any(self) -> bool {
        self.files || self.history
    }
}

#[derive(Debug, thiserror::Error)]
pub enum WatchError {
    #[error("cannot watch {}: {source}", .path.display())]
    Watch {
        path: PathBuf,
        source: notify::Error,
    },
}

/// A project being watched; the watching stops when it is dropped.
pub struct Watch {
    _watcher: Arc<Mutex<RecommendedWatcher>>,
    /// Folders that could not be watched (the system's limit on watches reached).
    pub unwatched: usize,
}

impl std::fmt::Debug for Watch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Watch")
            .field("unwatched", &self.unwatched)
            .finish()
    }
}

/// Starts watching the project at `root`; `report` is called from a thread of the watch's
/// own with what changed.
pub fn watch(root: &Path, report: impl Fn(Changed) + Send + 'static) -> Result<Watch, WatchError> {
    let (tx, rx) = mpsc::channel();
    let watcher = notify::recommended_watcher(move |event| {
        let _ = tx.send(event);
    })
    .map_err(|source| WatchError::Watch {
        path: root.to_path_buf(),
        source,
    })?;
    let watcher = Arc::new(Mutex::new(watcher));
    let filter = Filter::new(root);
    let unwatched = {
        let mut w = watcher.lock().unwrap_or_else(|p| p.into_inner());
        w.watch(root, RecursiveMode::NonRecursive)
            .map_err(|source| WatchError::Watch {
                path: root.to_path_buf(),
                source,
            })?;
        let git = root.join(".git");
        if git.is_dir() {
            let _ = w.watch(&git, RecursiveMode::NonRecursive);
            let _ = w.watch(&git.join("refs"), RecursiveMode::Recursive);
        }
        add_folders(&mut w, root, &filter)
    };
    let weak = Arc::downgrade(&watcher);
    std::thread::Builder::new()
        .name("tandem-watch".into())
        .spawn(move || run(rx, weak, filter, report))
        .map_err(|e| WatchError::Watch {
            path: root.to_path_buf(),
            source: notify::Error::io(e),
        })?;
    Ok(Watch {
        _watcher: watcher,
        unwatched,
    })
}

/// Watches every folder below `dir` (itself included unless it is the root, watched
/// already) that the walk visits; returns how many could not be watched.
fn add_folders(watcher: &mut RecommendedWatcher, dir: &Path, filter: &Filter) -> usize {
    let mut failed = 0;
    for entry in super::context::walker(dir).build().flatten() {
        let is_dir = entry.file_type().is_some_and(|t| t.is_dir());
        if !is_dir || entry.path() == filter.root {
            continue;
        }
        if watcher
            .watch(entry.path(), RecursiveMode::NonRecursive)
            .is_err()
        {
            failed += 1;
        }
    }
    failed
}

/// Gathers the kernel's events into reports until the watcher is dropped.
fn run(
    rx: mpsc::Receiver<notify::Result<notify::Event>>,
    watcher: Weak<Mutex<RecommendedWatcher>>,
    filter: Filter,
    report: impl Fn(Changed),
) {
    while let Ok(first) = rx.recv() {
        let started = Instant::now();
        let mut changed = Changed::default();
        let mut new_dirs = Vec::new();
        let mut next = Some(first);
        while let Some(event) = next.take() {
            if let Ok(event) = event {
                filter.classify(&event, &mut changed, &mut new_dirs);
            }
            if started.elapsed() >= MOST {
                break;
            }
            next = match rx.recv_timeout(QUIET) {
                Ok(event) => Some(event),
                Err(RecvTimeoutError::Timeout) => None,
                Err(RecvTimeoutError::Disconnected) => return,
            };
        }
        if !new_dirs.is_empty() {
            let Some(watcher) = watcher.upgrade() else {
                return;
            };
            let mut w = watcher.lock().unwrap_or_else(|p| p.into_inner());
            for dir in &new_dirs {
                let _ = w.watch(dir, RecursiveMode::NonRecursive);
                add_folders(&mut w, dir, &filter);
            }
        }
        if changed.any() {
            report(changed);
        }
    }
}

/// Which events say something about the project.
struct Filter {
    root: PathBuf,
    /// The root's `.gitignore` and `.git/info/exclude` (files ignored in watched folders).
    ignored: Gitignore,
}

impl Filter {
    fn new(root: &Path) -> Filter {
        let mut builder = GitignoreBuilder::new(root);
        let _ = builder.add(root.join(".gitignore"));
        let _ = builder.add(root.join(".git/info/exclude"));
        Filter {
            root: root.to_path_buf(),
            ignored: builder.build().unwrap_or_else(|_| Gitignore::empty()),
        }
    }

    fn classify(&self, event: &notify::Event, changed: &mut Changed, new_dirs: &mut Vec<PathBuf>) {
        if matches!(event.kind, EventKind::Access(_)) {
            return;
        }
        for path in &event.paths {
            let Ok(rel) = path.strip_prefix(&self.root) else {
                continue;
            };
            if let Ok(git) = rel.strip_prefix(".git") {
                let history = git == Path::new("HEAD")
                    || git == Path::new("packed-refs")
                    || git.starts_with("refs");
                changed.history |= history;
                continue;
            }
            if rel.as_os_str().is_empty() {
                continue;
            }
            let is_dir = path.is_dir();
            if self
                .ignored
                .matched_path_or_any_parents(rel, is_dir)
                .is_ignore()
            {
                continue;
            }
            changed.files = true;
            let created = matches!(
                event.kind,
                EventKind::Create(CreateKind::Folder | CreateKind::Any)
            ) || matches!(
                event.kind,
                EventKind::Modify(notify::event::ModifyKind::Name(_))
            );
            if created && is_dir {
                new_dirs.push(path.clone());
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::process::Command;

    fn git(root: &Path, args: &[&str]) {
        let out = Command::new("git")
            .args(["-c", "user.name=T", "-c", "user.email=t@example.com"])
            .args(args)
            .current_dir(root)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }

    /// The next report within `wait` (`None`: none came).
    fn next(rx: &mpsc::Receiver<Changed>, wait: Duration) -> Option<Changed> {
        rx.recv_timeout(wait).ok()
    }

    /// Reports until a quiet second.
    fn drain(rx: &mpsc::Receiver<Changed>) {
        while next(rx, Duration::from_secs(1)).is_some() {}
    }

    #[test]
    fn files_and_history_changed_outside_are_reported_and_ignored_ones_are_not() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        std::fs::write(root.join(".gitignore"), "target/\n*.log\n").unwrap();
        std::fs::create_dir_all(root.join("src")).unwrap();
        std::fs::create_dir_all(root.join("target/debug")).unwrap();
        std::fs::write(root.join("src/a.rs"), "a\n").unwrap();
        git(&root, &["init", "-q", "-b", "main"]);
        git(&root, &["add", "-A"]);
        git(&root, &["commit", "-q", "-m", "first"]);
        let (tx, rx) = mpsc::channel();
        let watch = watch(&root, move |c| {
            let _ = tx.send(c);
        })
        .unwrap();
        assert_eq!(watch.unwatched, 0);
        let long = Duration::from_secs(10);

        // A file changed by another program, deep in the tree.
        std::fs::write(root.join("src/a.rs"), "b\n").unwrap();
        let c = next(&rx, long).expect("the change is reported");
        assert!(c.files);
        drain(&rx);

        // A commit by git: the history moved.
        git(&root, &["commit", "-q", "-am", "second"]);
        let mut history = false;
        while let Some(c) = next(&rx, Duration::from_secs(2)) {
            history |= c.history;
        }
        assert!(history, "the commit is reported as history");

        // `git status` rewrites the index: not a change of the project.
        git(&root, &["status", "--porcelain"]);
        // Neither are ignored files, nor anything in ignored folders.
        std::fs::write(root.join("build.log"), "x\n").unwrap();
        std::fs::write(root.join("target/debug/out"), "x\n").unwrap();
        assert_eq!(next(&rx, Duration::from_millis(800)), None);

        // A folder made after the watch started is watched too.
        std::fs::create_dir_all(root.join("src/new/deeper")).unwrap();
        drain(&rx);
        std::fs::write(root.join("src/new/deeper/b.rs"), "b\n").unwrap();
        assert!(next(&rx, long).is_some_and(|c| c.files));
        drain(&rx);

        // Dropped: no more reports.
        drop(watch);
        std::fs::write(root.join("src/a.rs"), "c\n").unwrap();
        assert_eq!(next(&rx, Duration::from_millis(800)), None);
    }
}
