//! The code index of a project: per file, its definitions and references (tree-sitter
//! grammars, see [`lang`]) and the words of its path, names and text (see [`terms`]). Files
//! are re-read only when their `(mtime, length, inode)` stamp changed ([`CodeIndex::refresh`]).
//! The index lives in SQLite ([`tables`]), in the data directory between runs ([`store`]),
//! and every question reads only the rows it needs: a prompt's ranking reads its own words'
//! postings and the names of its best files, never the whole index. [`rank`] orders the files
//! for a prompt; [`history`] keeps what the last commits said about each file.
//!
//! Core: it uses the workspace's safe reads and nothing above it.

mod extract;
pub mod history;
mod lang;
pub mod rank;
mod refresh;
pub mod store;
mod tables;
pub mod terms;

use std::path::Path;

use rusqlite::{Connection, OptionalExtension};

pub use extract::{Definition, Extracted, MAX_PARSED_BYTES, extract, file_map, map_of};
pub use history::PastCommit;
pub use lang::Lang;
pub use rank::{OPEN_WHY, Ranked, SELECTED_WHY, Signals};
pub use refresh::{Changes, FileStamp, Refreshed};
pub use store::{Indexes, lock};

/// The index cannot be read or written, or the project cannot be walked to refresh it.
#[derive(Debug, thiserror::Error)]
pub enum IndexError {
    #[error("the code index cannot be used: {0}")]
    Sqlite(#[from] rusqlite::Error),
    #[error("the code index folder cannot be created: {0}")]
    Io(#[from] std::io::Error),
    #[error(transparent)]
    Walk(#[from] crate::folder::context::ContextError),
    #[error(
        "the code index is being brought up to date by another Tandem process (for over {} \
         minutes); try again when it is done",
        store::REFRESH_WAIT.as_secs() / 60
    )]
    Busy,
}

impl IndexError {
    /// The store is damaged: its file is not a database, or a page of it is corrupt.
    pub fn is_damage(&self) -> bool {
        use rusqlite::ErrorCode::{DatabaseCorrupt, NotADatabase};
        matches!(self, IndexError::Sqlite(e)
            if matches!(e.sqlite_error_code(), Some(DatabaseCorrupt | NotADatabase)))
    }
}

pub type Result<T, E = IndexError> = std::result::Result<T, E>;

/// A place a name is defined.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Location {
    pub path: String,
    /// 1-based.
    pub line: u32,
    pub kind: String,
    /// The definition's first line, trimmed.
    pub signature: String,
}

/// The index of one project, in SQLite (see [`tables`]): on disk in the data directory, or in
/// memory. Files are kept by relative, `/`-separated path.
pub struct CodeIndex {
    pub(crate) db: Connection,
    /// The files a refresh that stopped at its deadline read for the next one while it
    /// wrote its last round (see [`CodeIndex::refresh_reading_ahead`]).
    ahead: refresh::Ahead,
}

impl std::fmt::Debug for CodeIndex {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CodeIndex").finish_non_exhaustive()
    }
}

impl CodeIndex {
    /// An index in memory, for one process.
    pub fn in_memory() -> Result<Self> {
        CodeIndex::on(Connection::open_in_memory()?)
    }

    /// The index stored at `path`, created when missing.
    pub fn open(path: &Path) -> Result<Self> {
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir)?;
        }
        CodeIndex::on(Connection::open(path)?)
    }

    /// The index in `db`, its tables readied.
    fn on(db: Connection) -> Result<Self> {
        tables::prepare(&db)?;
        Ok(CodeIndex {
            db,
            ahead: refresh::Ahead::default(),
        })
    }

    /// How many files are indexed.
    pub fn len(&self) -> Result<usize> {
        Ok(self.totals()?.0 as usize)
    }

    pub fn is_empty(&self) -> Result<bool> {
        Ok(self.len()? == 0)
    }

    /// Whether `path` is indexed.
    pub fn contains(&self, path: &str) -> Result<bool> {
        Ok(self.id_of(path)?.is_some())
    }

    /// Puts what `extracted` holds in the index as the file `path`, replacing what it held.
    pub fn insert(&mut self, path: &str, stamp: FileStamp, extracted: &Extracted) -> Result<()> {
        tables::write(
            &mut self.db,
            &[(path, tables::Change::Indexed(stamp, extracted))],
        )?;
        Ok(())
    }

    /// Forgets the file `path`.
    pub fn remove(&mut self, path: &str) -> Result<()> {
        tables::write(&mut self.db, &[(path, tables::Change::Gone)])?;
        Ok(())
    }

    /// Where `name` is defined, by path then line.
    pub fn definitions_of(&self, name: &str) -> Result<Vec<Location>> {
        let Some((definers, _)) = self.name(name)? else {
            return Ok(Vec::new());
        };
        let mut out = Vec::new();
        for id in definers {
            let Some((path, defs)) = self.file_defs(id)? else {
                continue;
            };
            out.extend(
                defs.into_iter()
                    .filter(|d| d.name == name)
                    .map(|d| Location {
                        path: path.clone(),
                        line: d.line,
                        kind: d.kind,
                        signature: d.signature,
                    }),
            );
        }
        out.sort_by(|a, b| (&a.path, a.line).cmp(&(&b.path, b.line)));
        Ok(out)
    }

    /// The files that use `name` (call it, name its type, ...), by path.
    pub fn references_to(&self, name: &str) -> Result<Vec<String>> {
        let Some((_, users)) = self.name(name)? else {
            return Ok(Vec::new());
        };
        let mut out = Vec::new();
        for id in users {
            out.extend(self.path_of(id)?);
        }
        out.sort();
        Ok(out)
    }

    /// The definitions of the file `path` below `root`, by line, as the file is now; `None`
    /// when the index does not hold it (not read yet, or skipped: binary, too large) or holds
    /// an older version of it (a refresh that stopped at its deadline has not read it again
    /// yet): what was in it then (a token since removed, a function since renamed) is not
    /// what it says now.
    pub fn symbols_in(&self, root: &Path, path: &str) -> Result<Option<Vec<Definition>>> {
        let row: Option<(String, FileStamp)> = (self.db)
            .prepare_cached(
                "SELECT defs, mtime_ns, ctime_ns, len, inode FROM files
                 WHERE path = ?1 AND NOT skipped",
            )?
            .query_row([path], |r| Ok((r.get(0)?, tables::stamp_at(r, 1)?)))
            .optional()?;
        let Some((defs, stamp)) = row else {
            return Ok(None);
        };
        let now = std::fs::symlink_metadata(root.join(path)).map(|meta| FileStamp::of(&meta));
        Ok((now.ok() == Some(stamp)).then(|| tables::decode_defs(&defs)))
    }

    /// The defined names containing `query` (lower-case), in no order. SQLite's `lower`
    /// folds only ASCII: it picks among the names written in ASCII, and every other name
    /// (`Ärger`, `ΣSigma`) is folded here.
    pub fn names_containing(&self, query: &str) -> Result<Vec<String>> {
        let mut statement = (self.db).prepare_cached(
            "SELECT name FROM names WHERE length(definers) > 0
             AND (instr(lower(name), ?1) > 0 OR name GLOB '*[^ -~]*')",
        )?;
        let names = statement.query_map([query], |r| r.get::<_, String>(0))?;
        let mut out = Vec::new();
        for name in names {
            let name = name?;
            if name.is_ascii() || name.to_lowercase().contains(query) {
                out.push(name);
            }
        }
        Ok(out)
    }

    /// (files, summed length).
    pub(crate) fn totals(&self) -> Result<(u32, u64)> {
        Ok(tables::files_and_length(
            &self.db,
            "SELECT files, length FROM totals",
        )?)
    }

    pub(crate) fn id_of(&self, path: &str) -> Result<Option<u32>> {
        Ok((self.db)
            .prepare_cached("SELECT id FROM files WHERE path = ?1 AND NOT skipped")?
            .query_row([path], |r| r.get(0))
            .optional()?)
    }

    pub(crate) fn path_of(&self, id: u32) -> Result<Option<String>> {
        Ok((self.db)
            .prepare_cached("SELECT path FROM files WHERE id = ?1")?
            .query_row([id], |r| r.get(0))
            .optional()?)
    }

    /// The path of the file `id` and its length in bytes.
    pub(crate) fn path_and_len(&self, id: u32) -> Result<Option<(String, u64)>> {
        let row: Option<(String, i64)> = (self.db)
            .prepare_cached("SELECT path, len FROM files WHERE id = ?1")?
            .query_row([id], |r| Ok((r.get(0)?, r.get(1)?)))
            .optional()?;
        Ok(row.map(|(path, len)| (path, len.max(0) as u64)))
    }

    /// The names the file `id` uses.
    pub(crate) fn refs_of(&self, id: u32) -> Result<Vec<String>> {
        let refs: Option<String> = (self.db)
            .prepare_cached("SELECT refs FROM files WHERE id = ?1")?
            .query_row([id], |r| r.get(0))
            .optional()?;
        Ok(refs.map_or_else(Vec::new, |r| r.lines().map(str::to_string).collect()))
    }

    fn file_defs(&self, id: u32) -> Result<Option<(String, Vec<Definition>)>> {
        let row: Option<(String, String)> = (self.db)
            .prepare_cached("SELECT path, defs FROM files WHERE id = ?1")?
            .query_row([id], |r| Ok((r.get(0)?, r.get(1)?)))
            .optional()?;
        Ok(row.map(|(path, defs)| (path, tables::decode_defs(&defs))))
    }

    /// The files having `word`, with its count there and their length.
    pub(crate) fn postings(&self, word: &str) -> Result<Vec<tables::Posting>> {
        let sql = "SELECT postings FROM words WHERE word = ?1";
        Ok(tables::postings_of(&self.db, sql, word)?)
    }

    /// The indexed files whose path has `word`.
    pub(crate) fn files_with_path_word(&self, word: &str) -> Result<Vec<u32>> {
        let blob: Option<Vec<u8>> = (self.db)
            .prepare_cached("SELECT files FROM path_words WHERE word = ?1")?
            .query_row([word], |r| r.get(0))
            .optional()?;
        Ok(blob.as_deref().map(tables::decode_ids).unwrap_or_default())
    }

    /// The files defining `name` and the files using it.
    pub(crate) fn name(&self, name: &str) -> Result<Option<(Vec<u32>, Vec<u32>)>> {
        let row: Option<(Vec<u8>, Vec<u8>)> = (self.db)
            .prepare_cached("SELECT definers, users FROM names WHERE name = ?1")?
            .query_row([name], |r| Ok((r.get(0)?, r.get(1)?)))
            .optional()?;
        Ok(row.map(|(d, u)| (tables::decode_ids(&d), tables::decode_ids(&u))))
    }
}

#[cfg(test)]
mod tests;
