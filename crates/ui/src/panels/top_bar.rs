//! The top bar: project switcher, mode, model picker, auto-approve, settings.

use crate::command::Command;
use crate::model::state::AppState;
use crate::widgets::theme;
use tandem_core::store::ChatMode;

/// The chat modes, with what each does.
const MODES: [(ChatMode, &str, &str); 5] = [
    (
        ChatMode::Build,
        "Build",
        "The model proposes file changes for review",
    ),
    (
        ChatMode::Ask,
        "Ask",
        "The model explains; it never proposes changes",
    ),
    (
        ChatMode::Agent,
        "Agent",
        "The model works in steps with tools (read, search, edit, run commands); risky calls wait for your approval and edits still come as a proposal",
    ),
    (
        ChatMode::Plan,
        "Plan",
        "The model reads the project and writes a plan, changing nothing; then Implement this plan hands it to Agent mode",
    ),
    (
        ChatMode::Security,
        "Security",
        "The model reviews the project or its last change against SECURITY_RULES.md and lists findings (Findings tab); it changes nothing",
    ),
];

pub fn show(ui: &mut egui::Ui, state: &AppState, commands: &mut Vec<Command>) {
    egui::Panel::top("top_bar").show(ui, |ui| {
        ui.horizontal(|ui| {
            ui.strong("Tandem");
            ui.separator();
            let current = state
                .project
                .as_ref()
                .map_or("No project".to_string(), |p| p.project.name.clone());
            egui::ComboBox::new("project", "Project")
                .selected_text(current)
                .width(180.0)
                .show_ui(ui, |ui| {
                    for project in &state.projects {
                        let selected = state
                            .project
                            .as_ref()
                            .is_some_and(|p| p.project.id == project.id);
                        if ui
                            .selectable_label(selected, &project.name)
                            .on_hover_text(project.path.display().to_string())
                            .clicked()
                        {
                            commands.push(Command::SwitchProject(project.id));
                        }
                    }
                    ui.separator();
                    if ui.button("Open folder…").clicked() {
                        commands.push(Command::OpenFolderDialog);
                    }
                });
            ui.separator();
            for (mode, label, hint) in MODES {
                if ui
                    .selectable_label(state.mode == mode, label)
                    .on_hover_text(hint)
                    .clicked()
                {
                    commands.push(Command::SetMode(mode));
                }
            }
            ui.separator();
            model_picker(ui, state, commands);
            if ui
                .button("⟳")
                .on_hover_text("Refresh the model lists")
                .clicked()
            {
                commands.push(Command::RefreshModels);
            }
            ui.separator();
            let mut auto = state.auto_approve;
            if ui
                .checkbox(&mut auto, "Auto-approve")
                .on_hover_text("Apply each proposal as soon as the reply ends")
                .changed()
            {
                commands.push(Command::ToggleAutoApprove);
            }
            if matches!(state.mode, ChatMode::Agent | ChatMode::Plan) {
                let mut follow = state.prefs.follow_agent;
                if ui
                    .checkbox(&mut follow, "Follow agent")
                    .on_hover_text(
                        "Open each file the agent reads or edits, at the lines it touched",
                    )
                    .changed()
                {
                    commands.push(Command::ToggleFollowAgent);
                }
            }
            ui.with_layout(egui::Layout::right_to_left(egui::Align::Center), |ui| {
                if ui.button("⚙ Settings").clicked() {
                    commands.push(Command::OpenSettings);
                }
                if ui
                    .button("⌘ Commands")
                    .on_hover_text(crate::keymap::hint(ui, &Command::OpenPalette))
                    .clicked()
                {
                    commands.push(Command::OpenPalette);
                }
                if let Some(chat) = state.chat()
                    && let Some(streaming) = &chat.streaming
                {
                    if state.agent.first_waiting(chat.chat.id).is_some() {
                        ui.colored_label(theme::WARN, "⚠ approval needed");
                    } else {
                        ui.spinner();
                        if let Some(rate) = streaming.tokens_per_second() {
                            ui.colored_label(theme::MUTED, format!("{rate:.0} tok/s"));
                        }
                    }
                }
            });
        });
    });
}

fn model_picker(ui: &mut egui::Ui, state: &AppState, commands: &mut Vec<Command>) {
    let label = match (&state.provider, &state.model) {
        (Some(p), Some(m)) => format!("{p} · {m}"),
        (None, Some(m)) => m.clone(),
        _ => "Choose a model".to_string(),
    };
    egui::ComboBox::new("model", "Model")
        .selected_text(label)
        .width(240.0)
        .show_ui(ui, |ui| {
            if state.providers.is_empty() {
                ui.label("No providers: add one in Settings");
            }
            for provider in &state.providers {
                ui.label(egui::RichText::new(&provider.name).strong());
                match state.models.get(&provider.name) {
                    None => {
                        if let Some(model) = &provider.settings.default_model {
                            pick(ui, state, commands, &provider.name, model);
                        }
                        ui.weak("(refresh ⟳ to list models)");
                    }
                    Some(Ok(models)) if models.is_empty() => {
                        ui.weak("no models");
                    }
                    Some(Ok(models)) => {
                        for model in models {
                            pick(ui, state, commands, &provider.name, &model.id);
                        }
                    }
                    Some(Err(error)) => {
                        ui.colored_label(theme::ERROR, error);
                    }
                }
                ui.separator();
            }
        });
}

fn pick(
    ui: &mut egui::Ui,
    state: &AppState,
    commands: &mut Vec<Command>,
    provider: &str,
    model: &str,
) {
    let selected =
        state.provider.as_deref() == Some(provider) && state.model.as_deref() == Some(model);
    if ui.selectable_label(selected, model).clicked() {
        commands.push(Command::SelectModel {
            provider: provider.to_string(),
            model: model.to_string(),
        });
    }
}
