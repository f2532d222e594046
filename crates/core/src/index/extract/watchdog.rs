//! A time limit on one file's extraction. tree-sitter-tags stops a parse, or the tagging of
//! its tree, once the cancellation flag it is given is no longer zero; one thread for the
//! whole process sets the flag of each extraction whose deadline has passed. Not a thread
//! per file (a spawn for each of a project's thousands of files), and not a deadline read in
//! the parse's progress callback: `generate_tags` installs its own, which reads the flag only.
//!
//! The watchdog sleeps until the earliest deadline it holds, and for ever when it holds none
//! (no wake-up while nothing is extracted). A file starting its extraction wakes it only when
//! its deadline comes before the one slept for, which, as every deadline is its start plus
//! the same limit, is when the watchdog sleeps for ever: not once per file.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, OnceLock, PoisonError};
use std::thread;
use std::time::{Duration, Instant};

/// The extractions under way, each with its deadline and flag.
struct Watched {
    running: Vec<(u64, Instant, Arc<AtomicUsize>)>,
    /// The id of the last extraction started.
    last: u64,
    /// The deadline the watchdog sleeps until; `None` while it sleeps until woken.
    waking_at: Option<Instant>,
}

static WATCHED: Mutex<Watched> = Mutex::new(Watched {
    running: Vec::new(),
    last: 0,
    waking_at: None,
});
static WAKE: Condvar = Condvar::new();
/// Whether the watchdog's thread runs (started with the first extraction).
static STARTED: OnceLock<bool> = OnceLock::new();

/// The state is consistent after any panic (none can happen while it is held): a poisoned
/// lock is taken as it is.
fn watched() -> MutexGuard<'static, Watched> {
    WATCHED.lock().unwrap_or_else(PoisonError::into_inner)
}

/// The deadline of one extraction, until dropped.
pub(super) struct Watch {
    id: u64,
    flag: Arc<AtomicUsize>,
    /// When the flag is set (`None`: a limit past what time can hold, never).
    deadline: Option<Instant>,
}

impl Watch {
    /// Starts a watch: its flag is set once `limit` has passed. If the watchdog's thread
    /// could not be started, the flag is never set and the extraction runs to its end, as it
    /// did before there was a limit.
    pub(super) fn start(limit: Duration) -> Watch {
        let flag = Arc::new(AtomicUsize::new(0));
        let started = *STARTED.get_or_init(|| {
            (thread::Builder::new().name("index-watchdog".into()))
                .spawn(watch)
                .is_ok()
        });
        let deadline = Instant::now().checked_add(limit);
        let mut watched = watched();
        watched.last += 1;
        let id = watched.last;
        if let (true, Some(deadline)) = (started, deadline) {
            watched.running.push((id, deadline, Arc::clone(&flag)));
            if watched.waking_at.is_none_or(|at| deadline < at) {
                WAKE.notify_one();
            }
        }
        Watch { id, flag, deadline }
    }

    /// When the flag is set, for work that checks the time itself.
    pub(super) fn deadline(&self) -> Option<Instant> {
        self.deadline
    }

    /// The flag for `generate_tags`.
    pub(super) fn flag(&self) -> &AtomicUsize {
        &self.flag
    }
}

impl Drop for Watch {
    fn drop(&mut self) {
        watched().running.retain(|(id, ..)| *id != self.id);
    }
}

/// The watchdog: sets the flag of each extraction past its deadline, then sleeps until the
/// next deadline (or until a new one is earlier).
fn watch() {
    let mut watched = watched();
    loop {
        let now = Instant::now();
        let mut next: Option<Instant> = None;
        for (_, deadline, flag) in &watched.running {
            if *deadline <= now {
                flag.store(1, Ordering::SeqCst);
            } else if next.is_none_or(|at| *deadline < at) {
                next = Some(*deadline);
            }
        }
        watched.waking_at = next;
        watched = match next {
            Some(at) => {
                (WAKE.wait_timeout(watched, at.saturating_duration_since(now)))
                    .unwrap_or_else(PoisonError::into_inner)
                    .0
            }
            None => WAKE.wait(watched).unwrap_or_else(PoisonError::into_inner),
        };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_watch_is_flagged_at_its_deadline_even_behind_a_later_one() {
        // The watchdog sleeps until the later deadline; the earlier one, started after it,
        // wakes it.
        let later = Watch::start(Duration::from_secs(600));
        let started = Instant::now();
        let sooner = Watch::start(Duration::from_millis(50));
        while sooner.flag().load(Ordering::SeqCst) == 0 {
            assert!(started.elapsed() < Duration::from_secs(10), "never flagged");
            thread::sleep(Duration::from_millis(1));
        }
        assert!(started.elapsed() >= Duration::from_millis(50));
        assert_eq!(later.flag().load(Ordering::SeqCst), 0);
    }
}
