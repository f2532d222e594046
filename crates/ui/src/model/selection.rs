//! From the editor to the chat: the selected lines of a file as the start of a prompt, with
//! the path and line numbers, either to ask about them or to have exactly them changed; and
//! what the editor shows (its tabs, the selection) as every send and estimate carry it.

use std::hash::{Hash, Hasher};

use tandem_core::app::{EditorFocus, EditorSelection};

use crate::model::state::ProjectState;

/// What the editor shows, for a send or an estimate: the open tabs (the active one first)
/// and the lines selected in the active tab, as its buffer has them.
pub fn focus(project: &ProjectState) -> EditorFocus {
    let active = project.active_tab.and_then(|i| project.tabs.get(i));
    let others = (project.tabs.iter().enumerate())
        .filter(|(i, _)| Some(*i) != project.active_tab)
        .map(|(_, tab)| tab);
    let open = active.into_iter().chain(others).map(|t| t.path.clone());
    let selection = active.and_then(|tab| {
        let (first, last) = tab.selection?;
        let lines = selected_lines(&tab.text, first, last);
        Some(EditorSelection::new(tab.path.clone(), first, last, &lines))
    });
    EditorFocus {
        open: open.collect(),
        selection,
    }
}

/// A fingerprint of [`focus`], cheap enough for every frame (the paths, which tab is active,
/// its selection and the buffer's revision under it): when it changes, the context estimate
/// is asked again.
pub fn focus_key(project: &ProjectState) -> u64 {
    let mut hasher = std::hash::DefaultHasher::new();
    for tab in &project.tabs {
        tab.path.hash(&mut hasher);
    }
    project.active_tab.hash(&mut hasher);
    if let Some(tab) = project.active_tab.and_then(|i| project.tabs.get(i))
        && tab.selection.is_some()
    {
        (tab.selection, tab.revision).hash(&mut hasher);
    }
    hasher.finish()
}

/// The lines (1-based, inclusive) a character range of `text` covers.
pub fn lines_of(text: &str, start: usize, end: usize) -> (usize, usize) {
    let (start, end) = (start.min(end), start.max(end));
    let mut first = 1;
    let mut last = 1;
    for (i, c) in text.chars().enumerate() {
        if i >= end {
            break;
        }
        if c == '\n' {
            if i < start {
                first += 1;
            }
            // A selection ending right after a newline does not take the next line.
            if i + 1 < end {
                last += 1;
            }
        }
    }
    (first, last.max(first))
}

/// The selected lines, whole, of `text`.
pub fn selected_lines(text: &str, first: usize, last: usize) -> String {
    text.lines()
        .skip(first.saturating_sub(1))
        .take(last + 1 - first)
        .collect::<Vec<_>>()
        .join("\n")
}

/// The start of a prompt about lines `first..=last` of `path`: `change` asks for those lines
/// to be changed (and only those), otherwise they are what the question is about.
pub fn prompt(path: &str, first: usize, last: usize, lines: &str, change: bool) -> String {
    let span = match first == last {
        true => format!("line {first}"),
        false => format!("lines {first}-{last}"),
    };
    let fence = tandem_core::app::code_fence(lines);
    let language = path
        .rsplit('.')
        .next()
        .filter(|ext| *ext != path)
        .unwrap_or("");
    let head = match change {
        true => format!("Change {path} {span} (edit only this part of the file):"),
        false => format!("About {path} {span}:"),
    };
    format!("{head}\n{fence}{language}\n{lines}\n{fence}\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    const TEXT: &str = "one\ntwo\nthree\nfour\n";

    #[test]
    fn a_selection_covers_whole_lines() {
        // "wo\nthr" — from inside line 2 to inside line 3.
        assert_eq!(lines_of(TEXT, 5, 11), (2, 3));
        // Backwards selections too; ending just after a newline stops at that line.
        assert_eq!(lines_of(TEXT, 11, 5), (2, 3));
        assert_eq!(lines_of(TEXT, 4, 8), (2, 2));
        assert_eq!(selected_lines(TEXT, 2, 3), "two\nthree");
    }

    #[test]
    fn the_prompt_names_the_place_and_what_to_do() {
        let ask = prompt("src/a.rs", 2, 3, "two\nthree", false);
        assert_eq!(ask, "About src/a.rs lines 2-3:\n```rs\ntwo\nthree\n```\n");
        let change = prompt("Makefile", 4, 4, "four", true);
        assert!(
            change.starts_with("Change Makefile line 4 (edit only this part of the file):\n```\n")
        );
    }
}
