//! The editor for large files: only the visible rows are laid out, each as its own one-line
//! text field; an edit is spliced into the tab's text once per frame and bumps its revision,
//! so the highlight cache sees it.

use std::ops::Range;
use std::time::Instant;

use egui::text::{CCursor, CCursorRange, TextFormat};
use egui::text_edit::TextEditState;
use egui::{Event, FontId, Id, Key, Modifiers, Sense, TextEdit};

use crate::model::state::Tab;
use crate::widgets::highlight::{FindMarks, HighlightCache};

use super::keys::escape_pressed;
use super::{BUDGET, View, gutter_width, name_for_screen_readers};

pub(super) fn large_view(
    ui: &mut egui::Ui,
    tab: &mut Tab,
    cache: &mut HighlightCache,
    font: &FontId,
    marks: Option<FindMarks<'_>>,
    reveal: Option<Range<usize>>,
    view: &mut View,
) {
    let editable = tab.read_only.is_none();
    if !editable {
        view.editing = None;
    }
    let path = tab.path.as_str();
    let lines = cache.line_count(path);
    let (row_height, char_width) = ui.fonts_mut(|f| (f.row_height(font), f.glyph_width(font, '0')));
    let gutter = gutter_width(ui, font, lines);
    let width = gutter + cache.longest_line(path) as f32 * char_width + 40.0;
    let base = TextFormat::simple(font.clone(), ui.visuals().text_color());
    let number_color = ui.visuals().weak_text_color();
    let mut area = egui::ScrollArea::both()
        .id_salt(("tandem-editor-rows", path))
        .auto_shrink(false);
    if let Some(found) = reveal {
        let line = cache.line_of(path, found.start);
        let offset = line as f32 * row_height - ui.available_height() / 2.0;
        area = area.vertical_scroll_offset(offset.max(0.0));
    }
    let mut splice = None;
    ui.scope(|ui| {
        // Rows are exactly `row_height` apart, so a line's offset is `line * row_height`.
        ui.spacing_mut().item_spacing.y = 0.0;
        area.show_rows(ui, row_height, lines, |ui, rows| {
            ui.set_min_width(width);
            if !cache.advance(path, rows.end, Some(Instant::now() + BUDGET)) {
                ui.ctx().request_repaint();
            }
            // Keep the line being edited on screen when the keyboard moves it.
            if let (Some(line), Some(_)) = (view.editing, view.place_cursor)
                && !(rows.start + 1..rows.end.saturating_sub(1)).contains(&line)
            {
                let top = ui.max_rect().top() + (line as f32 - rows.start as f32) * row_height;
                let x = ui.max_rect().x_range();
                ui.scroll_to_rect(egui::Rect::from_x_y_ranges(x, top..=top + row_height), None);
            }
            for line in rows {
                let sense = if editable {
                    Sense::click()
                } else {
                    Sense::hover()
                };
                let (rect, response) = ui.allocate_exact_size(egui::vec2(width, row_height), sense);
                let at = egui::pos2(rect.left() + gutter - 8.0, rect.top());
                let number = (line + 1).to_string();
                ui.painter().text(
                    at,
                    egui::Align2::RIGHT_TOP,
                    number,
                    font.clone(),
                    number_color,
                );
                let text_rect = rect.with_min_x(rect.left() + gutter);
                // After a change, rows below show the old text until the next frame.
                if view.editing == Some(line) && splice.is_none() {
                    let range = cache.line_range(path, line).unwrap_or(0..0);
                    let text = tab.text.get(range.clone()).unwrap_or("");
                    let edit = EditLine {
                        path,
                        text,
                        range,
                        index: line,
                        count: lines,
                    };
                    splice = edit_line(ui, edit, text_rect, font, view);
                    continue;
                }
                let job = cache.line_job(path, line, &base, marks.as_ref());
                let galley = ui.fonts_mut(|f| f.layout_job(job));
                if response.clicked() {
                    let column = response.interact_pointer_pos();
                    let column =
                        column.map_or(0, |p| galley.cursor_from_pos(p - text_rect.min).index.0);
                    move_to(view, line, column);
                }
                ui.painter().galley(text_rect.min, galley, base.color);
            }
        });
    });
    // The range comes from this frame's line index of this text; `get` only guards the splice.
    if let Some((range, replacement)) = splice.filter(|(r, _)| tab.text.get(r.clone()).is_some()) {
        tab.text.replace_range(range, &replacement);
        tab.revision += 1;
    }
}

/// A line of the file being edited in the virtualised view.
pub(super) struct EditLine<'a> {
    path: &'a str,
    text: &'a str,
    /// Its byte range in the file, without the newline.
    range: Range<usize>,
    index: usize,
    count: usize,
}

/// The line being edited, as a single-line `TextEdit`. Returns a change (byte range,
/// replacement) to splice into the file once the rows are drawn.
pub(super) fn edit_line(
    ui: &mut egui::Ui,
    line: EditLine<'_>,
    rect: egui::Rect,
    font: &FontId,
    view: &mut View,
) -> Option<(Range<usize>, String)> {
    let EditLine {
        path,
        text,
        range,
        index,
        count,
    } = line;
    let id = Id::unique(("tandem-line-edit", path));
    let ctx = ui.ctx().clone();
    let placed = view.place_cursor.take();
    if let Some(column) = placed {
        let mut state = TextEditState::load(&ctx, id).unwrap_or_default();
        state
            .cursor
            .set_char_range(Some(CCursorRange::one(CCursor::new(column))));
        state.store(&ctx, id);
        ctx.memory_mut(|m| m.request_focus(id));
    }
    let chars = text.chars().count();
    let cursor = TextEditState::load(&ctx, id).and_then(|s| s.cursor.char_range());
    let column = cursor.map_or(chars, |r| r.primary.index.0.min(chars));
    let collapsed = cursor.is_none_or(|r| r.primary == r.secondary);
    if ctx.memory(|m| m.has_focus(id)) {
        if escape_pressed(ui) {
            view.editing = None;
            return None;
        }
        // A single-line TextEdit would flatten pasted lines: splice them in here instead.
        if let Some(pasted) = take_multiline_paste(ui) {
            let byte = |c: usize| text.char_indices().nth(c).map_or(text.len(), |(i, _)| i);
            let (from, to) = cursor.map_or((chars, chars), |r| {
                let [a, b] = r.sorted_cursors().map(|c| c.index.0.min(chars));
                (a, b)
            });
            let last = pasted.rsplit('\n').next().unwrap_or("").chars().count();
            move_to(view, index + pasted.matches('\n').count(), last);
            return Some((range.start + byte(from)..range.start + byte(to), pasted));
        }
        // Line-crossing keys are taken before the TextEdit sees them.
        let [enter, up, down, join_up, join_down] = ui.input_mut(|i| {
            let mut key = |key| i.consume_key(Modifiers::NONE, key);
            [
                key(Key::Enter),
                index > 0 && key(Key::ArrowUp),
                index + 1 < count && key(Key::ArrowDown),
                collapsed && column == 0 && index > 0 && key(Key::Backspace),
                collapsed && column == chars && index + 1 < count && key(Key::Delete),
            ]
        });
        if enter {
            let at = range.start
                + text
                    .char_indices()
                    .nth(column)
                    .map_or(text.len(), |(i, _)| i);
            let indent: String = text
                .chars()
                .take_while(|c| *c == ' ' || *c == '\t')
                .collect();
            move_to(view, index + 1, indent.chars().count());
            return Some((at..at, format!("\n{indent}")));
        }
        if up || down {
            move_to(view, if up { index - 1 } else { index + 1 }, column);
        }
        if join_up {
            // The cursor lands where the lines meet: the end of the line above (the TextEdit
            // clamps the column to the line).
            move_to(view, index - 1, usize::MAX);
            return Some((range.start - 1..range.start, String::new()));
        }
        if join_down {
            return Some((range.end..range.end + 1, String::new()));
        }
    } else if placed.is_none() {
        // Focus went elsewhere (a click outside): stop editing after this frame.
        view.editing = None;
    }
    let mut edited = text.to_string();
    let output = TextEdit::singleline(&mut edited)
        .id(id)
        .font(font.clone())
        .frame(egui::Frame::NONE)
        .desired_width(rect.width())
        .return_key(None)
        .show(&mut ui.new_child(egui::UiBuilder::new().max_rect(rect)));
    name_for_screen_readers(ui, id, &format!("{path} line {}", index + 1));
    (output.response.changed() && edited != text).then_some((range, edited))
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
