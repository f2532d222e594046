//! Symbols: the picker (several definitions, or the references to a name) and the
//! definitions the file tree's filter matches.

use crate::command::{Command, SymbolCommand};
use crate::model::state::ProjectState;

/// The picker window: a row per place; clicking one opens the file at its line.
pub fn picker(ctx: &egui::Context, project: &ProjectState, commands: &mut Vec<Command>) {
    let Some(picker) = &project.symbols.picker else {
        return;
    };
    let mut open = true;
    egui::Window::new(picker.title.as_str())
        .id(egui::Id::unique("tandem-symbol-picker"))
        .open(&mut open)
        .collapsible(false)
        .default_width(560.0)
        .anchor(egui::Align2::CENTER_TOP, egui::vec2(0.0, 80.0))
        .show(ctx, |ui| {
            egui::ScrollArea::vertical()
                .max_height(360.0)
                .show(ui, |ui| {
                    for place in &picker.places {
                        let label = egui::RichText::new(place.label()).monospace();
                        let button = egui::Button::new(label).truncate().frame(false);
                        if ui.add(button).on_hover_text(&place.detail).clicked() {
                            commands.push(
                                SymbolCommand::Pick {
                                    path: place.path.clone(),
                                    line: place.line,
                                }
                                .into(),
                            );
                        }
                    }
                });
        });
    if !open || ctx.input(|i| i.key_pressed(egui::Key::Escape)) {
        commands.push(SymbolCommand::ClosePicker.into());
    }
}

/// The label of a definition the filter matched: "name — path:line".
pub fn match_label(symbol: &tandem_core::app::SymbolAt) -> String {
    format!("{} — {}:{}", symbol.name, symbol.path, symbol.line)
}
