//! The keys the editor takes while it shows a tab: go to definition and find references,
//! save, find and close, and Esc (read from the raw events) to close the find bar.

use egui::{Event, Id, Key};

use super::editor_id;
use crate::command::Command;
use crate::model::state::Tab;

pub(super) fn shortcuts(ui: &egui::Ui, tab: &Tab, find_id: Id, commands: &mut Vec<Command>) {
    use crate::command::SymbolCommand;
    use crate::keymap::editor_shortcut;
    // Shift+F12 first: F12 alone would take it too (egui ignores an extra Shift).
    for symbol in [SymbolCommand::FindReferences, SymbolCommand::GoToDefinition] {
        let command = Command::Symbol(symbol);
        if editor_shortcut(ui, &command) {
            commands.push(command);
            break;
        }
    }
    let save = editor_shortcut(ui, &Command::Save);
    let find = editor_shortcut(ui, &Command::ToggleFind);
    let close = editor_shortcut(ui, &Command::CloseActiveTab);
    if save {
        commands.push(Command::Save);
    }
    if close {
        commands.push(Command::CloseActiveTab);
    }
    let find_focused = ui.memory(|m| m.has_focus(find_id));
    if find {
        if tab.find.is_some() && !find_focused {
            ui.memory_mut(|m| m.request_focus(find_id));
        } else {
            commands.push(Command::ToggleFind);
        }
    }
    // The app's own shortcuts consume Esc (cancel), so look at the raw events.
    let focus = ui.memory(|m| m.focused());
    let ours = focus.is_none_or(|id| id == find_id || id == editor_id(&tab.path));
    if tab.find.is_some() && ours && escape_pressed(ui) {
        commands.push(Command::ToggleFind);
    }
}

pub(super) fn escape_pressed(ui: &egui::Ui) -> bool {
    ui.input(|i| {
        i.raw.events.iter().any(|e| {
            matches!(
                e,
                Event::Key {
                    key: Key::Escape,
                    pressed: true,
                    ..
                }
            )
        })
    })
}
