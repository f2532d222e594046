//! The prompt library in Settings: saved prompts listed by name with their first line, an
//! editor for a new or chosen one, and removal. `@prompt:NAME` in the composer inserts one.

use crate::command::Command;
use crate::model::state::AppState;

pub fn show(ui: &mut egui::Ui, state: &mut AppState, commands: &mut Vec<Command>) {
    ui.heading("Prompt library");
    ui.weak("Type @prompt:NAME in a message (or pick it after @) to insert a saved prompt.");
    let form = &mut state.settings;
    egui::Grid::new("prompts").num_columns(3).show(ui, |ui| {
        for prompt in &state.prompts {
            ui.monospace(format!("@prompt:{}", prompt.name));
            let first: String = prompt
                .text
                .lines()
                .next()
                .unwrap_or("")
                .chars()
                .take(48)
                .collect();
            ui.weak(first);
            ui.horizontal(|ui| {
                if ui.small_button("Edit").clicked() {
                    form.prompt_editing = Some(prompt.id);
                    form.prompt_name = prompt.name.clone();
                    form.prompt_text = prompt.text.clone();
                }
                if ui.small_button("Remove").clicked() {
                    commands.push(Command::RemovePrompt(prompt.name.clone()));
                }
            });
            ui.end_row();
        }
    });
    if state.prompts.is_empty() {
        ui.weak("No saved prompts yet.");
    }
    ui.add_space(4.0);
    let title = match form.prompt_editing {
        Some(_) => "Edit prompt",
        None => "New prompt",
    };
    ui.strong(title);
    ui.horizontal(|ui| {
        ui.label("Name");
        ui.add(
            egui::TextEdit::singleline(&mut form.prompt_name)
                .id_salt("prompt name")
                .hint_text("review")
                .desired_width(200.0),
        );
    });
    ui.add(
        egui::TextEdit::multiline(&mut form.prompt_text)
            .id_salt("prompt text")
            .hint_text("The text @prompt:NAME stands for")
            .desired_rows(3)
            .desired_width(f32::INFINITY),
    );
    ui.horizontal(|ui| {
        let ready = !form.prompt_name.trim().is_empty() && !form.prompt_text.trim().is_empty();
        if ui
            .add_enabled(ready, egui::Button::new("Save prompt"))
            .clicked()
        {
            commands.push(Command::SavePrompt {
                id: form.prompt_editing,
                name: form.prompt_name.trim().to_string(),
                text: form.prompt_text.clone(),
            });
            // The form is cleared once the prompt is saved (a refused name keeps it).
        }
        if form.prompt_editing.is_some() && ui.button("New instead").clicked() {
            form.prompt_editing = None;
            form.prompt_name.clear();
            form.prompt_text.clear();
        }
    });
}
