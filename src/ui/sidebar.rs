//! The left panel: the project's chats above its file tree.

use std::collections::BTreeSet;

use super::command::Command;
use super::state::{AppState, ProjectState};
use super::theme;

pub fn show(ui: &mut egui::Ui, state: &mut AppState, commands: &mut Vec<Command>) {
    let proposed: BTreeSet<String> = state
        .proposed_paths()
        .into_iter()
        .map(str::to_string)
        .collect();
    let streaming = state
        .chat()
        .and_then(|c| c.streaming.as_ref().map(|_| c.chat.id));
    let Some(project) = &mut state.project else {
        return;
    };
    let height = ui.available_height();
    ui.horizontal(|ui| {
        ui.strong("Chats");
        let hint = super::keymap::hint(ui, &Command::NewChat);
        if ui.small_button("+ New").on_hover_text(hint).clicked() {
            commands.push(Command::NewChat);
        }
    });
    ui.add(
        egui::TextEdit::singleline(&mut project.chat_filter)
            .hint_text("Filter chats")
            .desired_width(f32::INFINITY),
    );
    egui::ScrollArea::vertical()
        .id_salt("chats")
        .max_height(height * 0.35)
        .show(ui, |ui| chats(ui, project, streaming, commands));
    ui.separator();
    ui.horizontal(|ui| {
        ui.strong("Files");
        if ui.small_button("+ File").clicked() {
            project.new_file = Some(String::new());
        }
    });
    if let Some(name) = &mut project.new_file {
        let field = ui.add(egui::TextEdit::singleline(name).hint_text("path/to/new_file.rs"));
        if field.lost_focus()
            && ui.input(|i| i.key_pressed(egui::Key::Enter))
            && !name.trim().is_empty()
        {
            commands.push(Command::CreateFile(name.trim().to_string()));
        }
    }
    egui::ScrollArea::vertical()
        .id_salt("files")
        .auto_shrink([false, false])
        .show(ui, |ui| tree(ui, project, &proposed, commands));
}

fn chats(
    ui: &mut egui::Ui,
    project: &mut ProjectState,
    streaming: Option<i64>,
    commands: &mut Vec<Command>,
) {
    let filter = project.chat_filter.to_lowercase();
    let current = project.chat.as_ref().map(|c| c.chat.id);
    for chat in &project.chats {
        let title = if chat.title.is_empty() {
            "New chat"
        } else {
            chat.title.as_str()
        };
        if !filter.is_empty() && !title.to_lowercase().contains(&filter) {
            continue;
        }
        if let Some((id, text)) = &mut project.renaming_chat
            && *id == chat.id
        {
            let field = ui.text_edit_singleline(text);
            if field.lost_focus() {
                commands.push(Command::RenameChat(*id, text.trim().to_string()));
            }
            continue;
        }
        let marker = if streaming == Some(chat.id) {
            "• "
        } else {
            ""
        };
        let response = ui.selectable_label(current == Some(chat.id), format!("{marker}{title}"));
        if response.clicked() {
            commands.push(Command::SelectChat(chat.id));
        }
        response.context_menu(|ui| {
            if ui.button("Rename").clicked() {
                project.renaming_chat = Some((chat.id, chat.title.clone()));
                ui.close();
            }
            if ui.button("Delete").clicked() {
                commands.push(Command::DeleteChat(chat.id));
                ui.close();
            }
        });
    }
    if project.chats.is_empty() {
        ui.weak("No chats yet");
    }
}

/// The file tree, built from the sorted path list; only expanded folders are laid out.
fn tree(
    ui: &mut egui::Ui,
    project: &mut ProjectState,
    proposed: &BTreeSet<String>,
    commands: &mut Vec<Command>,
) {
    let mut skip_prefix: Option<String> = None;
    let mut shown_dirs: BTreeSet<String> = BTreeSet::new();
    let open_path = project
        .active_tab
        .and_then(|i| project.tabs.get(i))
        .map(|t| t.path.clone());
    for path in &project.files {
        if let Some(prefix) = &skip_prefix {
            if path.starts_with(prefix.as_str()) {
                continue;
            }
            skip_prefix = None;
        }
        // Folders above this file, shown once each.
        let parts: Vec<&str> = path.split('/').collect();
        let mut collapsed = false;
        for depth in 0..parts.len() - 1 {
            let dir = parts[..=depth].join("/");
            if shown_dirs.contains(&dir) {
                if !project.expanded.contains(&dir) {
                    collapsed = true;
                    break;
                }
                continue;
            }
            shown_dirs.insert(dir.clone());
            let open = project.expanded.contains(&dir);
            let marked = proposed.iter().any(|p| p.starts_with(&format!("{dir}/")));
            let label = format!(
                "{}{} {}",
                indent(depth),
                if open { "⏷" } else { "⏵" },
                parts[depth]
            );
            let text = if marked {
                egui::RichText::new(label).color(theme::WARN)
            } else {
                egui::RichText::new(label)
            };
            if ui.selectable_label(false, text).clicked() {
                if open {
                    project.expanded.remove(&dir);
                } else {
                    project.expanded.insert(dir.clone());
                }
            }
            if !open {
                skip_prefix = Some(format!("{dir}/"));
                collapsed = true;
                break;
            }
        }
        if collapsed {
            continue;
        }
        let depth = parts.len() - 1;
        let name = parts[depth];
        if let Some((from, to)) = &mut project.renaming_file
            && from == path
        {
            let field = ui.add(egui::TextEdit::singleline(to).desired_width(f32::INFINITY));
            field.request_focus();
            let (enter, escape) = ui.input(|i| {
                (
                    i.key_pressed(egui::Key::Enter),
                    i.key_pressed(egui::Key::Escape),
                )
            });
            if enter {
                commands.push(Command::RenameFile {
                    from: from.clone(),
                    to: to.trim().to_string(),
                });
            } else if escape {
                commands.push(Command::RenameFile {
                    from: from.clone(),
                    to: from.clone(),
                });
            }
            continue;
        }
        let mark = if proposed.contains(path) { " •" } else { "" };
        let label = format!("{}{} {name}{mark}", indent(depth), theme::file_icon(path));
        let text = if mark.is_empty() {
            egui::RichText::new(label)
        } else {
            egui::RichText::new(label).color(theme::WARN)
        };
        let response = ui.selectable_label(open_path.as_deref() == Some(path.as_str()), text);
        if response.clicked() {
            commands.push(Command::OpenFile(path.clone()));
        }
        response.context_menu(|ui| {
            if ui.button("Rename").clicked() {
                project.renaming_file = Some((path.clone(), path.clone()));
                ui.close();
            }
            if ui.button("Delete").clicked() {
                commands.push(Command::DeleteFile(path.clone()));
                ui.close();
            }
        });
    }
}

fn indent(depth: usize) -> String {
    "   ".repeat(depth)
}
