//! The project's rules in Settings: whether `AI_RULES.md` exists (a starter is offered when
//! it does not), and the rules for each mode, sent after it in that mode.

use crate::command::Command;
use crate::model::state::AppState;
use tandem_core::store::ChatMode;

const MODES: [ChatMode; 5] = [
    ChatMode::Build,
    ChatMode::Ask,
    ChatMode::Agent,
    ChatMode::Plan,
    ChatMode::Security,
];

pub fn show(ui: &mut egui::Ui, state: &mut AppState, commands: &mut Vec<Command>) {
    let Some(project) = &state.project else {
        return;
    };
    ui.strong(format!("Rules for {}", project.project.name));
    let file = tandem_core::app::RULES_FILE;
    if project.files.contains(file) {
        ui.horizontal(|ui| {
            ui.label(format!("{file} is sent in every mode."));
            if ui.link("Open it").clicked() {
                commands.push(Command::OpenFile(file.to_string()));
            }
        });
    } else {
        ui.horizontal(|ui| {
            ui.weak(format!(
                "No {file}: the project's rules for every mode live there."
            ));
            if ui
                .button(format!("Create a starter {file}"))
                .on_hover_text("Writes a short template (committed) and opens it")
                .clicked()
            {
                commands.push(Command::WriteStarterRules);
            }
        });
    }
    let form = &mut state.settings;
    let saved = |mode: ChatMode| {
        project
            .project
            .settings
            .mode_rules
            .get(mode.as_str())
            .cloned()
            .unwrap_or_default()
    };
    ui.horizontal(|ui| {
        ui.label("Rules for one mode:");
        for mode in MODES {
            let has = !saved(mode).trim().is_empty();
            let label = format!("{}{}", mode.as_str(), if has { " •" } else { "" });
            if ui
                .selectable_label(form.rules_mode == mode, label)
                .clicked()
            {
                form.rules_mode = mode;
                form.rules_edited = false;
            }
        }
    });
    if !form.rules_edited {
        form.rules_text = saved(form.rules_mode);
    }
    let label = ui.weak(format!(
        "Sent after {file} in {} mode only (empty: none)",
        form.rules_mode.as_str()
    ));
    let edit = egui::TextEdit::multiline(&mut form.rules_text)
        .desired_rows(3)
        .desired_width(f32::INFINITY);
    if ui.add(edit).labelled_by(label.id).changed() {
        form.rules_edited = true;
    }
    if ui
        .add_enabled(form.rules_edited, egui::Button::new("Save rules"))
        .clicked()
    {
        commands.push(Command::SaveModeRules);
    }
}
