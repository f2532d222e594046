//! The left panel: the project's chats above its file tree.

use std::collections::BTreeSet;

use crate::command::Command;
use crate::model::file_tree::Row;
use crate::model::state::{AppState, ProjectState};
use crate::widgets::theme;

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
        let hint = crate::keymap::hint(ui, &Command::NewChat);
        if ui.small_button("+ New").on_hover_text(hint).clicked() {
            commands.push(Command::NewChat);
        }
    });
    let filter = ui.add(
        egui::TextEdit::singleline(&mut project.chat_filter)
            .hint_text("Filter chats, search messages")
            .desired_width(f32::INFINITY),
    );
    if filter.changed() {
        project.chat_filter_edited = Some(std::time::Instant::now());
        if project.chat_filter.trim().is_empty() {
            project.chat_hits = None;
        }
    }
    egui::ScrollArea::vertical()
        .id_salt("chats")
        .max_height(height * 0.35)
        .show(ui, |ui| {
            chats(ui, project, streaming, commands);
            hits(ui, project, commands);
            archived(ui, project, commands);
        });
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
    let filter = ui.add(
        egui::TextEdit::singleline(&mut project.files.filter)
            .hint_text("Filter files and symbols")
            .desired_width(f32::INFINITY),
    );
    if filter.changed() {
        project.symbols.filter_edited = Some(std::time::Instant::now());
    }
    if project.files.is_filtered() {
        matches(ui, project, &proposed, commands);
    } else {
        tree(ui, project, &proposed, commands);
    }
}

/// The filter's matches as a flat list: the paths, then (once typing pauses) the symbols
/// whose names match; only the rows in view are laid out.
fn matches(
    ui: &mut egui::Ui,
    project: &mut ProjectState,
    proposed: &BTreeSet<String>,
    commands: &mut Vec<Command>,
) {
    let files = project.files.matches().len();
    let symbols = project.symbols.matches_for(&project.files.filter).len();
    if files == 0 && symbols == 0 {
        ui.weak("No file matches");
        return;
    }
    // The symbols follow the files under a heading row.
    let count = files + if symbols > 0 { symbols + 1 } else { 0 };
    let row = ui.spacing().interact_size.y;
    egui::ScrollArea::vertical()
        .id_salt("file-matches")
        .auto_shrink([false, false])
        .show_rows(ui, row, count, |ui, range| {
            for at in range {
                if at == files {
                    ui.weak(format!("Symbols ({symbols})"));
                    continue;
                }
                if at > files {
                    let found = project.symbols.matches_for(&project.files.filter);
                    if let Some(symbol) = found.get(at - files - 1) {
                        let label = crate::panels::symbols::match_label(symbol);
                        if ui
                            .selectable_label(false, label)
                            .on_hover_text(&symbol.kind)
                            .clicked()
                        {
                            let (path, line) = (symbol.path.clone(), symbol.line as usize);
                            commands.push(Command::OpenFileAt { path, line });
                        }
                    }
                    continue;
                }
                let Some(&index) = project.files.matches().get(at) else {
                    continue;
                };
                let Some(path) = project.files.path(index) else {
                    continue;
                };
                let mark = if proposed.contains(path) { " •" } else { "" };
                let label = format!("{} {path}{mark}", theme::file_icon(path));
                if ui.selectable_label(false, label).clicked() {
                    commands.push(Command::OpenFile(path.to_string()));
                }
            }
        });
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
            if ui.button("Archive").clicked() {
                commands.push(Command::ArchiveChat(chat.id, true));
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

/// Messages of any chat (archived ones too) that match the filter, once typing pauses.
fn hits(ui: &mut egui::Ui, project: &ProjectState, commands: &mut Vec<Command>) {
    let Some((query, hits)) = &project.chat_hits else {
        return;
    };
    if project.chat_filter.trim() != query {
        return;
    }
    ui.add_space(4.0);
    ui.weak(match hits.len() {
        0 => "No message matches".to_string(),
        n => format!("In messages ({n})"),
    });
    for hit in hits.iter().take(50) {
        let title = if hit.chat_title.is_empty() {
            "New chat"
        } else {
            hit.chat_title.as_str()
        };
        let text = format!("{title}: {}", hit.snippet);
        if ui
            .add(egui::Button::new(egui::RichText::new(text).small()).truncate())
            .on_hover_text(&hit.snippet)
            .clicked()
        {
            commands.push(Command::SelectChat(hit.chat_id));
        }
    }
}

/// The archived chats, behind a toggle; each can be opened or brought back.
fn archived(ui: &mut egui::Ui, project: &ProjectState, commands: &mut Vec<Command>) {
    ui.add_space(4.0);
    let label = match project.show_archived {
        true => format!("⏷ Archived ({})", project.archived.len()),
        false => "⏵ Archived".to_string(),
    };
    if ui
        .add(egui::Button::new(egui::RichText::new(label).small()).frame(false))
        .clicked()
    {
        commands.push(Command::ToggleArchived);
    }
    if !project.show_archived {
        return;
    }
    for chat in &project.archived {
        let title = if chat.title.is_empty() {
            "New chat"
        } else {
            chat.title.as_str()
        };
        ui.horizontal(|ui| {
            if ui.small_button("Unarchive").clicked() {
                commands.push(Command::ArchiveChat(chat.id, false));
            }
            if ui.selectable_label(false, title).clicked() {
                commands.push(Command::SelectChat(chat.id));
            }
        });
    }
}

/// The file tree, built from the sorted path list; only expanded folders are laid out.
/// The tree: folders open and closed by a click; only the rows in view are laid out.
fn tree(
    ui: &mut egui::Ui,
    project: &mut ProjectState,
    proposed: &BTreeSet<String>,
    commands: &mut Vec<Command>,
) {
    let open_path = project
        .active_tab
        .and_then(|i| project.tabs.get(i))
        .map(|t| t.path.clone());
    let count = project.files.rows().len();
    let row = ui.spacing().interact_size.y;
    egui::ScrollArea::vertical()
        .id_salt("files")
        .auto_shrink([false, false])
        .show_rows(ui, row, count, |ui, range| {
            let shown = project.files.rows()[range].to_vec();
            for entry in shown {
                match entry {
                    Row::Folder { path, depth, open } => {
                        folder(ui, project, proposed, &path, depth, open);
                    }
                    Row::File { index, depth } => {
                        let Some(path) = project.files.path(index).map(str::to_string) else {
                            continue;
                        };
                        let active = open_path.as_deref() == Some(path.as_str());
                        file(ui, project, proposed, commands, &path, depth, active);
                    }
                }
            }
        });
}

fn folder(
    ui: &mut egui::Ui,
    project: &mut ProjectState,
    proposed: &BTreeSet<String>,
    path: &str,
    depth: usize,
    open: bool,
) {
    let inside = format!("{path}/");
    let marked = proposed.iter().any(|p| p.starts_with(&inside));
    let name = path.rsplit('/').next().unwrap_or(path);
    let label = format!("{}{} {name}", indent(depth), if open { "⏷" } else { "⏵" });
    let text = if marked {
        egui::RichText::new(label).color(theme::WARN)
    } else {
        egui::RichText::new(label)
    };
    if ui.selectable_label(false, text).clicked() {
        project.files.toggle(path);
    }
}

fn file(
    ui: &mut egui::Ui,
    project: &mut ProjectState,
    proposed: &BTreeSet<String>,
    commands: &mut Vec<Command>,
    path: &str,
    depth: usize,
    active: bool,
) {
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
        return;
    }
    let name = path.rsplit('/').next().unwrap_or(path);
    let mark = if proposed.contains(path) { " •" } else { "" };
    let label = format!("{}{} {name}{mark}", indent(depth), theme::file_icon(path));
    let text = if mark.is_empty() {
        egui::RichText::new(label)
    } else {
        egui::RichText::new(label).color(theme::WARN)
    };
    let response = ui.selectable_label(active, text);
    if response.clicked() {
        commands.push(Command::OpenFile(path.to_string()));
    }
    response.context_menu(|ui| {
        if ui.button("Rename").clicked() {
            project.renaming_file = Some((path.to_string(), path.to_string()));
            ui.close();
        }
        if ui.button("Delete").clicked() {
            commands.push(Command::DeleteFile(path.to_string()));
            ui.close();
        }
    });
}

fn indent(depth: usize) -> String {
    "   ".repeat(depth)
}
