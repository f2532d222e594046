//! One frame of the window: the panels laid out (the top bar, the sidebar, the chat, the
//! bottom panel, the proposal or the editor), the Settings window, the palette, the dialogs
//! and the toasts over them; then the commands they produced, applied.

use crate::TandemApp;
use crate::command::Command;
use crate::model::state::{AppState, Confirm};
use crate::{keymap, panels, unsaved, widgets};

impl TandemApp {
    /// Lays out one frame and applies the commands it produced.
    pub fn frame(&mut self, ui: &mut egui::Ui) {
        let mut commands = Vec::new();
        keymap::window_shortcuts(ui, &self.state, &mut commands);
        let state = &mut self.state;
        panels::top_bar::show(ui, state, &mut commands);
        if state.project.is_none() {
            egui::CentralPanel::default()
                .show(ui, |ui| panels::welcome::show(ui, state, &mut commands));
        } else {
            if state.prefs.show_bottom {
                egui::Panel::bottom("bottom")
                    .resizable(true)
                    .default_size(200.0)
                    .show(ui, |ui| panels::bottom::show(ui, state, &mut commands));
            }
            egui::Panel::left("sidebar")
                .resizable(true)
                .default_size(250.0)
                .show(ui, |ui| panels::sidebar::show(ui, state, &mut commands));
            egui::Panel::right("chat")
                .resizable(true)
                .default_size(460.0)
                .show(ui, |ui| {
                    panels::chat_panel::show(
                        ui,
                        state,
                        &mut self.markdown,
                        &mut self.highlight,
                        &mut commands,
                    )
                });
            let prefs = state.prefs.clone();
            let proposed: std::collections::BTreeSet<String> = state
                .proposed_paths()
                .into_iter()
                .map(str::to_string)
                .collect();
            let review = state.chat().and_then(|c| c.review.as_ref()).is_some();
            egui::CentralPanel::default().show(ui, |ui| {
                if review {
                    ui.horizontal(|ui| {
                        let files = state.review().map_or(0, |r| r.plan.files.len());
                        ui.selectable_value(
                            &mut state.show_review,
                            true,
                            format!("Proposal ({files} files)"),
                        );
                        ui.selectable_value(&mut state.show_review, false, "Editor");
                    });
                    ui.separator();
                }
                if review && state.show_review {
                    if let Some(review) = state.review() {
                        // Only an Agent chat's proposal is in its workspace.
                        let run = state
                            .chat()
                            .filter(|c| c.chat.mode == tandem_core::store::ChatMode::Agent)
                            .map(|c| panels::review::RunPanel {
                                view: state.workspaces.runs.get(&c.chat.id),
                                default_command: state.default_run_command(),
                            });
                        let side_by_side = prefs.side_by_side;
                        panels::review::show(ui, review, side_by_side, run.as_ref(), &mut commands);
                    }
                } else if let Some(project) = &mut state.project {
                    let proposed = proposed.iter().map(String::as_str).collect();
                    panels::editor::show(
                        ui,
                        project,
                        &mut self.highlight,
                        &prefs,
                        &proposed,
                        &mut commands,
                    );
                }
            });
        }
        panels::settings::show(ui.ctx(), state, &mut commands);
        panels::palette::show(ui.ctx(), state, &mut commands);
        confirm_dialog(ui.ctx(), state, &mut commands);
        unsaved::close_dialog(ui.ctx(), state, &mut commands);
        toasts(ui.ctx(), state);
        let theme_before = (state.prefs.theme, state.prefs.font_size);
        for command in commands {
            state.apply(command, &self.backend);
        }
        if theme_before != (state.prefs.theme, state.prefs.font_size) {
            widgets::theme::apply(ui.ctx(), &state.prefs);
        }
    }
}

fn confirm_dialog(ctx: &egui::Context, state: &AppState, commands: &mut Vec<Command>) {
    let Some(confirm) = &state.confirm else {
        return;
    };
    let text = match confirm {
        Confirm::Restore(hash) => format!(
            "Restore the project to version {}?\n\nThe current files are committed first, so nothing is lost. \
             Messages of the chat that come after that version will be removed.",
            tandem_core::vcs::short(hash)
        ),
        Confirm::DeleteChat(_) => {
            "Delete this chat and its messages? Files are not touched.".to_string()
        }
        Confirm::DeleteFile(path) => {
            format!("Delete {path}? It is committed, so Restore brings it back.")
        }
    };
    egui::Modal::new(egui::Id::unique("confirm")).show(ctx, |ui| {
        ui.set_max_width(420.0);
        ui.label(text);
        ui.add_space(8.0);
        ui.horizontal(|ui| {
            if ui.button("Confirm").clicked() {
                commands.push(Command::Confirm);
            }
            if ui.button("Cancel").clicked() {
                commands.push(Command::Dismiss);
            }
        });
    });
}

fn toasts(ctx: &egui::Context, state: &AppState) {
    if state.toasts.is_empty() {
        return;
    }
    egui::Area::new(egui::Id::unique("toasts"))
        .anchor(egui::Align2::RIGHT_BOTTOM, [-16.0, -16.0])
        .order(egui::Order::Foreground)
        .show(ctx, |ui| {
            for toast in state.toasts.iter().rev().take(4) {
                let color = if toast.error {
                    widgets::theme::ERROR
                } else {
                    widgets::theme::ACCENT
                };
                egui::Frame::popup(ui.style())
                    .stroke(egui::Stroke::new(1.0, color))
                    .show(ui, |ui| {
                        ui.set_max_width(380.0);
                        ui.label(&toast.text);
                    });
            }
        });
}
