//! Walking a project folder on every core, as ripgrep does: the `ignore` crate's parallel
//! walker, with what each entry becomes decided on the walker's threads (a `stat`, a name
//! check), and the results gathered for the caller to sort.

use std::sync::Mutex;

use ignore::{DirEntry, WalkBuilder, WalkState};

/// Calls `visit` on every entry (or error) `builder` walks to, on the walker's threads, and
/// returns what it kept, in no particular order.
pub(super) fn parallel<T: Send>(
    builder: &WalkBuilder,
    visit: impl Fn(Result<DirEntry, ignore::Error>) -> Option<T> + Sync,
) -> Vec<T> {
    let found = Mutex::new(Vec::new());
    builder.build_parallel().run(|| {
        // Each walker thread keeps its own batch and hands it over once, when it is done.
        let mut batch = Batch {
            kept: Vec::new(),
            into: &found,
        };
        let visit = &visit;
        Box::new(move |item| {
            if let Some(kept) = visit(item) {
                batch.kept.push(kept);
            }
            WalkState::Continue
        })
    });
    found.into_inner().unwrap_or_else(|p| p.into_inner())
}

struct Batch<'a, T> {
    kept: Vec<T>,
    into: &'a Mutex<Vec<T>>,
}

impl<T> Drop for Batch<'_, T> {
    fn drop(&mut self) {
        // A poisoned lock means a visitor panicked; that panic is re-raised by `run`.
        if let Ok(mut found) = self.into.lock() {
            found.append(&mut self.kept);
        }
    }
}
