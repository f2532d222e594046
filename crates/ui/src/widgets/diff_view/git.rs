//! Plain `git diff` text (a version in History) shown with the review's diff colours.

use egui::text::LayoutJob;
use egui::{Color32, Id, ScrollArea, Sense, Ui, vec2};

use super::{DiffStyle, columns, text_in};

/// What a line of `git diff` / `git show` output is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GitLine {
    /// Commit and file headers (`diff --git`, `index`, `---`, `+++`, modes, messages).
    Meta,
    Hunk,
    Added,
    Removed,
    Context,
}

/// Classifies every line. Inside a hunk the `@@` counts decide where it ends, so a removed
/// line that starts with `--` is never taken for a `---` file header.
pub fn classify(lines: &[&str]) -> Vec<GitLine> {
    let (mut old_left, mut new_left) = (0usize, 0usize);
    lines
        .iter()
        .map(|line| {
            if old_left == 0 && new_left == 0 {
                if let Some((old, new)) = parse_hunk_header(line) {
                    (old_left, new_left) = (old, new);
                    return GitLine::Hunk;
                }
                return GitLine::Meta;
            }
            match line.as_bytes().first() {
                Some(b'+') => {
                    new_left = new_left.saturating_sub(1);
                    GitLine::Added
                }
                Some(b'-') => {
                    old_left = old_left.saturating_sub(1);
                    GitLine::Removed
                }
                Some(b'\\') => GitLine::Meta,
                _ if line.starts_with("diff --git ") => {
                    (old_left, new_left) = (0, 0);
                    GitLine::Meta
                }
                _ => {
                    old_left = old_left.saturating_sub(1);
                    new_left = new_left.saturating_sub(1);
                    GitLine::Context
                }
            }
        })
        .collect()
}

/// The old and new line counts of `@@ -a[,b] +c[,d] @@`.
fn parse_hunk_header(line: &str) -> Option<(usize, usize)> {
    let rest = line.strip_prefix("@@ -")?;
    let (ranges, _) = rest.split_once(" @@")?;
    let (old, new) = ranges.split_once(" +")?;
    let count = |range: &str| match range.split_once(',') {
        Some((_, len)) => len.parse().ok(),
        None => range.parse::<usize>().ok().map(|_| 1),
    };
    Some((count(old)?, count(new)?))
}

/// Renders a unified diff from git (the History tab): coloured, only visible lines laid out.
pub fn show_unified_text(ui: &mut Ui, diff: &str) {
    if diff.trim().is_empty() {
        ui.weak("No changes");
        return;
    }
    let style = DiffStyle::new(ui);
    let lines: Vec<&str> = diff.lines().collect();
    let kinds = classify(&lines);
    let widest = lines.iter().map(|l| columns(l)).max().unwrap_or(0);
    let width = (widest as f32 + 2.0) * style.char_width;
    ui.scope(|ui| {
        ui.spacing_mut().item_spacing.y = 0.0;
        ScrollArea::both()
            .id_salt("tandem_unified_text")
            .auto_shrink([false, false])
            .show_rows(ui, style.row_height, lines.len(), |ui, range| {
                let width = width.max(ui.available_width());
                for index in range {
                    let (Some(line), Some(kind)) = (lines.get(index), kinds.get(index)) else {
                        continue;
                    };
                    git_row(
                        ui,
                        &style,
                        Id::unique(("tandem_unified_text", index)),
                        width,
                        line,
                        *kind,
                    );
                }
            });
    });
}

fn git_row(ui: &mut Ui, style: &DiffStyle, id: Id, width: f32, line: &str, kind: GitLine) {
    let colors = &style.colors;
    let (rect, _) = ui.allocate_exact_size(vec2(width, style.row_height), Sense::hover());
    let (bg, fg) = match kind {
        GitLine::Meta => (Color32::TRANSPARENT, colors.strong),
        GitLine::Hunk => (colors.hunk_bg, colors.hunk_fg),
        GitLine::Added => (colors.added_bg, colors.text),
        GitLine::Removed => (colors.removed_bg, colors.text),
        GitLine::Context => (Color32::TRANSPARENT, colors.text),
    };
    ui.painter().rect_filled(rect, 0.0, bg);
    let text = rect.shrink2(vec2(0.5 * style.char_width, 0.0));
    let job = LayoutJob::simple_singleline(line.to_string(), style.font.clone(), fg);
    text_in(ui, id, text, job);
}
