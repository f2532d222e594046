//! Symbols: where a name is defined, where it is used, and the definitions whose names match
//! a filter, from the project's code index ([`crate::index`]). Each call first brings the
//! index up to date with the files a turn would see (only changed files are read again), so
//! what the editor shows matches the disk. Slow on a large project the first time: the window
//! runs these on its background runtime.

use super::{App, AppError, Result};
use crate::index::CodeIndex;
use crate::index::terms::{find_name, is_name_char};
use crate::store::Project;

/// A definition: a name, where it is, and what it is (`function`, `struct`, `class`, ...).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SymbolAt {
    pub name: String,
    /// Relative, `/`-separated.
    pub path: String,
    /// 1-based.
    pub line: u32,
    pub kind: String,
}

/// A line where a name occurs as a whole word.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reference {
    pub path: String,
    /// 1-based.
    pub line: u32,
    /// 1-based, in characters.
    pub column: u32,
    /// The line, trimmed (at most [`REFERENCE_TEXT_CHARS`] characters).
    pub text: String,
}

/// How much of a reference's line is kept.
pub const REFERENCE_TEXT_CHARS: usize = 200;
/// At most this many references are returned (a name used everywhere).
pub const MAX_REFERENCES: usize = 2_000;

impl App {
    /// Where `name` is defined in the project, by path then line.
    pub fn definitions(&self, project: &Project, name: &str) -> Result<Vec<SymbolAt>> {
        let found = self.on_index(project, |index| index.definitions_of(name))?;
        Ok((found.into_iter())
            .map(|l| SymbolAt {
                name: name.to_string(),
                path: l.path,
                line: l.line,
                kind: l.kind,
            })
            .collect())
    }

    /// The lines where `name` occurs as a whole word, by path then line: only the files the
    /// index says use or define it are read. At most [`MAX_REFERENCES`].
    pub fn references(&self, project: &Project, name: &str) -> Result<Vec<Reference>> {
        if !is_identifier(name) {
            return Err(AppError::Invalid(format!("{name:?} is not a name")));
        }
        let mut paths = self.on_index(project, |index| {
            let mut paths = index.references_to(name)?;
            paths.extend(index.definitions_of(name)?.into_iter().map(|l| l.path));
            Ok(paths)
        })?;
        paths.sort();
        paths.dedup();
        let mut found = Vec::new();
        for path in paths {
            // A file gone or unreadable since the refresh has no references to show.
            let Some(text) = crate::folder::read_project_text(&project.path, &path) else {
                continue;
            };
            for (line, column, text) in whole_word_lines(&text, name) {
                found.push(Reference {
                    path: path.clone(),
                    line,
                    column,
                    text,
                });
                if found.len() >= MAX_REFERENCES {
                    return Ok(found);
                }
            }
        }
        Ok(found)
    }

    /// The definitions whose name contains `query` (case-insensitively), best first: the
    /// exact name, then names starting with it, then the rest; shorter names first within
    /// each. At most `limit`.
    pub fn symbols_matching(
        &self,
        project: &Project,
        query: &str,
        limit: usize,
    ) -> Result<Vec<SymbolAt>> {
        let query = query.trim().to_lowercase();
        if query.is_empty() || limit == 0 {
            return Ok(Vec::new());
        }
        let rank = |name: &str| {
            let lower = name.to_lowercase();
            match (lower == query, lower.starts_with(&query)) {
                (true, _) => 0u8,
                (false, true) => 1,
                (false, false) => 2,
            }
        };
        let mut found = self.on_index(project, |index| {
            let mut names = index.names_containing(&query)?;
            names.sort_by(|a, b| (rank(a), a.len(), a).cmp(&(rank(b), b.len(), b)));
            let mut found = Vec::new();
            for name in names {
                if found.len() >= limit {
                    break;
                }
                for place in index.definitions_of(&name)? {
                    found.push(SymbolAt {
                        name: name.clone(),
                        path: place.path,
                        line: place.line,
                        kind: place.kind,
                    });
                }
            }
            Ok(found)
        })?;
        found.truncate(limit);
        Ok(found)
    }

    /// `ask` of the project's index, brought up to date with the files a turn sees (the same
    /// walk, so the two never undo each other's refresh; see [`crate::index::Indexes::ask`]).
    fn on_index<T>(
        &self,
        project: &Project,
        ask: impl FnOnce(&CodeIndex) -> crate::index::Result<T>,
    ) -> Result<T> {
        let options = project.settings.context_options();
        Ok((self.chat.indexes()).ask(&project.path, &options, ask)?)
    }
}

/// Whether `name` can be looked for as a whole word: letters, digits, `_` and `$`, not
/// starting with a digit.
pub fn is_identifier(name: &str) -> bool {
    let mut chars = name.chars();
    chars
        .next()
        .is_some_and(|c| is_name_char(c) && !c.is_ascii_digit())
        && chars.all(is_name_char)
}

/// The identifier around character `at` of `text` (the one the cursor touches: just after
/// it counts too), if any.
pub fn identifier_at(text: &str, at: usize) -> Option<String> {
    let chars: Vec<(usize, char)> = text.char_indices().collect();
    let touching = |i: usize| chars.get(i).is_some_and(|&(_, c)| is_name_char(c));
    let start_char = if touching(at) {
        at
    } else if at > 0 && touching(at - 1) {
        at - 1
    } else {
        return None;
    };
    let mut first = start_char;
    while first > 0 && touching(first - 1) {
        first -= 1;
    }
    let mut end = start_char + 1;
    while touching(end) {
        end += 1;
    }
    let from = chars[first].0;
    let to = chars.get(end).map_or(text.len(), |&(i, _)| i);
    let found = &text[from..to];
    is_identifier(found).then(|| found.to_string())
}

/// The lines of `text` where `name` occurs as a whole word: (line, column of the first such
/// occurrence, both 1-based; the line trimmed and cut to [`REFERENCE_TEXT_CHARS`]).
fn whole_word_lines(text: &str, name: &str) -> Vec<(u32, u32, String)> {
    let mut out = Vec::new();
    for (number, line) in text.lines().enumerate() {
        let Some(at) = find_name(line, name) else {
            continue;
        };
        let column = line[..at].chars().count() + 1;
        let shown: String = line.trim().chars().take(REFERENCE_TEXT_CHARS).collect();
        let number = u32::try_from(number + 1).unwrap_or(u32::MAX);
        out.push((number, u32::try_from(column).unwrap_or(u32::MAX), shown));
    }
    out
}

#[cfg(test)]
mod tests;
