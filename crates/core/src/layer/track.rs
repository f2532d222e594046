//! Following a workspace through a turn: after each command, what it created, changed or
//! deleted becomes the proposal's operations, labelled with the command; the agent's own
//! edits are written into the view (so it reads and tests them) and only noted, since their
//! own steps already carry them.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use super::{LayerError, Snapshot, Workspace};
use crate::layer::Change;

/// A workspace in use by one turn.
#[derive(Debug)]
pub struct Tracker {
    workspace: Arc<Workspace>,
    state: Mutex<State>,
}

#[derive(Debug, Default)]
struct State {
    snapshot: Snapshot,
    /// Each changed path's content hash as the proposal has it (`None`: deleted).
    known: BTreeMap<String, Option<String>>,
}

impl Tracker {
    /// Starts following `workspace`; `carried` are the changes it already holds (an earlier
    /// turn's, still pending), which the proposal gets first.
    pub fn start(workspace: Arc<Workspace>) -> Result<(Tracker, Vec<Change>), LayerError> {
        let mut known = BTreeMap::new();
        let before = match workspace.kind() {
            super::Kind::Overlay => Snapshot::default(),
            super::Kind::Copy => super::scan::snapshot_tree(workspace.project())?,
        };
        let (carried, snapshot) = workspace.changes_since(&before, &mut known)?;
        workspace
            .layer()
            .note_bases(workspace.project(), carried.iter().map(Change::path))?;
        let tracker = Tracker {
            workspace,
            state: Mutex::new(State { snapshot, known }),
        };
        Ok((tracker, carried))
    }

    pub fn workspace(&self) -> &Workspace {
        &self.workspace
    }

    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// What changed since the last look (a command's doing), noted as the proposal's.
    pub fn collect(&self) -> Result<Vec<Change>, LayerError> {
        let mut state = self.state();
        let State { snapshot, known } = &mut *state;
        let (changes, now) = self.workspace.changes_since(snapshot, known)?;
        *snapshot = now;
        self.workspace
            .layer()
            .note_bases(self.workspace.project(), changes.iter().map(Change::path))?;
        Ok(changes)
    }

    /// Notes what changed since the last look at `own` (the paths of an edit whose own step
    /// carries it) without proposing it; what else changed is returned, to be proposed.
    pub fn absorb(&self, own: &[String]) -> Result<Vec<Change>, LayerError> {
        let changes = self.collect()?;
        Ok((changes.into_iter())
            .filter(|change| !own.iter().any(|path| path == change.path()))
            .collect())
    }
}
