//! The Search tab: the project's files searched as you type (plain text, or a regular
//! expression; `.gitignore` honoured), matches grouped by file, each opening the file at
//! its line.

use crate::command::Command;
use crate::model::state::AppState;
use crate::widgets::theme;

pub fn show(ui: &mut egui::Ui, state: &mut AppState, commands: &mut Vec<Command>) {
    let view = &mut state.search;
    let mut edited = false;
    ui.horizontal(|ui| {
        let label = ui.label("Search");
        edited |= ui
            .add(
                egui::TextEdit::singleline(&mut view.query.text)
                    .hint_text("text in the project's files")
                    .desired_width(280.0),
            )
            .labelled_by(label.id)
            .changed();
        edited |= ui.checkbox(&mut view.query.regex, "Regex").changed();
        edited |= ui
            .checkbox(&mut view.query.match_case, "Match case")
            .changed();
        let files = ui.label("in files");
        edited |= ui
            .add(
                egui::TextEdit::singleline(&mut view.query.glob)
                    .hint_text("*.rs, src/**")
                    .desired_width(120.0),
            )
            .labelled_by(files.id)
            .changed();
    });
    if edited {
        view.edited = Some(std::time::Instant::now());
    }
    ui.separator();
    let Some((key, result)) = &view.results else {
        ui.weak("Type to search every file the project tracks (ignored files are left out).");
        return;
    };
    if view.query.text.is_empty() {
        return;
    }
    if *key != view.query {
        ui.weak("Searching…");
    }
    let found = match result {
        Ok(found) => found,
        Err(e) => {
            ui.colored_label(theme::ERROR, e);
            return;
        }
    };
    let files = {
        let mut paths: Vec<&str> = found.matches.iter().map(|m| m.path.as_str()).collect();
        paths.dedup();
        paths.len()
    };
    let more = if found.cut {
        " (stopped there: narrow the search)"
    } else {
        ""
    };
    ui.weak(format!(
        "{} match(es) in {files} file(s){more}",
        found.matches.len()
    ));
    egui::ScrollArea::vertical()
        .id_salt("search results")
        .auto_shrink([false, false])
        .show(ui, |ui| {
            let mut last = "";
            for m in &found.matches {
                if m.path != last {
                    ui.strong(&m.path);
                    last = &m.path;
                }
                ui.horizontal(|ui| {
                    let place = egui::RichText::new(format!("{:>5}", m.line)).monospace();
                    if ui
                        .link(place)
                        .on_hover_text(format!("Open {} at line {}", m.path, m.line))
                        .clicked()
                    {
                        commands.push(Command::OpenFileAt {
                            path: m.path.clone(),
                            line: m.line,
                        });
                    }
                    ui.add(egui::Label::new(egui::RichText::new(&m.text).monospace()).truncate());
                });
            }
        });
}
