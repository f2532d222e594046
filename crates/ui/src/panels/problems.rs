//! The Problems tab: the last run of the project's check in the open chat — its verdict,
//! each problem as `path:line:col message` (a click opens the file at that line), and "Fix
//! these problems", which sends them to the model in Build mode.

use crate::command::Command;
use crate::model::problems::last_check;
use crate::model::state::AppState;
use crate::widgets::theme;
use tandem_core::app::Severity;

pub fn show(ui: &mut egui::Ui, state: &AppState, commands: &mut Vec<Command>) {
    let Some(check) = state.chat().and_then(last_check) else {
        ui.weak(
            "No check has run in this chat. Set a check command for the project (Settings, or \
             `tandem project config --check-command`) and each Build proposal is checked in a \
             scratch copy before you see it.",
        );
        return;
    };
    ui.horizontal(|ui| {
        let (color, verdict) = match check.passed {
            true => (theme::OK, "passed".to_string()),
            false => (
                theme::ERROR,
                format!("failed · {} problem(s)", check.problems.len()),
            ),
        };
        ui.colored_label(color, format!("`{}` {verdict}", check.command));
        ui.weak(format!("round {}", check.round));
        if !check.passed
            && ui
                .button("Fix these problems")
                .on_hover_text("Sends them to the model in Build mode")
                .clicked()
        {
            commands.push(Command::FixProblems);
        }
    });
    ui.separator();
    egui::ScrollArea::vertical()
        .id_salt("problems")
        .auto_shrink([false, false])
        .show(ui, |ui| {
            for problem in &check.problems {
                let (color, word) = match problem.severity {
                    Severity::Error => (theme::ERROR, "error"),
                    Severity::Warning => (theme::WARN, "warning"),
                };
                ui.horizontal(|ui| {
                    ui.colored_label(color, word);
                    let col = problem.column.map(|c| format!(":{c}")).unwrap_or_default();
                    let place = format!("{}:{}{col}", problem.path, problem.line);
                    if ui
                        .link(egui::RichText::new(place).monospace())
                        .on_hover_text("Open the file at this line")
                        .clicked()
                    {
                        commands.push(Command::OpenFileAt {
                            path: problem.path.clone(),
                            line: problem.line,
                        });
                    }
                    ui.label(&problem.message);
                });
            }
            if check.problems.is_empty() && !check.output.is_empty() {
                ui.label(egui::RichText::new(&check.output).monospace());
            }
        });
}
