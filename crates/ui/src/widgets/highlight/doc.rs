//! One open file's highlighting state: incremental re-highlighting from checkpoints, the
//! parked tail reused when the parser state matches again, and the per-row layout jobs.

use std::collections::HashMap;
use std::ops::Range;
use std::time::Instant;

use egui::text::{LayoutJob, TextFormat};
use egui::{Color32, Stroke};
use syntect::highlighting::{FontStyle, HighlightIterator, HighlightState, Highlighter as Styler};
use syntect::parsing::{ParseState, ScopeStack};

use super::{
    CHECKPOINT_EVERY, Doc, FindMarks, HighlightStats, Highlighter, LONG_LINE, Span, Tail,
    line_starts,
};

impl Doc {
    pub(super) fn new(revision: u64, dark: bool, syntax: Option<usize>, text: &str) -> Doc {
        let (line_starts, longest_line) = line_starts(text);
        Doc {
            revision,
            dark,
            ready: true,
            syntax,
            text: text.to_string(),
            line_starts,
            longest_line,
            spans: Vec::new(),
            checkpoints: Vec::new(),
            state: None,
            tail: None,
            find: None,
            galley: None,
            line_galleys: HashMap::default(),
            atlas_fill: 0.0,
        }
    }

    pub(super) fn line_count(&self) -> usize {
        self.line_starts.len()
    }

    pub(super) fn line_of(&self, offset: usize) -> usize {
        self.line_starts
            .partition_point(|s| *s <= offset)
            .saturating_sub(1)
    }

    pub(super) fn line_range(&self, line: usize) -> Option<Range<usize>> {
        let start = *self.line_starts.get(line)?;
        let end = self
            .line_starts
            .get(line + 1)
            .map_or(self.text.len(), |next| next - 1);
        Some(start..end)
    }

    /// Takes a new revision: keeps what precedes the edit, parks what follows it.
    pub(super) fn edit(&mut self, revision: u64, text: &str) {
        self.revision = revision;
        self.find = None;
        let (old, new) = (self.text.as_bytes(), text.as_bytes());
        let prefix = old.iter().zip(new).take_while(|(a, b)| a == b).count();
        if prefix == old.len() && prefix == new.len() {
            return;
        }
        let max_suffix = old.len().min(new.len()) - prefix;
        let suffix = old
            .iter()
            .rev()
            .zip(new.iter().rev())
            .take(max_suffix)
            .take_while(|(a, b)| a == b)
            .count();
        let first_changed = self.line_of(prefix);
        let (new_starts, longest) = line_starts(text);
        // New lines starting strictly inside the unchanged suffix are identical to old lines.
        let tail_new = new_starts.partition_point(|s| *s <= new.len() - suffix);
        let tail_old = self
            .line_starts
            .partition_point(|s| *s <= old.len() - suffix);
        let shift = |line: usize| line + tail_new - tail_old;
        let resume = self
            .checkpoints
            .iter()
            .rposition(|(line, _)| *line <= first_changed);
        let old_state = self.state.take();
        if let (Some(resume), Some(end_state)) = (resume, old_state) {
            let parked = self.spans.split_off(tail_old.min(self.spans.len()));
            let checkpoints: Vec<_> = self
                .checkpoints
                .drain(resume + 1..)
                .filter(|(line, _)| *line >= tail_old)
                .map(|(line, state)| (shift(line), state))
                .collect();
            self.tail = (!checkpoints.is_empty()).then_some(Tail {
                first: tail_new,
                spans: parked,
                checkpoints,
                end_state,
            });
            let (line, state) = &self.checkpoints[resume];
            self.spans.truncate(*line);
            self.state = Some(state.clone());
        } else {
            self.spans.clear();
            self.checkpoints.clear();
            self.tail = None;
        }
        self.text = text.to_string();
        self.line_starts = new_starts;
        self.longest_line = longest;
    }

    pub(super) fn advance(
        &mut self,
        h: &Highlighter,
        upto: usize,
        deadline: Option<Instant>,
        stats: &mut HighlightStats,
    ) -> bool {
        let upto = upto.min(self.line_count());
        let Some(syntax) = self.syntax.and_then(|i| h.syntaxes.syntaxes().get(i)) else {
            return true;
        };
        if self.spans.len() >= upto {
            return true;
        }
        let styler = Styler::new(h.theme(self.dark));
        let (mut parse, mut style) = self.state.take().unwrap_or_else(|| {
            (
                ParseState::new(syntax),
                HighlightState::new(&styler, ScopeStack::new()),
            )
        });
        stats.last_start = Some(self.spans.len());
        let mut done = 0usize;
        while self.spans.len() < upto {
            let line = self.spans.len();
            if let Some(tail) = self.tail.as_mut() {
                while tail.checkpoints.first().is_some_and(|(at, _)| *at < line) {
                    tail.checkpoints.remove(0);
                }
                let converged = tail
                    .checkpoints
                    .first()
                    .is_some_and(|(at, saved)| *at == line && saved.0 == parse && saved.1 == style);
                if converged && let Some(mut tail) = self.tail.take() {
                    // Same state on the same text: the old highlighting is still right.
                    let skip = line - tail.first;
                    self.spans.extend(tail.spans.drain(..).skip(skip));
                    self.checkpoints.append(&mut tail.checkpoints);
                    (parse, style) = tail.end_state;
                    continue;
                }
            }
            if self.tail.as_ref().is_some_and(|t| t.checkpoints.is_empty()) {
                self.tail = None;
            }
            if self
                .checkpoints
                .last()
                .is_none_or(|(at, _)| line >= at + CHECKPOINT_EVERY)
            {
                self.checkpoints
                    .push((line, (parse.clone(), style.clone())));
            }
            let range = self.line_range(line).unwrap_or(0..0);
            let with_newline = &self.text[range.start..(range.end + 1).min(self.text.len())];
            let mut spans = Vec::new();
            if range.len() <= LONG_LINE {
                if let Ok(ops) = parse.parse_line(with_newline, &h.syntaxes) {
                    for (s, piece) in
                        HighlightIterator::new(&mut style, &ops, with_newline, &styler)
                    {
                        let c = s.foreground;
                        spans.push(Span {
                            len: piece.len() as u32,
                            color: Color32::from_rgba_unmultiplied(c.r, c.g, c.b, c.a),
                            italic: s.font_style.contains(FontStyle::ITALIC),
                            underline: s.font_style.contains(FontStyle::UNDERLINE),
                        });
                    }
                }
                stats.lines_highlighted += 1;
            }
            self.spans.push(spans);
            done += 1;
            if done.is_multiple_of(16) && deadline.is_some_and(|d| Instant::now() >= d) {
                break;
            }
        }
        self.state = Some((parse, style));
        self.spans.len() >= upto
    }

    /// Find matches overlapping `range`, relative to its start, with their colours.
    pub(super) fn marks_in(
        &self,
        range: &Range<usize>,
        marks: Option<&FindMarks<'_>>,
    ) -> Vec<(Range<usize>, Color32)> {
        let (Some(marks), Some((query, found))) = (marks, &self.find) else {
            return Vec::new();
        };
        if query != marks.query {
            return Vec::new();
        }
        let first = found.partition_point(|f| f.end <= range.start);
        found[first..]
            .iter()
            .zip(first..)
            .take_while(|(f, _)| f.start < range.end)
            .map(|(f, i)| {
                let color = if i == marks.current {
                    marks.current_color
                } else {
                    marks.color
                };
                (
                    f.start.max(range.start) - range.start..f.end.min(range.end) - range.start,
                    color,
                )
            })
            .collect()
    }

    /// Appends line `line` (without its newline) to `job`, coloured if highlighted.
    pub(super) fn push_line(
        &self,
        job: &mut LayoutJob,
        line: usize,
        base: &TextFormat,
        marks: &[(Range<usize>, Color32)],
    ) {
        let Some(range) = self.line_range(line) else {
            return;
        };
        let text = &self.text[range];
        if text.is_empty() {
            // An empty section still gives the row its height.
            job.append("", 0.0, base.clone());
        }
        let spans = self.spans.get(line).map_or(&[][..], Vec::as_slice);
        let mut cuts: Vec<usize> = vec![0, text.len()];
        let mut at = 0;
        for span in spans {
            at += span.len as usize;
            cuts.push(at.min(text.len()));
        }
        cuts.extend(
            marks
                .iter()
                .flat_map(|(m, _)| [m.start.min(text.len()), m.end.min(text.len())]),
        );
        cuts.sort_unstable();
        cuts.dedup();
        let (mut span_index, mut span_end) =
            (0, spans.first().map_or(usize::MAX, |s| s.len as usize));
        for cut in cuts.windows(2) {
            let (a, b) = (cut[0], cut[1]);
            while a >= span_end && span_index + 1 < spans.len() {
                span_index += 1;
                span_end += spans[span_index].len as usize;
            }
            let mut format = base.clone();
            if let Some(span) = spans.get(span_index).filter(|_| a < span_end) {
                format.color = span.color;
                format.italics = span.italic;
                if span.underline {
                    format.underline = Stroke::new(1.0, span.color);
                }
            }
            if let Some((_, bg)) = marks.iter().rev().find(|(m, _)| m.start <= a && a < m.end) {
                format.background = *bg;
            }
            // Spans and matches fall on char boundaries; `get` keeps a bad cut from panicking.
            if let Some(piece) = text.get(a..b) {
                job.append(piece, 0.0, format);
            }
        }
    }
}
