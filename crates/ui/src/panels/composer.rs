//! The composer: the prompt field with its `@` suggestions (saved prompts, folders and files
//! of the project; arrows choose, Enter or Tab takes, Esc closes), a removable chip for each
//! mention, and Send / Cancel / Redo.

use egui::text::{CCursor, CCursorRange};
use egui::text_edit::TextEditState;
use egui::{Id, Key, Modifiers};

use crate::command::Command;
use crate::model::mentions::{self, Suggestion};
use crate::model::state::{AppState, SendKey};
use crate::widgets::theme;

pub fn show(
    ui: &mut egui::Ui,
    state: &mut AppState,
    streaming: bool,
    send_key: SendKey,
    commands: &mut Vec<Command>,
) {
    let hint = match send_key {
        SendKey::Enter => "Ask for a change… (@ mentions files and prompts; Enter sends)",
        SendKey::CtrlEnter => "Ask for a change… (@ mentions files and prompts; Ctrl+Enter sends)",
    };
    let id = Id::unique("tandem-composer");
    let suggestions = open_suggestions(ui, state, id);
    // The popup's keys are taken before the field would use them.
    let mut chosen = None;
    if let Some((_, list)) = &suggestions {
        let count = list.len();
        let pressed = |key| ui.input_mut(|i| i.consume_key(Modifiers::NONE, key));
        if pressed(Key::ArrowDown) {
            state.mention_selected = (state.mention_selected + 1) % count;
        }
        if pressed(Key::ArrowUp) {
            state.mention_selected = (state.mention_selected + count - 1) % count;
        }
        if pressed(Key::Enter) || pressed(Key::Tab) {
            chosen = Some(state.mention_selected.min(count - 1));
        }
        if pressed(Key::Escape) {
            state.mention_dismissed = suggestions.as_ref().map(|(q, _)| q.range.start);
        }
    }
    let response = ui.add(
        egui::TextEdit::multiline(&mut state.composer)
            .id(id)
            .hint_text(hint)
            .desired_rows(3)
            .desired_width(f32::INFINITY),
    );
    if response.changed() {
        state.composer_edited = Some(std::time::Instant::now());
        state.mention_selected = 0;
    }
    if let Some((query, list)) = &suggestions
        && state.mention_dismissed != Some(query.range.start)
    {
        if let Some(clicked) = popup(ui, &response, list, state.mention_selected) {
            chosen = Some(clicked);
        }
        if let Some(index) = chosen {
            let (text, cursor) = mentions::apply(&state.composer, query, &list[index]);
            state.composer = text;
            state.composer_edited = Some(std::time::Instant::now());
            state.mention_selected = 0;
            set_cursor(ui.ctx(), id, cursor);
            response.request_focus();
        }
    }
    if response.has_focus() && crate::send_pressed(ui, send_key) {
        // The key also inserted a newline: drop it.
        if send_key == SendKey::Enter && state.composer.ends_with('\n') {
            state.composer.pop();
        }
        commands.push(Command::Send);
    }
    chips(ui, state);
    attachments(ui, state, commands);
    ui.horizontal(|ui| {
        if streaming {
            if ui.button("⏹ Cancel").on_hover_text("Esc").clicked() {
                commands.push(Command::Cancel);
            }
        } else if ui
            .add_enabled(!state.composer.trim().is_empty(), egui::Button::new("Send"))
            .clicked()
        {
            commands.push(Command::Send);
        }
        if ui
            .button("↻ Redo")
            .on_hover_text("Run the last prompt again")
            .clicked()
        {
            commands.push(Command::Redo);
        }
        if ui
            .button("Attach…")
            .on_hover_text(
                "Files as context, or images (PNG, JPEG, GIF, WebP); or drop them on the window",
            )
            .clicked()
        {
            commands.push(Command::AttachFiles);
        }
        if ui
            .button("Paste image")
            .on_hover_text("Attach the image on the clipboard")
            .clicked()
        {
            commands.push(Command::PasteImage);
        }
    });
}

/// The files and images attached to the prompt: a thumbnail or the name, × to remove, and
/// for a text file "Add to project" (a proposal with it as a new file).
fn attachments(ui: &mut egui::Ui, state: &AppState, commands: &mut Vec<Command>) {
    if state.attachments.is_empty() {
        return;
    }
    ui.horizontal_wrapped(|ui| {
        for (index, attach) in state.attachments.iter().enumerate() {
            let image = tandem_core::app::image_type(&attach.bytes).is_some();
            ui.group(|ui| {
                ui.horizontal(|ui| {
                    if image {
                        crate::widgets::thumbnail::show(ui, &attach.bytes, 40.0);
                    }
                    let size = attach.bytes.len().div_ceil(1024);
                    ui.label(egui::RichText::new(format!("{} ({size} KiB)", attach.name)).small());
                    if !image
                        && ui
                            .small_button("Add to project")
                            .on_hover_text("Propose it as a new file of the project, for review")
                            .clicked()
                    {
                        commands.push(Command::AddAttachmentToProject(index));
                    }
                    if ui
                        .small_button("×")
                        .on_hover_text(format!("Remove {}", attach.name))
                        .clicked()
                    {
                        commands.push(Command::RemoveAttachment(index));
                    }
                });
            });
        }
    });
}

/// The height the composer takes: the field, its buttons, a row of chips when the text
/// mentions something, and a row of attachments when there are some.
pub fn height(state: &AppState) -> f32 {
    let files = state.project.as_ref().map_or(&[][..], |p| p.files.files());
    let chips = match mentions::chips(&state.composer, files, &state.prompts).is_empty() {
        true => 0.0,
        false => 26.0,
    };
    let attached = match state.attachments.is_empty() {
        true => 0.0,
        false => 60.0,
    };
    110.0 + chips + attached
}

/// The `@word` at the field's cursor and what it may complete to, while the field has the
/// keyboard and there is something to offer.
fn open_suggestions(
    ui: &egui::Ui,
    state: &AppState,
    id: Id,
) -> Option<(mentions::Query, Vec<Suggestion>)> {
    if !ui.ctx().memory(|m| m.has_focus(id)) {
        return None;
    }
    let cursor = TextEditState::load(ui.ctx(), id)?
        .cursor
        .char_range()?
        .primary
        .index
        .0;
    let query = mentions::query_at(&state.composer, cursor)?;
    if state.mention_dismissed == Some(query.range.start) {
        return None;
    }
    let files = state.project.as_ref().map_or(&[][..], |p| p.files.files());
    let list = mentions::suggestions(&query.word, files, &state.prompts);
    (!list.is_empty()).then_some((query, list))
}

/// The suggestions above the field; the index of one clicked.
fn popup(
    ui: &egui::Ui,
    field: &egui::Response,
    list: &[Suggestion],
    selected: usize,
) -> Option<usize> {
    let mut clicked = None;
    egui::Area::new(Id::unique("tandem-mention-suggestions"))
        .order(egui::Order::Foreground)
        .fixed_pos(field.rect.left_top())
        .pivot(egui::Align2::LEFT_BOTTOM)
        .show(ui.ctx(), |ui| {
            egui::Frame::popup(ui.style()).show(ui, |ui| {
                ui.set_min_width(field.rect.width().min(420.0));
                for (i, suggestion) in list.iter().enumerate() {
                    let (kind, detail) = match suggestion {
                        Suggestion::Prompt { preview, .. } => ("prompt", preview.as_str()),
                        Suggestion::Folder(_) => ("folder", ""),
                        Suggestion::File(_) => ("file", ""),
                    };
                    let text = egui::RichText::new(format!("{}  ", suggestion.label()));
                    let row = ui.horizontal(|ui| {
                        let row = ui.selectable_label(i == selected, text);
                        ui.weak(kind);
                        if !detail.is_empty() {
                            ui.add(egui::Label::new(egui::RichText::new(detail).weak()).truncate());
                        }
                        row
                    });
                    if row.inner.clicked() {
                        clicked = Some(i);
                    }
                }
                ui.weak("Up/Down choose · Enter or Tab insert · Esc close");
            });
        });
    clicked
}

/// A chip for each mention in the text; × takes the mention out.
fn chips(ui: &mut egui::Ui, state: &mut AppState) {
    let files = state.project.as_ref().map_or(&[][..], |p| p.files.files());
    let found = mentions::chips(&state.composer, files, &state.prompts);
    if found.is_empty() {
        return;
    }
    // The estimate for this text, when there is one: a file it never sends is marked.
    let typed = state.composer.trim();
    let never_sent = (state.preview.as_ref())
        .filter(|(prompt, _)| prompt == typed)
        .and_then(|(_, estimate)| estimate.as_ref().ok())
        .map(|breakdown| mentions::never_sent(&found, breakdown))
        .unwrap_or_default();
    let mut removed = None;
    ui.horizontal_wrapped(|ui| {
        for (i, chip) in found.iter().enumerate() {
            let secret = never_sent.contains(&i);
            let mut text = egui::RichText::new(format!("{} ×", chip.label)).small();
            if chip.unknown {
                text = text.color(theme::ERROR);
            } else if secret {
                text = text.color(theme::WARN).strikethrough();
            }
            let hover = match (chip.unknown, secret) {
                (true, _) => {
                    "No saved prompt has this name: sending would be refused. Click to remove."
                }
                (false, true) => {
                    "Never sent: it looks like it holds a secret (a key, a token, an env file). \
                     Click to remove the mention."
                }
                (false, false) => "In the context first. Click to remove the mention.",
            };
            if ui.small_button(text).on_hover_text(hover).clicked() {
                removed = Some(chip.clone());
            }
        }
    });
    if let Some(chip) = removed {
        state.composer = mentions::remove(&state.composer, &chip);
        state.composer_edited = Some(std::time::Instant::now());
    }
}

fn set_cursor(ctx: &egui::Context, id: Id, at: usize) {
    if let Some(mut text_state) = TextEditState::load(ctx, id) {
        text_state
            .cursor
            .set_char_range(Some(CCursorRange::one(CCursor::new(at))));
        text_state.store(ctx, id);
    }
}
