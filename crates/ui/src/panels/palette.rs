//! The command palette (Ctrl+Shift+P): every command, filtered as you type.

use crate::command::Command;
use crate::keymap::shortcut_text;
use crate::model::state::AppState;

pub fn show(ctx: &egui::Context, state: &mut AppState, commands: &mut Vec<Command>) {
    let Some(palette) = &mut state.palette else {
        return;
    };
    let query = palette.query.to_lowercase();
    let entries: Vec<(&str, String, Command)> = Command::palette()
        .into_iter()
        .filter_map(|c| {
            let label = c.label()?;
            Some((label, shortcut_text(ctx, &c).unwrap_or_default(), c))
        })
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
                            ui.weak(shortcut.as_str());
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
