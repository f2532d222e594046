//! The find bar: the query's field, the count of matches and stepping through them (Enter,
//! Shift+Enter, the arrows), and the colours the matches are marked in.

use egui::{Color32, Id, Key, Modifiers, TextEdit};

use super::View;
use crate::command::Command;

pub(super) fn mark_colors(dark: bool) -> (Color32, Color32) {
    if dark {
        (
            Color32::from_rgba_unmultiplied(230, 190, 60, 55),
            Color32::from_rgba_unmultiplied(255, 140, 0, 150),
        )
    } else {
        (
            Color32::from_rgba_unmultiplied(250, 220, 80, 120),
            Color32::from_rgba_unmultiplied(255, 150, 30, 200),
        )
    }
}

pub(super) fn find_bar(
    ui: &mut egui::Ui,
    query: &mut String,
    count: usize,
    find_id: Id,
    view: &mut View,
    commands: &mut Vec<Command>,
) {
    if *query != view.query {
        view.query = query.clone();
        view.current = 0;
        view.reveal = true;
    }
    if view.current >= count {
        view.current = 0;
    }
    let step = |view: &mut View, forward: bool| {
        if count > 0 {
            view.current = if forward {
                (view.current + 1) % count
            } else {
                (view.current + count - 1) % count
            };
            view.reveal = true;
        }
    };
    ui.horizontal(|ui| {
        // Enter / Shift+Enter in the field step through matches instead of leaving it.
        if ui.memory(|m| m.has_focus(find_id)) {
            let (back, forward) = ui.input_mut(|i| {
                (
                    i.consume_key(Modifiers::SHIFT, Key::Enter),
                    i.consume_key(Modifiers::NONE, Key::Enter),
                )
            });
            if back || forward {
                step(view, forward);
            }
        }
        let field = TextEdit::singleline(query)
            .id(find_id)
            .hint_text("Find in file")
            .desired_width(240.0)
            .return_key(None);
        let response = ui.add(field);
        if !view.find_was_open {
            response.request_focus();
        }
        let status = match (query.is_empty(), count) {
            (true, _) => String::new(),
            (false, 0) => "No matches".to_string(),
            (false, n) => format!("{} of {n}", view.current + 1),
        };
        ui.label(status);
        if ui
            .small_button("⬆")
            .on_hover_text("Previous (Shift+Enter)")
            .clicked()
        {
            step(view, false);
        }
        if ui.small_button("⬇").on_hover_text("Next (Enter)").clicked() {
            step(view, true);
        }
        if ui.small_button("×").on_hover_text("Close (Esc)").clicked() {
            commands.push(Command::ToggleFind);
        }
    });
    ui.separator();
}
