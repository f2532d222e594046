//! Symbol commands: go to definition (F12) and find references (Shift+F12) on the name under
//! the editor's cursor, and the picker they may show. Part of
//! [`Command`](crate::command::Command) (as `Command::Symbol`): the editor's keys, the palette
//! and tests send the same values. Their answers arrive as events (the index refresh may
//! take a while on a large project).

use crate::backend::{Backend, Event};
use crate::model::state::AppState;
use crate::model::symbols::Picker;
use tandem_core::app::{Reference, SymbolAt, identifier_at};

/// The file tree's filter lists at most this many symbols.
const SYMBOL_MATCHES_SHOWN: usize = 50;

#[derive(Debug, Clone, PartialEq)]
pub enum SymbolCommand {
    /// Opens the definition of the name under the cursor (several: the picker lists them).
    GoToDefinition,
    /// Lists the references to the name under the cursor in the picker.
    FindReferences,
    /// Opens a place of the picker (path, 1-based line) and closes it.
    Pick {
        path: String,
        line: usize,
    },
    ClosePicker,
}

impl AppState {
    pub(super) fn apply_symbol(&mut self, command: SymbolCommand, backend: &Backend) {
        let Some(project) = &mut self.project else {
            return;
        };
        let references = match command {
            SymbolCommand::GoToDefinition => false,
            SymbolCommand::FindReferences => true,
            SymbolCommand::Pick { path, line } => {
                project.symbols.picker = None;
                let open = super::Command::OpenFileAt { path, line };
                return self.apply(open, backend);
            }
            SymbolCommand::ClosePicker => {
                project.symbols.picker = None;
                return;
            }
        };
        let tab = project.active_tab.and_then(|i| project.tabs.get(i));
        let name = tab.and_then(|t| identifier_at(&t.text, t.cursor?));
        let Some(name) = name else {
            return self.toast("Put the cursor on a name first", true);
        };
        project.symbols.looking_for = Some(name.clone());
        // Each refreshes the project's code index first, which may read many files.
        let (project, asked) = (project.project.clone(), name.clone());
        if references {
            backend.query(
                "looking for references",
                move |app| anyhow::Ok(app.references(&project, &asked).map_err(|e| e.to_string())),
                move |result| Event::References { name, result },
            );
        } else {
            backend.query(
                "looking for definitions",
                move |app| anyhow::Ok(app.definitions(&project, &asked).map_err(|e| e.to_string())),
                move |result| Event::Definitions { name, result },
            );
        }
    }

    /// The answer to a go to definition: one opens, several go to the picker, none is said.
    pub(crate) fn definitions_found(
        &mut self,
        name: String,
        result: Result<Vec<SymbolAt>, String>,
    ) {
        let Some(project) = &mut self.project else {
            return;
        };
        project.symbols.looking_for = None;
        match result {
            Err(why) => self.toast(format!("Go to definition of {name}: {why}"), true),
            Ok(found) if found.is_empty() => self.toast(
                format!("No definition of {name} found in the project"),
                true,
            ),
            Ok(found) if found.len() == 1 => {
                project.symbols.picker = None;
                self.follow = Some((found[0].path.clone(), found[0].line as usize));
            }
            Ok(found) => project.symbols.picker = Some(Picker::definitions(&name, &found)),
        }
    }

    /// The answer to a find references: the picker lists them.
    pub(crate) fn references_found(
        &mut self,
        name: String,
        result: Result<Vec<Reference>, String>,
    ) {
        let Some(project) = &mut self.project else {
            return;
        };
        project.symbols.looking_for = None;
        match result {
            Err(why) => self.toast(format!("Find references to {name}: {why}"), true),
            Ok(found) if found.is_empty() => self.toast(
                format!("No references to {name} found in the project"),
                true,
            ),
            Ok(found) => project.symbols.picker = Some(Picker::references(&name, &found)),
        }
    }

    /// The definitions matching the file tree's filter `query`.
    pub(crate) fn symbols_matched(&mut self, query: String, result: Result<Vec<SymbolAt>, String>) {
        let Some(project) = &mut self.project else {
            return;
        };
        match result {
            Ok(found) => project.symbols.matches = Some((query, found)),
            Err(why) => {
                project.symbols.matches = None;
                self.log
                    .push(format!("error: symbols matching {query:?}: {why}"));
            }
        }
    }
}

impl crate::TandemApp {
    /// Asks for the symbols matching the file tree's filter once typing pauses.
    pub(crate) fn ask_for_symbol_matches(&mut self, ctx: &egui::Context, now: std::time::Instant) {
        let Some(project) = &mut self.state.project else {
            return;
        };
        if !crate::typing::typing_paused(&mut project.symbols.filter_edited, ctx, now) {
            return;
        }
        let query = project.files.filter.trim().to_string();
        if query.is_empty() {
            project.symbols.matches = None;
        } else {
            let (project, asked) = (project.project.clone(), query.clone());
            self.backend.query(
                "looking for symbols",
                move |app| {
                    let found = app.symbols_matching(&project, &asked, SYMBOL_MATCHES_SHOWN);
                    anyhow::Ok(found.map_err(|e| e.to_string()))
                },
                move |result| Event::SymbolMatches { query, result },
            );
        }
    }
}
