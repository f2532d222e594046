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

use super::line_numbers::{self, Numbering, Unnumbered};

mod locate;
mod not_found;

use locate::{Found, LineIndex, Located, leading_ws, locate, tier_key};
use not_found::{excerpt, list_lines, nearest, not_found_message};

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
    match &numbering {
        // Numbers on blank lines only: as empty a SEARCH as one without them.
        Numbering::Blank => return Err(Error::EmptySearch { block: n, total }),
        Numbering::Stripped(unnumbered) => {
            if let Some(outcome) = apply_unnumbered(text, unnumbered, read) {
                return Ok(outcome);
            }
        }
        Numbering::None | Numbering::Unsafe => {}
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
            Numbering::None | Numbering::Blank => false,
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

#[cfg(test)]
mod tests;
