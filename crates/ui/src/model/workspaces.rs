//! The chats' workspaces as the window shows them: the review's Run panel (per chat: the
//! command as typed, whether it runs, its last output) and the list in Settings → Agent.

use std::collections::BTreeMap;

use tandem_core::app::{Cleaned, WorkspaceInfo, WorkspaceRun, human_bytes};

#[derive(Debug, Default)]
pub struct WorkspacesView {
    /// Settings → Agent's list; `None` until loaded.
    pub list: Option<Vec<WorkspaceInfo>>,
    /// The Run panel of each chat's review, by chat id.
    pub runs: BTreeMap<i64, RunView>,
}

/// One chat's Run panel.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RunView {
    /// The command as typed; `None`: the project's check command, as prefilled.
    pub command: Option<String>,
    pub running: bool,
    /// The last run, or why it could not run.
    pub last: Option<Result<WorkspaceRun, String>>,
}

impl RunView {
    /// The command the field shows and a run runs.
    pub fn command_or<'a>(&'a self, default: &'a str) -> &'a str {
        self.command.as_deref().unwrap_or(default)
    }
}

impl WorkspacesView {
    /// A run started in `chat_id`'s workspace; `false` when one runs there already.
    pub fn start(&mut self, chat_id: i64) -> bool {
        let run = self.runs.entry(chat_id).or_default();
        if run.running {
            return false;
        }
        run.running = true;
        run.last = None;
        true
    }

    /// A run in `chat_id`'s workspace ended.
    pub fn finished(&mut self, chat_id: i64, result: Result<WorkspaceRun, String>) {
        let run = self.runs.entry(chat_id).or_default();
        run.running = false;
        run.last = Some(result);
    }

    /// Bytes the listed workspaces hold, and how many of them are stale.
    pub fn totals(&self) -> (u64, usize) {
        let list = self.list.as_deref().unwrap_or_default();
        let bytes = list.iter().map(|w| w.bytes).sum();
        let stale = list.iter().filter(|w| w.stale && !w.in_use).count();
        (bytes, stale)
    }
}

/// What a clean tells the person.
pub fn cleaned_text(cleaned: &Cleaned) -> String {
    let mut text = match cleaned.removed.len() {
        0 => "No workspace removed".to_string(),
        1 => format!("Removed 1 workspace ({})", human_bytes(cleaned.bytes_freed)),
        n => format!(
            "Removed {n} workspaces ({})",
            human_bytes(cleaned.bytes_freed)
        ),
    };
    if !cleaned.in_use.is_empty() {
        text.push_str(&format!("; {} in use kept", cleaned.in_use.len()));
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_run_at_a_time_per_chat_and_its_output_kept() {
        let mut view = WorkspacesView::default();
        assert!(view.start(4));
        assert!(!view.start(4), "already running");
        assert!(view.start(5), "another chat's workspace");
        view.finished(4, Err("busy".into()));
        let run = &view.runs[&4];
        assert!(!run.running);
        assert_eq!(run.last, Some(Err("busy".to_string())));
        assert_eq!(run.command_or("cargo check"), "cargo check");
        assert!(view.start(4));
        assert_eq!(
            view.runs[&4].last, None,
            "the old output goes with a new run"
        );
    }

    #[test]
    fn a_clean_reads_as_a_sentence() {
        let cleaned = Cleaned {
            removed: vec![1, 2],
            bytes_freed: 2_500_000,
            in_use: vec![3],
        };
        assert_eq!(
            cleaned_text(&cleaned),
            "Removed 2 workspaces (2.5 MB); 1 in use kept"
        );
        assert_eq!(cleaned_text(&Cleaned::default()), "No workspace removed");
    }
}
