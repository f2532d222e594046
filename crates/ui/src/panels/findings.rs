//! The Findings tab: the security findings of the chat's last review, most severe first,
//! with a filter per level; each names its place (a click opens the file there) and has
//! "Fix this", which sends it to the model in Build mode.

use crate::command::Command;
use crate::model::findings::{LEVELS, latest};
use crate::model::state::AppState;
use crate::widgets::theme;

fn level_color(level: &str) -> egui::Color32 {
    match level {
        "critical" | "high" => theme::ERROR,
        "medium" => theme::WARN,
        "low" => theme::ACCENT,
        _ => theme::MUTED,
    }
}

pub fn show(ui: &mut egui::Ui, state: &AppState, commands: &mut Vec<Command>) {
    let Some((_, findings)) = state.chat().and_then(latest) else {
        ui.weak(
            "No findings in this chat. Switch to Security mode and ask for a review of the \
             project or of its last change; the project's SECURITY_RULES.md is followed when \
             it has one.",
        );
        return;
    };
    ui.horizontal(|ui| {
        ui.weak("Show:");
        for (index, level) in LEVELS.iter().enumerate() {
            let count = findings
                .iter()
                .filter(|f| usize::from(f.rank()).min(LEVELS.len() - 1) == index)
                .count();
            if count == 0 {
                continue;
            }
            let shown = !state.findings_filter.hidden[index];
            let text = egui::RichText::new(format!("{level} ({count})")).color(level_color(level));
            if ui.selectable_label(shown, text).clicked() {
                commands.push(Command::ToggleFindingLevel(index));
            }
        }
    });
    ui.separator();
    egui::ScrollArea::vertical()
        .id_salt("findings")
        .auto_shrink([false, false])
        .show(ui, |ui| {
            for (index, finding) in findings.iter().enumerate() {
                if !state.findings_filter.shows(finding) {
                    continue;
                }
                ui.horizontal(|ui| {
                    ui.colored_label(level_color(&finding.level), &finding.level);
                    ui.strong(&finding.title);
                    if let Some(path) = &finding.path {
                        let place = match &finding.lines {
                            Some(lines) => format!("{path}:{lines}"),
                            None => path.clone(),
                        };
                        if ui
                            .link(egui::RichText::new(place).monospace())
                            .on_hover_text("Open the file here")
                            .clicked()
                        {
                            commands.push(Command::OpenFileAt {
                                path: path.clone(),
                                line: finding.first_line().unwrap_or(1),
                            });
                        }
                    }
                    if ui
                        .small_button("Fix this")
                        .on_hover_text("Sends it to the model in Build mode")
                        .clicked()
                    {
                        commands.push(Command::FixFinding(index));
                    }
                });
                ui.label(egui::RichText::new(&finding.body).weak());
                ui.add_space(4.0);
            }
        });
}
