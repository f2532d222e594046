//! Diff rendering shared by the proposal review and the History tab: colours, line rows
//! (unified and side-by-side), changed-word emphasis, and a viewer for plain `git` diff text.
//!
//! Rows have one fixed height and wrapping is off, so a block of N lines is exactly
//! N × row height tall: callers allocate that space and only the rows inside the clip rect
//! are laid out (see [`virtual_rows`]). That keeps thousand-line diffs cheap per frame.

use std::ops::Range;

use egui::cache::{ComputerMut, FrameCache};
use egui::text::{LayoutJob, TextFormat};
use egui::{
    Align, Align2, Color32, FontId, Id, Label, Layout, Rect, Sense, TextStyle, Ui, UiBuilder,
    Visuals, pos2, vec2,
};
use similar::{Algorithm, DiffTag, capture_diff_slices};

use tandem_core::edits::{DiffLine, Hunk, LineKind};

/// Rows of one hunk shown before a "show more" button (the rest is one click away).
pub const LONG_HUNK_ROWS: usize = 400;

/// Lines longer than this (bytes) get no word emphasis: the token diff would cost more
/// than it helps on minified or generated lines.
const MAX_WORD_DIFF_BYTES: usize = 500;

/// Above this share of changed text, a pair of lines is a rewrite: emphasising nearly every
/// word is noise, so nothing is emphasised.
const MAX_CHANGED_SHARE: f32 = 0.6;

/// Suffix marking a last line without a line break.
const NO_NEWLINE: &str = "  (no newline at end of file)";

/// Colours for diffs, picked for the current theme so dark and light both read well.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct DiffColors {
    pub added_bg: Color32,
    pub removed_bg: Color32,
    pub added_word: Color32,
    pub removed_word: Color32,
    pub added_fg: Color32,
    pub removed_fg: Color32,
    pub renamed_fg: Color32,
    pub hunk_fg: Color32,
    pub hunk_bg: Color32,
    pub empty_bg: Color32,
    pub text: Color32,
    pub weak: Color32,
    pub strong: Color32,
}

impl DiffColors {
    pub fn new(visuals: &Visuals) -> Self {
        let dark = visuals.dark_mode;
        let pick = |d: (u8, u8, u8), l: (u8, u8, u8)| if dark { d } else { l };
        let green = pick((46, 160, 67), (26, 127, 55));
        let red = pick((248, 81, 73), (207, 34, 46));
        let blue = pick((56, 139, 253), (9, 105, 218));
        let rgba = |(r, g, b): (u8, u8, u8), a: u8| Color32::from_rgba_unmultiplied(r, g, b, a);
        let rgb = |(r, g, b): (u8, u8, u8)| Color32::from_rgb(r, g, b);
        DiffColors {
            added_bg: rgba(green, if dark { 40 } else { 34 }),
            removed_bg: rgba(red, if dark { 40 } else { 30 }),
            added_word: rgba(green, if dark { 115 } else { 90 }),
            removed_word: rgba(red, if dark { 115 } else { 85 }),
            added_fg: rgb(pick((63, 185, 80), (26, 127, 55))),
            removed_fg: rgb(red),
            renamed_fg: rgb(pick((188, 140, 255), (130, 80, 223))),
            hunk_fg: rgb(pick((121, 192, 255), (9, 105, 218))),
            hunk_bg: rgba(blue, if dark { 28 } else { 22 }),
            // Visible on both themes: the missing side of a side-by-side row.
            empty_bg: Color32::from_rgba_unmultiplied(128, 128, 128, 20),
            text: visuals.text_color(),
            weak: visuals.weak_text_color(),
            strong: visuals.strong_text_color(),
        }
    }

    /// Line background, changed-word background, sign and sign colour of a kind of line.
    fn of(&self, kind: LineKind) -> (Color32, Color32, &'static str, Color32) {
        match kind {
            LineKind::Added => (self.added_bg, self.added_word, "+", self.added_fg),
            LineKind::Removed => (self.removed_bg, self.removed_word, "-", self.removed_fg),
            LineKind::Context => (Color32::TRANSPARENT, Color32::TRANSPARENT, " ", self.weak),
        }
    }
}

/// Font and metrics of diff rows, measured once per frame.
#[derive(Debug, Clone)]
pub struct DiffStyle {
    pub colors: DiffColors,
    pub font: FontId,
    pub row_height: f32,
    pub char_width: f32,
}

impl DiffStyle {
    pub fn new(ui: &Ui) -> Self {
        let font = TextStyle::Monospace.resolve(ui.style());
        let (row_height, char_width) = ui
            .ctx()
            .fonts_mut(|f| (f.row_height(&font), f.glyph_width(&font, '0')));
        DiffStyle {
            colors: DiffColors::new(ui.visuals()),
            font,
            // A little air between rows; whole points keep every row on the pixel grid.
            row_height: (row_height + 2.0).round(),
            char_width: char_width.max(1.0),
        }
    }

    /// Width of a line-number column for numbers of `digits` digits.
    pub fn gutter(&self, digits: usize) -> f32 {
        (digits as f32 + 1.5) * self.char_width
    }

    /// Width of a row (or side-by-side half) with `gutters` number columns whose widest
    /// text has `columns` cells.
    pub fn row_width(&self, digits: usize, gutters: usize, columns: usize) -> f32 {
        gutters as f32 * self.gutter(digits) + (columns as f32 + 3.0) * self.char_width
    }
}

/// Monospace cells a line needs, never fewer than it takes on screen: bytes overcount
/// multi-byte characters (which may be wide), and a tab is up to four cells.
pub fn columns(text: &str) -> usize {
    text.len() + 3 * text.bytes().filter(|b| *b == b'\t').count()
}

/// Cells a diff line needs including its no-newline marker.
pub fn line_columns(line: &DiffLine) -> usize {
    columns(&line.text) + if line.no_newline { NO_NEWLINE.len() } else { 0 }
}

/// Digits of the widest line number (at least 3, so short files line up alike).
pub fn digits(max_line: usize) -> usize {
    (max_line.max(1).ilog10() as usize + 1).max(3)
}

/// The `@@ -a,b +c,d @@` header of a hunk, as `git diff` prints it.
pub fn hunk_header(hunk: &Hunk) -> String {
    let range = |start: usize, len: usize| {
        let first = if len == 0 { start } else { start + 1 };
        format!("{first},{len}")
    };
    format!(
        "@@ -{} +{} @@",
        range(hunk.old_start, hunk.old_len),
        range(hunk.new_start, hunk.new_len)
    )
}

/// One row of a side-by-side view: indices into the hunk's lines (old left, new right).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SplitRow {
    pub old: Option<usize>,
    pub new: Option<usize>,
}

/// Pairs each run of removed lines with the added lines that follow it, row by row; context
/// lines sit on both sides. An unpaired line has an empty other side.
pub fn split_rows(lines: &[DiffLine]) -> Vec<SplitRow> {
    let mut rows = Vec::with_capacity(lines.len());
    let mut i = 0;
    while i < lines.len() {
        if lines[i].kind == LineKind::Context {
            rows.push(SplitRow {
                old: Some(i),
                new: Some(i),
            });
            i += 1;
            continue;
        }
        let removed_start = i;
        while i < lines.len() && lines[i].kind == LineKind::Removed {
            i += 1;
        }
        let added_start = i;
        while i < lines.len() && lines[i].kind == LineKind::Added {
            i += 1;
        }
        let (removed, added) = (added_start - removed_start, i - added_start);
        for k in 0..removed.max(added) {
            rows.push(SplitRow {
                old: (k < removed).then_some(removed_start + k),
                new: (k < added).then_some(added_start + k),
            });
        }
    }
    rows
}

/// For a unified view: each changed line's counterpart (the removed line an added line
/// replaces, and the other way round), paired the same way as [`split_rows`].
pub fn partners(lines: &[DiffLine]) -> Vec<Option<usize>> {
    let mut partners = vec![None; lines.len()];
    for row in split_rows(lines) {
        if let (Some(old), Some(new)) = (row.old, row.new)
            && old != new
        {
            partners[old] = Some(new);
            partners[new] = Some(old);
        }
    }
    partners
}

/// Byte ranges that differ between a removed line and the added line replacing it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct WordSpans {
    pub old: Vec<Range<usize>>,
    pub new: Vec<Range<usize>>,
}

/// Splits code into identifiers/numbers, whitespace runs and single punctuation
/// characters: finer than whitespace words, so `foo(bar)` ➡ `foo(baz)` marks only `bar`.
/// Returns the tokens and their byte offsets.
fn tokens(text: &str) -> (Vec<&str>, Vec<usize>) {
    // 0: identifier or number, 1: whitespace, 2: punctuation (always a token of its own).
    let class = |c: char| match c {
        c if c.is_alphanumeric() || c == '_' => 0,
        c if c.is_whitespace() => 1,
        _ => 2,
    };
    let mut starts = Vec::new();
    let mut previous = None;
    for (at, c) in text.char_indices() {
        let now = class(c);
        if previous != Some(now) || now == 2 {
            starts.push(at);
        }
        previous = Some(now);
    }
    let ends = starts.iter().skip(1).copied().chain([text.len()]);
    let tokens = starts
        .iter()
        .zip(ends)
        .map(|(&start, end)| text.get(start..end).unwrap_or_default())
        .collect();
    (tokens, starts)
}

/// The changed words between two lines, or nothing when the lines are too long or too
/// different for word emphasis to help.
pub fn word_spans(old: &str, new: &str) -> WordSpans {
    if old.len() > MAX_WORD_DIFF_BYTES || new.len() > MAX_WORD_DIFF_BYTES || old == new {
        return WordSpans::default();
    }
    let (old_tokens, old_starts) = tokens(old);
    let (new_tokens, new_starts) = tokens(new);
    let byte_range = |starts: &[usize], text: &str, range: Range<usize>| {
        let start = starts.get(range.start).copied().unwrap_or(text.len());
        let end = starts.get(range.end).copied().unwrap_or(text.len());
        start..end
    };
    let mut spans = WordSpans::default();
    for op in capture_diff_slices(Algorithm::Myers, &old_tokens, &new_tokens) {
        let (tag, old_range, new_range) = op.as_tag_tuple();
        if tag == DiffTag::Equal {
            continue;
        }
        if !old_range.is_empty() {
            spans.old.push(byte_range(&old_starts, old, old_range));
        }
        if !new_range.is_empty() {
            spans.new.push(byte_range(&new_starts, new, new_range));
        }
    }
    spans.old = merge_spans(old, spans.old);
    spans.new = merge_spans(new, spans.new);
    let share = |text: &str, spans: &[Range<usize>]| {
        let changed: usize = spans.iter().map(|s| s.len()).sum();
        changed as f32 / text.trim().len().max(1) as f32
    };
    if share(old, &spans.old) > MAX_CHANGED_SHARE && share(new, &spans.new) > MAX_CHANGED_SHARE {
        return WordSpans::default();
    }
    spans
}

/// Joins spans separated only by whitespace, so `a b` ➡ `c d` is one emphasised run.
fn merge_spans(text: &str, spans: Vec<Range<usize>>) -> Vec<Range<usize>> {
    let mut merged: Vec<Range<usize>> = Vec::with_capacity(spans.len());
    for span in spans {
        if let Some(last) = merged.last_mut()
            && text
                .get(last.end..span.start)
                .is_some_and(|gap| gap.trim().is_empty())
        {
            last.end = span.end;
            continue;
        }
        merged.push(span);
    }
    merged
}

/// Computes word spans for pairs of lines on screen, kept while they stay on screen.
#[derive(Default)]
struct WordDiffer;

impl<'a> ComputerMut<(&'a str, &'a str), WordSpans> for WordDiffer {
    fn compute(&mut self, (old, new): (&'a str, &'a str)) -> WordSpans {
        word_spans(old, new)
    }
}

type WordCache = FrameCache<WordSpans, WordDiffer>;

/// [`word_spans`], cached in egui memory across frames.
pub fn cached_word_spans(ui: &Ui, old: &str, new: &str) -> WordSpans {
    ui.ctx()
        .memory_mut(|m| m.caches.cache::<WordCache>().get((old, new)).clone())
}

/// The emphasised spans of `lines[index]` given its partner (from [`partners`]).
pub fn emphasis(
    ui: &Ui,
    lines: &[DiffLine],
    index: usize,
    partner: Option<usize>,
) -> Vec<Range<usize>> {
    let (Some(line), Some(other)) = (lines.get(index), partner.and_then(|p| lines.get(p))) else {
        return Vec::new();
    };
    match line.kind {
        LineKind::Removed => cached_word_spans(ui, &line.text, &other.text).old,
        LineKind::Added => cached_word_spans(ui, &other.text, &line.text).new,
        LineKind::Context => Vec::new(),
    }
}

/// A diff line's text with its changed spans on a stronger background.
pub fn line_job(style: &DiffStyle, line: &DiffLine, spans: &[Range<usize>]) -> LayoutJob {
    let colors = &style.colors;
    let plain = TextFormat::simple(style.font.clone(), colors.text);
    let strong = TextFormat {
        background: colors.of(line.kind).1,
        expand_bg: 0.0,
        ..plain.clone()
    };
    let text = line.text.as_str();
    let mut job = LayoutJob::default();
    let mut at = 0;
    for span in spans {
        let (Some(before), Some(changed)) = (text.get(at..span.start), text.get(span.clone()))
        else {
            continue;
        };
        job.append(before, 0.0, plain.clone());
        job.append(changed, 0.0, strong.clone());
        at = span.end;
    }
    job.append(text.get(at..).unwrap_or_default(), 0.0, plain);
    if line.no_newline {
        let weak = TextFormat {
            italics: true,
            ..TextFormat::simple(style.font.clone(), colors.weak)
        };
        job.append(NO_NEWLINE, 0.0, weak);
    }
    job
}

/// Lays out only the rows of `count` that intersect the clip rect; the others are plain
/// space, so the block's size (and the scroll extent) stays exact. Each `draw` call must
/// allocate exactly one row of `row_height`.
pub fn virtual_rows(
    ui: &mut Ui,
    count: usize,
    row_height: f32,
    width: f32,
    mut draw: impl FnMut(&mut Ui, usize),
) -> Rect {
    ui.scope(|ui| {
        ui.spacing_mut().item_spacing.y = 0.0;
        let top = ui.cursor().min.y;
        let clip = ui.clip_rect();
        let row = |y: f32| ((y - top) / row_height).max(0.0) as usize;
        let first = row(clip.top()).min(count);
        let last = (row(clip.bottom()) + 1).clamp(first, count);
        if first > 0 {
            ui.allocate_exact_size(vec2(width, first as f32 * row_height), Sense::hover());
        }
        for index in first..last {
            draw(ui, index);
        }
        if last < count {
            let rest = (count - last) as f32 * row_height;
            ui.allocate_exact_size(vec2(width, rest), Sense::hover());
        }
        ui.min_rect()
    })
    .inner
}

/// Places selectable code text in `rect` with a stable id (rows come and go as they scroll).
fn text_in(ui: &mut Ui, id: Id, rect: Rect, job: LayoutJob) {
    let builder = UiBuilder::new()
        .scope_id(id)
        .max_rect(rect)
        .layout(Layout::left_to_right(Align::Center));
    let mut child = ui.new_child(builder);
    child.add(Label::new(job).selectable(true).extend());
}

/// Paints a row's background, its line-number columns (one per entry of `numbers`, each
/// right-aligned) and its sign; returns the rect left for the text.
fn paint_gutter(
    ui: &Ui,
    style: &DiffStyle,
    rect: Rect,
    digits: usize,
    kind: LineKind,
    numbers: &[Option<usize>],
) -> Rect {
    let (bg, _, sign, sign_color) = style.colors.of(kind);
    let painter = ui.painter();
    let text = |x: f32, anchor, text: String, color| {
        painter.text(
            pos2(x, rect.center().y),
            anchor,
            text,
            style.font.clone(),
            color,
        );
    };
    painter.rect_filled(rect, 0.0, bg);
    let cell = style.char_width;
    let mut x = rect.left();
    for number in numbers {
        x += style.gutter(digits);
        if let Some(number) = number {
            let right = x - 0.75 * cell;
            text(
                right,
                Align2::RIGHT_CENTER,
                number.to_string(),
                style.colors.weak,
            );
        }
    }
    text(
        x + 0.5 * cell,
        Align2::LEFT_CENTER,
        sign.to_string(),
        sign_color,
    );
    Rect::from_min_max(pos2(x + 2.0 * cell, rect.top()), rect.max)
}

/// One unified row: old and new line numbers, sign, text.
pub fn unified_row(
    ui: &mut Ui,
    style: &DiffStyle,
    id: Id,
    width: f32,
    digits: usize,
    line: &DiffLine,
    spans: &[Range<usize>],
) {
    let (rect, _) = ui.allocate_exact_size(vec2(width, style.row_height), Sense::hover());
    // A removed line has only an old number, an added one only a new one.
    let numbers = [line.old_line, line.new_line];
    let text = paint_gutter(ui, style, rect, digits, line.kind, &numbers);
    text_in(ui, id, text, line_job(style, line, spans));
}

/// One side of a side-by-side row.
pub struct Side<'a> {
    pub line: &'a DiffLine,
    pub spans: &'a [Range<usize>],
}

/// One side-by-side row of two `column`-wide halves: the old line left, the new line right
/// (either may be missing).
pub fn split_row(
    ui: &mut Ui,
    style: &DiffStyle,
    id: Id,
    column: f32,
    digits: usize,
    left: Option<Side<'_>>,
    right: Option<Side<'_>>,
) {
    let size = vec2(column, style.row_height);
    let (rect, _) = ui.allocate_exact_size(vec2(2.0 * column, size.y), Sense::hover());
    for (index, content) in [left, right].into_iter().enumerate() {
        let half = Rect::from_min_size(rect.min + vec2(index as f32 * column, 0.0), size);
        let Some(Side { line, spans }) = content else {
            ui.painter().rect_filled(half, 0.0, style.colors.empty_bg);
            continue;
        };
        let number = if index == 0 {
            line.old_line
        } else {
            line.new_line
        };
        let text = paint_gutter(ui, style, half, digits, line.kind, &[number]);
        text_in(ui, id.with(index), text, line_job(style, line, spans));
    }
    let stroke = ui.visuals().widgets.noninteractive.bg_stroke;
    ui.painter()
        .vline(rect.left() + column, rect.y_range(), stroke);
}

mod git;
pub use git::{GitLine, classify, show_unified_text};

#[cfg(test)]
mod tests;
