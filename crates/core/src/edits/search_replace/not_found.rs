//! The message for a SEARCH found nowhere: the stretch of the file most like it (bigram
//! similarity from a few anchor lines), quoted so the model can copy the real lines.

use std::fmt::Write as _;

const EXCERPT_LINES: usize = 6;
const QUOTE_LINES: usize = 12;
const QUOTE_CHARS: usize = 200;
/// Best anchor lines kept for whole-window scoring, and window lines scored: together they
/// bound the nearest-lines search to one cheap pass over the file plus a little.
const ANCHORS: usize = 16;
const SCORED_LINES: usize = 40;
const SCORED_BYTES: usize = 256;
const MIN_SIMILARITY: f64 = 0.25;

fn clip(line: &str) -> String {
    match line.char_indices().nth(QUOTE_CHARS) {
        Some((i, _)) => format!("{}...", &line[..i]),
        None => line.to_owned(),
    }
}

pub(super) fn excerpt(lines: &[&str]) -> String {
    let mut out: Vec<String> = lines.iter().take(EXCERPT_LINES).map(|l| clip(l)).collect();
    if lines.len() > EXCERPT_LINES {
        out.push(format!("... ({} more lines)", lines.len() - EXCERPT_LINES));
    }
    out.join("\n")
}

/// Sorted byte bigrams of the (clipped) line: a cheap fingerprint for similarity.
fn bigrams(s: &str, out: &mut Vec<u16>) {
    out.clear();
    let bytes = &s.as_bytes()[..s.len().min(SCORED_BYTES)];
    out.extend(
        bytes
            .windows(2)
            .map(|w| (u16::from(w[0]) << 8) | u16::from(w[1])),
    );
    out.sort_unstable();
}

/// Dice coefficient over bigrams of trimmed lines: 1.0 equal, 0.0 nothing in common.
fn similarity(a: &str, a_grams: &[u16], b: &str, b_grams: &mut Vec<u16>) -> f64 {
    let b = b.trim();
    if a == b {
        return 1.0;
    }
    bigrams(b, b_grams);
    if a_grams.is_empty() || b_grams.is_empty() {
        return 0.0;
    }
    let (mut i, mut j, mut common) = (0, 0, 0);
    while let (Some(x), Some(y)) = (a_grams.get(i), b_grams.get(j)) {
        match x.cmp(y) {
            std::cmp::Ordering::Less => i += 1,
            std::cmp::Ordering::Greater => j += 1,
            std::cmp::Ordering::Equal => (i, j, common) = (i + 1, j + 1, common + 1),
        }
    }
    2.0 * common as f64 / (a_grams.len() + b_grams.len()) as f64
}

/// The stretch of `file` most like `wanted`: rank every line against the first non-blank
/// wanted line, then score the windows of the best few anchors line by line.
pub(super) fn nearest(file: &[&str], wanted: &[&str]) -> Option<(usize, Vec<String>)> {
    let anchor = wanted.iter().position(|l| !l.trim().is_empty())?;
    let (mut a_grams, mut b_grams) = (Vec::new(), Vec::new());
    let first = wanted[anchor].trim();
    bigrams(first, &mut a_grams);
    let mut best: Vec<(f64, usize)> = Vec::with_capacity(ANCHORS + 1);
    for (i, line) in file.iter().enumerate() {
        let score = similarity(first, &a_grams, line, &mut b_grams);
        if (score > 0.0 && best.len() < ANCHORS) || best.last().is_some_and(|b| score > b.0) {
            let at = best.partition_point(|b| b.0 >= score);
            best.insert(at, (score, i));
            best.truncate(ANCHORS);
        }
    }
    let scored = wanted.len().min(SCORED_LINES);
    let mut winner: Option<(f64, usize)> = None;
    for &(_, i) in &best {
        let start = i.saturating_sub(anchor);
        let mut total = 0.0;
        for (j, w) in wanted.iter().take(scored).enumerate() {
            let w = w.trim();
            bigrams(w, &mut a_grams);
            total += file
                .get(start + j)
                .map_or(0.0, |l| similarity(w, &a_grams, l, &mut b_grams));
        }
        let score = total / scored as f64;
        if winner.is_none_or(|(s, _)| score > s) {
            winner = Some((score, start));
        }
    }
    let (_, start) = winner.filter(|w| w.0 >= MIN_SIMILARITY)?;
    let end = (start + wanted.len().clamp(1, QUOTE_LINES)).min(file.len());
    Some((
        start + 1,
        file.get(start..end)?.iter().map(|l| clip(l)).collect(),
    ))
}

pub(super) fn not_found_message(
    block: &usize,
    total: &usize,
    search: &str,
    nearest: &Option<(usize, Vec<String>)>,
    line_numbers: &bool,
) -> String {
    let mut m = format!(
        "block {block} of {total}: the SEARCH text was not found in the file.\nSEARCH begins:\n"
    );
    for line in search.lines() {
        let _ = writeln!(m, "    {line}");
    }
    match nearest {
        Some((start, lines)) => {
            let last = start + lines.len().saturating_sub(1);
            let _ = writeln!(m, "The most similar lines in the file are {start}-{last}:");
            for (i, line) in lines.iter().enumerate() {
                let _ = writeln!(m, "{:>6} | {line}", start + i);
            }
        }
        None => m.push_str("No similar lines were found in the file.\n"),
    }
    if *line_numbers {
        m.push_str(
            "SEARCH's lines seem to start with line numbers: copy the lines without the \
             numbers a file view shows in front of them.\n",
        );
    }
    m.push_str(
        "SEARCH must match the file exactly, including whitespace; re-read the file and try again.",
    );
    m
}

pub(super) fn list_lines(lines: &[usize]) -> String {
    let mut shown: Vec<String> = lines.iter().take(10).map(usize::to_string).collect();
    if lines.len() > 10 {
        shown.push("...".to_owned());
    }
    shown.join(", ")
}
