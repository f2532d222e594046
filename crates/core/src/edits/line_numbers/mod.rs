//! Line numbers copied into a SEARCH/REPLACE block. Models quote a file as a file view showed
//! it, each line behind its number: `read_file` writes `"    12\tcode"`, other views `12: code`,
//! `12 | code` or `12→code`. [`unnumber`] takes such a prefix off every line, but only when it
//! cannot be the file's content: every line of SEARCH that is not blank carries one, in one
//! style, the numbers counting up by one, and no line of the file starts with a number in that
//! style. Whoever uses the result must also check that SEARCH, without its numbers, sits at
//! those very lines (see `search_replace`), and only try this when SEARCH matches nowhere as
//! written.
//!
//! Pure, and must not panic on any input.

/// How a line's number is set off from its text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Separator {
    /// `    12\tcode`: `read_file`'s view.
    Tab,
    /// `12→code`.
    Arrow,
    /// `12: code` or `12:code`.
    Colon,
    /// `12 | code`, `12| code`, `12|code`.
    Pipe,
    /// `12 code`: `read_file`'s tab turned into a space.
    Space,
}

/// Longest number taken as a line number (no file has a billion lines).
const MAX_DIGITS: usize = 9;

/// A line split into its number, its separator and the text after it. The separator is
/// `None` for a number alone: a blank line whose separator went with its trailing space.
fn split(line: &str) -> Option<(usize, Option<Separator>, &str)> {
    let rest = line.trim_start_matches([' ', '\t']);
    let digits = rest.len() - rest.trim_start_matches(|c: char| c.is_ascii_digit()).len();
    if digits == 0 || digits > MAX_DIGITS {
        return None;
    }
    let number = rest[..digits].parse().ok()?;
    let after = &rest[digits..];
    if after.is_empty() {
        return Some((number, None, ""));
    }
    let one_space = |s: &'_ str| -> usize { usize::from(s.starts_with(' ')) };
    let (separator, text) = if let Some(text) = after.strip_prefix('\t') {
        (Separator::Tab, text)
    } else if let Some(text) = after.strip_prefix('→') {
        (Separator::Arrow, text)
    } else if let Some(text) = after.strip_prefix(':') {
        (Separator::Colon, &text[one_space(text)..])
    } else if let Some(text) = after[one_space(after)..].strip_prefix('|') {
        (Separator::Pipe, &text[one_space(text)..])
    } else if let Some(text) = after.strip_prefix(' ') {
        (Separator::Space, text)
    } else {
        return None;
    };
    Some((number, Some(separator), text))
}

/// Whether `line` starts with a number set off by `separator`, as a line of the file.
fn looks_numbered(line: &str, separator: Separator) -> bool {
    matches!(split(line), Some((_, Some(s), _)) if s == separator)
}

/// A block with its line numbers taken off.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Unnumbered {
    pub search: String,
    pub replace: String,
    /// The numbers of SEARCH's first and last lines.
    pub first: usize,
    pub last: usize,
    /// The numbers look like a file view's (several lines counting up, or a view's
    /// separator), so a miss is worth telling the model about them.
    pub view_like: bool,
}

/// What [`unnumber`] made of a block.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Numbering {
    /// SEARCH does not look numbered.
    None,
    /// SEARCH looks numbered, but taking the numbers off is not safe (the file has lines
    /// numbered that way, the numbers skip, REPLACE is numbered only in part, ...).
    Unsafe,
    /// SEARCH is numbers on blank lines only: as empty as a SEARCH without them.
    Blank,
    Stripped(Unnumbered),
}

/// A line's number (`None` for a blank line without one) and its text after the number.
type NumberedLine = (Option<usize>, String);

/// The numbers and texts of `lines`, numbered in `style` (else in the style of the first line
/// with text after its number). A number with only blanks after it is a blank line, whatever
/// its separator; a blank line may go without its number (it still counts one). `None` when
/// a line is neither.
fn numbered_lines(
    lines: &[&str],
    style: Option<Separator>,
) -> Option<(Separator, Vec<NumberedLine>)> {
    let style = style.or_else(|| {
        lines.iter().find_map(|l| match split(l)? {
            (_, Some(s), text) if !text.trim().is_empty() => Some(s),
            _ => None,
        })
    })?;
    let mut out = Vec::with_capacity(lines.len());
    for line in lines {
        out.push(match split(line) {
            Some((n, Some(s), text)) if s == style => (Some(n), text.to_owned()),
            Some((n, _, text)) if text.trim().is_empty() => (Some(n), String::new()),
            _ if line.trim().is_empty() => (None, String::new()),
            _ => return None,
        });
    }
    Some((style, out))
}

/// `search` and `replace` with their line-number prefixes removed, when that is safe against
/// `file` (see the module's documentation). `search` should already be without the blank
/// lines a model pads it with. REPLACE may carry numbers in SEARCH's style on every line that
/// is not blank (they are removed; they need only never go down, as inserted lines repeat or
/// renumber them) or on none (it is used as written); numbered only in part, it is unsafe.
pub(super) fn unnumber(search: &str, replace: &str, file: &str) -> Numbering {
    let search_lines: Vec<&str> = search.split('\n').collect();
    // Only numbers, each with its separator, on otherwise blank lines (`1: `, `   12\t`):
    // nothing to find, as a SEARCH without them (a file's own such lines were found as
    // written before numbers are looked at).
    let numbered_blank =
        |l: &&str| matches!(split(l), Some((_, Some(_), text)) if text.trim().is_empty());
    if search_lines.iter().any(numbered_blank)
        && search_lines
            .iter()
            .all(|l| l.trim().is_empty() || numbered_blank(l))
    {
        return Numbering::Blank;
    }
    let Some((separator, numbered)) = numbered_lines(&search_lines, None) else {
        return Numbering::None;
    };
    let Some(first) = numbered.first().and_then(|(n, _)| *n) else {
        return Numbering::None;
    };
    // Counting up by one from the first line; a blank line without its number counts too.
    let consecutive = numbered
        .iter()
        .enumerate()
        .all(|(i, (n, _))| n.is_none_or(|n| Some(n) == first.checked_add(i)));
    // Said to the model only when the numbers look like a file view's: a line starting with
    // a year is no reason to talk about line numbers.
    let view_like = (consecutive && numbered.len() > 1)
        || matches!(
            separator,
            Separator::Tab | Separator::Arrow | Separator::Pipe
        );
    let refused = match view_like {
        true => Numbering::Unsafe,
        false => Numbering::None,
    };
    let blank = numbered.iter().all(|(_, text)| text.trim().is_empty());
    if blank || !consecutive || file.lines().any(|l| looks_numbered(l, separator)) {
        return refused;
    }
    let lines = search_lines.len().max(replace.split('\n').count());
    let span = first..=first.saturating_add(lines);
    let replace = match replace_unnumbered(replace, separator, span) {
        Some(replace) => replace,
        None => return refused,
    };
    Numbering::Stripped(Unnumbered {
        search: join(numbered.into_iter().map(|(_, text)| text)),
        replace,
        first,
        last: first + search_lines.len() - 1,
        view_like,
    })
}

/// REPLACE without numbers in `separator`'s style: as written when no line has one, stripped
/// when every line that is not blank has one, they never go down and stay within `span` (the
/// numbers the edited stretch could have); `None` otherwise.
fn replace_unnumbered(
    replace: &str,
    separator: Separator,
    span: std::ops::RangeInclusive<usize>,
) -> Option<String> {
    let lines: Vec<&str> = replace.split('\n').collect();
    if !lines.iter().any(|l| looks_numbered(l, separator)) {
        return Some(replace.to_owned());
    }
    let (_, numbered) = numbered_lines(&lines, Some(separator))?;
    let numbers: Vec<usize> = numbered.iter().filter_map(|(n, _)| *n).collect();
    let rising = numbers.windows(2).all(|w| w[0] <= w[1]);
    let within = numbers.iter().all(|n| span.contains(n));
    (rising && within).then(|| join(numbered.into_iter().map(|(_, text)| text)))
}

fn join(lines: impl Iterator<Item = String>) -> String {
    lines.collect::<Vec<_>>().join("\n")
}

#[cfg(test)]
mod tests;
