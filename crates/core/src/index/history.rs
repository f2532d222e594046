//! What the project's history says about its files: per file, the words of the subjects of
//! the last commits that changed it (the newest [`COMMITS`] from HEAD; the import, merges
//! and mass changes say nothing of single files and are left out). A prompt's words met there
//! rank a file as its text's words do (see [`super::rank`]): a subject says what a change did
//! in the words people ask for it with (`fix(ssr): …`, "handle circular imports"), words the
//! code itself may not hold, and the next change to the same code is often asked alike.
//!
//! The history also says how often each file changed lately: of the newest [`OFTEN_COMMITS`],
//! how many changed it among a few files (at most [`FEW_FILES`]). A file many changes touch
//! (a changelog, the module a project is busy with) is likely in the next one too, whatever
//! its words; [`super::rank`] counts it a little.
//!
//! And it says which files change together: for each file, the files that changed in the
//! same commits of a few files, how many times, and how many commits changed each (see
//! [`partners`]; [`super::rank`] lets the best files bring theirs).
//!
//! Each commit's subject words and files are kept by id (`commits`: a commit never changes),
//! so a moved HEAD reads only the commits not met yet; the per-file words and partners
//! (`history_files`, `history_words`) are made again from them whenever HEAD moves, and
//! `history` names the HEAD they were made at.

use std::collections::{BTreeMap, HashMap, HashSet};

use rusqlite::{OptionalExtension, TransactionBehavior, params};

use super::tables::{self, Posting};
use super::{CodeIndex, Result, terms};

/// How many of the newest commits the history learns from. Measured with a model of the
/// ranking on the recall bench's five repositories (micro recall at 32k): 500 commits +2.1
/// points, 1,000 +3.3, 2,000 +3.5, 3,000 +2.7.
pub const COMMITS: usize = 1000;

/// How many of the newest commits say how often a file changed lately.
pub const OFTEN_COMMITS: usize = 100;
/// A commit changing more files than this says little of which file changes often: a
/// release bumping every package's version, a rename across modules.
const FEW_FILES: usize = 20;

/// The most files kept as having changed with one file (see [`partners`]).
const PARTNERS: usize = 32;

/// A commit as the history learns it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PastCommit {
    pub id: String,
    pub subject: String,
    /// The files it added or changed; none for a commit that says nothing of single files.
    pub files: Vec<String>,
    /// The files it moved, (from, to): what older commits said of `from` is said of the
    /// file it is now.
    pub moved: Vec<(String, String)>,
}

impl CodeIndex {
    /// The HEAD the history's words were made at; `None` before they were.
    pub fn history_head(&self) -> Result<Option<String>> {
        let head: String = (self.db.prepare_cached("SELECT head FROM history")?)
            .query_row([], |r| r.get(0))
            .optional()?
            .unwrap_or_default();
        Ok((!head.is_empty()).then_some(head))
    }

    /// Of `ids`, those whose subject and files are kept.
    pub fn kept_commits(&self, ids: &[String]) -> Result<HashSet<String>> {
        let mut statement = self
            .db
            .prepare_cached("SELECT 1 FROM commits WHERE id = ?1")?;
        let mut kept = HashSet::new();
        for id in ids {
            if statement.exists([id])? {
                kept.insert(id.clone());
            }
        }
        Ok(kept)
    }

    /// Keeps `read`, commits met for the first time. Then, when every one of `ids` (the
    /// newest commits from `head`, newest first) is kept, makes the per-file words from them
    /// as the history at `head` and forgets the kept commits no longer among them, and says
    /// true; otherwise the history stays as it was (the next call goes on from what is kept).
    /// One transaction.
    pub fn learn_history(
        &mut self,
        head: &str,
        ids: &[String],
        read: &[PastCommit],
    ) -> Result<bool> {
        let tx = self
            .db
            .transaction_with_behavior(TransactionBehavior::Immediate)?;
        {
            let mut keep = tx.prepare_cached(
                "INSERT OR REPLACE INTO commits (id, words, files) VALUES (?1, ?2, ?3)",
            )?;
            for commit in read {
                let words = terms::words(&commit.subject).join(" ");
                // A line a file it changed, or `from<tab>to` a file it moved (no path holds
                // a tab or a line break).
                let changed =
                    (commit.files.iter().map(String::as_str)).filter(|f| tables::clean(f));
                let moved = (commit.moved.iter())
                    .filter(|(from, to)| tables::clean(from) && tables::clean(to))
                    .map(|(from, to)| format!("{from}\t{to}"));
                let lines: Vec<String> = changed.map(str::to_string).chain(moved).collect();
                keep.execute(params![commit.id, words, lines.join("\n")])?;
            }
        }
        // Per file (in path order, by the name it has at `head`), its count of each word, and
        // how many of the newest commits changed it among a few files.
        let mut docs: BTreeMap<String, (HashMap<String, u32>, u32)> = BTreeMap::new();
        // The files newer commits moved: an older commit's path, the file's name at `head`.
        let mut now_at: HashMap<String, String> = HashMap::new();
        // The files of each commit that changed a few together, by their names at `head`.
        let mut together: Vec<Vec<String>> = Vec::new();
        let mut complete = true;
        {
            let mut kept = tx.prepare_cached("SELECT words, files FROM commits WHERE id = ?1")?;
            for (position, id) in ids.iter().enumerate() {
                let row: Option<(String, String)> = kept
                    .query_row([id], |r| Ok((r.get(0)?, r.get(1)?)))
                    .optional()?;
                let Some((words, lines)) = row else {
                    complete = false;
                    break;
                };
                let mut moved = Vec::new();
                let changed = lines.lines().filter(|l| !l.contains('\t')).count();
                // A commit of a few files says which files change, and which together.
                let few = changed <= FEW_FILES;
                let lately = position < OFTEN_COMMITS && few;
                let mut these = Vec::new();
                for line in lines.lines() {
                    if let Some((from, to)) = line.split_once('\t') {
                        moved.push((from, now_at.get(to).map_or(to, String::as_str).to_string()));
                        continue;
                    }
                    let file = now_at.get(line).map_or(line, String::as_str);
                    if few {
                        these.push(file.to_string());
                    }
                    let (doc, changes) = docs.entry(file.to_string()).or_default();
                    *changes += u32::from(lately);
                    for word in words.split(' ').filter(|w| !w.is_empty()) {
                        *doc.entry(word.to_string()).or_default() += 1;
                    }
                }
                if !these.is_empty() {
                    together.push(these);
                }
                // Its moves name older commits' paths only (ids are newest first).
                for (from, to) in moved {
                    now_at.insert(from.to_string(), to);
                }
            }
        }
        if !complete {
            tx.commit()?;
            return Ok(false);
        }
        tx.execute_batch("DELETE FROM history_files; DELETE FROM history_words;")?;
        let (commits, partners) = partners(&docs, &together);
        let mut postings: HashMap<String, Vec<Posting>> = HashMap::new();
        let mut total: u64 = 0;
        {
            let mut file_row = tx.prepare_cached(
                "INSERT INTO history_files (id, path, length, changes, commits, partners)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
            )?;
            for (doc, (path, (words, changes))) in docs.iter().enumerate() {
                let doc = doc as u32;
                let length: u32 = words.values().sum();
                total += u64::from(length);
                let partners = tables::encode_postings(&partners[doc as usize]);
                let commits = commits[doc as usize];
                file_row.execute(params![doc, path, length, changes, commits, partners])?;
                for (word, count) in words {
                    postings.entry(word.clone()).or_default().push(Posting {
                        file: doc,
                        count: (*count).min(u32::from(u16::MAX)) as u16,
                        length,
                    });
                }
            }
            let mut word_row =
                tx.prepare_cached("INSERT INTO history_words (word, postings) VALUES (?1, ?2)")?;
            for (word, list) in &postings {
                word_row.execute(params![word, tables::encode_postings(list)])?;
            }
        }
        tx.execute(
            "UPDATE history SET head = ?1, files = ?2, length = ?3",
            params![head, docs.len() as i64, total as i64],
        )?;
        let wanted: HashSet<&str> = ids.iter().map(String::as_str).collect();
        let stale: Vec<String> = {
            let mut all = tx.prepare_cached("SELECT id FROM commits")?;
            let ids = all.query_map([], |r| r.get::<_, String>(0))?;
            (ids.collect::<rusqlite::Result<Vec<_>>>()?)
                .into_iter()
                .filter(|id| !wanted.contains(id.as_str()))
                .collect()
        };
        {
            let mut forget = tx.prepare_cached("DELETE FROM commits WHERE id = ?1")?;
            for id in &stale {
                forget.execute([id])?;
            }
        }
        tx.commit()?;
        Ok(true)
    }

    /// (files with history words, their summed length).
    pub(crate) fn history_totals(&self) -> Result<(u32, u64)> {
        Ok(tables::files_and_length(
            &self.db,
            "SELECT files, length FROM history",
        )?)
    }

    /// The history's files having `word` (numbered as in `history_files`), with its count.
    pub(crate) fn history_postings(&self, word: &str) -> Result<Vec<Posting>> {
        let sql = "SELECT postings FROM history_words WHERE word = ?1";
        Ok(tables::postings_of(&self.db, sql, word)?)
    }

    /// The files the newest commits changed often (see [`OFTEN_COMMITS`]): (path, how many
    /// of those commits changed it), most often first.
    pub(crate) fn often_changed(&self) -> Result<Vec<(String, u32)>> {
        let mut statement = self.db.prepare_cached(
            "SELECT path, changes FROM history_files WHERE changes > 0
             ORDER BY changes DESC, path",
        )?;
        let rows = statement.query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?;
        Ok(rows.collect::<rusqlite::Result<_>>()?)
    }

    /// The files that changed together with `path` (see [`partners`]): (partner's path, how
    /// many commits changed both, how many changed `path`, how many changed the partner),
    /// most together first.
    pub(crate) fn partners_of(&self, path: &str) -> Result<Vec<(String, u32, u32, u32)>> {
        let row: Option<(u32, Vec<u8>)> = (self.db)
            .prepare_cached("SELECT commits, partners FROM history_files WHERE path = ?1")?
            .query_row([path], |r| Ok((r.get(0)?, r.get(1)?)))
            .optional()?;
        let Some((commits, blob)) = row else {
            return Ok(Vec::new());
        };
        let mut out = Vec::new();
        for p in tables::decode_postings(&blob) {
            if let Some(partner) = self.history_path(p.file)? {
                out.push((partner, u32::from(p.count), commits, p.length));
            }
        }
        Ok(out)
    }

    /// The path of the history's file `doc`.
    pub(crate) fn history_path(&self, doc: u32) -> Result<Option<String>> {
        Ok((self.db)
            .prepare_cached("SELECT path FROM history_files WHERE id = ?1")?
            .query_row([doc], |r| r.get(0))
            .optional()?)
    }
}

/// Per file of `docs` (by position), how many of `together`'s commits changed it, and the
/// files that changed with it: each partner's position, how many commits changed both, and
/// (as `length`) how many changed the partner, at most [`PARTNERS`] of them, most together
/// first.
fn partners<T>(
    docs: &BTreeMap<String, T>,
    together: &[Vec<String>],
) -> (Vec<u32>, Vec<Vec<Posting>>) {
    let position: HashMap<&str, u32> = (docs.keys().enumerate())
        .map(|(i, path)| (path.as_str(), i as u32))
        .collect();
    let mut changes = vec![0u32; docs.len()];
    let mut pairs: Vec<HashMap<u32, u32>> = vec![HashMap::new(); docs.len()];
    for files in together {
        let mut ids: Vec<u32> = (files.iter())
            .filter_map(|f| position.get(f.as_str()).copied())
            .collect();
        ids.sort_unstable();
        ids.dedup();
        for &a in &ids {
            changes[a as usize] += 1;
            for &b in ids.iter().filter(|b| **b != a) {
                *pairs[a as usize].entry(b).or_default() += 1;
            }
        }
    }
    let partners = (pairs.into_iter())
        .map(|partners| {
            let mut list: Vec<Posting> = (partners.into_iter())
                .map(|(b, count)| Posting {
                    file: b,
                    count: count.min(u32::from(u16::MAX)) as u16,
                    length: changes[b as usize],
                })
                .collect();
            list.sort_by(|x, y| y.count.cmp(&x.count).then(x.file.cmp(&y.file)));
            list.truncate(PARTNERS);
            list
        })
        .collect();
    (changes, partners)
}

#[cfg(test)]
mod tests;
