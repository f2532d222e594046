//! Bringing the index up to date with the files on disk: only files whose stamp changed are
//! read and extracted again, on every core.

use std::path::Path;
use std::time::UNIX_EPOCH;

use super::{CodeIndex, Extracted, extract};

/// Files larger than this are not indexed (as the context leaves them out).
pub const MAX_INDEXED_BYTES: u64 = 1024 * 1024;

/// A file version as `stat` sees it: modification time, length and inode (an atomic write
/// replaces the inode, so a same-length edit within one clock tick is still seen).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct FileStamp {
    pub mtime_ns: i64,
    pub len: u64,
    pub inode: u64,
}

impl FileStamp {
    pub fn of(meta: &std::fs::Metadata) -> FileStamp {
        let mtime_ns = (meta.modified().ok())
            .and_then(|t| t.duration_since(UNIX_EPOCH).ok())
            .map_or(0, |d| i64::try_from(d.as_nanos()).unwrap_or(i64::MAX));
        #[cfg(unix)]
        let inode = std::os::unix::fs::MetadataExt::ino(meta);
        #[cfg(not(unix))]
        let inode = 0;
        FileStamp {
            mtime_ns,
            len: meta.len(),
            inode,
        }
    }
}

/// What a refresh did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Refreshed {
    /// Files read and extracted (new or changed).
    pub extracted: usize,
    /// Files whose stamp was unchanged.
    pub unchanged: usize,
    /// Files dropped (gone, or no longer among the paths).
    pub removed: usize,
}

impl CodeIndex {
    /// Makes the index hold exactly `paths` (relative to `root`), reading only the files that
    /// are new or whose stamp changed. Unreadable, binary or too large files are left out.
    pub fn refresh<'a>(
        &mut self,
        root: &Path,
        paths: impl IntoIterator<Item = &'a str>,
    ) -> Refreshed {
        let paths: Vec<&str> = paths.into_iter().collect();
        let mut done = Refreshed::default();
        let wanted: std::collections::HashSet<&str> = paths.iter().copied().collect();
        let before = self.files.len();
        self.files.retain(|path, _| wanted.contains(&**path));
        done.removed = before - self.files.len();
        if done.removed > 0 {
            self.graph = None;
        }
        let stale: Vec<&str> = paths
            .iter()
            .copied()
            .filter(|path| {
                let current = self.files.get(*path).map(|e| e.stamp);
                let now = std::fs::symlink_metadata(root.join(path)).map(|m| FileStamp::of(&m));
                match (current, now) {
                    (Some(current), Ok(now)) => current != now,
                    _ => true,
                }
            })
            .collect();
        done.unchanged = paths.len() - stale.len();
        let read = read_all(root, &stale);
        for (path, found) in stale.iter().zip(read) {
            match found {
                Some((stamp, extracted)) => {
                    self.insert(path, stamp, &extracted);
                    done.extracted += 1;
                }
                None => {
                    if self.files.remove(*path).is_some() {
                        self.graph = None;
                        done.removed += 1;
                    }
                }
            }
        }
        done
    }
}

/// Reads and extracts `paths`, on as many threads as there are cores, in order.
fn read_all(root: &Path, paths: &[&str]) -> Vec<Option<(FileStamp, Extracted)>> {
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    let chunk = paths.len().div_ceil(threads).max(1);
    std::thread::scope(|s| {
        let handles: Vec<_> = paths
            .chunks(chunk)
            .map(|chunk| {
                let handle = s.spawn(move || chunk.iter().map(|p| read_one(root, p)).collect());
                (chunk.len(), handle)
            })
            .collect();
        // A chunk whose thread panicked (a grammar bug) is left out, file by file.
        handles
            .into_iter()
            .flat_map(|(len, h)| h.join().unwrap_or_else(|_| vec![None; len]))
            .collect()
    })
}

/// One file's stamp and extraction; `None` when it cannot be read as text of an indexed
/// size (only regular files are opened: a named pipe would block for ever).
fn read_one(root: &Path, path: &str) -> Option<(FileStamp, Extracted)> {
    use std::io::Read;
    let opened = crate::workspace::open_regular(&root.join(path)).ok()?;
    if opened.meta.len() > MAX_INDEXED_BYTES {
        return None;
    }
    let mut bytes = Vec::new();
    (opened.file.take(MAX_INDEXED_BYTES + 1))
        .read_to_end(&mut bytes)
        .ok()?;
    if bytes.len() as u64 > MAX_INDEXED_BYTES || bytes.contains(&0) {
        return None;
    }
    let meta = opened.meta;
    let text = String::from_utf8(bytes).ok()?;
    Some((FileStamp::of(&meta), extract(path, &text)))
}
