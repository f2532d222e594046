//! Symbols in the window: the list a go to definition with several answers or a find
//! references shows (the picker), and the definitions matching the file tree's filter.

use std::time::Instant;

use tandem_core::app::{Reference, SymbolAt};

/// One place the picker offers: clicking it opens the file at the line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Place {
    pub path: String,
    /// 1-based.
    pub line: usize,
    /// What the row says after `path:line` (the kind, or the line's text).
    pub detail: String,
}

impl Place {
    /// The row's label: "path:line  detail".
    pub fn label(&self) -> String {
        format!("{}:{}  {}", self.path, self.line, self.detail)
    }
}

/// The picker: the definitions of a name (when there are several) or its references.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Picker {
    pub title: String,
    pub places: Vec<Place>,
}

impl Picker {
    pub fn definitions(name: &str, found: &[SymbolAt]) -> Picker {
        Picker {
            title: format!("{} definitions of {name}", found.len()),
            places: (found.iter())
                .map(|s| Place {
                    path: s.path.clone(),
                    line: s.line as usize,
                    detail: s.kind.clone(),
                })
                .collect(),
        }
    }

    pub fn references(name: &str, found: &[Reference]) -> Picker {
        let files = {
            let mut paths: Vec<&str> = found.iter().map(|r| r.path.as_str()).collect();
            paths.dedup();
            paths.len()
        };
        let more = if found.len() >= tandem_core::app::MAX_REFERENCES {
            " (the first ones)"
        } else {
            ""
        };
        Picker {
            title: format!(
                "{} references to {name} in {files} file(s){more}",
                found.len()
            ),
            places: (found.iter())
                .map(|r| Place {
                    path: r.path.clone(),
                    line: r.line as usize,
                    detail: r.text.clone(),
                })
                .collect(),
        }
    }
}

/// The open project's symbol views.
#[derive(Debug, Default)]
pub struct Symbols {
    pub picker: Option<Picker>,
    /// A go to definition or find references under way: what the editor says meanwhile.
    pub looking_for: Option<String>,
    /// When the file tree's filter last changed and its symbols are not asked for yet.
    pub filter_edited: Option<Instant>,
    /// The definitions matching the filter: (the query they were found for, them).
    pub matches: Option<(String, Vec<SymbolAt>)>,
}

impl Symbols {
    /// The matches for `filter` as typed now (none while the answer is for another query).
    pub fn matches_for(&self, filter: &str) -> &[SymbolAt] {
        match &self.matches {
            Some((query, found)) if query == filter.trim() => found,
            _ => &[],
        }
    }
}
