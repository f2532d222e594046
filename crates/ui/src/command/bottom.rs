//! The bottom panel's commands (`panels::bottom`): a tab shown, the history's (a version's
//! diff read, the last change undone) and the Usage tab's (its report loaded for the open
//! project or every one, a model's price set).

use crate::backend::{Backend, Event};
use crate::model::state::{AppState, BottomTab};

impl AppState {
    pub(super) fn show_bottom(&mut self, tab: BottomTab, backend: &Backend) {
        self.bottom = tab;
        self.prefs.show_bottom = true;
        if tab == BottomTab::Usage {
            self.load_usage(backend, self.usage_all);
        }
    }

    pub(super) fn select_version(&mut self, hash: String, backend: &Backend) {
        if let Some(project) = &mut self.project {
            project.selected_version = Some(hash.clone());
            let (project, commit) = (project.project.clone(), hash.clone());
            backend.query(
                "reading the version",
                move |app| app.version_diff(&project, &hash),
                move |diff| Event::VersionDiff { commit, diff },
            );
        }
    }

    pub(super) fn undo(&self, backend: &Backend) {
        if let Some(project) = &self.project {
            let project = project.project.clone();
            backend.query(
                "undoing the last change",
                move |app| app.undo(&project),
                Event::Undone,
            );
        }
    }

    /// The project the Usage tab is about (`None`: every project).
    pub(super) fn usage_scope(&self) -> Option<i64> {
        match self.usage_all {
            true => None,
            false => self.project.as_ref().map(|p| p.project.id),
        }
    }

    pub(super) fn load_usage(&mut self, backend: &Backend, all: bool) {
        self.usage_all = all;
        backend.usage(self.usage_scope());
    }

    /// Sets (`None`: removes) a model's price per million tokens.
    pub(super) fn set_price(
        &self,
        model: String,
        price: Option<tandem_core::app::Price>,
        backend: &Backend,
    ) {
        let scope = self.usage_scope();
        backend.set_price(model, price, scope);
    }
}
