//! The first view: open or create a project, recent projects, and whether a model is reachable.

use crate::command::Command;
use crate::model::state::{AppState, Status};
use crate::widgets::theme;

pub fn show(ui: &mut egui::Ui, state: &mut AppState, commands: &mut Vec<Command>) {
    ui.vertical_centered(|ui| {
        ui.add_space(40.0);
        ui.heading("Welcome to Tandem");
        ui.label("Chat with a model about your code, review its changes as diffs, approve them as git commits.");
        ui.add_space(24.0);
    });
    match &state.status {
        Status::Loading => {
            ui.horizontal(|ui| {
                ui.spinner();
                ui.label("Opening the database…");
            });
            return;
        }
        Status::Failed(error) => {
            ui.colored_label(theme::ERROR, format!("Tandem could not start: {error}"));
            return;
        }
        Status::Ready => {}
    }
    ui.horizontal(|ui| {
        if ui.button("📂 Open folder…").clicked() {
            commands.push(Command::OpenFolderDialog);
        }
        ui.label("or type a path:");
        let field = ui.add(
            egui::TextEdit::singleline(&mut state.path_input)
                .hint_text("/home/me/code/project")
                .desired_width(320.0),
        );
        let enter = field.lost_focus() && ui.input(|i| i.key_pressed(egui::Key::Enter));
        let path = state.path_input.trim();
        if (ui.button("Open").clicked() || enter) && !path.is_empty() {
            commands.push(Command::OpenProject(path.into()));
        }
        if ui
            .button("New project")
            .on_hover_text("Creates the folder with a git repository")
            .clicked()
            && !path.is_empty()
        {
            commands.push(Command::NewProject(path.into()));
        }
    });
    ui.add_space(16.0);
    if !state.projects.is_empty() {
        ui.strong("Recent projects");
        for project in &state.projects {
            if ui
                .link(format!("{}  —  {}", project.name, project.path.display()))
                .clicked()
            {
                commands.push(Command::SwitchProject(project.id));
            }
        }
        ui.add_space(16.0);
    }
    ui.strong("Models");
    if state.providers.is_empty() {
        ui.label("No provider configured.");
    }
    for provider in &state.providers {
        ui.horizontal(|ui| {
            ui.label(format!(
                "{} ({}) at {}",
                provider.name, provider.kind, provider.base_url
            ));
            match state.models.get(&provider.name) {
                None => {
                    ui.weak("not checked yet");
                }
                Some(Ok(models)) => {
                    ui.colored_label(theme::OK, format!("{} model(s) available", models.len()));
                }
                Some(Err(error)) => {
                    ui.colored_label(theme::ERROR, error);
                    if ui.button("Settings").clicked() {
                        commands.push(Command::OpenSettings);
                    }
                }
            }
        });
    }
    if ui.button("Check models").clicked() {
        commands.push(Command::RefreshModels);
    }
}
