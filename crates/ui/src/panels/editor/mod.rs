//! The editor: a tab bar, a find bar and the active buffer.
//!
//! Design. Two views share one [`HighlightCache`] (which keeps per-line colour spans of the
//! text at `tab.revision` and re-highlights only from the checkpoint before an edit):
//!
//! - Files up to [`LARGE_FILE_LINES`] lines use `TextEdit::multiline`, so selection, clipboard,
//!   IME and undo are egui's (read-only files too: selectable, not editable). The buffer is
//!   wrapped in [`Tracked`], which bumps the revision on every insert and delete, so the
//!   layouter always sees a revision that matches the text and never compares text to know
//!   whether anything changed. The layouter asks the cache for the whole-file galley: it is kept
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

use std::cell::Cell;
use std::collections::BTreeSet;
use std::ops::Range;
use std::time::{Duration, Instant};

use egui::text::{CCursor, CharIndex, TextFormat};
use egui::{Color32, Event, FontId, Id, Key, Modifiers, Sense, TextBuffer, TextEdit};

use crate::command::Command;
use crate::model::state::{Prefs, ProjectState, Tab};
use crate::widgets::highlight::{FindMarks, HighlightCache};

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

fn mark_colors(dark: bool) -> (Color32, Color32) {
    if dark {
        (
            Color32::from_rgba_unmultiplied(230, 190, 60, 55),
            Color32::from_rgba_unmultiplied(255, 140, 0, 150),
        )
    } else {
        (
            Color32::from_rgba_unmultiplied(250, 220, 80, 120),
            Color32::from_rgba_unmultiplied(255, 150, 30, 200),
        )
    }
}

fn tab_bar(
    ui: &mut egui::Ui,
    project: &ProjectState,
    proposed: &BTreeSet<&str>,
    commands: &mut Vec<Command>,
) {
    if project.tabs.is_empty() {
        return;
    }
    egui::ScrollArea::horizontal()
        .id_salt("tandem-editor-tabs")
        .auto_shrink([false, true])
        .show(ui, |ui| {
            ui.horizontal(|ui| {
                for (index, tab) in project.tabs.iter().enumerate() {
                    if proposed.contains(tab.path.as_str()) {
                        ui.colored_label(crate::widgets::theme::WARN, "✏")
                            .on_hover_text("Changed by the pending proposal");
                    }
                    let name = tab.path.rsplit('/').next().unwrap_or(&tab.path);
                    let label = if tab.dirty() {
                        format!("{name} •")
                    } else {
                        name.to_string()
                    };
                    let response = ui
                        .selectable_label(project.active_tab == Some(index), label)
                        .on_hover_text(&tab.path);
                    if response.clicked() {
                        commands.push(Command::SelectTab(index));
                    }
                    if response.middle_clicked()
                        || ui.small_button("×").on_hover_text("Close").clicked()
                    {
                        commands.push(Command::CloseTab(index));
                    }
                    ui.add_space(6.0);
                }
            });
        });
    ui.separator();
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

fn shortcuts(ui: &egui::Ui, tab: &Tab, find_id: Id, commands: &mut Vec<Command>) {
    use crate::command::SymbolCommand;
    use crate::keymap::editor_shortcut;
    // Shift+F12 first: F12 alone would take it too (egui ignores an extra Shift).
    for symbol in [SymbolCommand::FindReferences, SymbolCommand::GoToDefinition] {
        let command = Command::Symbol(symbol);
        if editor_shortcut(ui, &command) {
            commands.push(command);
            break;
        }
    }
    let save = editor_shortcut(ui, &Command::Save);
    let find = editor_shortcut(ui, &Command::ToggleFind);
    let close = editor_shortcut(ui, &Command::CloseActiveTab);
    if save {
        commands.push(Command::Save);
    }
    if close {
        commands.push(Command::CloseActiveTab);
    }
    let find_focused = ui.memory(|m| m.has_focus(find_id));
    if find {
        if tab.find.is_some() && !find_focused {
            ui.memory_mut(|m| m.request_focus(find_id));
        } else {
            commands.push(Command::ToggleFind);
        }
    }
    // The app's own shortcuts consume Esc (cancel), so look at the raw events.
    let focus = ui.memory(|m| m.focused());
    let ours = focus.is_none_or(|id| id == find_id || id == editor_id(&tab.path));
    if tab.find.is_some() && ours && escape_pressed(ui) {
        commands.push(Command::ToggleFind);
    }
}

fn escape_pressed(ui: &egui::Ui) -> bool {
    ui.input(|i| {
        i.raw.events.iter().any(|e| {
            matches!(
                e,
                Event::Key {
                    key: Key::Escape,
                    pressed: true,
                    ..
                }
            )
        })
    })
}

/// With lines selected in the editor: "Ask about this" and "Change this" put them, with the
/// path and line numbers, at the start of the prompt. The lines it shows are the tab's
/// selection, which every send carries (see `model::selection::focus`).
fn selection_bar(ui: &mut egui::Ui, tab: &mut Tab, commands: &mut Vec<Command>) {
    let id = editor_id(&tab.path);
    let selected = egui::text_edit::TextEditState::load(ui.ctx(), id)
        .and_then(|s| s.cursor.char_range())
        .filter(|r| r.primary != r.secondary)
        .map(|r| {
            crate::model::selection::lines_of(&tab.text, r.primary.index.0, r.secondary.index.0)
        });
    tab.selection = selected;
    // The row is always there (buttons off without a selection), so selecting never moves
    // the text under the pointer.
    ui.horizontal(|ui| {
        let span = match selected {
            Some((first, last)) if first == last => format!("Line {first} selected"),
            Some((first, last)) => format!("Lines {first}-{last} selected"),
            None => "Select lines to ask about them or change them".to_string(),
        };
        ui.weak(span);
        for (label, change, hint) in [
            (
                "Ask about this",
                false,
                "Puts these lines in the prompt, in Ask mode",
            ),
            (
                "Change this",
                true,
                "Puts these lines in the prompt as the place to edit, in Build mode",
            ),
        ] {
            let button = ui
                .add_enabled(selected.is_some(), egui::Button::new(label).small())
                .on_hover_text(hint);
            if let (true, Some((first, last))) = (button.clicked(), selected) {
                commands.push(Command::SelectionToChat {
                    path: tab.path.clone(),
                    first,
                    last,
                    change,
                });
            }
        }
    });
}

fn editor_id(path: &str) -> Id {
    Id::unique(("tandem-editor", path))
}

fn find_bar(
    ui: &mut egui::Ui,
    query: &mut String,
    count: usize,
    find_id: Id,
    view: &mut View,
    commands: &mut Vec<Command>,
) {
    if *query != view.query {
        view.query = query.clone();
        view.current = 0;
        view.reveal = true;
    }
    if view.current >= count {
        view.current = 0;
    }
    let step = |view: &mut View, forward: bool| {
        if count > 0 {
            view.current = if forward {
                (view.current + 1) % count
            } else {
                (view.current + count - 1) % count
            };
            view.reveal = true;
        }
    };
    ui.horizontal(|ui| {
        // Enter / Shift+Enter in the field step through matches instead of leaving it.
        if ui.memory(|m| m.has_focus(find_id)) {
            let (back, forward) = ui.input_mut(|i| {
                (
                    i.consume_key(Modifiers::SHIFT, Key::Enter),
                    i.consume_key(Modifiers::NONE, Key::Enter),
                )
            });
            if back || forward {
                step(view, forward);
            }
        }
        let field = TextEdit::singleline(query)
            .id(find_id)
            .hint_text("Find in file")
            .desired_width(240.0)
            .return_key(None);
        let response = ui.add(field);
        if !view.find_was_open {
            response.request_focus();
        }
        let status = match (query.is_empty(), count) {
            (true, _) => String::new(),
            (false, 0) => "No matches".to_string(),
            (false, n) => format!("{} of {n}", view.current + 1),
        };
        ui.label(status);
        if ui
            .small_button("⬆")
            .on_hover_text("Previous (Shift+Enter)")
            .clicked()
        {
            step(view, false);
        }
        if ui.small_button("⬇").on_hover_text("Next (Enter)").clicked() {
            step(view, true);
        }
        if ui.small_button("×").on_hover_text("Close (Esc)").clicked() {
            commands.push(Command::ToggleFind);
        }
    });
    ui.separator();
}

/// The text buffer seen by `TextEdit`: every change bumps the revision the layouter reads.
struct Tracked<'a> {
    text: &'a mut String,
    revision: &'a Cell<u64>,
    /// False for read-only files: still selectable and copyable.
    editable: bool,
}

impl TextBuffer for Tracked<'_> {
    fn is_mutable(&self) -> bool {
        self.editable
    }

    fn as_str(&self) -> &str {
        self.text.as_str()
    }

    fn insert_text(&mut self, text: &str, char_index: CharIndex) -> usize {
        // egui leaves immutability to the buffer (as `&str` does): ignore the change.
        if !self.editable {
            return 0;
        }
        if !text.is_empty() {
            self.revision.set(self.revision.get() + 1);
        }
        <String as TextBuffer>::insert_text(self.text, text, char_index)
    }

    fn delete_char_range(&mut self, char_range: Range<CharIndex>) {
        if !self.editable {
            return;
        }
        if char_range.start < char_range.end {
            self.revision.set(self.revision.get() + 1);
        }
        <String as TextBuffer>::delete_char_range(self.text, char_range);
    }

    fn type_id(&self) -> std::any::TypeId {
        std::any::TypeId::of::<Tracked<'static>>()
    }
}

fn gutter_width(ui: &egui::Ui, font: &FontId, lines: usize) -> f32 {
    let digits = lines.max(1).ilog10() as f32 + 1.0;
    digits * ui.fonts_mut(|f| f.glyph_width(font, '0')) + 14.0
}

fn small_view(
    ui: &mut egui::Ui,
    tab: &mut Tab,
    cache: &mut HighlightCache,
    font: &FontId,
    marks: Option<FindMarks<'_>>,
    reveal: Option<Range<usize>>,
) {
    let Tab {
        path,
        text,
        revision,
        read_only,
        cursor,
        ..
    } = tab;
    let shared_revision = Cell::new(*revision);
    let dark = ui.visuals().dark_mode;
    let base = TextFormat::simple(font.clone(), ui.visuals().text_color());
    let gutter = gutter_width(ui, font, cache.line_count(path));
    let mut layouter = |ui: &egui::Ui, buffer: &dyn TextBuffer, _wrap_width: f32| {
        cache.sync(path, shared_revision.get(), buffer.as_str(), dark);
        if !cache.advance(path, usize::MAX, Some(Instant::now() + BUDGET)) {
            ui.ctx().request_repaint();
        }
        let ppp = ui.ctx().pixels_per_point();
        ui.fonts_mut(|fonts| {
            let fill = fonts.font_atlas_fill_ratio();
            let mut layout = |job| fonts.layout_job(job);
            cache.document_galley(path, &base, marks, (ppp, fill), &mut layout)
        })
    };
    let mut buffer = Tracked {
        text,
        revision: &shared_revision,
        editable: read_only.is_none(),
    };
    egui::ScrollArea::both()
        .id_salt(("tandem-editor-scroll", path.as_str()))
        .auto_shrink(false)
        .show(ui, |ui| {
            ui.horizontal_top(|ui| {
                let (gutter_rect, _) =
                    ui.allocate_exact_size(egui::vec2(gutter, 0.0), Sense::hover());
                let output = TextEdit::multiline(&mut buffer)
                    .id(editor_id(path))
                    .font(font.clone())
                    .frame(egui::Frame::NONE)
                    .desired_width(f32::INFINITY)
                    .lock_focus(true)
                    .layouter(&mut layouter)
                    .show(ui);
                name_for_screen_readers(ui, editor_id(path), path);
                if let Some(range) = output.cursor_range {
                    *cursor = Some(range.primary.index.0);
                }
                // Line numbers for the visible rows only (no wrapping: one row per line).
                let (galley, origin) = (&output.galley, output.galley_pos);
                let clip = ui.clip_rect();
                let first = galley
                    .rows
                    .partition_point(|r| origin.y + r.rect().max.y < clip.min.y);
                let color = ui.visuals().weak_text_color();
                for (line, row) in galley.rows.iter().enumerate().skip(first) {
                    let y = origin.y + row.rect().min.y;
                    if y > clip.max.y {
                        break;
                    }
                    let at = egui::pos2(gutter_rect.right() - 8.0, y);
                    ui.painter().text(
                        at,
                        egui::Align2::RIGHT_TOP,
                        (line + 1).to_string(),
                        font.clone(),
                        color,
                    );
                }
                if let Some(found) = reveal {
                    let chars = galley
                        .text()
                        .get(..found.start)
                        .map_or(0, |s| s.chars().count());
                    let rect = galley
                        .pos_from_cursor(CCursor::new(chars))
                        .translate(origin.to_vec2());
                    ui.scroll_to_rect(rect.expand(24.0), Some(egui::Align::Center));
                }
            });
        });
    *revision = shared_revision.get();
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

/// Takes this frame's paste event if it holds more than one line.
fn take_multiline_paste(ui: &egui::Ui) -> Option<String> {
    ui.input_mut(|i| {
        let at = i
            .events
            .iter()
            .position(|e| matches!(e, Event::Paste(t) if t.contains('\n')))?;
        match i.events.remove(at) {
            Event::Paste(text) => Some(text.replace("\r\n", "\n")),
            _ => None,
        }
    })
}

fn move_to(view: &mut View, line: usize, column: usize) {
    view.editing = Some(line);
    view.place_cursor = Some(column);
}

mod large;
use large::large_view;

#[cfg(test)]
mod tests;
