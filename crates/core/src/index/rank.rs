//! Which files matter for a prompt, best first, each with why:
//! - lexical relevance: BM25 of the prompt's words (see [`super::terms`]) over each file's
//!   path, definition names and text, and the prompt's words met in the path on their own
//!   (`fix(css): …` is about `plugins/css.ts`, however long it is);
//! - the person's signals: files mentioned or named in the prompt, open in the editor (the
//!   selection's file above them), edited in the last commits;
//! - the selected text's words, as a second, lighter query;
//! - the project's history: the prompt's words in the subjects of the commits that changed
//!   a file, and how often the newest commits changed it (see [`super::history`]);
//! - the reference graph: one step of personalised PageRank from those files, so that a file
//!   defining what the relevant files use ranks next to them;
//! - the files that changed in the same commits as the best ones (a source and its test, a
//!   parser and its grammar), as the project's history has them.
//!
//! The files come best first as they are to be packed: a file's score counts against its size
//! a little (see [`SIZE`]), except for those the person named.

use std::collections::{HashMap, HashSet};

use super::{CodeIndex, Result, terms};

/// BM25's term-frequency saturation and length normalisation.
const K1: f32 = 1.2;
const B: f32 = 0.75;

/// The prompt's words met in a file's path (the best path 1), against the best text match (1).
/// Measured on the recall bench (five repositories, micro recall at 8k / 32k / 128k): none
/// 18.0 / 39.6 / 69.2; 0.3 19.2 / 43.2 / 72.2; 0.5 21.3 / 44.1 / 74.3; 0.7 20.4 / 42.9 /
/// 74.0; 1.0 20.1 / 42.3 / 74.0.
const PATH: f32 = 0.5;

/// The prompt's words met in what the last commits said about a file (the best file 1; see
/// [`super::history`]), against the best text match (1). Measured on the recall bench (five
/// repositories, micro recall at 8k / 32k / 128k; 26.9 / 47.9 / 79.0 without): 0.25 29.0 /
/// 50.6 / 79.6, 0.4 29.0 / 51.8 / 80.2, 0.5 29.3 / 50.6 / 79.9, 0.6 28.7 / 49.4 / 79.6, 0.9 28.1 / 50.0 / 79.3.
const HISTORY: f32 = 0.4;
/// Files the history's words rank, before their paths are looked up.
const HISTORY_MATCHES: usize = 300;
/// A file changed by every one of the newest commits (see [`super::history::OFTEN_COMMITS`]),
/// against the best text match (1); one changed by a tenth of them is worth a tenth of that.
/// Measured on the recall bench (21 repositories, 16 of them never tuned on, micro recall at
/// 32k): under the old 45% rule (41.8 without) 0.5 / 1 / 2 gave 41.9 / 41.8 / 41.7; without
/// it (42.7) 1 gave 43.0, and with maps' share a sixteenth too (42.9 without) 43.7, 8k 22.1
/// → 22.8, 128k 72.8 → 74.3. On eight repositories fetched after the choice: 51.1 → 52.0 at
/// 32k, 26.2 → 28.6 at 8k.
const OFTEN: f32 = 1.0;

/// What the person's signals are worth, against the best lexical match (1).
const MENTIONED: f32 = 10.0;
const NAMED: f32 = 8.0;
const OPEN: f32 = 0.8;
/// The selection's file: at least the active tab's worth.
const SELECTED: f32 = 1.0;
/// The selected text's words, against the prompt's own (1).
const SELECTION_WORDS: f32 = 0.4;
/// The most words of a selection asked of the index (a big selection is mostly repetition).
const SELECTION_TERMS: usize = 64;
/// The IDF of a word in half the files: a selection's words more common than this are the
/// language's (`fn`, `self`, `return`), not what it is about.
const COMMON_IDF: f32 = std::f32::consts::LN_2;
/// Files the last commits changed: a hint, below a real match. Measured on the recall bench
/// (five repositories, micro recall at 8k / 32k / 128k): 0.15 18.0 / 39.6 / 69.2, 0.3
/// 18.3 / 38.8 / 67.8; on three of them, 0.5 cost 5 to 13 points.
const RECENT: f32 = 0.15;
/// Why a file open in the editor ranks.
pub const OPEN_WHY: &str = "open in the editor";
/// Why the selection's file ranks.
pub const SELECTED_WHY: &str = "selected in the editor";
/// How much of a file's score flows to the files defining what it uses. Measured on the
/// recall bench (three real repositories, 75 commits): 0.6 cost 3–6 points of recall against
/// no graph at all, 0.15 cost 1–3 (five repositories at 32k: 36.7 against 39.6 for 0.05);
/// 0.05 costs none at 8k and 32k against no graph and still ranks a definer of what the best
/// files use above files nothing points to.
const GRAPH: f32 = 0.05;
/// Whole files are packed in order while they fit: of two files nearly as relevant, the
/// smaller goes first and leaves room for the next. A file's place is its score divided by
/// (its tokens / 1,000) to this power, counting at least [`SMALL_TOKENS`] (the smallest
/// files are not preferred for being tiny). Measured on the recall bench (five repositories,
/// micro recall at 8k / 32k / 128k): none 21.3 / 44.1 / 74.3, 0.2 23.4 / 45.3 / 73.1.
const SIZE: f32 = 0.2;
const SMALL_TOKENS: f32 = 200.0;
/// What a file that changed in the same commits as one of the best files gets of its score
/// (see [`CodeIndex::together`]). Measured on the recall bench (29 repositories, micro recall
/// at 32k, 46.7 without): 0.3 of the ten best's scores 48.0, 0.6 47.2, 1.0 of the five best's
/// 46.9, 0.3 of the forty best's 47.3; the share of the seed's commits alone (a changelog
/// shares most of any file's) instead of those of either, 0.3 of the forty best's: 44.5.
const TOGETHER: f32 = 0.3;
/// Files whose score spreads to the files that changed with them (the best ones).
const TOGETHER_SEEDS: usize = 10;
/// Files whose score spreads along the graph (the best ones).
const SEEDS: usize = 40;
/// A name defined in more files than this (`new`, `get`, `main`) says little about which one
/// is meant: its references are not followed.
const MAX_DEFINERS: usize = 8;
/// Words named in a lexical why.
const WHY_WORDS: usize = 3;

/// What the person and the window say about a turn, besides the index.
#[derive(Debug, Clone, Copy, Default)]
pub struct Signals<'a> {
    pub prompt: &'a str,
    /// `@`-mentioned files, in order.
    pub mentioned: &'a [String],
    /// Files the prompt names without `@`.
    pub named: &'a [String],
    /// Files open in the editor (the active tab first).
    pub open: &'a [String],
    /// The file holding the editor's selection, and the selected text.
    pub selected: Option<&'a str>,
    pub selection: &'a str,
    /// Files the last commits changed.
    pub recent: &'a [String],
}

/// A file ranked for a prompt.
#[derive(Debug, Clone, PartialEq)]
pub struct Ranked {
    pub path: String,
    pub score: f32,
    /// Why, in a few words: the strongest reasons first.
    pub why: String,
}

/// One reason a file scored, and what it is worth.
#[derive(Debug, Clone)]
struct Reason {
    worth: f32,
    text: String,
}

#[derive(Debug, Default)]
struct Scored {
    score: f32,
    reasons: Vec<Reason>,
    /// The person named it (`@` or in the prompt): its size does not move it.
    named: bool,
}

impl Scored {
    fn add(&mut self, worth: f32, text: impl Into<String>) {
        self.score += worth;
        self.reasons.push(Reason {
            worth,
            text: text.into(),
        });
    }
}

impl CodeIndex {
    /// The `limit` files most worth sending for `signals`, best first; files nothing points
    /// to are left out. Mentioned files lead, in their order. Reads the prompt's words'
    /// postings, the names the best files use and the paths of those returned, nothing else.
    pub fn rank(&self, signals: &Signals<'_>, limit: usize) -> Result<Vec<Ranked>> {
        let mut scored: HashMap<u32, Scored> = HashMap::new();
        let mut paths: HashMap<u32, String> = HashMap::new();
        let mut signal = |path: &str, worth: f32, why: &str, named: bool| -> Result<()> {
            if let Some(id) = self.id_of(path)? {
                paths.insert(id, path.to_string());
                let scored = scored.entry(id).or_default();
                scored.add(worth, why);
                scored.named |= named;
            }
            Ok(())
        };
        for (i, path) in signals.mentioned.iter().enumerate() {
            signal(path, MENTIONED - i as f32 * 0.01, "mentioned", true)?;
        }
        for path in signals.named {
            signal(path, NAMED, "named in the prompt", true)?;
        }
        if let Some(path) = signals.selected {
            signal(path, SELECTED, SELECTED_WHY, false)?;
        }
        for (i, path) in signals.open.iter().enumerate() {
            signal(path, OPEN / (1.0 + i as f32 * 0.2), OPEN_WHY, false)?;
        }
        for path in signals.recent {
            signal(path, RECENT, "edited in the last commits", false)?;
        }
        for (path, changes) in self.often_changed()? {
            let share = changes as f32 / super::history::OFTEN_COMMITS as f32;
            let why = format!(
                "changed by {changes} of the last {} commits",
                super::history::OFTEN_COMMITS
            );
            signal(&path, OFTEN * share, &why, false)?;
        }
        let prompt = terms::words(signals.prompt);
        // Why a file ranks names the words as the person wrote them, not their stems.
        let mut spelled = terms::spellings(signals.selection);
        spelled.extend(terms::spellings(signals.prompt));
        let shown = |words: &[String]| {
            let spelled = words.iter().map(|w| spelled.get(w).unwrap_or(w).as_str());
            spelled.collect::<Vec<&str>>().join(", ")
        };
        for (id, score, matched) in self.bm25(&prompt, 0.0)? {
            let text = format!("matches: {} (bm25 {:.1})", shown(&matched), score.0);
            scored.entry(id).or_default().add(score.1, text);
        }
        for (id, score, matched) in self.path_matches(&prompt)? {
            let text = format!("path has: {}", shown(&matched));
            scored.entry(id).or_default().add(PATH * score, text);
        }
        for (id, score, matched) in self.history_matches(&prompt)? {
            let text = format!("its past commits said: {}", shown(&matched));
            scored.entry(id).or_default().add(HISTORY * score, text);
        }
        let selection = selection_words(signals.selection, &prompt);
        for (id, score, matched) in self.bm25(&selection, COMMON_IDF)? {
            let text = format!("selection uses: {} (bm25 {:.1})", shown(&matched), score.0);
            scored
                .entry(id)
                .or_default()
                .add(SELECTION_WORDS * score.1, text);
        }
        let together = self.together(&scored, &mut paths)?;
        for (id, (worth, text)) in self.graph(&scored, &mut paths)? {
            scored.entry(id).or_default().add(worth, text);
        }
        for (id, (worth, text)) in together {
            scored.entry(id).or_default().add(worth, text);
        }
        let mut best: Vec<(u32, Scored)> =
            scored.into_iter().filter(|(_, s)| s.score > 0.0).collect();
        best.sort_by(|a, b| b.1.score.total_cmp(&a.1.score).then(a.0.cmp(&b.0)));
        best.truncate(limit);
        let mut ranked = Vec::new();
        for (id, mut s) in best {
            let Some((path, bytes)) = self.path_and_len(id)? else {
                continue;
            };
            s.reasons.sort_by(|a, b| b.worth.total_cmp(&a.worth));
            let why: Vec<&str> = s.reasons.iter().map(|r| r.text.as_str()).collect();
            let place = match s.named {
                true => s.score,
                false => {
                    let tokens = (bytes as f32 / 4.0).max(SMALL_TOKENS);
                    s.score / (tokens / 1000.0).powf(SIZE)
                }
            };
            let ranked_file = Ranked {
                path,
                score: s.score,
                why: why.join("; "),
            };
            ranked.push((place, ranked_file));
        }
        ranked.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.path.cmp(&b.1.path)));
        Ok(ranked.into_iter().map(|(_, ranked)| ranked).collect())
    }

    /// BM25 of the query's words for every file that has one: (file, (raw, normalised to the
    /// best file's 1), the words that matched most). Words whose IDF is below `min_idf` are
    /// left out.
    fn bm25(&self, query: &[String], min_idf: f32) -> Result<Vec<(u32, Bm25Score, Vec<String>)>> {
        bm25(query, min_idf, self.totals()?, |word| self.postings(word))
    }

    /// The files the query's words met in the history rank (see [`super::history`]), as
    /// [`Self::bm25`] of the words past commits said about each: (file, relative to the best
    /// file's 1, the words that matched most). Only indexed files count.
    fn history_matches(&self, query: &[String]) -> Result<Vec<(u32, f32, Vec<String>)>> {
        let mut found = bm25(query, 0.0, self.history_totals()?, |word| {
            self.history_postings(word)
        })?;
        found.sort_by(|a, b| b.1.0.total_cmp(&a.1.0).then(a.0.cmp(&b.0)));
        found.truncate(HISTORY_MATCHES);
        let mut out = Vec::new();
        for (doc, score, words) in found {
            let Some(path) = self.history_path(doc)? else {
                continue;
            };
            if let Some(id) = self.id_of(&path)? {
                out.push((id, score.0, words));
            }
        }
        let best = (out.iter().map(|o| o.1))
            .fold(0.0, f32::max)
            .max(f32::EPSILON);
        Ok(out
            .into_iter()
            .map(|(id, raw, w)| (id, raw / best, w))
            .collect())
    }

    /// The files whose path has some of the query's words: (file, the IDF (over paths) of
    /// the words it has, relative to the best file's, the words). A word in half the paths
    /// or more (`src`) says nothing of where to look and counts for nothing.
    fn path_matches(&self, query: &[String]) -> Result<Vec<(u32, f32, Vec<String>)>> {
        let n = self.totals()?.0 as f32;
        let mut found: HashMap<u32, (f32, Vec<String>)> = HashMap::new();
        for word in query {
            let files = self.files_with_path_word(word)?;
            let df = files.len() as f32;
            let idf = inverse_frequency(n, df);
            if idf <= COMMON_IDF {
                continue;
            }
            for file in files {
                let entry = found.entry(file).or_default();
                entry.0 += idf;
                if entry.1.len() < WHY_WORDS {
                    entry.1.push(word.clone());
                }
            }
        }
        let best = (found.values().map(|f| f.0))
            .fold(0.0, f32::max)
            .max(f32::EPSILON);
        Ok((found.into_iter())
            .filter(|(_, (idf, _))| *idf > 0.0)
            .map(|(id, (idf, words))| (id, idf / best, words))
            .collect())
    }

    /// The files that changed with the best files so far (see [`super::history`]): each of
    /// the [`TOGETHER_SEEDS`] best gives [`TOGETHER`] of its score times how much the two
    /// files change together: the commits that changed both, of those that changed either
    /// (a changelog every commit touches shares little with any one file). A pair that
    /// changed together once is chance. Each receiving file keeps its largest gift as its
    /// why. `paths` gains the seeds' paths.
    fn together(
        &self,
        scored: &HashMap<u32, Scored>,
        paths: &mut HashMap<u32, String>,
    ) -> Result<HashMap<u32, (f32, String)>> {
        let mut out: HashMap<u32, (f32, String, f32)> = HashMap::new();
        for (_, score, seed_path) in self.seeds(scored, TOGETHER_SEEDS, paths)? {
            for (partner, both, mine, theirs) in self.partners_of(&seed_path)? {
                if both < 2 {
                    continue;
                }
                let Some(target) = self.id_of(&partner)? else {
                    continue;
                };
                let either = mine + theirs - both;
                let gift = TOGETHER * score * both as f32 / (either as f32 + 1.0);
                let entry = out.entry(target).or_insert((0.0, String::new(), 0.0));
                entry.0 += gift;
                if gift > entry.2 {
                    entry.2 = gift;
                    entry.1 = format!(
                        "changed with {seed_path} in {both} commits (of {either} changing either)"
                    );
                }
            }
        }
        Ok(out
            .into_iter()
            .map(|(id, (w, why, _))| (id, (w, why)))
            .collect())
    }

    /// The `n` best files so far, best first: (file, score, path). `paths` gains their paths.
    fn seeds(
        &self,
        scored: &HashMap<u32, Scored>,
        n: usize,
        paths: &mut HashMap<u32, String>,
    ) -> Result<Vec<(u32, f32, String)>> {
        let mut seeds: Vec<(u32, f32)> = scored.iter().map(|(id, s)| (*id, s.score)).collect();
        seeds.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
        seeds.truncate(n);
        let mut out = Vec::with_capacity(seeds.len());
        for (seed, score) in seeds {
            let path = match paths.get(&seed) {
                Some(path) => path.clone(),
                None => match self.path_of(seed)? {
                    Some(path) => {
                        paths.insert(seed, path.clone());
                        path
                    }
                    None => continue,
                },
            };
            out.push((seed, score, path));
        }
        Ok(out)
    }

    /// One step of personalised PageRank: each of the best files so far gives `GRAPH` of its
    /// score to the files defining the names it uses, in proportion to how telling each name
    /// is (a name few files use says more than one every file uses) and split between the
    /// files defining it. Each receiving file keeps its largest gift as its why. `paths`
    /// gains the seeds' paths.
    fn graph(
        &self,
        scored: &HashMap<u32, Scored>,
        paths: &mut HashMap<u32, String>,
    ) -> Result<HashMap<u32, (f32, String)>> {
        let n = self.totals()?.0 as f32;
        let mut out: HashMap<u32, (f32, String, f32)> = HashMap::new();
        // Names asked once, whichever seeds use them: (definers, how telling).
        let mut names: HashMap<String, Option<(Vec<u32>, f32)>> = HashMap::new();
        for (seed, score, seed_path) in self.seeds(scored, SEEDS, paths)? {
            // (name, how telling it is, the files defining it), the seed itself left out.
            let mut edges: Vec<(String, f32, Vec<u32>)> = Vec::new();
            for name in self.refs_of(seed)? {
                if !names.contains_key(&name) {
                    let found = self.name(&name)?.and_then(|(definers, users)| {
                        let telling = (n / users.len().max(1) as f32).ln().max(0.0);
                        let useful = definers.len() <= MAX_DEFINERS && telling > 0.0;
                        useful.then_some((definers, telling))
                    });
                    names.insert(name.clone(), found);
                }
                if let Some(Some((definers, telling))) = names.get(&name) {
                    let elsewhere: Vec<u32> =
                        definers.iter().copied().filter(|f| *f != seed).collect();
                    if !elsewhere.is_empty() {
                        edges.push((name, *telling, definers.clone()));
                    }
                }
            }
            let total: f32 = edges.iter().map(|e| e.1).sum();
            if total <= 0.0 {
                continue;
            }
            for (name, telling, files) in edges {
                let gift = GRAPH * score * telling / total / files.len() as f32;
                for target in files.into_iter().filter(|f| *f != seed) {
                    let entry = out.entry(target).or_insert((0.0, String::new(), 0.0));
                    entry.0 += gift;
                    if gift > entry.2 {
                        entry.2 = gift;
                        entry.1 = format!("defines `{name}` used by {seed_path}");
                    }
                }
            }
        }
        Ok(out
            .into_iter()
            .map(|(id, (w, why, _))| (id, (w, why)))
            .collect())
    }
}

/// BM25 of the query's words over the documents `postings` gives, `n` of them of
/// `total_length` words together: (document, (raw, normalised to the best document's 1), the
/// words that matched most). Words whose IDF is below `min_idf` are left out.
fn bm25(
    query: &[String],
    min_idf: f32,
    (n, total_length): (u32, u64),
    postings: impl Fn(&str) -> Result<Vec<super::tables::Posting>>,
) -> Result<Vec<(u32, Bm25Score, Vec<String>)>> {
    if query.is_empty() || n == 0 {
        return Ok(Vec::new());
    }
    let n = n as f32;
    let average = (total_length as f32 / n).max(1.0);
    // Each file's count of each query word, and its length.
    let mut hits: HashMap<u32, (u32, Found)> = HashMap::new();
    let mut idf = Vec::with_capacity(query.len());
    for (q, word) in query.iter().enumerate() {
        let postings = postings(word)?;
        let df = postings.len() as f32;
        idf.push(inverse_frequency(n, df));
        if idf[q] < min_idf {
            continue;
        }
        for p in postings {
            let hit = hits.entry(p.file).or_insert_with(|| (p.length, Vec::new()));
            hit.1.push((q, p.count));
        }
    }
    let mut out: Vec<(u32, Bm25Score, Vec<String>)> = hits
        .into_iter()
        .map(|(id, (length, found))| {
            let norm = K1 * (1.0 - B + B * length as f32 / average);
            let mut parts: Vec<(f32, usize)> = (found.iter())
                .map(|&(q, tf)| {
                    let tf = f32::from(tf);
                    (idf[q] * tf * (K1 + 1.0) / (tf + norm), q)
                })
                .collect();
            let total = parts.iter().map(|p| p.0).sum();
            parts.sort_by(|a, b| b.0.total_cmp(&a.0));
            let words = (parts.iter().take(WHY_WORDS))
                .map(|&(_, q)| query[q].clone())
                .collect();
            (id, (total, 0.0), words)
        })
        .collect();
    let best = out
        .iter()
        .map(|o| o.1.0)
        .fold(0.0, f32::max)
        .max(f32::EPSILON);
    for o in &mut out {
        o.1.1 = o.1.0 / best;
    }
    Ok(out)
}

/// BM25's IDF of a word found in `df` of `n` files: ln 2 for half of them, near 0 for all.
fn inverse_frequency(n: f32, df: f32) -> f32 {
    ((n - df + 0.5) / (df + 0.5) + 1.0).ln()
}

/// The selected text's words that the prompt does not already ask, each once, in order, at
/// most [`SELECTION_TERMS`] (one pass, a set of those seen).
fn selection_words(selection: &str, prompt: &[String]) -> Vec<String> {
    let mut seen: HashSet<String> = prompt.iter().cloned().collect();
    let mut out = Vec::new();
    terms::for_each_word(selection, |word| {
        if out.len() < SELECTION_TERMS && !seen.contains(word) {
            seen.insert(word.to_string());
            out.push(word.to_string());
        }
    });
    out
}

/// Which query words (by position) a file has, and its count of each.
type Found = Vec<(usize, u16)>;

/// A BM25 score, raw and relative to the best file's.
type Bm25Score = (f32, f32);

#[cfg(test)]
mod tests;
