//! The editor for files up to [`LARGE_FILE_LINES`](super::LARGE_FILE_LINES) lines: egui's
//! multiline `TextEdit` over a [`Tracked`] buffer, laid out from the highlight cache's
//! whole-file galley, with line numbers for the visible rows.

use std::cell::Cell;
use std::ops::Range;
use std::time::Instant;

use egui::text::{CCursor, CharIndex, TextFormat};
use egui::{FontId, Sense, TextBuffer, TextEdit};

use super::{BUDGET, editor_id, gutter_width, name_for_screen_readers};
use crate::model::state::Tab;
use crate::widgets::highlight::{FindMarks, HighlightCache};

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

pub(super) fn small_view(
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
