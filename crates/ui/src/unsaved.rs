//! Never losing what the person typed: saves that would overwrite a change made on disk are
//! refused and offer a choice, closing a dirty tab asks first, and dirty buffers are kept
//! between runs ([`Draft`]s in the window's persisted storage) and put back as dirty tabs.
//!
//! The check against the disk is the engine's (`Engine::save_file_checked`, under the
//! project's lock); this module only decides what to ask and keeps the tabs' state.

use crate::backend::Backend;
use crate::command::Command;
use crate::model::state::{AppState, ProjectState, Tab};
use crate::model::unsaved::{CloseChoice, Draft};
use tandem_core::app::blob_hash;

/// The dirty buffers to keep: the open project's dirty tabs, and drafts not yet put back
/// (another project's, or a file that did not open this run).
pub fn drafts(state: &AppState) -> Vec<Draft> {
    let mut kept: Vec<Draft> = Vec::new();
    if let Some(project) = &state.project {
        let id = project.project.id;
        kept.extend(project.tabs.iter().filter(|t| t.dirty()).map(|t| Draft {
            project_id: id,
            path: t.path.clone(),
            text: t.text.clone(),
            saved: t.saved.clone(),
        }));
    }
    for draft in &state.drafts {
        if !kept
            .iter()
            .any(|d| d.project_id == draft.project_id && d.path == draft.path)
        {
            kept.push(draft.clone());
        }
    }
    kept
}

/// Puts a kept draft back into `tab` (just opened from disk), marking it dirty. Returns a
/// note for the person; it says so when the file changed on disk since the draft was kept
/// (the tab then shows the disk-change bar, and saving asks before overwriting).
pub fn restore_draft(drafts: &mut Vec<Draft>, project_id: i64, tab: &mut Tab) -> Option<String> {
    if tab.read_only.is_some() {
        return None;
    }
    let at = drafts
        .iter()
        .position(|d| d.project_id == project_id && d.path == tab.path)?;
    let draft = drafts.remove(at);
    let disk = std::mem::replace(&mut tab.saved, draft.saved);
    tab.text = draft.text;
    tab.revision += 1;
    if disk == tab.saved {
        return Some(format!("Restored your unsaved edits to {}", tab.path));
    }
    tab.disk_changed = Some(disk);
    Some(format!(
        "Restored your unsaved edits to {}; the file changed on disk since — it was not touched",
        tab.path
    ))
}

fn active_tab(project: &mut ProjectState) -> Option<&mut Tab> {
    project.active_tab.and_then(|i| project.tabs.get_mut(i))
}

fn remove_tab(project: &mut ProjectState, index: usize) {
    if index < project.tabs.len() {
        project.tabs.remove(index);
        project.active_tab = (!project.tabs.is_empty()).then(|| index.min(project.tabs.len() - 1));
    }
}

impl AppState {
    /// Saves the active tab, expecting the disk to hold what the buffer was loaded from.
    pub(super) fn save_active(&mut self, backend: &Backend) {
        let Some(project) = &mut self.project else {
            return;
        };
        let project_record = project.project.clone();
        let Some(tab) = active_tab(project) else {
            return;
        };
        if tab.read_only.is_none() {
            let expected = Some(blob_hash(tab.saved.as_bytes()));
            backend.save_file(project_record, tab.path.clone(), tab.text.clone(), expected);
        }
    }

    /// "Overwrite": the person saw the disk's version and wants theirs written over it. The
    /// save still expects exactly the version they saw.
    pub(super) fn overwrite_on_disk(&mut self, backend: &Backend) {
        let Some(project) = &mut self.project else {
            return;
        };
        let project_record = project.project.clone();
        let Some(tab) = active_tab(project) else {
            return;
        };
        if let Some(expected) = tab.save_refused.take() {
            backend.save_file(project_record, tab.path.clone(), tab.text.clone(), expected);
        }
    }

    /// "Keep editing": the refusal is put away; the disk-change bar stays and the next save
    /// asks again.
    pub(super) fn keep_editing(&mut self) {
        if let Some(tab) = self.project.as_mut().and_then(active_tab) {
            tab.save_refused = None;
            tab.close_after_save = false;
        }
    }

    pub(super) fn close_tab(&mut self, index: usize) {
        let Some(project) = &mut self.project else {
            return;
        };
        match project.tabs.get(index) {
            Some(tab) if tab.dirty() => self.closing = Some(tab.path.clone()),
            Some(_) => remove_tab(project, index),
            None => {}
        }
    }

    pub(super) fn close_active_tab(&mut self) {
        if let Some(index) = self.project.as_ref().and_then(|p| p.active_tab) {
            self.close_tab(index);
        }
    }

    pub(super) fn close_choice(&mut self, choice: CloseChoice, backend: &Backend) {
        let Some(path) = self.closing.take() else {
            return;
        };
        let Some(project) = &mut self.project else {
            return;
        };
        let Some(index) = project.tabs.iter().position(|t| t.path == path) else {
            return;
        };
        match choice {
            CloseChoice::Cancel => {}
            CloseChoice::Discard => remove_tab(project, index),
            CloseChoice::Save => {
                project.tabs[index].close_after_save = true;
                project.active_tab = Some(index);
                self.save_active(backend);
            }
        }
    }

    /// A save was written: the buffer now matches the disk (closed if that was asked and
    /// nothing was typed since).
    pub(super) fn saved(&mut self, path: &str, text: String) {
        let Some(project) = &mut self.project else {
            return;
        };
        let Some(index) = project.tabs.iter().position(|t| t.path == path) else {
            return;
        };
        let tab = &mut project.tabs[index];
        tab.disk_changed = None;
        tab.save_refused = None;
        let close = tab.close_after_save && tab.text == text;
        tab.close_after_save = false;
        tab.saved = text;
        if close {
            remove_tab(project, index);
        }
    }

    /// A save was refused: the file changed on disk since the buffer was loaded.
    pub(super) fn save_conflict(&mut self, path: &str, disk: Option<String>) {
        let tab = self
            .project
            .as_mut()
            .and_then(|p| p.tabs.iter_mut().find(|t| t.path == path));
        let Some(tab) = tab else {
            // Not an open buffer: creating a file over an existing one.
            self.toast(format!("{path} already exists: left as it is"), true);
            return;
        };
        tab.save_refused = Some(disk.as_deref().map(|d| blob_hash(d.as_bytes())));
        tab.disk_changed = Some(disk.unwrap_or_default());
        tab.close_after_save = false;
        self.toast(
            format!("Not saved: {path} changed on disk (nothing was overwritten)"),
            true,
        );
    }
}

/// The bar shown when a save was refused: overwrite, reload or keep editing.
pub fn refused_notice(ui: &mut egui::Ui, tab: &Tab, commands: &mut Vec<Command>) -> bool {
    if tab.save_refused.is_none() {
        return false;
    }
    egui::Frame::new()
        .fill(ui.visuals().faint_bg_color)
        .inner_margin(6.0)
        .show(ui, |ui| {
            ui.set_width(ui.available_width());
            ui.horizontal_wrapped(|ui| {
                let text = "Not saved: this file changed on disk since you opened it.";
                ui.colored_label(ui.visuals().warn_fg_color, text);
                if ui.button("Overwrite").clicked() {
                    commands.push(Command::OverwriteOnDisk);
                }
                if ui.button("Reload from disk").clicked() {
                    commands.push(Command::ResolveDiskChange(true));
                }
                if ui.button("Keep editing").clicked() {
                    commands.push(Command::KeepEditing);
                }
            });
        });
    true
}

/// Asks what to do with a dirty tab being closed.
pub fn close_dialog(ctx: &egui::Context, state: &AppState, commands: &mut Vec<Command>) {
    let Some(path) = &state.closing else {
        return;
    };
    egui::Modal::new(egui::Id::unique("close-dirty-tab")).show(ctx, |ui| {
        ui.set_max_width(420.0);
        ui.label(format!(
            "{path} has unsaved changes. Save them before closing?"
        ));
        ui.add_space(8.0);
        ui.horizontal(|ui| {
            let choices = [
                ("Save", CloseChoice::Save),
                ("Discard", CloseChoice::Discard),
                ("Cancel", CloseChoice::Cancel),
            ];
            for (label, choice) in choices {
                if ui.button(label).clicked() {
                    commands.push(Command::CloseChoice(choice));
                }
            }
        });
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backend::{Event, FileContent};
    use crate::model::state::Prefs;
    use tandem_core::store::{Project, ProjectSettings};

    fn project(id: i64) -> Project {
        Project {
            id,
            name: format!("p{id}"),
            path: format!("/tmp/p{id}").into(),
            settings: ProjectSettings::default(),
            created_at: 0,
            updated_at: 0,
        }
    }

    fn opened(id: i64) -> Event {
        Event::ProjectOpened(Box::new(tandem_core::app::OpenedProject {
            project: project(id),
            chats: Vec::new(),
            files: vec!["a.txt".into()],
            history: Vec::new(),
        }))
    }

    fn file(text: &str) -> Event {
        Event::FileOpened {
            path: "a.txt".into(),
            content: FileContent::Text(text.into()),
        }
    }

    #[test]
    fn switching_project_keeps_dirty_buffers_and_reopening_puts_them_back() {
        let mut state = AppState::new(Prefs::default());
        state.on_event(opened(1));
        state.on_event(file("disk\n"));
        let tab = &mut state.project.as_mut().unwrap().tabs[0];
        tab.text = "typed\n".into();
        state.on_event(opened(2));
        assert_eq!(state.drafts.len(), 1);
        // Another project's file of the same name is not touched by the draft.
        state.on_event(file("other\n"));
        assert!(!state.project.as_ref().unwrap().tabs[0].dirty());
        state.on_event(opened(1));
        state.on_event(file("disk\n"));
        let tab = &state.project.as_ref().unwrap().tabs[0];
        assert_eq!(
            (tab.text.as_str(), tab.saved.as_str()),
            ("typed\n", "disk\n")
        );
        assert!(tab.dirty() && tab.disk_changed.is_none());
        assert!(state.drafts.is_empty());
    }
}
