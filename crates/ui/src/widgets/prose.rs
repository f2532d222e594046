//! Chat prose: markdown, with fenced code blocks drawn by our highlighter (with a copy
//! button).

use egui_commonmark::{CommonMarkCache, CommonMarkViewer};

use crate::widgets::highlight::HighlightCache;

/// Markdown prose, with fenced code blocks drawn by our highlighter (with a copy button).
pub fn show(
    ui: &mut egui::Ui,
    id: (i64, usize),
    text: &str,
    markdown: &mut CommonMarkCache,
    highlight: &mut HighlightCache,
) {
    for (i, block) in split_code(text).into_iter().enumerate() {
        match block {
            Block::Markdown(md) if !md.trim().is_empty() => {
                CommonMarkViewer::new().show(ui, markdown, md);
            }
            Block::Markdown(_) => {}
            Block::Code { lang, code } => {
                let dark = ui.visuals().dark_mode;
                let size = ui
                    .style()
                    .text_styles
                    .get(&egui::TextStyle::Monospace)
                    .map_or(13.0, |f| f.size);
                let job = highlight.code_job(lang, code, dark, size);
                egui::Frame::new()
                    .fill(ui.visuals().code_bg_color)
                    .corner_radius(4.0)
                    .inner_margin(6.0)
                    .show(ui, |ui| {
                        ui.horizontal(|ui| {
                            ui.weak(if lang.is_empty() { "code" } else { lang });
                            if ui.small_button("Copy").clicked() {
                                ui.ctx().copy_text(code.to_string());
                            }
                        });
                        egui::ScrollArea::horizontal()
                            .id_salt(("code", id.0, id.1, i))
                            .show(ui, |ui| ui.label(job));
                    });
            }
        }
    }
}

enum Block<'a> {
    Markdown(&'a str),
    Code { lang: &'a str, code: &'a str },
}

/// Splits prose at top-level ``` fences (a closing fence ends the block; an unclosed one runs
/// to the end, as while streaming).
fn split_code(text: &str) -> Vec<Block<'_>> {
    let mut blocks = Vec::new();
    let mut rest = text;
    while let Some(start) = fence_at_line_start(rest, 0) {
        let (before, from) = rest.split_at(start);
        blocks.push(Block::Markdown(before));
        let line_end = from.find('\n').map_or(from.len(), |i| i + 1);
        let lang = from[3..line_end].split_whitespace().next().unwrap_or("");
        let body = &from[line_end..];
        match fence_at_line_start(body, 0) {
            Some(end) => {
                blocks.push(Block::Code {
                    lang,
                    code: body[..end].trim_end_matches('\n'),
                });
                let after = &body[end..];
                rest = after.find('\n').map_or("", |i| &after[i + 1..]);
            }
            None => {
                blocks.push(Block::Code { lang, code: body });
                rest = "";
            }
        }
    }
    if !rest.is_empty() {
        blocks.push(Block::Markdown(rest));
    }
    blocks
}

fn fence_at_line_start(text: &str, from: usize) -> Option<usize> {
    let mut offset = from;
    for line in text[from..].split_inclusive('\n') {
        if line.starts_with("```") {
            return Some(offset);
        }
        offset += line.len();
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn code_fences_are_split_out_of_prose() {
        let blocks = split_code("Intro\n```rust\nfn a() {}\n```\nAfter\n```\nopen");
        let kinds: Vec<String> = blocks
            .iter()
            .map(|b| match b {
                Block::Markdown(t) => format!("md:{t}"),
                Block::Code { lang, code } => format!("code:{lang}:{code}"),
            })
            .collect();
        assert_eq!(
            kinds,
            [
                "md:Intro\n",
                "code:rust:fn a() {}",
                "md:After\n",
                "code::open"
            ]
        );
    }
}
