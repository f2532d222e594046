//! The index's tables in SQLite, and the one write that changes them.
//!
//! - `files`: one row per file: its stamp, length (for BM25), definitions, references and
//!   words (kept so that a change can take the file's old words back out). A file that is not
//!   indexed (binary, too large, not UTF-8) is kept as `skipped` with its stamp, so that it is
//!   not read again until it changes.
//! - `words`: per word, its postings: each file having it, with the word's count there and
//!   the file's length, so a prompt's ranking reads only its own words' rows.
//! - `names`: per name, the files defining it and the files using it: the reference graph.
//! - `path_words`: per word, the indexed files whose path has it (a prompt's words met in a
//!   path are ranked on their own, not drowned in a long file's text).
//! - `totals`: how many files, and their summed length.
//! - `journal`: where the index stands in the project's change journal (the token after
//!   which changes are not in it yet), which paths it holds (a digest of the walk it was
//!   made from: `''` when unknown), a count of writes (a digest is stored only by the
//!   refresh that made the last write, see [`set_journal`]) and the files a refresh cut short
//!   by its deadline left to read (`pending`, one a line: the token does not cover them).
//! - `commits`, `history_files`, `history_words`, `history`: what the last commits said
//!   about each file (see [`super::history`]).
//!
//! A query reads only the rows it needs; nothing is loaded whole.

use std::collections::{HashMap, HashSet};
use std::time::Duration;

use rusqlite::{Connection, OptionalExtension, Transaction, TransactionBehavior, params};

use super::{Definition, Extracted, FileStamp};

/// The layout's version; an index written by another layout is dropped and rebuilt (it is
/// derived from the files, nothing is lost).
const VERSION: i64 = 10;

const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS files (
    id INTEGER PRIMARY KEY, path TEXT NOT NULL UNIQUE,
    mtime_ns INTEGER NOT NULL, ctime_ns INTEGER NOT NULL, len INTEGER NOT NULL,
    inode INTEGER NOT NULL,
    length INTEGER NOT NULL, defs TEXT NOT NULL, refs TEXT NOT NULL, words TEXT NOT NULL,
    skipped INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS files_stamps
    ON files (path, mtime_ns, ctime_ns, len, inode, skipped);
CREATE TABLE IF NOT EXISTS words (word TEXT PRIMARY KEY, postings BLOB NOT NULL) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS names (
    name TEXT PRIMARY KEY, definers BLOB NOT NULL, users BLOB NOT NULL
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS path_words (word TEXT PRIMARY KEY, files BLOB NOT NULL) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS totals (
    one INTEGER PRIMARY KEY CHECK (one = 1), files INTEGER NOT NULL, length INTEGER NOT NULL
);
INSERT OR IGNORE INTO totals VALUES (1, 0, 0);
CREATE TABLE IF NOT EXISTS journal (
    one INTEGER PRIMARY KEY CHECK (one = 1), token TEXT NOT NULL, paths TEXT NOT NULL,
    writes INTEGER NOT NULL, pending TEXT NOT NULL
);
INSERT OR IGNORE INTO journal VALUES (1, '', '', 0, '');
CREATE TABLE IF NOT EXISTS commits (
    id TEXT PRIMARY KEY, words TEXT NOT NULL, files TEXT NOT NULL
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS history_files (
    id INTEGER PRIMARY KEY, path TEXT NOT NULL UNIQUE, length INTEGER NOT NULL,
    changes INTEGER NOT NULL, commits INTEGER NOT NULL,
    partners BLOB NOT NULL
);
CREATE TABLE IF NOT EXISTS history_words (
    word TEXT PRIMARY KEY, postings BLOB NOT NULL
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS history (
    one INTEGER PRIMARY KEY CHECK (one = 1), head TEXT NOT NULL, files INTEGER NOT NULL,
    length INTEGER NOT NULL
);
INSERT OR IGNORE INTO history VALUES (1, '', 0, 0);
";

/// Readies `conn` for the index: the tables, written ahead (so that a second process reads
/// while one writes) and waiting for a writer rather than failing.
pub(super) fn prepare(conn: &Connection) -> rusqlite::Result<()> {
    conn.busy_timeout(Duration::from_secs(5))?;
    conn.query_row("PRAGMA journal_mode = WAL", [], |_| Ok(()))?;
    conn.pragma_update(None, "synchronous", "NORMAL")?;
    // An index of this layout is only read here: opening it writes nothing (setting the
    // version again would commit a transaction, and sync the log, in every process).
    if user_version(conn)? == VERSION {
        return Ok(());
    }
    // Built or rebuilt under the write lock, the version asked again: another process may
    // have just done it (and begun to index). Rolled back if any step fails.
    let tx = Transaction::new_unchecked(conn, TransactionBehavior::Immediate)?;
    if user_version(&tx)? != VERSION {
        tx.execute_batch(
            "DROP TABLE IF EXISTS files; DROP TABLE IF EXISTS words;
             DROP TABLE IF EXISTS names; DROP TABLE IF EXISTS totals;
             DROP TABLE IF EXISTS path_words; DROP TABLE IF EXISTS journal;
             DROP TABLE IF EXISTS commits; DROP TABLE IF EXISTS history_files;
             DROP TABLE IF EXISTS history_words; DROP TABLE IF EXISTS history;",
        )?;
        tx.execute_batch(SCHEMA)?;
        tx.pragma_update(None, "user_version", VERSION)?;
    }
    tx.commit()
}

/// The stamp a row of `files` keeps, its four columns from `first` on (`mtime_ns`,
/// `ctime_ns`, `len`, `inode`).
pub(super) fn stamp_at(row: &rusqlite::Row<'_>, first: usize) -> rusqlite::Result<FileStamp> {
    Ok(FileStamp {
        mtime_ns: row.get(first)?,
        ctime_ns: row.get(first + 1)?,
        len: u64::try_from(row.get::<_, i64>(first + 2)?).unwrap_or(0),
        inode: row.get::<_, i64>(first + 3)? as u64,
    })
}

/// The layout version the index at `conn` was built with (0 for a new file).
fn user_version(conn: &Connection) -> rusqlite::Result<i64> {
    conn.pragma_query_value(None, "user_version", |r| r.get(0))
}

/// One file having a word.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Posting {
    pub(crate) file: u32,
    pub(crate) count: u16,
    /// The file's length (the sum of its words' counts).
    pub(crate) length: u32,
}

const POSTING: usize = 10;

pub(super) fn encode_postings(postings: &[Posting]) -> Vec<u8> {
    let mut out = Vec::with_capacity(postings.len() * POSTING);
    for p in postings {
        out.extend_from_slice(&p.file.to_le_bytes());
        out.extend_from_slice(&p.count.to_le_bytes());
        out.extend_from_slice(&p.length.to_le_bytes());
    }
    out
}

/// The postings `sql` (one row, one blob, asked by `word`) holds; none without a row.
pub(super) fn postings_of(
    conn: &Connection,
    sql: &str,
    word: &str,
) -> rusqlite::Result<Vec<Posting>> {
    let blob: Option<Vec<u8>> = (conn.prepare_cached(sql)?)
        .query_row([word], |r| r.get(0))
        .optional()?;
    Ok(blob.as_deref().map(decode_postings).unwrap_or_default())
}

/// The (files, summed length) row `sql` reads: the text's totals or the history's.
pub(super) fn files_and_length(conn: &Connection, sql: &str) -> rusqlite::Result<(u32, u64)> {
    let (files, length): (i64, i64) =
        (conn.prepare_cached(sql)?).query_row([], |r| Ok((r.get(0)?, r.get(1)?)))?;
    Ok((files.max(0) as u32, length.max(0) as u64))
}

pub(super) fn decode_postings(bytes: &[u8]) -> Vec<Posting> {
    (bytes.chunks_exact(POSTING))
        .map(|c| Posting {
            file: u32::from_le_bytes([c[0], c[1], c[2], c[3]]),
            count: u16::from_le_bytes([c[4], c[5]]),
            length: u32::from_le_bytes([c[6], c[7], c[8], c[9]]),
        })
        .collect()
}

fn encode_ids(ids: &[u32]) -> Vec<u8> {
    ids.iter().flat_map(|id| id.to_le_bytes()).collect()
}

pub(super) fn decode_ids(bytes: &[u8]) -> Vec<u32> {
    (bytes.chunks_exact(4))
        .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect()
}

/// Text stored in a tab- and newline-separated column: names and words holding either, or
/// any other control character (a `\r` would be cut off as a line's end, and the name would
/// be another file's), are not stored.
pub(super) fn clean(s: &str) -> bool {
    !s.chars().any(char::is_control)
}

/// A file's definitions as stored: `name kind line signature`, tab-separated, one a line.
fn encode_defs(definitions: &[Definition]) -> String {
    let mut out = String::new();
    for d in definitions
        .iter()
        .filter(|d| clean(&d.name) && clean(&d.kind))
    {
        let signature = d.signature.replace(['\t', '\n'], " ");
        out.push_str(&format!(
            "{}\t{}\t{}\t{signature}\n",
            d.name, d.kind, d.line
        ));
    }
    out
}

pub(super) fn decode_defs(text: &str) -> Vec<Definition> {
    (text.lines())
        .filter_map(|line| {
            let mut parts = line.splitn(4, '\t');
            let (name, kind, at) = (parts.next()?, parts.next()?, parts.next()?);
            Some(Definition {
                name: name.to_string(),
                kind: kind.to_string(),
                line: at.parse().ok()?,
                signature: parts.next().unwrap_or_default().to_string(),
            })
        })
        .collect()
}

/// What changes for one word or name in a write: files taken out, entries put in.
#[derive(Default)]
struct Edit<T> {
    gone: HashSet<u32>,
    added: Vec<T>,
}

/// What a file now is, for [`write`].
#[derive(Debug, Clone, Copy)]
pub(super) enum Change<'a> {
    /// Indexed with this content.
    Indexed(FileStamp, &'a Extracted),
    /// There, but not indexed (binary, too large, not UTF-8).
    Skipped(FileStamp),
    /// Gone from the project.
    Gone,
}

/// Puts `changes` in the index, in one transaction: each changed file's old words and names
/// are taken out of their rows and its new ones put in. Returns how many files it wrote or
/// removed.
pub(super) fn write(
    conn: &mut Connection,
    changes: &[(&str, Change<'_>)],
) -> rusqlite::Result<usize> {
    // Immediate: the write lock first, so what is taken out is read under it (a deferred
    // transaction reading first could not take the lock once another writer committed, and
    // would fail at once rather than wait).
    let tx = conn.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
    let mut words: HashMap<String, Edit<Posting>> = HashMap::new();
    let mut definers: HashMap<String, Edit<u32>> = HashMap::new();
    let mut users: HashMap<String, Edit<u32>> = HashMap::new();
    let mut in_paths: HashMap<String, Edit<u32>> = HashMap::new();
    let (mut files_delta, mut length_delta) = (0i64, 0i64);
    let mut written = 0;
    let mut insert = tx.prepare_cached(
        "INSERT OR REPLACE INTO files
         (id, path, mtime_ns, ctime_ns, len, inode, length, defs, refs, words, skipped)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)",
    )?;
    for &(path, change) in changes {
        let old = take_out(&tx, path, &mut words, &mut definers, &mut users)?;
        if let Some(old) = old
            && !old.skipped
        {
            files_delta -= 1;
            length_delta -= old.length;
        }
        // A file keeps its id while it stays indexed, and its path's words with it: only a
        // file that stops or starts being indexed changes the path rows.
        let was_indexed = old.is_some_and(|o| !o.skipped);
        if let Some(old) = old
            && was_indexed
            && !matches!(change, Change::Indexed(..))
        {
            for word in super::terms::words(path) {
                in_paths.entry(word).or_default().gone.insert(old.id);
            }
        }
        let (stamp, extracted) = match change {
            Change::Gone => {
                if let Some(old) = old {
                    tx.execute("DELETE FROM files WHERE id = ?1", [old.id])?;
                    written += 1;
                }
                continue;
            }
            Change::Skipped(stamp) => (stamp, None),
            Change::Indexed(stamp, extracted) => (stamp, Some(extracted)),
        };
        let empty = Extracted::default();
        let extracted = extracted.unwrap_or(&empty);
        let mut counted: Vec<(&str, u16)> = (extracted.words.iter())
            .filter(|(w, _)| clean(w))
            .map(|(w, &c)| (w.as_str(), c))
            .collect();
        counted.sort_unstable();
        let length: u32 = counted.iter().map(|&(_, c)| u32::from(c)).sum();
        let mut word_text = String::new();
        for (w, c) in &counted {
            word_text.push_str(&format!("{w}\t{c}\n"));
        }
        let refs: Vec<&str> = (extracted.references.iter())
            .map(String::as_str)
            .filter(|r| clean(r))
            .collect();
        insert.execute(params![
            old.map(|o| o.id),
            path,
            stamp.mtime_ns,
            stamp.ctime_ns,
            i64::try_from(stamp.len).unwrap_or(i64::MAX),
            stamp.inode as i64,
            length,
            encode_defs(&extracted.definitions),
            refs.join("\n"),
            word_text,
            matches!(change, Change::Skipped(_)),
        ])?;
        written += 1;
        if matches!(change, Change::Skipped(_)) {
            continue;
        }
        let id = match old {
            Some(old) => old.id,
            None => u32::try_from(tx.last_insert_rowid()).unwrap_or(u32::MAX),
        };
        for &(word, count) in &counted {
            let posting = Posting {
                file: id,
                count,
                length,
            };
            words
                .entry(word.to_string())
                .or_default()
                .added
                .push(posting);
        }
        let mut defined: Vec<&str> = (extracted.definitions.iter())
            .map(|d| d.name.as_str())
            .filter(|n| clean(n))
            .collect();
        defined.sort_unstable();
        defined.dedup();
        for name in defined {
            definers.entry(name.to_string()).or_default().added.push(id);
        }
        for name in refs {
            users.entry(name.to_string()).or_default().added.push(id);
        }
        if !was_indexed {
            for word in super::terms::words(path) {
                in_paths.entry(word).or_default().added.push(id);
            }
        }
        files_delta += 1;
        length_delta += i64::from(length);
    }
    drop(insert);
    WORDS.write(&tx, words)?;
    write_names(&tx, definers, users)?;
    PATH_WORDS.write(&tx, in_paths)?;
    tx.execute(
        "UPDATE totals SET files = files + ?1, length = length + ?2",
        params![files_delta, length_delta],
    )?;
    // The files may no longer be the walk's the digest was made from.
    tx.execute("UPDATE journal SET paths = '', writes = writes + 1", [])?;
    tx.commit()?;
    Ok(written)
}

/// Where the index stands in the change journal (see the module's `journal` table).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct JournalState {
    pub(crate) token: Option<crate::folder::journal::Token>,
    /// The digest of the paths the index holds; empty when not known.
    pub(crate) paths: String,
    pub(crate) writes: i64,
    /// Files changed before the token but not read yet (a refresh was cut short).
    pub(crate) pending: Vec<String>,
}

pub(super) fn journal(conn: &Connection) -> rusqlite::Result<JournalState> {
    let row = (conn.prepare_cached("SELECT token, paths, writes, pending FROM journal")?)
        .query_row([], |r| {
            Ok((
                r.get::<_, String>(0)?,
                r.get::<_, String>(1)?,
                r.get(2)?,
                r.get::<_, String>(3)?,
            ))
        })
        .optional()?;
    Ok(
        row.map_or_else(JournalState::default, |(token, paths, writes, pending)| {
            JournalState {
                token: crate::folder::journal::Token::parse(&token),
                paths,
                writes,
                pending: (pending.lines())
                    .filter(|p| !p.is_empty())
                    .map(str::to_string)
                    .collect(),
            }
        }),
    )
}

/// Stores where the index stands, with the files still `pending`, unless another write came
/// after `writes` (another refresh, maybe of another process, wrote files this one did not
/// see): then the state stays as that write left it (no digest: the next refresh compares
/// every path).
pub(super) fn set_journal(
    conn: &Connection,
    token: Option<crate::folder::journal::Token>,
    paths: &str,
    pending: &[&str],
    writes: i64,
) -> rusqlite::Result<()> {
    let token = token.map(|t| t.to_text()).unwrap_or_default();
    conn.execute(
        "UPDATE journal SET token = ?1, paths = ?2, pending = ?3 WHERE writes = ?4",
        params![token, paths, pending.join("\n"), writes],
    )?;
    Ok(())
}

/// A file's row as it was before a write.
#[derive(Debug, Clone, Copy)]
struct Stored {
    id: u32,
    length: i64,
    skipped: bool,
}

/// Notes what the stored version of `path` put in the word and name rows, to be taken out.
fn take_out(
    tx: &Transaction<'_>,
    path: &str,
    words: &mut HashMap<String, Edit<Posting>>,
    definers: &mut HashMap<String, Edit<u32>>,
    users: &mut HashMap<String, Edit<u32>>,
) -> rusqlite::Result<Option<Stored>> {
    let old = tx
        .prepare_cached("SELECT id, length, skipped, defs, refs, words FROM files WHERE path = ?1")?
        .query_row([path], |r| {
            let stored = Stored {
                id: r.get(0)?,
                length: r.get(1)?,
                skipped: r.get(2)?,
            };
            let text: (String, String, String) = (r.get(3)?, r.get(4)?, r.get(5)?);
            Ok((stored, text))
        })
        .optional()?;
    let Some((stored, (defs, refs, word_text))) = old else {
        return Ok(None);
    };
    let id = stored.id;
    for line in word_text.lines() {
        let word = line.split('\t').next().unwrap_or_default();
        words.entry(word.to_string()).or_default().gone.insert(id);
    }
    for d in decode_defs(&defs) {
        definers.entry(d.name).or_default().gone.insert(id);
    }
    for name in refs.lines() {
        users.entry(name.to_string()).or_default().gone.insert(id);
    }
    Ok(Some(stored))
}

/// Each word's files having it, with its count there and their length.
const WORDS: List<Posting> = List {
    table: "words",
    column: "postings",
    decode: decode_postings,
    encode: encode_postings,
    file: |p: &Posting| p.file,
};

/// Each word's indexed files whose path has it.
const PATH_WORDS: List<u32> = List {
    table: "path_words",
    column: "files",
    decode: decode_ids,
    encode: encode_ids,
    file: |id: &u32| *id,
};

/// A table of one list per word (`word`, and the list in `column`), and how its entries are
/// stored and which file each is of.
struct List<T> {
    table: &'static str,
    column: &'static str,
    decode: fn(&[u8]) -> Vec<T>,
    encode: fn(&[T]) -> Vec<u8>,
    file: fn(&T) -> u32,
}

impl<T> List<T> {
    /// Each word's stored list loses the entries of the files gone and gains those added; a
    /// list left empty is deleted.
    fn write(&self, tx: &Transaction<'_>, edits: HashMap<String, Edit<T>>) -> rusqlite::Result<()> {
        let (table, column) = (self.table, self.column);
        let mut read =
            tx.prepare_cached(&format!("SELECT {column} FROM {table} WHERE word = ?1"))?;
        let mut put =
            tx.prepare_cached(&format!("INSERT OR REPLACE INTO {table} VALUES (?1, ?2)"))?;
        let mut delete = tx.prepare_cached(&format!("DELETE FROM {table} WHERE word = ?1"))?;
        for (word, edit) in edits {
            let stored: Option<Vec<u8>> = read.query_row([&word], |r| r.get(0)).optional()?;
            let mut entries = stored.as_deref().map(self.decode).unwrap_or_default();
            entries.retain(|e| !edit.gone.contains(&(self.file)(e)));
            entries.extend(edit.added);
            match entries.is_empty() {
                true => delete.execute([&word])?,
                false => put.execute(params![word, (self.encode)(&entries)])?,
            };
        }
        Ok(())
    }
}

fn write_names(
    tx: &Transaction<'_>,
    mut definers: HashMap<String, Edit<u32>>,
    mut users: HashMap<String, Edit<u32>>,
) -> rusqlite::Result<()> {
    let mut read = tx.prepare_cached("SELECT definers, users FROM names WHERE name = ?1")?;
    let mut put = tx.prepare_cached("INSERT OR REPLACE INTO names VALUES (?1, ?2, ?3)")?;
    let mut delete = tx.prepare_cached("DELETE FROM names WHERE name = ?1")?;
    let names: HashSet<String> = definers.keys().chain(users.keys()).cloned().collect();
    for name in names {
        let stored: Option<(Vec<u8>, Vec<u8>)> = read
            .query_row([&name], |r| Ok((r.get(0)?, r.get(1)?)))
            .optional()?;
        let (mut defining, mut using) = stored
            .map(|(d, u)| (decode_ids(&d), decode_ids(&u)))
            .unwrap_or_default();
        for (ids, edit) in [
            (&mut defining, definers.remove(&name)),
            (&mut using, users.remove(&name)),
        ] {
            if let Some(edit) = edit {
                ids.retain(|id| !edit.gone.contains(id));
                ids.extend(edit.added);
            }
        }
        match defining.is_empty() && using.is_empty() {
            true => delete.execute([&name])?,
            false => put.execute(params![name, encode_ids(&defining), encode_ids(&using)])?,
        };
    }
    Ok(())
}
