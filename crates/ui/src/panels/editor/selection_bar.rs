//! The bar above a small file's buffer for its selected lines: "Ask about this" and "Change
//! this" put them into the prompt.

use super::editor_id;
use crate::command::Command;
use crate::model::state::Tab;

/// With lines selected in the editor: "Ask about this" and "Change this" put them, with the
/// path and line numbers, at the start of the prompt. The lines it shows are the tab's
/// selection, which every send carries (see `model::selection::focus`).
pub(super) fn selection_bar(ui: &mut egui::Ui, tab: &mut Tab, commands: &mut Vec<Command>) {
    let id = editor_id(&tab.path);
    let selected = egui::text_edit::TextEditState::load(ui.ctx(), id)
        .and_then(|s| s.cursor.char_range())
        .filter(|r| r.primary != r.secondary)
        .map(|r| {
            crate::model::selection::lines_of(&tab.text, r.primary.index.0, r.secondary.index.0)
        });
    tab.selection = selected;
    // The row is always there (buttons off without a selection), so selecting never moves
    // the text under the pointer.
    ui.horizontal(|ui| {
        let span = match selected {
            Some((first, last)) if first == last => format!("Line {first} selected"),
            Some((first, last)) => format!("Lines {first}-{last} selected"),
            None => "Select lines to ask about them or change them".to_string(),
        };
        ui.weak(span);
        for (label, change, hint) in [
            (
                "Ask about this",
                false,
                "Puts these lines in the prompt, in Ask mode",
            ),
            (
                "Change this",
                true,
                "Puts these lines in the prompt as the place to edit, in Build mode",
            ),
        ] {
            let button = ui
                .add_enabled(selected.is_some(), egui::Button::new(label).small())
                .on_hover_text(hint);
            if let (true, Some((first, last))) = (button.clicked(), selected) {
                commands.push(Command::SelectionToChat {
                    path: tab.path.clone(),
                    first,
                    last,
                    change,
                });
            }
        }
    });
}
