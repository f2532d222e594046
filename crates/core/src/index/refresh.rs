//! Bringing the index up to date with the files on disk, reading and extracting again only
//! the files that changed, in rounds of one transaction each, until a deadline if one is
//! given: a project met for the first time is indexed over several refreshes rather than
//! holding up the one asking. A build made of such refreshes reads the next round while it
//! writes its last one ([`CodeIndex::refresh_reading_ahead`]), as one long refresh does.
//!
//! Which files changed: the project's change journal says, when its keeper runs and knows
//! where the index stands ([`Changes`]); otherwise every file is `stat`ed (on every core)
//! and its stamp compared with the stored one. Which files exist: the walk's paths, compared
//! with the stored ones only when their digest differs from the digest of the walk the index
//! was last made from.

use std::collections::{HashMap, HashSet};
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Instant;

pub use crate::folder::FileStamp;

use rusqlite::OptionalExtension;

use super::tables::{Change, JournalState};
use super::{CodeIndex, Extracted, Result, extract};
use crate::folder::journal::{Answer, Token};

/// Files larger than this are not indexed (as the context leaves them out).
pub const MAX_INDEXED_BYTES: u64 = 1024 * 1024;

/// Files read and written per transaction.
const ROUND: usize = 512;

/// What a refresh did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Refreshed {
    /// Files read and extracted (new or changed).
    pub extracted: usize,
    /// Files whose stamp was unchanged.
    pub unchanged: usize,
    /// Files dropped (gone, no longer among the paths, or no longer indexable).
    pub removed: usize,
    /// Files new or changed but not read before the deadline: the next refresh reads them.
    pub left: usize,
}

/// What changed in a project since its index last looked, as far as is known before its
/// walk: from [`Indexes::changes`](super::Indexes::changes).
#[derive(Debug, Clone, Default)]
pub struct Changes {
    /// Where the index stood when asked.
    pub(super) stored: JournalState,
    /// The change journal's answer since the stored token; `None` without a keeper.
    pub(super) answer: Option<Answer>,
}

impl Changes {
    /// Nothing known: every file's stamp is compared.
    pub fn unknown() -> Changes {
        Changes::default()
    }

    /// Whether the refresh needs every file's stamp (the walk then asks them on its threads):
    /// not when the journal said which files changed.
    pub fn needs_stamps(&self) -> bool {
        !matches!(self.answer, Some(Answer::Changed { .. }))
    }
}

/// Files read ahead for the next refresh, by path: each is used only if its stamp is still
/// the one it was read with.
pub(super) type Ahead = HashMap<String, Read>;

/// What reading one file found.
#[derive(Clone, Default)]
pub(super) enum Read {
    Indexed(FileStamp, Extracted),
    Skipped(FileStamp),
    #[default]
    Missing,
}

impl CodeIndex {
    /// Makes the index hold exactly `paths` (relative to `root`), reading only the files that
    /// are new or whose stamp changed. Unreadable, binary or too large files are left out.
    pub fn refresh<'a>(
        &mut self,
        root: &Path,
        paths: impl IntoIterator<Item = &'a str>,
    ) -> Result<Refreshed> {
        let files = paths.into_iter().map(|p| (p, None));
        self.refresh_until(root, files, &Changes::unknown(), None)
    }

    /// [`refresh`](Self::refresh) of `files`, each with its stamp when the caller has it
    /// (a stamped walk: then it is not asked again), knowing `changes`, reading files until
    /// `deadline` (one round of [`ROUND`] files at least, so that every refresh moves on):
    /// the files not read by then are counted in [`Refreshed::left`], and kept as pending,
    /// so that the next refresh reads them first and not again what this one read.
    pub fn refresh_until<'a>(
        &mut self,
        root: &Path,
        files: impl IntoIterator<Item = (&'a str, Option<FileStamp>)>,
        changes: &Changes,
        deadline: Option<Instant>,
    ) -> Result<Refreshed> {
        self.refresh_rounds(root, files, changes, deadline, false)
    }

    /// [`refresh_until`](Self::refresh_until) for a build done in many short refreshes
    /// (`project add`, a project opened): when it stops at its deadline with files left, it
    /// reads the next round of them while it writes its last one, for the next refresh to
    /// take as read. So every round's write overlaps a round's reading, as within one long
    /// refresh, while the index is still let go between refreshes.
    pub fn refresh_reading_ahead<'a>(
        &mut self,
        root: &Path,
        files: impl IntoIterator<Item = (&'a str, Option<FileStamp>)>,
        changes: &Changes,
        deadline: Option<Instant>,
    ) -> Result<Refreshed> {
        self.refresh_rounds(root, files, changes, deadline, true)
    }

    fn refresh_rounds<'a>(
        &mut self,
        root: &Path,
        files: impl IntoIterator<Item = (&'a str, Option<FileStamp>)>,
        changes: &Changes,
        deadline: Option<Instant>,
        read_ahead: bool,
    ) -> Result<Refreshed> {
        // What the last refresh read ahead: taken now, whatever this one reads of it.
        let mut ahead = std::mem::take(&mut self.ahead);
        let mut asked: Vec<(&str, Option<FileStamp>)> = files.into_iter().collect();
        if !asked.is_sorted_by(|a, b| a.0 <= b.0) {
            asked.sort_unstable_by(|a, b| a.0.cmp(b.0));
        }
        asked.dedup_by(|a, b| a.0 == b.0);
        let digest = paths_digest(asked.iter().map(|(path, _)| *path));
        let same_paths = !changes.stored.paths.is_empty() && changes.stored.paths == digest;
        // What a refresh cut short left is read whatever the journal or the stamps say.
        let pending = &changes.stored.pending;
        let (stale, gone) = match &changes.answer {
            Some(Answer::Changed { paths, .. }) => {
                let journaled = journaled(&asked, paths.iter().chain(pending));
                match same_paths {
                    // The same files as last time: only the journaled ones are looked at.
                    true => (self.journaled_stale(&asked, &journaled)?, Vec::new()),
                    false => self.compare(&asked, Now::Journaled(&journaled))?,
                }
            }
            _ => {
                let now: Vec<Option<FileStamp>> = match asked.iter().all(|(_, k)| k.is_some()) {
                    true => asked.iter().map(|(_, known)| *known).collect(),
                    false => parallel(&asked, |(path, known)| {
                        known.or_else(|| {
                            std::fs::symlink_metadata(root.join(path))
                                .ok()
                                .map(|m| FileStamp::of(&m))
                        })
                    }),
                };
                let forced = journaled(&asked, pending.iter());
                self.compare(&asked, Now::Stamps(&now, &forced))?
            }
        };
        let mut writes = 0;
        let mut vanished = false;
        let mut done = Refreshed {
            unchanged: asked.len() - stale.len(),
            removed: gone.iter().filter(|(_, indexed)| *indexed).count(),
            ..Refreshed::default()
        };
        let gone: Vec<(&str, Change<'_>)> = (gone.iter())
            .map(|(path, _)| (path.as_str(), Change::Gone))
            .collect();
        writes += tables_write(self, &gone)?;
        let indexed: HashSet<&str> = (stale.iter())
            .filter(|(_, indexed)| *indexed)
            .map(|(path, _)| *path)
            .collect();
        let stale: Vec<&str> = stale.iter().map(|(path, _)| *path).collect();
        let mut read_up_to = stale.len();
        // Each round is written while the next one is read: the writes (one thread) and the
        // reading and parsing (every core) overlap.
        let mut last: Option<(&[&str], Vec<Read>)> = None;
        for (i, round) in stale.chunks(ROUND).enumerate() {
            if i > 0 && deadline.is_some_and(|d| Instant::now() >= d) {
                read_up_to = i * ROUND;
                done.left = stale.len() - read_up_to;
                break;
            }
            let ahead = &mut ahead;
            let (read, wrote) = std::thread::scope(|s| {
                let reading = s.spawn(move || read_round(root, round, ahead));
                let wrote = match last.take() {
                    Some((paths, read)) => {
                        let changes = as_changes(paths, &read, &indexed, &mut done, &mut vanished);
                        tables_write(self, &changes)
                    }
                    None => Ok(0),
                };
                // A reading that panicked outside `parallel`'s threads: nothing found.
                let read = reading.join().unwrap_or_else(|_| {
                    std::iter::repeat_with(Read::default)
                        .take(round.len())
                        .collect()
                });
                (read, wrote)
            });
            writes += wrote?;
            last = Some((round, read));
        }
        if let Some((paths, read)) = last {
            let next = match read_ahead {
                true => &stale[read_up_to..(read_up_to + ROUND).min(stale.len())],
                false => &[],
            };
            let changes = as_changes(paths, &read, &indexed, &mut done, &mut vanished);
            // A thread only when there is something to read ahead (never for a turn's
            // refresh).
            let (wrote, next_read) = std::thread::scope(|s| {
                let reading = (!next.is_empty())
                    .then(|| s.spawn(|| parallel(next, |path: &&str| read_one(root, path))));
                let wrote = tables_write(self, &changes);
                let next_read = reading.map_or_else(Vec::new, |r| r.join().unwrap_or_default());
                (wrote, next_read)
            });
            writes += wrote?;
            self.ahead = (next.iter().map(|path| path.to_string()))
                .zip(next_read)
                .collect();
        }
        // Everything before the answer's token is in the index now, but for the files left
        // (pending). A file that vanished while being read, or a refresh cut short, leaves
        // the index without the walk's paths: no digest.
        let token = changes.answer.as_ref().map(Answer::token);
        let token = token.or(changes.stored.token);
        let paths = if vanished || done.left > 0 {
            ""
        } else {
            digest.as_str()
        };
        let left = &stale[read_up_to..];
        self.stand_at(token, paths, left, changes.stored.writes + writes)?;
        Ok(done)
    }

    /// Records where the index stands (see `tables::set_journal`), unless it is so already.
    fn stand_at(
        &self,
        token: Option<Token>,
        paths: &str,
        left: &[&str],
        writes: i64,
    ) -> Result<()> {
        let now = super::tables::journal(&self.db)?;
        if now.token != token || now.paths != paths || now.pending != left {
            super::tables::set_journal(&self.db, token, paths, left, writes)?;
        }
        Ok(())
    }

    /// The journaled files of `asked` (the same files as the index holds), each with whether
    /// it was indexed.
    fn journaled_stale<'a>(
        &self,
        asked: &[(&'a str, Option<FileStamp>)],
        journaled: &[bool],
    ) -> Result<Vec<(&'a str, bool)>> {
        let mut statement =
            (self.db).prepare_cached("SELECT skipped FROM files WHERE path = ?1")?;
        let mut stale = Vec::new();
        for ((path, _), _) in asked.iter().zip(journaled).filter(|(_, j)| **j) {
            let skipped: Option<bool> = statement.query_row([path], |r| r.get(0)).optional()?;
            stale.push((*path, skipped == Some(false)));
        }
        Ok(stale)
    }

    /// Compares `asked` (sorted by path, with each file's stamp `now`, `None` when it is not
    /// there) with the stored stamps, walking both in path order: the files to read again
    /// (new, changed or vanished; with whether they were indexed), and the stored files no
    /// longer asked for (likewise).
    #[allow(clippy::type_complexity)]
    fn compare<'a>(
        &self,
        asked: &[(&'a str, Option<FileStamp>)],
        now: Now<'_>,
    ) -> Result<(Vec<(&'a str, bool)>, Vec<(String, bool)>)> {
        let (mut stale, mut gone) = (Vec::new(), Vec::new());
        let mut statement = (self.db).prepare_cached(
            "SELECT path, mtime_ns, ctime_ns, len, inode, skipped FROM files ORDER BY path",
        )?;
        let mut rows = statement.query([])?;
        // Asked files before the stored one at hand are new; stored ones not asked are gone.
        let mut next = 0;
        let new = |next: &mut usize, until: Option<&str>, stale: &mut Vec<(&'a str, bool)>| {
            while let Some((path, _)) = asked.get(*next)
                && until.is_none_or(|until| *path < until)
            {
                if now.is_there(*next) {
                    stale.push((*path, false));
                }
                *next += 1;
            }
        };
        while let Some(row) = rows.next()? {
            let Ok(path) = row.get_ref(0)?.as_str() else {
                continue;
            };
            new(&mut next, Some(path), &mut stale);
            let stamp = super::tables::stamp_at(row, 1)?;
            let indexed = !row.get::<_, bool>(5)?;
            match asked.get(next) {
                Some((asked_path, _)) if *asked_path == path => {
                    if now.changed(next, stamp) {
                        stale.push((*asked_path, indexed));
                    }
                    next += 1;
                }
                _ => gone.push((path.to_string(), indexed)),
            }
        }
        new(&mut next, None, &mut stale);
        Ok((stale, gone))
    }
}

/// What is known of each asked file now.
#[derive(Clone, Copy)]
enum Now<'a> {
    /// Its stamp (`None`: not there), and whether it is to be read whatever its stamp.
    Stamps(&'a [Option<FileStamp>], &'a [bool]),
    /// Whether the journal says it may have changed (it was there for the walk).
    Journaled(&'a [bool]),
}

impl Now<'_> {
    fn is_there(self, i: usize) -> bool {
        match self {
            Now::Stamps(now, _) => now[i].is_some(),
            Now::Journaled(_) => true,
        }
    }

    fn changed(self, i: usize, stored: FileStamp) -> bool {
        match self {
            Now::Stamps(now, forced) => forced[i] || now[i] != Some(stored),
            Now::Journaled(journaled) => journaled[i],
        }
    }
}

/// For each of `asked` (sorted by path), whether `paths` (the journal's) name it or a
/// folder above it.
fn journaled<'p>(
    asked: &[(&str, Option<FileStamp>)],
    paths: impl Iterator<Item = &'p String>,
) -> Vec<bool> {
    let mut marked = vec![false; asked.len()];
    let at = |key: &str| asked.partition_point(|(path, _)| *path < key);
    for path in paths {
        let exact = at(path);
        if asked.get(exact).is_some_and(|(p, _)| p == path) {
            marked[exact] = true;
        }
        // Everything under it: the paths from `path/` up to (not including) `path0`, `0`
        // being the character after `/`.
        let (from, to) = (at(&format!("{path}/")), at(&format!("{path}0")));
        marked[from..to.max(from)].fill(true);
    }
    marked
}

/// A digest of a sorted list of paths (64-bit FNV-1a over each path and its end, and their
/// count): equal digests mean the same files, as far as a turn needs to know.
fn paths_digest<'a>(paths: impl Iterator<Item = &'a str>) -> String {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    let mut count = 0u64;
    for path in paths {
        for &b in path.as_bytes().iter().chain(&[0]) {
            hash ^= u64::from(b);
            hash = hash.wrapping_mul(0x0100_0000_01b3);
        }
        count += 1;
    }
    format!("{count}:{hash:016x}")
}

/// What one round's reads change in the index, counted in `done` (and `vanished` when a file
/// was gone by the time it was read). `indexed`: the files the index holds now.
fn as_changes<'a>(
    paths: &[&'a str],
    read: &'a [Read],
    indexed: &HashSet<&str>,
    done: &mut Refreshed,
    vanished: &mut bool,
) -> Vec<(&'a str, Change<'a>)> {
    (paths.iter().zip(read))
        .map(|(path, found)| {
            let change = match found {
                Read::Indexed(stamp, extracted) => {
                    done.extracted += 1;
                    Change::Indexed(*stamp, extracted)
                }
                Read::Skipped(stamp) => Change::Skipped(*stamp),
                Read::Missing => {
                    *vanished = true;
                    Change::Gone
                }
            };
            if !matches!(found, Read::Indexed(..)) && indexed.contains(path) {
                done.removed += 1;
            }
            (*path, change)
        })
        .collect()
}

/// Writes `changes` when there are any; how many writes that made (0 or 1).
fn tables_write(index: &mut CodeIndex, changes: &[(&str, Change<'_>)]) -> Result<i64> {
    if changes.is_empty() {
        return Ok(0);
    }
    super::tables::write(&mut index.db, changes)?;
    Ok(1)
}

/// `f` of each item, on as many threads as there are cores, in order. Each thread takes the
/// next item not taken yet, so that a run of costly files (one language's sources, sorted
/// together) does not leave the other threads idle. An item whose `f` panicked gets `f`'s
/// answer for nothing found, and only that item: a thread's other items are kept (they were
/// all lost with it, and counted as gone from the index), and the refresh goes on.
fn parallel<T: Sync, R: Send + Default>(items: &[T], f: impl Fn(&T) -> R + Sync) -> Vec<R> {
    let f = |item: &T| catch_unwind(AssertUnwindSafe(|| f(item))).unwrap_or_default();
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    if items.len() < 64 || threads == 1 {
        return items.iter().map(f).collect();
    }
    let next = AtomicUsize::new(0);
    let mut out: Vec<R> = std::iter::repeat_with(R::default)
        .take(items.len())
        .collect();
    std::thread::scope(|s| {
        let (f, next) = (&f, &next);
        let handles: Vec<_> = (0..threads)
            .map(|_| {
                s.spawn(move || {
                    let mut done = Vec::new();
                    loop {
                        let i = next.fetch_add(1, Ordering::Relaxed);
                        let Some(item) = items.get(i) else {
                            return done;
                        };
                        done.push((i, f(item)));
                    }
                })
            })
            .collect();
        for handle in handles {
            for (i, found) in handle.join().unwrap_or_default() {
                out[i] = found;
            }
        }
    });
    out
}

/// The reads of `round`: those read ahead whose stamp is still the one they were read with
/// (taken out of `ahead`), the others read now.
fn read_round(root: &Path, round: &[&str], ahead: &mut Ahead) -> Vec<Read> {
    let kept: Vec<Option<Read>> = (round.iter())
        .map(|path| ahead.remove(*path).filter(|read| still(root, path, read)))
        .collect();
    let missing: Vec<&str> = (round.iter().zip(&kept))
        .filter(|(_, kept)| kept.is_none())
        .map(|(path, _)| *path)
        .collect();
    let mut fresh = parallel(&missing, |path: &&str| read_one(root, path)).into_iter();
    (kept.into_iter())
        .map(|kept| kept.unwrap_or_else(|| fresh.next().unwrap_or_default()))
        .collect()
}

/// Whether the file at `path` is still as it was when `read` (its stamp then; a file missing
/// then is read again).
fn still(root: &Path, path: &str, read: &Read) -> bool {
    let stamp = match read {
        Read::Indexed(stamp, _) | Read::Skipped(stamp) => *stamp,
        Read::Missing => return false,
    };
    std::fs::symlink_metadata(root.join(path)).is_ok_and(|meta| FileStamp::of(&meta) == stamp)
}

/// One file's stamp and extraction: only regular files are opened (a named pipe would block
/// for ever); one that is not text of an indexed size is skipped.
fn read_one(root: &Path, path: &str) -> Read {
    use std::io::Read as _;
    let Ok(opened) = crate::folder::open_regular(&root.join(path)) else {
        return match std::fs::symlink_metadata(root.join(path)) {
            Ok(meta) => Read::Skipped(FileStamp::of(&meta)),
            Err(_) => Read::Missing,
        };
    };
    let stamp = FileStamp::of(&opened.meta);
    if opened.meta.len() > MAX_INDEXED_BYTES {
        return Read::Skipped(stamp);
    }
    let mut bytes = Vec::new();
    let read = (opened.file.take(MAX_INDEXED_BYTES + 1)).read_to_end(&mut bytes);
    if read.is_err() || bytes.len() as u64 > MAX_INDEXED_BYTES || bytes.contains(&0) {
        return Read::Skipped(stamp);
    }
    match String::from_utf8(bytes) {
        Ok(text) => Read::Indexed(stamp, extract(path, &text)),
        Err(_) => Read::Skipped(stamp),
    }
}

#[cfg(test)]
mod tests {
    use super::parallel;

    #[test]
    fn a_panic_loses_only_its_own_item() {
        // Enough items to be shared among threads; one panics (a grammar's bug on one file).
        let items: Vec<usize> = (0..300).collect();
        let found = parallel(&items, |&i| {
            assert_ne!(i, 150, "a bug on one file");
            i + 1
        });
        let expected: Vec<usize> = (0..300).map(|i| if i == 150 { 0 } else { i + 1 }).collect();
        assert_eq!(found, expected);
    }
}
