//! The command palette (Ctrl+Shift+P): every command, filtered as you type.

use super::command::{AgentCommand, Command};
use super::state::{AppState, BottomTab, Theme};
use crate::agent::runner::Answer;
use crate::store::ChatMode;

pub fn show(ctx: &egui::Context, state: &mut AppState, commands: &mut Vec<Command>) {
    let Some(palette) = &mut state.palette else {
        return;
    };
    let query = palette.query.to_lowercase();
    let entries: Vec<_> = Command::palette()
        .into_iter()
        .filter(|(label, _, _)| {
            query
                .split_whitespace()
                .all(|w| label.to_lowercase().contains(w))
        })
        .collect();
    palette.selected = palette.selected.min(entries.len().saturating_sub(1));
    egui::Modal::new(egui::Id::unique("palette")).show(ctx, |ui| {
        ui.set_width(460.0);
        let field = ui.add(
            egui::TextEdit::singleline(&mut palette.query)
                .hint_text("Type a command")
                .desired_width(f32::INFINITY),
        );
        field.request_focus();
        let (down, up, enter, escape) = ui.input(|i| {
            (
                i.key_pressed(egui::Key::ArrowDown),
                i.key_pressed(egui::Key::ArrowUp),
                i.key_pressed(egui::Key::Enter),
                i.key_pressed(egui::Key::Escape),
            )
        });
        if down {
            palette.selected = (palette.selected + 1).min(entries.len().saturating_sub(1));
        }
        if up {
            palette.selected = palette.selected.saturating_sub(1);
        }
        egui::ScrollArea::vertical()
            .max_height(320.0)
            .show(ui, |ui| {
                for (index, (label, shortcut, command)) in entries.iter().enumerate() {
                    ui.horizontal(|ui| {
                        if ui
                            .selectable_label(index == palette.selected, *label)
                            .clicked()
                        {
                            commands.push(Command::ClosePalette);
                            commands.push(command.clone());
                        }
                        if !shortcut.is_empty() {
                            ui.weak(*shortcut);
                        }
                    });
                }
            });
        if enter && let Some((_, _, command)) = entries.get(palette.selected) {
            commands.push(Command::ClosePalette);
            commands.push(command.clone());
        }
        if escape {
            commands.push(Command::ClosePalette);
        }
    });
}

impl Command {
    /// Commands the palette offers, with their shortcuts.
    pub fn palette() -> Vec<(&'static str, &'static str, Command)> {
        vec![
            ("Open folder…", "Ctrl+O", Command::OpenFolderDialog),
            ("New chat", "Ctrl+N", Command::NewChat),
            ("Send prompt", "Enter", Command::Send),
            ("Cancel reply", "Esc", Command::Cancel),
            ("Redo last reply", "Ctrl+R", Command::Redo),
            (
                "Approve checked changes",
                "Ctrl+Shift+Enter",
                Command::Approve,
            ),
            ("Reject proposal", "", Command::Reject),
            ("Next hunk", "N", Command::NextHunk),
            ("Previous hunk", "P", Command::PrevHunk),
            ("Toggle side-by-side diff", "", Command::ToggleSideBySide),
            ("Save file", "Ctrl+S", Command::Save),
            ("Close tab", "Ctrl+W", Command::CloseActiveTab),
            ("Find in file", "Ctrl+F", Command::ToggleFind),
            ("Undo last AI change", "", Command::Undo),
            ("Mode: Build", "", Command::SetMode(ChatMode::Build)),
            ("Mode: Ask", "", Command::SetMode(ChatMode::Ask)),
            ("Mode: Agent", "", Command::SetMode(ChatMode::Agent)),
            ("Mode: Plan", "", Command::SetMode(ChatMode::Plan)),
            (
                "Approve the waiting tool call",
                "Alt+Y",
                AgentCommand::AnswerWaiting(Answer::Approve).into(),
            ),
            (
                "Reject the waiting tool call",
                "Alt+N",
                AgentCommand::AnswerWaiting(Answer::Reject).into(),
            ),
            (
                "Always allow calls like the waiting one",
                "Alt+A",
                AgentCommand::AnswerWaiting(Answer::AlwaysAllow).into(),
            ),
            ("Toggle auto-approve", "", Command::ToggleAutoApprove),
            ("Refresh models", "", Command::RefreshModels),
            ("Show history", "", Command::ShowBottom(BottomTab::History)),
            ("Show log", "", Command::ShowBottom(BottomTab::Log)),
            (
                "Show approval requests",
                "",
                Command::ShowBottom(BottomTab::Approvals),
            ),
            ("Toggle bottom panel", "Ctrl+J", Command::ToggleBottom),
            ("Settings", "Ctrl+,", Command::OpenSettings),
            ("Theme: dark", "", Command::SetTheme(Theme::Dark)),
            ("Theme: light", "", Command::SetTheme(Theme::Light)),
            ("Theme: follow system", "", Command::SetTheme(Theme::System)),
        ]
    }
}
