//! Finding a SEARCH text in the file: the four tiers ([`MatchTier`]), exact text first and
//! then line by line with ever looser keys; the first tier with any match decides.

use std::borrow::Cow;

use super::MatchTier;

/// A located match: the byte range to replace in the `\n`-normalised text.
pub(super) struct Found {
    pub(super) tier: MatchTier,
    pub(super) start: usize,
    pub(super) end: usize,
    pub(super) line: usize,
    /// Whether the range is whole lines; only then does an empty REPLACE delete the lines.
    pub(super) whole_lines: bool,
    /// (SEARCH indentation, file indentation) for the tiers that re-indent REPLACE.
    pub(super) indent: Option<(String, String)>,
}

pub(super) enum Located {
    Nowhere,
    One(Found),
    /// 1-based first lines of every match in the deciding tier.
    Many(Vec<usize>),
}

/// Runs the tiers in order; the first with any match decides.
/// `whole_lines_only` rejects mid-line exact matches.
pub(super) fn locate(text: &str, search: &str, whole_lines_only: bool) -> Located {
    match exact_matches(text, search, whole_lines_only).as_slice() {
        [] => {}
        &[(start, whole_lines)] => {
            let line = line_numbers(text, &[start]).first().copied().unwrap_or(1);
            let end = start + search.len();
            return Located::One(Found {
                tier: MatchTier::Exact,
                start,
                end,
                line,
                whole_lines,
                indent: None,
            });
        }
        many => {
            return Located::Many(line_numbers(
                text,
                &many.iter().map(|m| m.0).collect::<Vec<_>>(),
            ));
        }
    }
    let index = LineIndex::new(text);
    let wanted: Vec<&str> = search.split('\n').collect();
    let tiers = [
        MatchTier::TrailingWhitespace,
        MatchTier::Indentation,
        MatchTier::Unicode,
    ];
    for tier in tiers {
        let (anchor, starts) = line_matches(&index.lines, &wanted, tier_key(tier));
        match starts.as_slice() {
            [] => {}
            &[i] => {
                let last = i + wanted.len() - 1;
                let indent = (tier != MatchTier::TrailingWhitespace).then(|| {
                    (
                        leading_ws(wanted[anchor]).to_owned(),
                        leading_ws(index.lines[i + anchor]).to_owned(),
                    )
                });
                return Located::One(Found {
                    tier,
                    start: index.starts[i],
                    end: index.starts[last] + index.lines[last].len(),
                    line: i + 1,
                    whole_lines: true,
                    indent,
                });
            }
            many => return Located::Many(many.iter().map(|i| i + 1).collect()),
        }
    }
    Located::Nowhere
}

/// Stops pathological inputs (a run of `a`s searched in a run of `a`s) from going quadratic.
const MAX_EXACT_MATCHES: usize = 1000;

/// Every occurrence (overlapping ones too, as they are distinct places) with whether it
/// covers whole lines. Whole-line occurrences win, so SEARCH copied as whole lines never
/// loses to the same text appearing mid-line elsewhere.
fn exact_matches(text: &str, search: &str, whole_lines_only: bool) -> Vec<(usize, bool)> {
    // A SEARCH that starts or ends with a line break is line-shaped: mid-line occurrences of
    // it would eat or add a newline, so only whole-line ones count.
    let line_shaped = whole_lines_only || search.starts_with('\n') || search.ends_with('\n');
    let bytes = text.as_bytes();
    let mut found = Vec::new();
    let mut from = 0;
    while found.len() < MAX_EXACT_MATCHES {
        let Some(offset) = text.get(from..).and_then(|t| t.find(search)) else {
            break;
        };
        let start = from + offset;
        let end = start + search.len();
        let at_line_start = start == 0 || bytes.get(start - 1) == Some(&b'\n');
        // Ending at EOF right after a '\n' would need a phantom empty last line.
        let at_line_end = bytes
            .get(end)
            .map_or(!search.ends_with('\n'), |&b| b == b'\n');
        let whole = at_line_start && at_line_end;
        if whole || !line_shaped {
            found.push((start, whole));
        }
        from = start + text[start..].chars().next().map_or(1, char::len_utf8);
    }
    if found.iter().any(|m| m.1) {
        found.retain(|m| m.1);
    }
    found
}

/// 1-based line numbers of sorted byte offsets, counted in one pass.
fn line_numbers(text: &str, offsets: &[usize]) -> Vec<usize> {
    let (mut line, mut pos) = (1, 0);
    offsets
        .iter()
        .map(|&o| {
            line += text
                .as_bytes()
                .get(pos..o)
                .map_or(0, |b| b.iter().filter(|&&c| c == b'\n').count());
            pos = o.max(pos);
            line
        })
        .collect()
}

/// The file's lines (a final `\n` ends the last line rather than starting an empty one).
pub(super) struct LineIndex<'a> {
    pub(super) lines: Vec<&'a str>,
    pub(super) starts: Vec<usize>,
}

impl<'a> LineIndex<'a> {
    pub(super) fn new(text: &'a str) -> Self {
        let (mut lines, mut starts, mut pos) = (Vec::new(), Vec::new(), 0);
        if !text.is_empty() {
            for line in text.strip_suffix('\n').unwrap_or(text).split('\n') {
                lines.push(line);
                starts.push(pos);
                pos += line.len() + 1;
            }
        }
        LineIndex { lines, starts }
    }
}

pub(super) type Key = for<'a> fn(&'a str) -> Cow<'a, str>;

/// What a tier compares of each line.
pub(super) fn tier_key(tier: MatchTier) -> Key {
    match tier {
        MatchTier::Exact => |s| Cow::Borrowed(s),
        MatchTier::TrailingWhitespace => |s| Cow::Borrowed(s.trim_end()),
        MatchTier::Indentation => |s| Cow::Borrowed(s.trim()),
        MatchTier::Unicode => |s| match fold_unicode(s) {
            Cow::Borrowed(b) => Cow::Borrowed(b.trim()),
            Cow::Owned(o) => Cow::Owned(o.trim().to_owned()),
        },
    }
}

/// Start indices of the windows of `file` whose keys equal those of `wanted`, plus the index
/// of the first non-blank wanted line. That line is compared first, which rejects almost
/// every window after one cheap comparison.
fn line_matches(file: &[&str], wanted: &[&str], key: Key) -> (usize, Vec<usize>) {
    let keys: Vec<Cow<str>> = wanted.iter().map(|l| key(l)).collect();
    let Some(anchor) = keys.iter().position(|k| !k.is_empty()) else {
        return (0, vec![]);
    };
    if wanted.len() > file.len() {
        return (anchor, vec![]);
    }
    let starts = (0..=file.len() - wanted.len())
        .filter(|&i| key(file[i + anchor]) == keys[anchor])
        .filter(|&i| keys.iter().enumerate().all(|(j, k)| key(file[i + j]) == *k))
        .collect();
    (anchor, starts)
}

/// Folds the typographic characters models like to "improve" code with.
fn fold_unicode(s: &str) -> Cow<'_, str> {
    if s.is_ascii() {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '\u{2018}'..='\u{201B}' => out.push('\''),
            '\u{201C}'..='\u{201F}' => out.push('"'),
            '\u{2010}'..='\u{2015}' | '\u{2212}' => out.push('-'),
            '\u{2026}' => out.push_str("..."),
            '\u{200B}'..='\u{200D}' | '\u{FEFF}' => {}
            c if c.is_whitespace() => out.push(' '),
            c => out.push(c),
        }
    }
    Cow::Owned(out)
}

pub(super) fn leading_ws(s: &str) -> &str {
    &s[..s.len() - s.trim_start().len()]
}
