//! Settings → Agent's Workspaces line: each chat's workspace with its size, a Clean button
//! for each, and Clean unused for the stale ones (chat gone, or no proposal waiting).

use crate::command::{Command, WorkspaceCommand};
use crate::model::workspaces::WorkspacesView;
use tandem_core::app::{CleanScope, WorkspaceInfo, human_bytes};

pub fn show(ui: &mut egui::Ui, view: &WorkspacesView, commands: &mut Vec<Command>) {
    let Some(list) = &view.list else {
        ui.horizontal(|ui| {
            ui.strong("Workspaces");
            ui.spinner();
        });
        return;
    };
    let (bytes, stale) = view.totals();
    ui.horizontal_wrapped(|ui| {
        ui.strong("Workspaces");
        match list.len() {
            0 => ui.weak("none: each Agent chat gets one when it first changes something"),
            n => ui.weak(format!(
                "{n} ({} in all); the agent works in them, the project stays as it is",
                human_bytes(bytes)
            )),
        };
        let clean = ui
            .add_enabled(stale > 0, egui::Button::new("Clean unused"))
            .on_hover_text("Remove the workspaces whose chat is gone or has no proposal waiting")
            .on_disabled_hover_text("Every workspace serves a proposal waiting for review");
        if clean.clicked() {
            commands.push(WorkspaceCommand::Clean(CleanScope::Stale).into());
        }
        if ui.small_button("⟳").on_hover_text("List again").clicked() {
            commands.push(WorkspaceCommand::Load.into());
        }
    });
    for workspace in list {
        row(ui, workspace, commands);
    }
}

fn row(ui: &mut egui::Ui, w: &WorkspaceInfo, commands: &mut Vec<Command>) {
    ui.horizontal(|ui| {
        ui.add_space(12.0);
        let title = w.title.as_deref().unwrap_or("(chat gone)");
        ui.label(format!("Chat {}: {title}", w.chat_id));
        ui.weak(format!("{}, {}", human_bytes(w.bytes), w.kind));
        let state = match (w.in_use, w.pending) {
            (true, _) => "in use",
            (false, true) => "proposal waiting",
            (false, false) => "unused",
        };
        ui.weak(state);
        let clean = ui
            .add_enabled(!w.in_use, egui::Button::new("Clean").small())
            .on_hover_text(match w.pending {
                true => "Remove it: the proposal stays, the next turn starts a fresh workspace",
                false => "Remove it",
            })
            .on_disabled_hover_text("A turn or a run has it open");
        if clean.clicked() {
            commands.push(WorkspaceCommand::Clean(CleanScope::Chat(w.chat_id)).into());
        }
    });
}
