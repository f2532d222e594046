//! The reference the issue sets: a plain BM25 ranking of the files Tandem considered, packed
//! whole in score order under the same token budget. Not tuned: k1 1.2, b 0.75, the
//! subject's words as the query, no stop words, no boosts.

use std::collections::{HashMap, HashSet};
use std::path::Path;

const K1: f64 = 1.2;
const B: f64 = 0.75;

/// One file as BM25 sees it: how often each word occurs, and how many words it has.
pub struct Doc {
    counts: HashMap<String, u32>,
    len: u32,
    /// `tandem_core::tokens::estimate` of its text: what sending it whole costs.
    pub tokens: usize,
}

impl Doc {
    /// The file at `root/path` as words of its text and of its path; `None` when it is not
    /// UTF-8 text (binary: Tandem would not send it either) or cannot be read.
    pub fn read(root: &Path, path: &str) -> Option<Doc> {
        let bytes = std::fs::read(root.join(path)).ok()?;
        if bytes.contains(&0) {
            return None;
        }
        let text = String::from_utf8(bytes).ok()?;
        let mut counts: HashMap<String, u32> = HashMap::new();
        let mut len = 0;
        for word in words(&text).chain(words(path)) {
            *counts.entry(word).or_default() += 1;
            len += 1;
        }
        Some(Doc {
            counts,
            len,
            tokens: tandem_core::tokens::estimate(&text),
        })
    }
}

/// The words of `text`: identifiers (runs of letters and digits) split at `_`, at camelCase
/// humps (`parseHTTPResponse` is parse, http, response) and between letters and digits,
/// lower-cased. A path's segments and extension come out as words the same way.
pub fn words(text: &str) -> impl Iterator<Item = String> + '_ {
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|run| !run.is_empty())
        .flat_map(split_identifier)
}

fn split_identifier(run: &str) -> Vec<String> {
    let chars: Vec<char> = run.chars().collect();
    let mut parts = Vec::new();
    let mut start = 0;
    for i in 1..chars.len() {
        let (prev, this) = (chars[i - 1], chars[i]);
        let next_lower = chars.get(i + 1).is_some_and(|c| c.is_lowercase());
        let boundary = (prev.is_lowercase() && this.is_uppercase())
            || (prev.is_uppercase() && this.is_uppercase() && next_lower)
            || (prev.is_numeric() != this.is_numeric());
        if boundary {
            parts.push(chars[start..i].iter().collect::<String>().to_lowercase());
            start = i;
        }
    }
    parts.push(chars[start..].iter().collect::<String>().to_lowercase());
    parts
}

/// `files` (paths into `docs`; those not there are left out) ranked for `query` by BM25 over
/// those files, best first, ties by path; then packed whole in that order, each file that
/// still fits `budget` tokens taken (as Tandem packs): the paths taken.
pub fn pack(
    query: &str,
    files: &[&str],
    docs: &HashMap<String, Option<Doc>>,
    budget: usize,
) -> HashSet<String> {
    let corpus: Vec<(&str, &Doc)> = (files.iter())
        .filter_map(|path| Some((*path, docs.get(*path)?.as_ref()?)))
        .collect();
    let n = corpus.len() as f64;
    let avg_len = corpus.iter().map(|(_, d)| f64::from(d.len)).sum::<f64>() / n.max(1.0);
    let terms: HashSet<String> = words(query).collect();
    // Lucene's idf, never negative: ln(1 + (N - df + 0.5) / (df + 0.5)).
    let idf: Vec<(&str, f64)> = (terms.iter())
        .map(|term| {
            let df = corpus
                .iter()
                .filter(|(_, d)| d.counts.contains_key(term))
                .count() as f64;
            (term.as_str(), (1.0 + (n - df + 0.5) / (df + 0.5)).ln())
        })
        .collect();
    let score = |doc: &Doc| -> f64 {
        let norm = K1 * (1.0 - B + B * f64::from(doc.len) / avg_len.max(1.0));
        (idf.iter())
            .map(|(term, idf)| {
                let tf = f64::from(doc.counts.get(*term).copied().unwrap_or(0));
                idf * tf * (K1 + 1.0) / (tf + norm)
            })
            .sum()
    };
    let mut ranked: Vec<(f64, &str, &Doc)> = (corpus.into_iter())
        .map(|(path, doc)| (score(doc), path, doc))
        .collect();
    ranked.sort_by(|a, b| b.0.total_cmp(&a.0).then_with(|| a.1.cmp(b.1)));
    let mut remaining = budget;
    let mut taken = HashSet::new();
    for (_, path, doc) in ranked {
        if doc.tokens <= remaining {
            remaining -= doc.tokens;
            taken.insert(path.to_string());
        }
    }
    taken
}
