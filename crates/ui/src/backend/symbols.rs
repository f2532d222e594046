//! Symbols in the background: go to definition, find references, the filter's symbols. Each
//! refreshes the project's code index first, which may read many files.

use super::{Backend, Event};
use tandem_core::store::Project;

/// The file tree's filter lists at most this many symbols.
pub const SYMBOL_MATCHES_SHOWN: usize = 50;

impl Backend {
    pub fn definitions(&self, project: Project, name: String) {
        self.spawn("looking for definitions", move |app, emit| {
            let result = app.definitions(&project, &name).map_err(|e| e.to_string());
            emit.send(Event::Definitions { name, result });
            Ok(())
        });
    }

    pub fn references(&self, project: Project, name: String) {
        self.spawn("looking for references", move |app, emit| {
            let result = app.references(&project, &name).map_err(|e| e.to_string());
            emit.send(Event::References { name, result });
            Ok(())
        });
    }

    pub fn symbols_matching(&self, project: Project, query: String) {
        self.spawn("looking for symbols", move |app, emit| {
            let result = app
                .symbols_matching(&project, &query, SYMBOL_MATCHES_SHOWN)
                .map_err(|e| e.to_string());
            emit.send(Event::SymbolMatches { query, result });
            Ok(())
        });
    }
}
