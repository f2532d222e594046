//! Bringing the index up to date with the files on disk: every file is `stat`ed (on every
//! core), and only those whose stamp changed are read and extracted again, in rounds of one
//! transaction each, until a deadline if one is given: a project met for the first time is
//! indexed over several refreshes rather than holding up the one asking.

use std::collections::HashSet;
use std::path::Path;
use std::time::Instant;

pub use crate::folder::FileStamp;

use super::tables::Change;
use super::{CodeIndex, Extracted, Result, extract};

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

/// What reading one file found.
#[derive(Clone, Default)]
enum Read {
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
        self.refresh_until(root, files, None)
    }

    /// [`refresh`](Self::refresh) of `files`, each with its stamp when the caller has it
    /// (a stamped walk: then it is not asked again), reading files until `deadline`: the
    /// files not read by then are counted in [`Refreshed::left`] (a deadline already past
    /// only drops the gone).
    pub fn refresh_until<'a>(
        &mut self,
        root: &Path,
        files: impl IntoIterator<Item = (&'a str, Option<FileStamp>)>,
        deadline: Option<Instant>,
    ) -> Result<Refreshed> {
        let mut asked: Vec<(&str, Option<FileStamp>)> = files.into_iter().collect();
        if !asked.is_sorted_by(|a, b| a.0 <= b.0) {
            asked.sort_unstable_by(|a, b| a.0.cmp(b.0));
        }
        asked.dedup_by(|a, b| a.0 == b.0);
        let now: Vec<Option<FileStamp>> = match asked.iter().all(|(_, known)| known.is_some()) {
            true => asked.iter().map(|(_, known)| *known).collect(),
            false => parallel(&asked, |(path, known)| {
                known.or_else(|| {
                    std::fs::symlink_metadata(root.join(path))
                        .ok()
                        .map(|m| FileStamp::of(&m))
                })
            }),
        };
        let (stale, gone) = self.compare(&asked, &now)?;
        let mut done = Refreshed {
            unchanged: asked.len() - stale.len(),
            removed: gone.iter().filter(|(_, indexed)| *indexed).count(),
            ..Refreshed::default()
        };
        let gone: Vec<(&str, Change<'_>)> = (gone.iter())
            .map(|(path, _)| (path.as_str(), Change::Gone))
            .collect();
        tables_write(self, &gone)?;
        let indexed: HashSet<&str> = (stale.iter())
            .filter(|(_, indexed)| *indexed)
            .map(|(path, _)| *path)
            .collect();
        let indexed = |path: &str| indexed.contains(path);
        let stale: Vec<&str> = stale.iter().map(|(path, _)| *path).collect();
        for (i, round) in stale.chunks(ROUND).enumerate() {
            if deadline.is_some_and(|d| Instant::now() >= d) {
                done.left = stale.len() - i * ROUND;
                break;
            }
            let read = parallel(round, |path: &&str| read_one(root, path));
            let changes: Vec<(&str, Change<'_>)> = (round.iter().zip(&read))
                .map(|(path, found)| {
                    let change = match found {
                        Read::Indexed(stamp, extracted) => {
                            done.extracted += 1;
                            Change::Indexed(*stamp, extracted)
                        }
                        Read::Skipped(stamp) => Change::Skipped(*stamp),
                        Read::Missing => Change::Gone,
                    };
                    if !matches!(found, Read::Indexed(..)) && indexed(path) {
                        done.removed += 1;
                    }
                    (*path, change)
                })
                .collect();
            tables_write(self, &changes)?;
        }
        Ok(done)
    }

    /// Compares `asked` (sorted by path, with each file's stamp `now`, `None` when it is not
    /// there) with the stored stamps, walking both in path order: the files to read again
    /// (new, changed or vanished; with whether they were indexed), and the stored files no
    /// longer asked for (likewise).
    #[allow(clippy::type_complexity)]
    fn compare<'a>(
        &self,
        asked: &[(&'a str, Option<FileStamp>)],
        now: &[Option<FileStamp>],
    ) -> Result<(Vec<(&'a str, bool)>, Vec<(String, bool)>)> {
        let (mut stale, mut gone) = (Vec::new(), Vec::new());
        let mut statement = (self.db).prepare_cached(
            "SELECT path, mtime_ns, len, inode, skipped FROM files ORDER BY path",
        )?;
        let mut rows = statement.query([])?;
        // Asked files before the stored one at hand are new; stored ones not asked are gone.
        let mut next = 0;
        let new = |next: &mut usize, until: Option<&str>, stale: &mut Vec<(&'a str, bool)>| {
            while let Some((path, _)) = asked.get(*next)
                && until.is_none_or(|until| *path < until)
            {
                if now[*next].is_some() {
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
            let stamp = FileStamp {
                mtime_ns: row.get(1)?,
                len: u64::try_from(row.get::<_, i64>(2)?).unwrap_or(0),
                inode: row.get::<_, i64>(3)? as u64,
            };
            let indexed = !row.get::<_, bool>(4)?;
            match asked.get(next) {
                Some((asked_path, _)) if *asked_path == path => {
                    if now[next] != Some(stamp) {
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

fn tables_write(index: &mut CodeIndex, changes: &[(&str, Change<'_>)]) -> Result<()> {
    if !changes.is_empty() {
        super::tables::write(&mut index.db, changes)?;
    }
    Ok(())
}

/// `f` of each item, on as many threads as there are cores, in order. An item whose thread
/// panicked (a grammar bug) gets `f`'s answer for nothing found.
fn parallel<T: Sync, R: Send + Clone + Default>(items: &[T], f: impl Fn(&T) -> R + Sync) -> Vec<R> {
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    let chunk = items.len().div_ceil(threads).max(1);
    if items.len() < 64 {
        return items.iter().map(&f).collect();
    }
    std::thread::scope(|s| {
        let f = &f;
        let handles: Vec<_> = items
            .chunks(chunk)
            .map(|chunk| {
                (
                    chunk.len(),
                    s.spawn(move || chunk.iter().map(f).collect::<Vec<R>>()),
                )
            })
            .collect();
        handles
            .into_iter()
            .flat_map(|(len, h)| h.join().unwrap_or_else(|_| vec![R::default(); len]))
            .collect()
    })
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
