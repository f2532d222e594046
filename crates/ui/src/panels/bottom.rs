//! The bottom panel: the project's history (versions, their diffs, restore, undo), the log,
//! the approval gateway's requests, the last check's problems, security findings and usage.

use crate::command::Command;
use crate::model::state::{AppState, BottomTab};
use crate::widgets::theme;

pub fn show(ui: &mut egui::Ui, state: &mut AppState, commands: &mut Vec<Command>) {
    ui.horizontal(|ui| {
        let pending = state
            .agent
            .gateway
            .requests
            .iter()
            .filter(|r| r.is_pending())
            .count();
        let approvals = match pending {
            0 => "Approvals".to_string(),
            n => format!("Approvals ({n})"),
        };
        let check = state.chat().and_then(crate::model::problems::last_check);
        let problems = match &check {
            Some(check) if !check.passed => format!("Problems ({})", check.problems.len()),
            _ => "Problems".to_string(),
        };
        let findings = match state.chat().and_then(crate::model::findings::latest) {
            Some((_, found)) => format!("Findings ({})", found.len()),
            None => "Findings".to_string(),
        };
        for (tab, label) in [
            (BottomTab::History, "History".to_string()),
            (BottomTab::Log, "Log".to_string()),
            (BottomTab::Approvals, approvals),
            (BottomTab::Problems, problems),
            (BottomTab::Search, "Search".to_string()),
            (BottomTab::Findings, findings),
            (BottomTab::Usage, "Usage".to_string()),
        ] {
            if ui.selectable_label(state.bottom == tab, label).clicked() {
                commands.push(Command::ShowBottom(tab));
            }
        }
        ui.with_layout(egui::Layout::right_to_left(egui::Align::Center), |ui| {
            if state.bottom == BottomTab::History
                && ui
                    .button("⟲ Undo last change")
                    .on_hover_text("Reverts the newest approved AI change as a new commit")
                    .clicked()
            {
                commands.push(Command::Undo);
            }
        });
    });
    ui.separator();
    match state.bottom {
        BottomTab::History => history(ui, state, commands),
        BottomTab::Log => log(ui, state),
        BottomTab::Approvals => crate::panels::approvals_tab::show(ui, state, commands),
        BottomTab::Problems => crate::panels::problems::show(ui, state, commands),
        BottomTab::Usage => crate::panels::usage::show(ui, state, commands),
        BottomTab::Findings => crate::panels::findings::show(ui, state, commands),
        BottomTab::Search => crate::panels::search::show(ui, state, commands),
    }
}

fn history(ui: &mut egui::Ui, state: &AppState, commands: &mut Vec<Command>) {
    let Some(project) = &state.project else {
        return;
    };
    ui.columns(2, |columns| {
        egui::ScrollArea::vertical()
            .id_salt("versions")
            .auto_shrink([false, false])
            .show(&mut columns[0], |ui| {
                for (index, version) in project.history.iter().enumerate() {
                    let selected =
                        project.selected_version.as_deref() == Some(version.hash.as_str());
                    let summary = version.message.lines().next().unwrap_or("");
                    let when = humantime::format_rfc3339_seconds(
                        std::time::UNIX_EPOCH
                            + std::time::Duration::from_secs(
                                u64::try_from(version.time).unwrap_or(0),
                            ),
                    );
                    ui.horizontal(|ui| {
                        let response = ui.selectable_label(
                            selected,
                            format!("{}  {summary}", tandem_core::vcs::short(&version.hash)),
                        );
                        if response.clicked() {
                            commands.push(Command::SelectVersion(version.hash.clone()));
                        }
                        response.on_hover_text(format!(
                            "{when}\n{}",
                            version
                                .files
                                .iter()
                                .map(|f| format!("{:?} {}", f.kind, f.path))
                                .collect::<Vec<_>>()
                                .join("\n")
                        ));
                        if index > 0 && ui.small_button("Restore").clicked() {
                            commands.push(Command::Restore(version.hash.clone()));
                        }
                    });
                }
                if project.history.is_empty() {
                    ui.weak("No commits yet");
                }
            });
        let ui = &mut columns[1];
        match &project.version_diff {
            Some((hash, diff)) if project.selected_version.as_deref() == Some(hash.as_str()) => {
                crate::widgets::diff_view::show_unified_text(ui, diff);
            }
            _ => {
                ui.weak("Select a version to see what it changed");
            }
        }
    });
}

fn log(ui: &mut egui::Ui, state: &AppState) {
    egui::ScrollArea::vertical()
        .id_salt("log")
        .stick_to_bottom(true)
        .auto_shrink([false, false])
        .show(ui, |ui| {
            for line in &state.log {
                if line.starts_with("error:") {
                    ui.colored_label(theme::ERROR, line);
                } else {
                    ui.monospace(line);
                }
            }
            if state.log.is_empty() {
                ui.weak("Dependency installs and background errors appear here");
            }
        });
}
