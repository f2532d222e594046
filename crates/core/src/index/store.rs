//! The indexes of the projects, one per root, kept in memory for the process and on disk in
//! the data directory (`index/<hash of the root>.sqlite`, one row per file), so that a
//! restart reads them back instead of parsing every file again. Only rows whose file changed
//! are written after a refresh.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use rusqlite::{Connection, params};

use super::{CodeIndex, Extracted, FileStamp, Refreshed, extract::Definition};

#[derive(Debug, thiserror::Error)]
pub enum IndexStoreError {
    #[error("the code index store cannot be used: {0}")]
    Sqlite(#[from] rusqlite::Error),
    #[error("the code index folder cannot be created: {0}")]
    Io(#[from] std::io::Error),
}

/// One project's index, and what of it is on disk.
pub struct ProjectIndex {
    pub index: CodeIndex,
    /// The stamp of each file as stored; `None` without a data directory.
    saved: Option<HashMap<Box<str>, FileStamp>>,
    db: Option<PathBuf>,
}

impl ProjectIndex {
    /// Refreshes the index from `paths` (see [`CodeIndex::refresh`]) and stores what changed.
    /// A store that cannot be written leaves the index working in memory: the next refresh
    /// tries again.
    pub fn refresh<'a>(
        &mut self,
        root: &Path,
        paths: impl IntoIterator<Item = &'a str>,
    ) -> Refreshed {
        let done = self.index.refresh(root, paths);
        if done.extracted + done.removed > 0 || self.saved.as_ref().is_some_and(HashMap::is_empty) {
            let _ = self.save();
        }
        done
    }

    /// Writes the files whose stamp differs from the stored one, deletes the gone.
    pub fn save(&mut self) -> Result<usize, IndexStoreError> {
        let (Some(db), Some(saved)) = (&self.db, &mut self.saved) else {
            return Ok(0);
        };
        let mut conn = open(db)?;
        let tx = conn.transaction()?;
        let mut written = 0;
        {
            let mut upsert = tx.prepare(
                "INSERT OR REPLACE INTO files (path, mtime_ns, len, inode, defs, refs, words)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
            )?;
            for (path, entry) in &self.index.files {
                if saved.get(path) == Some(&entry.stamp) {
                    continue;
                }
                let (defs, refs, words) = encode(&self.index, entry);
                let s = entry.stamp;
                let len = i64::try_from(s.len).unwrap_or(i64::MAX);
                let inode = s.inode as i64;
                upsert.execute(params![&**path, s.mtime_ns, len, inode, defs, refs, words])?;
                written += 1;
            }
            let mut delete = tx.prepare("DELETE FROM files WHERE path = ?1")?;
            for path in saved.keys().filter(|p| !self.index.files.contains_key(*p)) {
                delete.execute([&**path])?;
                written += 1;
            }
        }
        tx.commit()?;
        *saved = (self.index.files.iter())
            .map(|(p, e)| (p.clone(), e.stamp))
            .collect();
        Ok(written)
    }
}

/// The projects' indexes of this process. Each is loaded from the data directory when first
/// asked for.
#[derive(Default)]
pub struct Indexes {
    dir: Option<PathBuf>,
    projects: Mutex<HashMap<PathBuf, Arc<Mutex<ProjectIndex>>>>,
}

impl Indexes {
    /// Indexes stored under `data_dir/index`; in memory only without a data directory.
    pub fn new(data_dir: Option<&Path>) -> Self {
        Indexes {
            dir: data_dir.map(|d| d.join("index")),
            projects: Mutex::default(),
        }
    }

    /// The index of the project at `root` (canonical), loaded from disk on first use. An
    /// unreadable store starts empty (and is rebuilt by the next refresh).
    pub fn project(&self, root: &Path) -> Arc<Mutex<ProjectIndex>> {
        let mut projects = lock(&self.projects);
        let found = projects.entry(root.to_path_buf()).or_insert_with(|| {
            let db = self.dir.as_ref().map(|dir| dir.join(db_name(root)));
            let (index, saved) = match db.as_deref().map(load) {
                Some(Ok((index, saved))) => (index, Some(saved)),
                Some(Err(_)) => (CodeIndex::new(), Some(HashMap::new())),
                None => (CodeIndex::new(), None),
            };
            Arc::new(Mutex::new(ProjectIndex { index, saved, db }))
        });
        Arc::clone(found)
    }
}

/// Locks `mutex`; a panic while it was held can only have left an index missing files,
/// which the next refresh puts back.
pub fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// The store's file name for a project root: a hash of its path.
fn db_name(root: &Path) -> String {
    let hash = crate::workspace::blob_hash(root.to_string_lossy().as_bytes());
    format!("{}.sqlite", &hash[..hash.len().min(16)])
}

fn open(db: &Path) -> Result<Connection, IndexStoreError> {
    if let Some(dir) = db.parent() {
        std::fs::create_dir_all(dir)?;
    }
    let conn = Connection::open(db)?;
    conn.busy_timeout(Duration::from_secs(5))?;
    conn.execute_batch(
        "CREATE TABLE IF NOT EXISTS files (
            path TEXT PRIMARY KEY, mtime_ns INTEGER NOT NULL, len INTEGER NOT NULL,
            inode INTEGER NOT NULL, defs TEXT NOT NULL, refs TEXT NOT NULL, words TEXT NOT NULL
        )",
    )?;
    Ok(conn)
}

/// Reads a stored index: every row back into the index, with the stamps as stored.
fn load(db: &Path) -> Result<(CodeIndex, HashMap<Box<str>, FileStamp>), IndexStoreError> {
    let mut index = CodeIndex::new();
    let mut saved = HashMap::new();
    if !db.exists() {
        return Ok((index, saved));
    }
    let conn = open(db)?;
    let mut rows =
        conn.prepare("SELECT path, mtime_ns, len, inode, defs, refs, words FROM files")?;
    let mut rows = rows.query([])?;
    while let Some(row) = rows.next()? {
        let path: String = row.get(0)?;
        let stamp = FileStamp {
            mtime_ns: row.get(1)?,
            len: u64::try_from(row.get::<_, i64>(2)?).unwrap_or(0),
            inode: row.get::<_, i64>(3)? as u64,
        };
        let extracted = decode(
            &row.get::<_, String>(4)?,
            &row.get::<_, String>(5)?,
            &row.get::<_, String>(6)?,
        );
        index.insert(&path, stamp, &extracted);
        saved.insert(Box::from(path.as_str()), stamp);
    }
    Ok((index, saved))
}

/// A file's definitions (`name kind line` a line), references (a name a line) and words
/// (`word count` a line), tab-separated: names and words never hold tabs or newlines (those
/// that would are not stored).
fn encode(index: &CodeIndex, entry: &super::FileEntry) -> (String, String, String) {
    let clean = |s: &str| !s.contains(['\t', '\n']);
    let name = |id| index.interner.name(id);
    let mut defs = String::new();
    for d in entry
        .defs
        .iter()
        .filter(|d| clean(name(d.name)) && clean(name(d.kind)))
    {
        defs.push_str(&format!("{}\t{}\t{}\n", name(d.name), name(d.kind), d.line));
    }
    let mut refs = String::new();
    for r in entry.refs.iter().map(|&r| name(r)).filter(|r| clean(r)) {
        refs.push_str(r);
        refs.push('\n');
    }
    let mut words = String::new();
    for (w, c) in entry.words.iter().zip(&entry.counts) {
        if clean(name(*w)) {
            words.push_str(&format!("{}\t{c}\n", name(*w)));
        }
    }
    (defs, refs, words)
}

fn decode(defs: &str, refs: &str, words: &str) -> Extracted {
    let definitions = (defs.lines())
        .filter_map(|line| {
            let mut parts = line.split('\t');
            let (name, kind, at) = (parts.next()?, parts.next()?, parts.next()?);
            Some(Definition {
                name: name.to_string(),
                kind: kind.to_string(),
                line: at.parse().ok()?,
                signature: String::new(),
            })
        })
        .collect();
    let words = (words.lines())
        .filter_map(|line| {
            let (word, count) = line.split_once('\t')?;
            Some((word.to_string(), count.parse().ok()?))
        })
        .collect();
    Extracted {
        definitions,
        references: refs.lines().map(str::to_string).collect(),
        words,
    }
}

#[cfg(test)]
#[path = "store_tests.rs"]
mod tests;
