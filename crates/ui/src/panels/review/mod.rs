//! The proposal review: what a reply would change, file by file and hunk by hunk, with the
//! checkboxes that decide what Approve applies. Renders [`Review`] and pushes [`Command`]s;
//! its only own state is view state in egui memory (open files, "show more", the cursor last
//! scrolled to).

use egui::collapsing_header::CollapsingState;
use egui::{
    Align, Button, Checkbox, Color32, CornerRadius, Frame, Id, Label, Layout, Margin, Rect,
    RichText, ScrollArea, Sense, Stroke, StrokeKind, Ui, UiBuilder, pos2, vec2,
};

use crate::command::Command;
use crate::model::review::{FileChoice, Review};
use crate::widgets::diff_view::{self, DiffStyle, LONG_HUNK_ROWS, Side, SplitRow, WordSpans};
use tandem_core::edits::{DiffLine, FileChange, FileChangeKind, Hunk};

/// The cursor the view last scrolled to: (message id, (file, hunk)).
type Seen = (i64, (usize, usize));

/// Shows the review of `review`; `side_by_side` picks the diff layout; `run`, when given,
/// the Run panel of the chat's workspace under the header (only where the proposal is in
/// the workspace: a Build chat's is written only when approved, a run would not see it).
pub fn show(
    ui: &mut Ui,
    review: &Review,
    side_by_side: bool,
    run: Option<&RunPanel<'_>>,
    commands: &mut Vec<Command>,
) {
    header(ui, review, side_by_side, commands);
    if let Some(run) = run {
        ui.separator();
        run::show(ui, run, commands);
    }
    ui.separator();
    let mut view = View::new(ui, review, side_by_side);
    ScrollArea::both()
        .id_salt("tandem_review")
        .auto_shrink([false, false])
        .show(ui, |ui| {
            if review.plan.files.is_empty() {
                ui.weak("This proposal changes no files.");
            }
            for index in 0..review.plan.files.len() {
                view.file(ui, index, commands);
                ui.add_space(4.0);
            }
            extras(ui, review, &view.style, commands);
        });
    view.finish(ui);
}

fn header(ui: &mut Ui, review: &Review, side_by_side: bool, commands: &mut Vec<Command>) {
    let plan = &review.plan;
    let colors = diff_view::DiffColors::new(ui.visuals());
    if let Some(summary) = &plan.summary {
        ui.add(Label::new(RichText::new(summary).strong()).wrap());
    }
    ui.horizontal_wrapped(|ui| {
        let approve =
            Button::new(RichText::new("Approve").strong()).fill(ui.visuals().selection.bg_fill);
        let approve = ui
            .add_enabled(review.anything_checked(), approve)
            .on_hover_text(crate::keymap::hint(ui, &Command::Approve))
            .on_disabled_hover_text("Check a file, hunk or dependency to approve");
        if approve.clicked() {
            commands.push(Command::Approve);
        }
        let reject = ui.button("Reject").on_hover_text("Discard this proposal");
        if reject.clicked() {
            commands.push(Command::Reject);
        }
        // What is left out (or rejected) is told to the model on the next turn, with this.
        let mut reason = review.reason.clone();
        let edit = egui::TextEdit::singleline(&mut reason)
            .hint_text("Why not? (tells the model)")
            .desired_width(200.0);
        if ui.add(edit).changed() {
            commands.push(Command::SetReviewReason(reason));
        }
        ui.separator();
        let files = plan.files.len();
        ui.label(format!(
            "{files} file{},",
            if files == 1 { "" } else { "s" }
        ));
        let added = plan.files.iter().map(|f| f.added).sum();
        let removed = plan.files.iter().map(|f| f.removed).sum();
        counts(ui, &colors, added, removed);
        ui.separator();
        // Two exclusive options over one boolean: only clicking the other one toggles.
        for (label, on) in [("Unified", !side_by_side), ("Side-by-side", side_by_side)] {
            if ui.selectable_label(on, label).clicked() && !on {
                commands.push(Command::ToggleSideBySide);
            }
        }
        ui.separator();
        ui.weak("n / p: next / previous hunk");
    });
}

/// Drawing context for one frame of the review.
struct View<'a> {
    review: &'a Review,
    style: DiffStyle,
    side_by_side: bool,
    /// Height of a hunk's header bar (and of its "show more" bar).
    bar_height: f32,
    /// The cursor moved since the view last scrolled to it: open its file and scroll.
    seek: bool,
    /// The cursor's hunk (or file) was reached and scrolled to this frame.
    found: bool,
}

impl<'a> View<'a> {
    fn new(ui: &Ui, review: &'a Review, side_by_side: bool) -> Self {
        let seen: Option<Seen> = ui.data(|d| d.get_temp(last_cursor_id()));
        let current = (review.message_id, review.cursor);
        // A fresh review starts at the top: no jump to its first hunk.
        let fresh = seen.is_none_or(|(message, _)| message != review.message_id);
        let seek = seen != Some(current) && !(fresh && review.cursor == (0, 0));
        if !seek {
            ui.data_mut(|d| d.insert_temp(last_cursor_id(), current));
        }
        let body = ui.text_style_height(&egui::TextStyle::Body);
        View {
            review,
            style: DiffStyle::new(ui),
            side_by_side,
            bar_height: (ui.spacing().interact_size.y.max(body) + 4.0).round(),
            seek,
            found: false,
        }
    }

    /// Remembers the cursor once it has been scrolled to, so the view scrolls only when the
    /// cursor moves. Until then (its file was still opening) the next frame tries again.
    fn finish(self, ui: &Ui) {
        let file_exists = self.review.plan.files.len() > self.review.cursor.0;
        if self.seek && (self.found || !file_exists) {
            let current: Seen = (self.review.message_id, self.review.cursor);
            ui.data_mut(|d| d.insert_temp(last_cursor_id(), current));
        }
    }

    fn scroll_to(&mut self, ui: &Ui, rect: Rect) {
        // Only the left edge counts horizontally: a wide hunk must not scroll sideways.
        let target = Rect::from_x_y_ranges(rect.left()..=rect.left() + 1.0, rect.y_range());
        let fits = rect.height() < ui.clip_rect().height();
        ui.scroll_to_rect(target, Some(if fits { Align::Center } else { Align::Min }));
        self.found = true;
    }

    fn outline(&self, ui: &Ui, rect: Rect) {
        let stroke = Stroke::new(1.5, ui.visuals().selection.stroke.color);
        let (rect, radius) = (rect.expand(1.0), CornerRadius::same(3));
        ui.painter()
            .rect_stroke(rect, radius, stroke, StrokeKind::Outside);
    }

    fn file(&mut self, ui: &mut Ui, index: usize, commands: &mut Vec<Command>) {
        let Some((file, choice)) = self.review.file(index) else {
            return;
        };
        let id = Id::unique(("tandem_review_file", self.review.message_id, index));
        let mut state = CollapsingState::load_with_default_open(ui.ctx(), id, choice.expanded);
        let at_cursor = self.review.cursor.0 == index;
        if self.seek && at_cursor {
            state.set_open(true);
        }
        let style = &self.style;
        let (_, header, body) = state
            .show_header(ui, |ui| {
                file_header(ui, style, index, file, choice, commands)
            })
            .body(|ui| self.file_body(ui, index, file, choice, commands));
        // A file without hunks (binary, pure rename) is one cursor stop: outline all of it.
        if at_cursor && self.review.cursor.1 >= file.hunks.len() {
            let rect = match body {
                Some(body) => header.response.rect.union(body.response.rect),
                None => header.response.rect,
            };
            self.outline(ui, rect);
            if self.seek {
                self.scroll_to(ui, rect);
            }
        }
    }

    fn file_body(
        &mut self,
        ui: &mut Ui,
        index: usize,
        file: &FileChange,
        choice: &FileChoice,
        commands: &mut Vec<Command>,
    ) {
        let visuals = ui.visuals().clone();
        if let Some(error) = &file.error {
            ui.colored_label(visuals.error_fg_color, format!("Cannot apply: {error}"));
        }
        if let Some(conflict) = &file.conflict {
            ui.colored_label(visuals.warn_fg_color, format!("Conflict: {conflict}"));
        }
        if file.binary || file.hunks.is_empty() {
            ui.weak(match file.kind {
                _ if file.binary => "binary file",
                FileChangeKind::Renamed => "renamed without content changes",
                FileChangeKind::Added => "empty file",
                _ => "no line changes",
            });
            return;
        }
        let ends = file
            .hunks
            .iter()
            .map(|h| (h.old_start + h.old_len).max(h.new_start + h.new_len));
        let digits = diff_view::digits(ends.max().unwrap_or(0));
        let applicable = file.applicable();
        for (h, hunk) in file.hunks.iter().enumerate() {
            let checked = applicable && choice.hunks.get(h).copied().unwrap_or(false);
            self.hunk(
                ui,
                (index, h),
                hunk,
                digits,
                (applicable, checked),
                commands,
            );
            ui.add_space(4.0);
        }
    }

    /// One hunk: its header bar, then its rows. Off-screen hunks are only measured.
    fn hunk(
        &mut self,
        ui: &mut Ui,
        at: (usize, usize),
        hunk: &Hunk,
        digits: usize,
        (enabled, checked): (bool, bool),
        commands: &mut Vec<Command>,
    ) {
        let message = self.review.message_id;
        let measure = measure(ui, message, at, hunk);
        let total = if self.side_by_side {
            measure.split_rows
        } else {
            hunk.lines.len()
        };
        let more_id = Id::unique(("tandem_review_more", message, at));
        let all = total <= LONG_HUNK_ROWS || ui.data(|d| d.get_temp(more_id)).unwrap_or(false);
        let shown = if all { total } else { LONG_HUNK_ROWS };
        let (style, side_by_side, bar_height) = (&self.style, self.side_by_side, self.bar_height);
        let available = ui.available_width();
        let column = style
            .row_width(digits, 1, measure.widest)
            .max(available / 2.0);
        let width = match side_by_side {
            true => 2.0 * column,
            false => style.row_width(digits, 2, measure.widest).max(available),
        };
        let bars = if all { 1.0 } else { 2.0 };
        let height = bars * bar_height + shown as f32 * style.row_height;
        let block = Rect::from_min_size(ui.cursor().min, vec2(width, height));
        let at_cursor = self.review.cursor == at;
        if at_cursor && self.seek {
            self.scroll_to(ui, block);
        }
        if !ui.is_rect_visible(block) {
            ui.allocate_exact_size(block.size(), Sense::hover());
            return;
        }
        let style = &self.style;
        ui.scope(|ui| {
            ui.spacing_mut().item_spacing.y = 0.0;
            let bar_id = Id::unique(("tandem_hunk_bar", message, at));
            let mut title_bar = bar(ui, bar_id, width, bar_height, style.colors.hunk_bg);
            let mut on = checked;
            let toggle = title_bar.add_enabled(enabled, Checkbox::without_text(&mut on));
            if toggle.on_hover_text("Include this hunk").changed() {
                commands.push(Command::ToggleHunk(at.0, at.1));
            }
            let title = RichText::new(diff_view::hunk_header(hunk)).monospace();
            title_bar.label(title.color(style.colors.hunk_fg));
            counts(&mut title_bar, &style.colors, hunk.added, hunk.removed);

            let rows_id = Id::unique(("tandem_review_rows", message, at));
            let lines = &hunk.lines;
            if side_by_side {
                let pairs = diff_view::split_rows(lines);
                diff_view::virtual_rows(ui, shown, style.row_height, width, |ui, row| {
                    let pair = pairs.get(row).copied().unwrap_or_default();
                    split(ui, style, rows_id.with(row), column, digits, lines, pair);
                });
            } else {
                let partners = diff_view::partners(lines);
                diff_view::virtual_rows(ui, shown, style.row_height, width, |ui, row| {
                    let Some(line) = lines.get(row) else { return };
                    let partner = partners.get(row).copied().flatten();
                    let spans = diff_view::emphasis(ui, lines, row, partner);
                    let id = rows_id.with(row);
                    diff_view::unified_row(ui, style, id, width, digits, line, &spans);
                });
            }
            if !all {
                let more_bar = Id::unique(("tandem_hunk_more", message, at));
                let mut more = bar(ui, more_bar, width, bar_height, Color32::TRANSPARENT);
                if more
                    .small_button(format!("Show {} more lines", total - shown))
                    .clicked()
                {
                    more.data_mut(|d| d.insert_temp(more_id, true));
                }
            }
        });
        if at_cursor {
            self.outline(ui, block);
        }
    }
}

/// Sizing a hunk needs from all of its lines. A plan does not change while it is reviewed,
/// so this is computed once per hunk and kept in egui memory: off-screen hunks then cost
/// nothing per frame.
#[derive(Debug, Clone, Copy)]
struct Measure {
    widest: usize,
    split_rows: usize,
}

fn measure(ui: &Ui, message: i64, at: (usize, usize), hunk: &Hunk) -> Measure {
    let id = Id::unique(("tandem_review_measure", message, at, hunk.lines.len()));
    ui.data_mut(|d| {
        *d.get_temp_mut_or_insert_with(id, || Measure {
            widest: hunk
                .lines
                .iter()
                .map(diff_view::line_columns)
                .max()
                .unwrap_or(0),
            split_rows: diff_view::split_rows(&hunk.lines).len(),
        })
    })
}

fn split(
    ui: &mut Ui,
    style: &DiffStyle,
    id: Id,
    column: f32,
    digits: usize,
    lines: &[DiffLine],
    pair: SplitRow,
) {
    let old = pair.old.and_then(|i| lines.get(i));
    let new = pair.new.and_then(|i| lines.get(i));
    let spans = match (old, new) {
        (Some(old), Some(new)) if pair.old != pair.new => {
            diff_view::cached_word_spans(ui, &old.text, &new.text)
        }
        _ => WordSpans::default(),
    };
    let left = old.map(|line| Side {
        line,
        spans: &spans.old,
    });
    let right = new.map(|line| Side {
        line,
        spans: &spans.new,
    });
    diff_view::split_row(ui, style, id, column, digits, left, right);
}

/// A fixed-height bar: its space is allocated exactly, so a hunk measured off screen and
/// the same hunk drawn have one height. Widgets go in the returned child `Ui`.
fn bar(ui: &mut Ui, id: Id, width: f32, height: f32, fill: Color32) -> Ui {
    let (rect, _) = ui.allocate_exact_size(vec2(width, height), Sense::hover());
    ui.painter().rect_filled(rect, 0.0, fill);
    let inner = Rect::from_min_max(pos2(rect.left() + 4.0, rect.top()), rect.max);
    let layout = Layout::left_to_right(Align::Center);
    ui.new_child(UiBuilder::new().scope_id(id).max_rect(inner).layout(layout))
}

fn counts(ui: &mut Ui, colors: &diff_view::DiffColors, added: usize, removed: usize) {
    ui.label(
        RichText::new(format!("+{added}"))
            .monospace()
            .color(colors.added_fg),
    );
    ui.label(
        RichText::new(format!("−{removed}"))
            .monospace()
            .color(colors.removed_fg),
    );
}

fn file_header(
    ui: &mut Ui,
    style: &DiffStyle,
    index: usize,
    file: &FileChange,
    choice: &FileChoice,
    commands: &mut Vec<Command>,
) {
    let (visuals, colors) = (ui.visuals().clone(), &style.colors);
    let applicable = file.applicable();
    let mut checked = applicable && choice.checked;
    let some = choice.hunks.iter().any(|h| *h);
    let partial = applicable && some && !choice.hunks.iter().all(|h| *h);
    let checkbox = Checkbox::without_text(&mut checked).indeterminate(partial);
    let reason = file.error.as_deref().or(file.conflict.as_deref());
    let toggle = ui
        .add_enabled(applicable, checkbox)
        .on_hover_text("Include this file")
        .on_disabled_hover_text(reason.unwrap_or_default());
    if toggle.changed() {
        commands.push(Command::ToggleFile(index));
    }
    let (kind, color) = match file.kind {
        FileChangeKind::Added => ("new", colors.added_fg),
        FileChangeKind::Modified => ("modified", colors.hunk_fg),
        FileChangeKind::Renamed => ("renamed", colors.renamed_fg),
        FileChangeKind::Deleted => ("deleted", colors.removed_fg),
    };
    badge(ui, kind, color);
    let path = |text: &str| RichText::new(text).monospace();
    // The link opens what is on disk now: a new file is not there until approved, and a
    // renamed one is still at its old path.
    let on_disk = match (file.kind, file.old_path.as_deref()) {
        (FileChangeKind::Added, _) => None,
        (FileChangeKind::Renamed, Some(old)) => Some(old),
        _ => Some(file.path.as_str()),
    };
    match on_disk {
        Some(target) => {
            if ui.link(path(target)).on_hover_text("Open file").clicked() {
                commands.push(Command::OpenFile(target.to_string()));
            }
        }
        None => {
            ui.label(path(&file.path))
                .on_hover_text("Created when approved");
        }
    }
    if file.kind == FileChangeKind::Renamed && file.old_path.is_some() {
        ui.label("➡");
        ui.label(path(&file.path));
    }
    if !file.binary {
        counts(ui, colors, file.added, file.removed);
    }
    if file.error.is_some() {
        badge(ui, "error", visuals.error_fg_color);
    } else if file.conflict.is_some() {
        badge(ui, "conflict", visuals.warn_fg_color);
    }
}

fn badge(ui: &mut Ui, text: &str, color: Color32) {
    Frame::new()
        .fill(color.gamma_multiply(0.15))
        .stroke(Stroke::new(1.0, color.gamma_multiply(0.6)))
        .corner_radius(CornerRadius::same(4))
        .inner_margin(Margin::symmetric(5, 0))
        .show(ui, |ui| ui.label(RichText::new(text).small().color(color)));
}

fn section(ui: &mut Ui, title: &str) {
    ui.add_space(8.0);
    ui.separator();
    ui.strong(title);
}

fn wrapped(ui: &mut Ui, text: impl Into<String>, color: Color32) {
    ui.add(Label::new(RichText::new(text).color(color)).wrap());
}

fn last_cursor_id() -> Id {
    Id::unique("tandem_review_last_cursor")
}

mod extras;
mod run;
use extras::extras;
pub use run::RunPanel;

#[cfg(test)]
mod tests;
