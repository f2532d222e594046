//! The review's Run panel: a command (prefilled with the project's check command) run in
//! the chat's workspace, where the proposal already is, off the UI thread; its exit code
//! and output below. What it changes stays in the workspace, out of the proposal.

use egui::{Button, CornerRadius, Frame, Label, Margin, RichText, ScrollArea, Ui};

use crate::command::{Command, WorkspaceCommand};
use crate::model::workspaces::RunView;
use crate::widgets::theme;
use tandem_core::app::WorkspaceRun;

/// What the panel shows: the chat's run view and the command it starts with.
pub struct RunPanel<'a> {
    pub view: Option<&'a RunView>,
    /// The project's check command (empty: none).
    pub default_command: &'a str,
}

/// Tallest the output of one stream grows before it scrolls.
const OUTPUT_HEIGHT: f32 = 180.0;

pub(super) fn show(ui: &mut Ui, panel: &RunPanel<'_>, commands: &mut Vec<Command>) {
    let empty = RunView::default();
    let view = panel.view.unwrap_or(&empty);
    ui.horizontal(|ui| {
        let mut line = view.command_or(panel.default_command).to_string();
        let edit = egui::TextEdit::singleline(&mut line)
            .hint_text("A command, e.g. cargo test")
            .code_editor()
            .desired_width(320.0);
        let field = ui
            .add_enabled(!view.running, edit)
            .on_hover_text("Runs in the chat's workspace, where the proposal already is");
        if field.changed() {
            commands.push(WorkspaceCommand::SetRunCommand(line.clone()).into());
        }
        let entered = field.lost_focus() && ui.input(|i| i.key_pressed(egui::Key::Enter));
        let run = ui
            .add_enabled(!view.running, Button::new("Run"))
            .on_hover_text(
                "Run this command in the chat's workspace (the agent's container); what it \
                 changes stays there, out of the proposal",
            );
        if (run.clicked() || entered) && !view.running {
            commands.push(WorkspaceCommand::Run.into());
        }
        if view.running {
            ui.spinner();
            ui.weak("Running…");
        }
    });
    match &view.last {
        Some(Ok(ran)) => output(ui, ran, commands),
        Some(Err(why)) => {
            ui.horizontal_wrapped(|ui| {
                ui.colored_label(theme::ERROR, format!("Could not run: {why}"));
                if ui.small_button("Hide").clicked() {
                    commands.push(WorkspaceCommand::ClearRun.into());
                }
            });
        }
        None => {}
    }
}

fn output(ui: &mut Ui, ran: &WorkspaceRun, commands: &mut Vec<Command>) {
    ui.horizontal_wrapped(|ui| {
        let (verdict, color) = match (ran.timed_out, ran.exit_code, ran.signal) {
            (true, _, _) => ("timed out".to_string(), theme::ERROR),
            (false, Some(0), _) => ("exit code 0".to_string(), theme::OK),
            (false, Some(code), _) => (format!("exit code {code}"), theme::ERROR),
            (false, None, Some(signal)) => (format!("killed by signal {signal}"), theme::ERROR),
            (false, None, None) => ("killed".to_string(), theme::ERROR),
        };
        ui.colored_label(color, RichText::new(verdict).strong());
        ui.weak(format!(
            "`{}` in {:.1} s ({})",
            ran.command,
            ran.duration_ms as f64 / 1000.0,
            ran.kind
        ));
        if ui.small_button("Hide").clicked() {
            commands.push(WorkspaceCommand::ClearRun.into());
        }
    });
    for note in ran.proposal.iter().flat_map(|p| p.notes()) {
        ui.colored_label(theme::WARN, note);
    }
    if ran.stdout.is_empty() && ran.stderr.is_empty() {
        ui.weak("No output.");
    }
    for (name, text) in [("stdout", &ran.stdout), ("stderr", &ran.stderr)] {
        if text.is_empty() {
            continue;
        }
        ui.weak(name);
        Frame::new()
            .fill(ui.visuals().code_bg_color)
            .corner_radius(CornerRadius::same(4))
            .inner_margin(Margin::same(6))
            .show(ui, |ui| {
                ScrollArea::both()
                    .id_salt(("tandem_run_output", name))
                    .max_height(OUTPUT_HEIGHT)
                    .auto_shrink([false, true])
                    .stick_to_bottom(true)
                    .show(ui, |ui| {
                        let text = RichText::new(text.trim_end()).monospace();
                        ui.add(Label::new(text).selectable(true).extend());
                    });
            });
    }
}
