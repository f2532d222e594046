//! The editor's tab bar: one tab per open file (marked when it is dirty, or changed by the
//! pending proposal), selected by a click, closed by its button or a middle click.

use std::collections::BTreeSet;

use crate::command::Command;
use crate::model::state::ProjectState;

pub(super) fn tab_bar(
    ui: &mut egui::Ui,
    project: &ProjectState,
    proposed: &BTreeSet<&str>,
    commands: &mut Vec<Command>,
) {
    if project.tabs.is_empty() {
        return;
    }
    egui::ScrollArea::horizontal()
        .id_salt("tandem-editor-tabs")
        .auto_shrink([false, true])
        .show(ui, |ui| {
            ui.horizontal(|ui| {
                for (index, tab) in project.tabs.iter().enumerate() {
                    if proposed.contains(tab.path.as_str()) {
                        ui.colored_label(crate::widgets::theme::WARN, "✏")
                            .on_hover_text("Changed by the pending proposal");
                    }
                    let name = tab.path.rsplit('/').next().unwrap_or(&tab.path);
                    let label = if tab.dirty() {
                        format!("{name} •")
                    } else {
                        name.to_string()
                    };
                    let response = ui
                        .selectable_label(project.active_tab == Some(index), label)
                        .on_hover_text(&tab.path);
                    if response.clicked() {
                        commands.push(Command::SelectTab(index));
                    }
                    if response.middle_clicked()
                        || ui.small_button("×").on_hover_text("Close").clicked()
                    {
                        commands.push(Command::CloseTab(index));
                    }
                    ui.add_space(6.0);
                }
            });
        });
    ui.separator();
}
