//! SEARCH/REPLACE edits: parse the body of a `<tandem-search-replace path="...">` tag and
//! apply its blocks to a file's text.
//!
//! A model proposes an edit as one or more blocks:
//!
//! ```text
//! <<<<<<< SEARCH
//! old lines
//! =======
//! new lines
//! >>>>>>> REPLACE
//! ```
//!
//! Models copy code imperfectly, so matching falls back through four tiers ([`MatchTier`]):
//! exact text, then lines ignoring trailing whitespace, then lines ignoring indentation (the
//! replacement is re-indented to fit), then lines with typographic Unicode folded to ASCII.
//! The first tier that finds anything decides, and more than one match there is an error:
//! we never guess which copy the model meant. A SEARCH found nowhere whose lines carry the
//! line numbers a file view showed is tried once more without them, when that is safe
//! ([`super::line_numbers`]). Errors are worded to be sent back to the model.
//!
//! Everything here is pure (no I/O) and must not panic on any input.

use std::borrow::Cow;
use std::fmt::Write as _;

use super::line_numbers::{self, Numbering, Unnumbered};

/// One SEARCH/REPLACE pair: the text between the markers, lines joined with `'\n'`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Block {
    pub search: String,
    pub replace: String,
}

/// How forgiving the match that located a SEARCH text had to be.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MatchTier {
    /// The SEARCH text occurs verbatim (whole lines preferred over a mid-line substring).
    Exact,
    /// Whole lines equal once trailing whitespace is trimmed.
    TrailingWhitespace,
    /// Whole lines equal once both ends are trimmed; REPLACE is re-indented.
    Indentation,
    /// As `Indentation`, with smart quotes, dashes, odd spaces and zero-width chars folded.
    Unicode,
}

/// What happened to one block.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BlockOutcome {
    /// Replaced the match that starts on 1-based `line`. `numbers` are the first and last
    /// line numbers SEARCH carried in front of its lines (as a file view shows them), taken
    /// off to find it (see [`super::line_numbers`]).
    Applied {
        tier: MatchTier,
        line: usize,
        numbers: Option<(usize, usize)>,
    },
    /// SEARCH is absent but REPLACE is already there, so the edit was made before.
    AlreadyApplied,
}

/// What is wrong with a block's markers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum ParseProblem {
    #[error("the `<<<<<<< SEARCH` marker has no `=======` divider after it")]
    MissingDivider,
    #[error("the `=======` divider has no `>>>>>>> REPLACE` marker after it")]
    MissingReplace,
}

/// Everything that can go wrong; each message names the block and says what to do.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SearchReplaceError {
    /// `line` is the 1-based body line of the marker that was left open.
    #[error(
        "block {block}, line {line}: {problem}; each block is `<<<<<<< SEARCH`, the old lines, \
         `=======`, the new lines, `>>>>>>> REPLACE`"
    )]
    Parse {
        block: usize,
        line: usize,
        problem: ParseProblem,
    },
    #[error(
        "no SEARCH/REPLACE blocks found; write each edit as `<<<<<<< SEARCH`, the exact old \
         lines, `=======`, the new lines, `>>>>>>> REPLACE`"
    )]
    NoBlocks,
    #[error(
        "block {block} of {total}: the SEARCH section is empty; it must quote existing lines \
         of the file (to insert text, quote the neighbouring lines and repeat them in REPLACE)"
    )]
    EmptySearch { block: usize, total: usize },
    /// `search` holds the first lines of SEARCH; `nearest` the 1-based first line and text
    /// of the most similar stretch of the file, if anything was similar.
    /// `line_numbers`: SEARCH's lines seem to start with line numbers that could not safely
    /// be taken off (the message says to leave them out).
    #[error("{}", not_found_message(.block, .total, .search, .nearest, .line_numbers))]
    NotFound {
        block: usize,
        total: usize,
        search: String,
        nearest: Option<(usize, Vec<String>)>,
        line_numbers: bool,
    },
    /// `lines` are the 1-based first lines of the matches.
    #[error(
        "block {block} of {total}: SEARCH matches {count} places in the file (lines {}); \
         add surrounding lines to SEARCH so it matches exactly one place",
        list_lines(.lines)
    )]
    Ambiguous {
        block: usize,
        total: usize,
        count: usize,
        lines: Vec<usize>,
    },
}

use SearchReplaceError as Error;

/// Parses a tag body into blocks. Text outside blocks (chat, code fences) is ignored.
pub fn parse_blocks(body: &str) -> Result<Vec<Block>, SearchReplaceError> {
    // The open block: the line of the marker that opened the current section, the SEARCH
    // lines, and the REPLACE lines once the divider has been seen.
    type Open<'a> = (usize, Vec<&'a str>, Option<Vec<&'a str>>);
    let unclosed = |blocks: &Vec<Block>, (line, _, replace): &Open| Error::Parse {
        block: blocks.len() + 1,
        line: *line,
        problem: match replace {
            None => ParseProblem::MissingDivider,
            Some(_) => ParseProblem::MissingReplace,
        },
    };
    let mut blocks = Vec::new();
    let mut open: Option<Open> = None;
    for (idx, raw) in body.split('\n').enumerate() {
        let line = raw.strip_suffix('\r').unwrap_or(raw);
        match (&mut open, marker(line)) {
            (None, Some(Marker::Search)) => open = Some((idx + 1, vec![], None)),
            (None, _) => {}
            (Some((at, _, replace @ None)), Some(Marker::Divider)) => {
                (*at, *replace) = (idx + 1, Some(vec![]));
            }
            (Some((_, search, Some(replace))), Some(Marker::Replace)) => {
                let (search, replace) = (search.join("\n"), replace.join("\n"));
                blocks.push(Block { search, replace });
                open = None;
            }
            // A second divider inside REPLACE is content (e.g. a Markdown heading underline).
            (Some((_, lines, None)), None)
            | (Some((_, _, Some(lines))), None | Some(Marker::Divider)) => lines.push(line),
            (Some(unfinished), Some(_)) => return Err(unclosed(&blocks, unfinished)),
        }
    }
    match &open {
        Some(unfinished) => Err(unclosed(&blocks, unfinished)),
        None if blocks.is_empty() => Err(Error::NoBlocks),
        None => Ok(blocks),
    }
}

enum Marker {
    Search,
    Divider,
    Replace,
}

fn marker(line: &str) -> Option<Marker> {
    // A run of 5 to 9 `c`, returning what follows it.
    fn run(t: &str, c: char) -> Option<&str> {
        let rest = t.trim_start_matches(c);
        (5..=9).contains(&(t.len() - rest.len())).then_some(rest)
    }
    let t = line.trim();
    if run(t, '<').is_some_and(|r| r.trim_start_matches(' ') == "SEARCH") {
        Some(Marker::Search)
    } else if run(t, '=') == Some("") {
        Some(Marker::Divider)
    } else if run(t, '>').is_some_and(|r| r.trim_start_matches(' ') == "REPLACE") {
        Some(Marker::Replace)
    } else {
        None
    }
}

/// Applies `blocks` in order, each to the result of the previous ones. On any error nothing
/// is returned, so the caller can never write a half-applied edit.
///
/// The file's line-ending style (CRLF when most breaks are CRLF) and its final newline are
/// kept. A SEARCH padded with blank lines that the file lacks is retried without them. An
/// empty REPLACE deletes the matched lines. A block whose SEARCH is absent but whose REPLACE
/// is present as whole lines is [`BlockOutcome::AlreadyApplied`]. A SEARCH found nowhere as
/// written is tried without the line numbers a model copied in front of its lines, when those
/// are the lines' real numbers in `original` or in the text as the edit was applied so far.
pub fn apply_blocks(
    original: &str,
    blocks: &[Block],
) -> Result<(String, Vec<BlockOutcome>), SearchReplaceError> {
    apply_blocks_as_read(original, blocks, None)
}

/// [`apply_blocks`], where line numbers may also be those of `read`: the file as the model
/// was shown it, when earlier edits (not in view) changed it since.
pub fn apply_blocks_as_read(
    original: &str,
    blocks: &[Block],
    read: Option<&str>,
) -> Result<(String, Vec<BlockOutcome>), SearchReplaceError> {
    if blocks.is_empty() {
        return Err(Error::NoBlocks);
    }
    let newlines = original.bytes().filter(|&b| b == b'\n').count();
    let crlf = original.matches("\r\n").count() * 2 > newlines;
    let mut text = original.replace("\r\n", "\n");
    let read: Vec<String> = std::iter::once(text.clone())
        .chain(read.map(|r| r.replace("\r\n", "\n")))
        .collect();
    let read: Vec<&str> = read.iter().map(String::as_str).collect();
    let total = blocks.len();
    let mut outcomes = Vec::with_capacity(total);
    for (i, block) in blocks.iter().enumerate() {
        outcomes.push(apply_one(&mut text, block, (i + 1, total), &read)?);
    }
    if crlf {
        text = text.replace('\n', "\r\n");
    }
    Ok((text, outcomes))
}

/// Applies block `n` of `total`; `read` are earlier versions of the text whose line numbers
/// SEARCH may carry.
fn apply_one(
    text: &mut String,
    block: &Block,
    (n, total): (usize, usize),
    read: &[&str],
) -> Result<BlockOutcome, Error> {
    let search = block.search.replace("\r\n", "\n");
    let replace = block.replace.replace("\r\n", "\n");
    if search.trim().is_empty() {
        return Err(Error::EmptySearch { block: n, total });
    }
    // Models often pad SEARCH with a blank line. Try it as written first (the blank lines
    // must then exist); failing that, without them, dropping as many from REPLACE.
    let (short_search, lead, trail) = trim_blank_lines(&search, usize::MAX, usize::MAX);
    let (short_replace, _, _) = trim_blank_lines(&replace, lead, trail);
    let mut attempts = vec![(search.as_str(), replace.as_str())];
    if lead + trail > 0 {
        attempts.push((short_search, short_replace));
    }
    for (s, r) in attempts {
        match locate(text, s, false) {
            Located::Nowhere => {}
            Located::Many(lines) => {
                return Err(Error::Ambiguous {
                    block: n,
                    total,
                    count: lines.len(),
                    lines,
                });
            }
            Located::One(found) => {
                let replacement = match &found.indent {
                    Some((si, fi)) if si != fi => Cow::Owned(reindent(r, si, fi)),
                    _ => Cow::Borrowed(r),
                };
                splice(text, &found, &replacement);
                return Ok(BlockOutcome::Applied {
                    tier: found.tier,
                    line: found.line,
                    numbers: None,
                });
            }
        }
    }
    let numbering = line_numbers::unnumber(short_search, &replace, text);
    if let Numbering::Stripped(unnumbered) = &numbering
        && let Some(outcome) = apply_unnumbered(text, unnumbered, read)
    {
        return Ok(outcome);
    }
    // REPLACE must be found as whole lines: a fragment such as `x` occurs mid-line almost
    // anywhere, and a false "already applied" would hide a failed edit from the model.
    if !replace.trim().is_empty() {
        let short = trim_blank_lines(&replace, usize::MAX, usize::MAX).0;
        if [replace.as_str(), short]
            .iter()
            .any(|r| !matches!(locate(text, r, true), Located::Nowhere))
        {
            return Ok(BlockOutcome::AlreadyApplied);
        }
    }
    let index = LineIndex::new(text);
    let wanted: Vec<&str> = short_search.split('\n').collect();
    Err(Error::NotFound {
        block: n,
        total,
        search: excerpt(&wanted),
        nearest: nearest(&index.lines, &wanted),
        line_numbers: match numbering {
            Numbering::None => false,
            Numbering::Unsafe => true,
            Numbering::Stripped(unnumbered) => unnumbered.view_like,
        },
    })
}

/// Applies a block whose line numbers were taken off, only where the numbers say it is: its
/// single match must be whole lines starting on line `first` of the text, or of a version of
/// it in `read` at those lines (the numbers the model saw before earlier edits moved them).
/// Blank lines at either end of SEARCH are tried without them too, as for any block.
fn apply_unnumbered(text: &mut String, block: &Unnumbered, read: &[&str]) -> Option<BlockOutcome> {
    let (short_search, lead, trail) = trim_blank_lines(&block.search, usize::MAX, usize::MAX);
    let (short_replace, _, _) = trim_blank_lines(&block.replace, lead, trail);
    let mut attempts = vec![(block.search.as_str(), block.replace.as_str(), block.first)];
    if lead + trail > 0 {
        attempts.push((short_search, short_replace, block.first + lead));
    }
    for (search, replace, first) in attempts {
        let Located::One(found) = locate(text, search, true) else {
            continue;
        };
        let wanted: Vec<&str> = search.split('\n').collect();
        let numbered_here = found.line == first
            || read
                .iter()
                .any(|r| lines_at(&LineIndex::new(r).lines, first, &wanted, found.tier));
        if !found.whole_lines || !numbered_here {
            continue;
        }
        let replacement = match &found.indent {
            Some((si, fi)) if si != fi => Cow::Owned(reindent(replace, si, fi)),
            _ => Cow::Borrowed(replace),
        };
        splice(text, &found, &replacement);
        return Some(BlockOutcome::Applied {
            tier: found.tier,
            line: found.line,
            numbers: Some((block.first, block.last)),
        });
    }
    None
}

/// Whether `wanted` are the lines of `file` from 1-based `line` on, compared as `tier` does.
fn lines_at(file: &[&str], line: usize, wanted: &[&str], tier: MatchTier) -> bool {
    let key = tier_key(tier);
    line.checked_sub(1)
        .and_then(|start| file.get(start..start + wanted.len()))
        .is_some_and(|lines| lines.iter().zip(wanted).all(|(a, b)| key(a) == key(b)))
}

/// Removes up to `max_lead` leading and `max_trail` trailing blank lines, reporting how many.
fn trim_blank_lines(s: &str, max_lead: usize, max_trail: usize) -> (&str, usize, usize) {
    let lines: Vec<&str> = s.split('\n').collect();
    let blank = |l: &&&str| l.trim().is_empty();
    let lead = lines.iter().take_while(blank).count().min(max_lead);
    let trail = lines[lead..]
        .iter()
        .rev()
        .take_while(blank)
        .count()
        .min(max_trail);
    let start: usize = lines[..lead].iter().map(|l| l.len() + 1).sum();
    let cut: usize = lines[lines.len() - trail..]
        .iter()
        .map(|l| l.len() + 1)
        .sum();
    let end = s.len().saturating_sub(cut).max(start);
    (s.get(start..end).unwrap_or(""), lead, trail)
}

/// A located match: the byte range to replace in the `\n`-normalised text.
struct Found {
    tier: MatchTier,
    start: usize,
    end: usize,
    line: usize,
    /// Whether the range is whole lines; only then does an empty REPLACE delete the lines.
    whole_lines: bool,
    /// (SEARCH indentation, file indentation) for the tiers that re-indent REPLACE.
    indent: Option<(String, String)>,
}

enum Located {
    Nowhere,
    One(Found),
    /// 1-based first lines of every match in the deciding tier.
    Many(Vec<usize>),
}

/// Runs the tiers in order; the first with any match decides.
/// `whole_lines_only` rejects mid-line exact matches.
fn locate(text: &str, search: &str, whole_lines_only: bool) -> Located {
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
struct LineIndex<'a> {
    lines: Vec<&'a str>,
    starts: Vec<usize>,
}

impl<'a> LineIndex<'a> {
    fn new(text: &'a str) -> Self {
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

type Key = for<'a> fn(&'a str) -> Cow<'a, str>;

/// What a tier compares of each line.
fn tier_key(tier: MatchTier) -> Key {
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

fn leading_ws(s: &str) -> &str {
    &s[..s.len() - s.trim_start().len()]
}

/// Moves REPLACE from the SEARCH's indentation `si` to the file's `fi`.
fn reindent(replace: &str, si: &str, fi: &str) -> String {
    let line = |l: &str| -> String {
        if l.trim().is_empty() {
            return String::new();
        }
        if let Some(rest) = l.strip_prefix(si) {
            return format!("{fi}{rest}");
        }
        // Indented less than SEARCH by `extra`: outdent the file's indentation by the same
        // amount when it ends with exactly that; otherwise there is no sensible mapping.
        let own = leading_ws(l);
        if let Some(extra) = si.strip_prefix(own)
            && let Some(base) = fi.strip_suffix(extra)
        {
            return format!("{base}{}", &l[own.len()..]);
        }
        l.to_owned()
    };
    replace.split('\n').map(line).collect::<Vec<_>>().join("\n")
}

fn splice(text: &mut String, found: &Found, replacement: &str) {
    let (mut start, mut end) = (found.start, found.end);
    // An empty REPLACE deletes whole lines, not just their text, also when SEARCH left out
    // the indentation or trailing spaces of the lines it covers.
    let line_start = text[..start].rfind('\n').map_or(0, |i| i + 1);
    let line_end = text[end..].find('\n').map_or(text.len(), |i| end + i);
    let only_blank_around =
        text[line_start..start].trim().is_empty() && text[end..line_end].trim().is_empty();
    if replacement.is_empty() && (found.whole_lines || only_blank_around) {
        (start, end) = (line_start, line_end);
        if text.as_bytes().get(end) == Some(&b'\n') {
            end += 1;
        } else if start > 0 && text.as_bytes().get(start - 1) == Some(&b'\n') {
            start -= 1;
        }
    }
    if text.get(start..end).is_some() {
        text.replace_range(start..end, replacement);
    }
}

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

fn excerpt(lines: &[&str]) -> String {
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
fn nearest(file: &[&str], wanted: &[&str]) -> Option<(usize, Vec<String>)> {
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

fn not_found_message(
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

fn list_lines(lines: &[usize]) -> String {
    let mut shown: Vec<String> = lines.iter().take(10).map(usize::to_string).collect();
    if lines.len() > 10 {
        shown.push("...".to_owned());
    }
    shown.join(", ")
}

#[cfg(test)]
#[path = "search_replace_tests.rs"]
mod tests;
