//! The files' commands (the file tree, the editor): a file opened (at a line), a tab
//! selected, the find bar shown or hidden, a file made or renamed, and a file changed on disk
//! taken or kept. Saving and closing tabs, which must keep the person's typing, are
//! `crate::unsaved`'s.

use crate::backend::Backend;
use crate::calls::open_file;
use crate::model::state::AppState;

use super::Command;

impl AppState {
    pub(super) fn open_file(&mut self, path: String, backend: &Backend) {
        self.show_review = false;
        let Some(project) = &mut self.project else {
            return;
        };
        match project.tabs.iter().position(|t| t.path == path) {
            Some(index) => project.active_tab = Some(index),
            None => open_file(backend, project.project.clone(), path),
        }
    }

    /// Opens a file with `line` (1-based) in view.
    pub(super) fn open_file_at(&mut self, path: String, line: usize, backend: &Backend) {
        if let Some(project) = &mut self.project {
            project.goto = Some((path.clone(), line));
        }
        self.apply(Command::OpenFile(path), backend);
    }

    pub(super) fn select_tab(&mut self, index: usize) {
        if let Some(project) = &mut self.project {
            project.active_tab = (index < project.tabs.len()).then_some(index);
        }
    }

    pub(super) fn toggle_find(&mut self) {
        let tab = self.project.as_mut().and_then(|p| {
            let index = p.active_tab?;
            p.tabs.get_mut(index)
        });
        if let Some(tab) = tab {
            tab.find = match tab.find.take() {
                Some(_) => None,
                None => Some(String::new()),
            };
        }
    }

    pub(super) fn create_file(&mut self, path: String, backend: &Backend) {
        if let Some(project) = &mut self.project {
            project.new_file = None;
            // An existing file is left as it is (reported as a conflict).
            backend.save_file(project.project.clone(), path.clone(), String::new(), None);
            open_file(backend, project.project.clone(), path);
        }
    }

    pub(super) fn rename_file(&mut self, from: String, to: String, backend: &Backend) {
        if let Some(project) = &mut self.project {
            project.renaming_file = None;
            if from != to && !to.trim().is_empty() {
                for tab in project.tabs.iter_mut().filter(|t| t.path == from) {
                    tab.path = to.clone();
                }
                let project = project.project.clone();
                backend.run("renaming the file", move |app| {
                    app.rename_file(&project, &from, &to)
                });
            }
        }
    }

    /// The open file changed on disk: take the disk's text (`reload`) or keep the buffer.
    pub(super) fn resolve_disk_change(&mut self, reload: bool) {
        let tab = self
            .project
            .as_mut()
            .and_then(|p| p.active_tab.and_then(|i| p.tabs.get_mut(i)));
        if let Some(tab) = tab
            && let Some(disk) = tab.disk_changed.take()
        {
            tab.save_refused = None;
            if reload {
                tab.text = disk.clone();
                tab.revision += 1;
            }
            // Either way the buffer now knows what is on disk.
            tab.saved = disk;
        }
    }
}
