//! Which files matter for a prompt, best first, each with why:
//! - lexical relevance: BM25 of the prompt's words (see [`super::terms`]) over each file's
//!   path, definition names and text;
//! - the person's signals: files mentioned or named in the prompt, open in the editor, edited
//!   in the last commits;
//! - the reference graph: one step of personalised PageRank from those files, so that a file
//!   defining what the relevant files use ranks next to them.

use std::collections::HashMap;

use super::{CodeIndex, Id, terms};

/// BM25's term-frequency saturation and length normalisation.
const K1: f32 = 1.2;
const B: f32 = 0.75;

/// What the person's signals are worth, against the best lexical match (1).
const MENTIONED: f32 = 10.0;
const NAMED: f32 = 8.0;
const OPEN: f32 = 0.8;
const RECENT: f32 = 0.3;
/// How much of a file's score flows to the files defining what it uses.
const GRAPH: f32 = 0.6;
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
    /// Files open in the editor (the selected one first).
    pub open: &'a [String],
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
    /// The files worth sending for `signals`, best first; files nothing points to are left
    /// out. Mentioned files lead, in their order.
    pub fn rank(&mut self, signals: &Signals<'_>) -> Vec<Ranked> {
        self.ensure_graph();
        let mut scored: HashMap<&str, Scored> = HashMap::new();
        for (i, path) in signals.mentioned.iter().enumerate() {
            let worth = MENTIONED - i as f32 * 0.01;
            scored.entry(path).or_default().add(worth, "mentioned");
        }
        for path in signals.named {
            scored
                .entry(path)
                .or_default()
                .add(NAMED, "named in the prompt");
        }
        for (i, path) in signals.open.iter().enumerate() {
            let worth = OPEN / (1.0 + i as f32 * 0.2);
            scored
                .entry(path)
                .or_default()
                .add(worth, "open in the editor");
        }
        for path in signals.recent {
            let entry = scored.entry(path).or_default();
            entry.add(RECENT, "edited in the last commits");
        }
        for (path, score, matched) in self.bm25(signals.prompt) {
            let text = format!("matches: {} (bm25 {:.1})", matched.join(", "), score.0);
            scored.entry(path).or_default().add(score.1, text);
        }
        let graph = self.graph(&scored);
        for (path, (worth, text)) in graph {
            scored.entry(path).or_default().add(worth, text);
        }
        let mut ranked: Vec<Ranked> = scored
            .into_iter()
            .filter(|(path, s)| s.score > 0.0 && self.files.contains_key(*path))
            .map(|(path, mut s)| {
                s.reasons.sort_by(|a, b| b.worth.total_cmp(&a.worth));
                let why: Vec<&str> = s.reasons.iter().map(|r| r.text.as_str()).collect();
                Ranked {
                    path: path.to_string(),
                    score: s.score,
                    why: why.join("; "),
                }
            })
            .collect();
        ranked.sort_by(|a, b| b.score.total_cmp(&a.score).then(a.path.cmp(&b.path)));
        ranked
    }

    /// BM25 of the prompt's words for every file that has one: (path, (raw, normalised to the
    /// best file's 1), the words that matched most).
    fn bm25(&self, prompt: &str) -> Vec<(&str, Bm25Score, Vec<String>)> {
        let query: Vec<Id> = (terms::words(prompt).iter())
            .filter_map(|w| self.interner.get(w))
            .collect();
        if query.is_empty() || self.files.is_empty() {
            return Vec::new();
        }
        let n = self.files.len() as f32;
        let average = (self.files.values().map(|f| f.length as f32).sum::<f32>() / n).max(1.0);
        // Each file's count of each query word, found by binary search in its sorted words.
        let mut hits: Vec<(&str, u32, Found)> = Vec::new();
        let mut df = vec![0u32; query.len()];
        for (path, file) in &self.files {
            let mut found = Vec::new();
            for (q, word) in query.iter().enumerate() {
                if let Ok(at) = file.words.binary_search(word) {
                    found.push((q, file.counts[at]));
                    df[q] += 1;
                }
            }
            if !found.is_empty() {
                hits.push((path, file.length, found));
            }
        }
        let idf: Vec<f32> = (df.iter())
            .map(|&d| ((n - d as f32 + 0.5) / (d as f32 + 0.5) + 1.0).ln())
            .collect();
        let mut out: Vec<(&str, Bm25Score, Vec<String>)> = hits
            .into_iter()
            .map(|(path, length, found)| {
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
                    .map(|&(_, q)| self.interner.name(query[q]).to_string())
                    .collect();
                (path, (total, 0.0), words)
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
        out
    }

    /// One step of personalised PageRank: each of the best files so far gives `GRAPH` of its
    /// score to the files defining the names it uses, in proportion to how telling each name
    /// is (a name few files use says more than one every file uses) and split between the
    /// files defining it. Each receiving file keeps its largest gift as its why.
    fn graph<'a>(&'a self, scored: &HashMap<&'a str, Scored>) -> HashMap<&'a str, (f32, String)> {
        let mut seeds: Vec<(&str, f32)> = scored.iter().map(|(p, s)| (*p, s.score)).collect();
        seeds.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(b.0)));
        seeds.truncate(SEEDS);
        let mut out: HashMap<&str, (f32, String, f32)> = HashMap::new();
        let Some(graph) = &self.graph else {
            return HashMap::new();
        };
        let n = self.files.len() as f32;
        for (seed, score) in seeds {
            let Some(file) = self.files.get(seed) else {
                continue;
            };
            // (name, how telling it is, the files defining it), the seed itself left out.
            let edges: Vec<(Id, f32, &[Box<str>])> = (file.refs.iter())
                .filter_map(|r| {
                    let files = graph.definers.get(r)?;
                    let users = graph.users.get(r).copied().unwrap_or(1) as f32;
                    let telling = (n / users).ln().max(0.0);
                    let elsewhere = files.iter().any(|f| **f != *seed);
                    (files.len() <= MAX_DEFINERS && elsewhere && telling > 0.0).then_some((
                        *r,
                        telling,
                        files.as_slice(),
                    ))
                })
                .collect();
            let total: f32 = edges.iter().map(|e| e.1).sum();
            if total <= 0.0 {
                continue;
            }
            for (name, telling, files) in edges {
                let gift = GRAPH * score * telling / total / files.len() as f32;
                for target in files.iter().filter(|f| ***f != *seed) {
                    let entry = out.entry(target).or_insert((0.0, String::new(), 0.0));
                    entry.0 += gift;
                    if gift > entry.2 {
                        entry.2 = gift;
                        entry.1 = format!("defines `{}` used by {seed}", self.interner.name(name));
                    }
                }
            }
        }
        out.into_iter()
            .map(|(p, (w, why, _))| (p, (w, why)))
            .collect()
    }
}

/// Which query words (by position) a file has, and its count of each.
type Found = Vec<(usize, u16)>;

/// A BM25 score, raw and relative to the best file's.
type Bm25Score = (f32, f32);

#[cfg(test)]
#[path = "rank_tests.rs"]
mod tests;
