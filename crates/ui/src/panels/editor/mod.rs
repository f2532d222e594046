//! The editor: a tab bar, a find bar and the active buffer.
//!
//! Design. Two views share one [`HighlightCache`] (which keeps per-line colour spans of the
//! text at `tab.revision` and re-highlights only from the checkpoint before an edit):
//!
//! - Files up to [`LARGE_FILE_LINES`] lines use `TextEdit::multiline`, so selection, clipboard,
//!   IME and undo are egui's (read-only files too: selectable, not editable). The buffer is
//!   wrapped in [`Tracked`](small::Tracked), which bumps the revision on every insert and
//!   delete, so the layouter always sees a revision that matches the text and never compares
//!   text to know whether anything changed. The layouter asks the cache for the whole-file galley: it is kept
//!   between frames (an unchanged frame costs nothing) and, after an edit, rebuilt by stacking
//!   per-line galleys kept by content, so only the changed lines are laid out again and at most
//!   about two checkpoint intervals are re-highlighted.
//! - Larger files use a virtualised view (`ScrollArea::show_rows`): only the visible rows are
//!   highlighted and laid out, so an unchanged 50,000-line file costs the same per frame as a
//!   50-line one. Editing there is per line: click a line to edit it in a single-line
//!   `TextEdit`; Enter splits it (keeping the indentation), Backspace at its start and Delete at
//!   its end join lines, Up/Down move, Esc or a click elsewhere stops. Each change is spliced
//!   into `tab.text` (the only O(file) step, and only on an edit); a multi-line paste is
//!   spliced whole. Undo is not available there.
//!
//! Highlighting works to a per-frame time budget and asks for another frame while behind, so
//! opening or jumping deep into a big file shows plain text for a moment, never a stall.
//!
//! Here, [`show`] and what its parts share; the parts are the tab bar (`tab_bar`), the keys
//! the editor takes (`keys`), the find bar (`find`), the bar for the selected lines
//! (`selection_bar`), and the two views (`small`, `large`).

use std::collections::BTreeSet;
use std::ops::Range;
use std::time::Duration;

use egui::text::CCursor;
use egui::{FontId, Id};

use crate::command::Command;
use crate::model::state::{Prefs, ProjectState, Tab};
use crate::widgets::highlight::{FindMarks, HighlightCache};

mod find;
mod keys;
mod large;
mod selection_bar;
mod small;
mod tab_bar;

use find::{find_bar, mark_colors};
use keys::shortcuts;
use large::large_view;
use selection_bar::selection_bar;
use small::small_view;
use tab_bar::tab_bar;

/// Above this many lines the editor switches to the virtualised view.
pub const LARGE_FILE_LINES: usize = 5_000;
/// Highlighting time allowed per frame.
const BUDGET: Duration = Duration::from_millis(4);

/// Per-file view state kept in egui's memory (the app state stays plain data).
#[derive(Clone, Default)]
struct View {
    /// Index of the current find match.
    current: usize,
    /// The query the matches were counted for (a new query starts at the first match).
    query: String,
    /// Scroll the current match into view this frame.
    reveal: bool,
    find_was_open: bool,
    /// Virtualised view: the line being edited, and where to put the cursor on it.
    editing: Option<usize>,
    place_cursor: Option<usize>,
}

pub fn show(
    ui: &mut egui::Ui,
    project: &mut ProjectState,
    highlighter: &mut HighlightCache,
    prefs: &Prefs,
    proposed: &BTreeSet<&str>,
    commands: &mut Vec<Command>,
) {
    highlighter.set_repaint_context(ui.ctx());
    highlighter.retain(|path| project.tabs.iter().any(|t| t.path == path));
    tab_bar(ui, project, proposed, commands);
    crate::panels::symbols::picker(ui.ctx(), project, commands);
    if let Some(name) = &project.symbols.looking_for {
        ui.horizontal(|ui| {
            ui.spinner();
            ui.weak(format!("Looking for {name}…"));
        });
    }
    // A line asked for (a problem clicked) comes into view once its file is the one showing.
    let active = project.active_tab.and_then(|i| project.tabs.get(i));
    let goto = match (&project.goto, active) {
        (Some((path, line)), Some(tab)) if *path == tab.path => Some(*line),
        _ => None,
    };
    if goto.is_some() {
        project.goto = None;
    }
    // A line opened while another field has the keyboard (following the agent while typing
    // a prompt) gets the cursor, not the keyboard.
    let focus = ui.memory(|m| m.focused());
    let typing_elsewhere =
        focus.is_some_and(|id| !project.tabs.iter().any(|t| editor_id(&t.path) == id));
    let Some(tab) = project.active_tab.and_then(|i| project.tabs.get_mut(i)) else {
        ui.centered_and_justified(|ui| ui.weak("Open a file from the tree"));
        return;
    };
    let view_id = Id::unique(("tandem-editor-view", tab.path.as_str()));
    let find_id = view_id.with("find");
    let mut view: View = ui.data(|d| d.get_temp(view_id)).unwrap_or_default();
    shortcuts(ui, tab, find_id, commands);

    if let Some(reason) = &tab.read_only {
        notice(ui, &format!("Read-only: {reason}"), |_| {});
        if tab.text.is_empty() {
            // A binary file: there is nothing to show.
            return;
        }
    }

    if crate::unsaved::refused_notice(ui, tab, commands) {
    } else if tab.disk_changed.is_some() {
        notice(
            ui,
            "This file changed on disk while you were editing it.",
            |ui| {
                if ui.button("Reload from disk").clicked() {
                    commands.push(Command::ResolveDiskChange(true));
                }
                if ui.button("Keep mine").clicked() {
                    commands.push(Command::ResolveDiskChange(false));
                }
            },
        );
    }
    let dark = ui.visuals().dark_mode;
    highlighter.sync(&tab.path, tab.revision, &tab.text, dark);
    let (mut query, mut reveal) = (None, None);
    if let Some(find) = &mut tab.find {
        let count = highlighter.find(&tab.path, find).len();
        find_bar(ui, find, count, find_id, &mut view, commands);
        if view.reveal {
            // Counted again: the bar may have just changed the query (cached per query).
            reveal = highlighter.find(&tab.path, find).get(view.current).cloned();
        }
        query = Some(find.clone());
    }
    view.find_was_open = tab.find.is_some();
    view.reveal = false;
    if let Some(line) = goto {
        let range = line_range(&tab.text, line);
        place_cursor(ui, tab, range.start, !typing_elsewhere);
        reveal = Some(range);
    }
    let (color, current_color) = mark_colors(dark);
    let marks = query.as_deref().map(|query| FindMarks {
        query,
        current: view.current,
        color,
        current_color,
    });

    let font = FontId::monospace(prefs.font_size);
    if highlighter.line_count(&tab.path) <= LARGE_FILE_LINES {
        selection_bar(ui, tab, commands);
    }
    if highlighter.line_count(&tab.path) > LARGE_FILE_LINES {
        tab.cursor = None;
        tab.selection = None;
        large_view(ui, tab, highlighter, &font, marks, reveal, &mut view);
    } else {
        small_view(ui, tab, highlighter, &font, marks, reveal);
    }
    ui.data_mut(|d| d.insert_temp(view_id, view));
}

/// A bar above the buffer: a warning and, optionally, buttons.
fn notice(ui: &mut egui::Ui, text: &str, buttons: impl FnOnce(&mut egui::Ui)) {
    egui::Frame::new()
        .fill(ui.visuals().faint_bg_color)
        .inner_margin(6.0)
        .show(ui, |ui| {
            ui.set_width(ui.available_width());
            ui.horizontal(|ui| {
                ui.colored_label(ui.visuals().warn_fg_color, text);
                buttons(ui);
            });
        });
}

/// Puts the editor's cursor at byte `at` of the tab's text (and the keyboard on it, if
/// `focus`).
fn place_cursor(ui: &egui::Ui, tab: &mut Tab, at: usize, focus: bool) {
    let id = editor_id(&tab.path);
    let chars = tab.text.get(..at).map_or(0, |s| s.chars().count());
    let mut state = egui::text_edit::TextEditState::load(ui.ctx(), id).unwrap_or_default();
    let cursor = egui::text::CCursorRange::one(CCursor::new(chars));
    state.cursor.set_char_range(Some(cursor));
    state.store(ui.ctx(), id);
    if focus {
        ui.memory_mut(|m| m.request_focus(id));
    }
    tab.cursor = Some(chars);
}

fn editor_id(path: &str) -> Id {
    Id::unique(("tandem-editor", path))
}

fn gutter_width(ui: &egui::Ui, font: &FontId, lines: usize) -> f32 {
    let digits = lines.max(1).ilog10() as f32 + 1.0;
    digits * ui.fonts_mut(|f| f.glyph_width(font, '0')) + 14.0
}

/// The byte range of 1-based `line` in `text` (the last line when past the end).
fn line_range(text: &str, line: usize) -> Range<usize> {
    let mut start = 0;
    for _ in 1..line.max(1) {
        match text[start..].find('\n') {
            Some(at) => start += at + 1,
            None => break,
        }
    }
    let end = text[start..].find('\n').map_or(text.len(), |at| start + at);
    start..end
}

fn name_for_screen_readers(ui: &egui::Ui, id: Id, name: &str) {
    ui.ctx()
        .accesskit_node_builder(id, |node| node.set_label(name));
}

#[cfg(test)]
mod tests;
