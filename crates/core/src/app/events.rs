//! What changed, said once for every front-end: the turns' events and what the use cases
//! changed, on one stream ([`App::subscribe`]). The window maps it onto its state, the CLI
//! prints what it follows; neither decides what a use case changed.

use tokio::sync::broadcast;
use tokio::sync::broadcast::error::RecvError;
use tokio::task::JoinHandle;

use super::App;
use crate::chat::{ChatEvent, TurnOutcome};

/// How many changes a slow subscriber may fall behind before it misses some (it is told).
const BUFFER: usize = 256;

/// One thing that changed.
#[derive(Debug, Clone)]
pub enum AppEvent {
    /// A turn's event: started, a delta, a step, a question, finished, …
    Chat(Box<ChatEvent>),
    /// The project's chats changed: one made, renamed, switched to another mode, archived or
    /// deleted. The list shown is to be read again.
    ChatsChanged { project_id: i64 },
    /// The project's files or history changed: a proposal approved, a version restored or
    /// undone, a file saved, renamed or deleted (each a commit). Its tree and history are to
    /// be read again.
    ProjectChanged { project_id: i64 },
    /// A chat's messages changed without its project's tree changing: a turn ended (its
    /// reply, its proposal), a proposal rejected, or one added (an attachment proposed as a
    /// file). The chat is to be read again.
    /// (After a commit, [`ProjectChanged`](Self::ProjectChanged) says it: every pending
    /// proposal of the project is planned against the new tree, and a restore removes
    /// later messages.)
    ChatChanged { chat_id: i64 },
    /// The providers changed: one added, saved or removed.
    ProvidersChanged,
    /// A provider's stored keys changed (one stored, added or removed).
    ProviderKeysChanged { provider: String },
    /// The prompt library changed.
    PromptsChanged,
    /// The agent settings changed: the policy, the limits, the tool calling, the sandbox's
    /// settings (saved as a whole, or one global setting set or unset).
    AgentSettingsChanged,
    /// The MCP servers changed: one added, enabled, disabled or removed.
    McpServersChanged,
}

/// The stream of [`AppEvent`]s from the moment it was subscribed.
pub struct AppEvents {
    chats: broadcast::Receiver<ChatEvent>,
    changes: broadcast::Receiver<AppEvent>,
}

impl AppEvents {
    /// The next event. `Err(Lagged)` says some were missed (the subscriber was too slow);
    /// `Err(Closed)` that the app is gone.
    pub async fn recv(&mut self) -> Result<AppEvent, RecvError> {
        tokio::select! {
            event = self.chats.recv() => event.map(|e| AppEvent::Chat(Box::new(e))),
            event = self.changes.recv() => event,
        }
    }
}

/// Where the use cases say what they changed.
pub(super) struct Changes(broadcast::Sender<AppEvent>);

impl Default for Changes {
    fn default() -> Self {
        Changes(broadcast::channel(BUFFER).0)
    }
}

impl App {
    /// Every change from now on: the turns' events and what the use cases changed.
    pub fn subscribe(&self) -> AppEvents {
        AppEvents {
            chats: self.chat.subscribe(),
            changes: self.changes.0.subscribe(),
        }
    }

    /// Tells the subscribers (none listening is not an error).
    pub(super) fn changed(&self, event: AppEvent) {
        let _ = self.changes.0.send(event);
    }

    pub(super) fn chats_changed(&self, project_id: i64) {
        self.changed(AppEvent::ChatsChanged { project_id });
    }

    /// The turn's `outcome`, told on the stream when it comes: the chat changed (its reply as
    /// it ended, its proposal), the project's chats changed (the chat moves up the list, its
    /// title may be new) and, when auto-approve landed the proposal, the project's tree and
    /// history. Told whoever waits for the outcome, or none.
    pub(super) fn said_when_it_ends(
        &self,
        (project_id, chat_id): (i64, i64),
        outcome: JoinHandle<TurnOutcome>,
    ) -> JoinHandle<TurnOutcome> {
        let changes = self.changes.0.clone();
        tokio::spawn(async move {
            let ended = outcome.await;
            let _ = changes.send(AppEvent::ChatChanged { chat_id });
            let _ = changes.send(AppEvent::ChatsChanged { project_id });
            let landed = ended.as_ref().ok().and_then(|o| o.approval.as_ref());
            if landed.is_some_and(|a| a.commit.is_some()) {
                let _ = changes.send(AppEvent::ProjectChanged { project_id });
            }
            match ended {
                Ok(outcome) => outcome,
                // The turn's task panicked or was cancelled: so does this one, and the
                // waiter is told as it was before (`StartedTurn::finish`).
                Err(e) if e.is_panic() => std::panic::resume_unwind(e.into_panic()),
                Err(e) => panic!("the turn's task ended without an outcome: {e}"),
            }
        })
    }

    pub(super) fn project_changed(&self, project: &crate::store::Project) {
        let project_id = project.id;
        self.changed(AppEvent::ProjectChanged { project_id });
    }

    pub(super) fn keys_changed(&self, provider: &str) {
        let provider = provider.to_string();
        self.changed(AppEvent::ProviderKeysChanged { provider });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::app::NewProvider;
    use crate::environment::Environment;
    use crate::llm::ProviderKind;
    use crate::store::{McpTransport, ProviderSettings};

    /// What the stream holds now, without waiting (every use case publishes before it
    /// returns).
    fn said(events: &mut AppEvents) -> Vec<String> {
        let mut said = Vec::new();
        while let Ok(event) = events.changes.try_recv() {
            said.push(format!("{event:?}"));
        }
        said
    }

    #[test]
    fn each_change_to_settings_is_said_once_and_a_refused_one_not_at_all() {
        let dir = tempfile::tempdir().unwrap();
        let app = App::open_in(Some(&dir.path().join("data")), Environment::isolated()).unwrap();
        let mut events = app.subscribe();
        let mut record = app
            .add_provider(NewProvider {
                name: "local".into(),
                kind: ProviderKind::Ollama,
                base_url: None,
                api_key_env: None,
                settings: ProviderSettings::default(),
            })
            .unwrap();
        assert_eq!(said(&mut events), ["ProvidersChanged"]);
        record.base_url = "http://127.0.0.1:1".into();
        app.update_provider(record).unwrap();
        app.set_key("local", "sk-one").unwrap();
        app.add_key("local", "sk-two").unwrap();
        assert_eq!(
            said(&mut events),
            [
                "ProvidersChanged",
                "ProviderKeysChanged { provider: \"local\" }",
                "ProviderKeysChanged { provider: \"local\" }"
            ]
        );

        app.save_prompt("review", "Review this.").unwrap();
        assert!(app.save_prompt("bad name!", "x").is_err());
        assert!(app.remove_prompt("missing").is_err());
        assert!(app.config_set("agent.max_steps", "0").is_err());
        app.remove_prompt("review").unwrap();
        assert_eq!(said(&mut events), ["PromptsChanged", "PromptsChanged"]);

        let settings = app.agent_settings().unwrap();
        app.save_agent_settings(&settings).unwrap();
        app.config_set("agent.max_steps", "7").unwrap();
        app.config_unset("agent.max_steps").unwrap();
        assert_eq!(said(&mut events), ["AgentSettingsChanged"; 3]);

        let transport = McpTransport::Stdio {
            command: "true".into(),
            args: Vec::new(),
            env: Default::default(),
        };
        app.add_mcp_server("tools", transport).unwrap();
        let id = app.mcp_servers().unwrap()[0].id;
        app.set_mcp_server_enabled(id, false).unwrap();
        app.remove_mcp_server(id).unwrap();
        app.remove_provider("local").unwrap();
        assert_eq!(
            said(&mut events),
            [
                "McpServersChanged",
                "McpServersChanged",
                "McpServersChanged",
                "ProvidersChanged"
            ]
        );
    }

    #[test]
    fn each_commit_to_the_project_is_said_and_a_save_refused_is_not() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("project");
        std::fs::create_dir(&root).unwrap();
        std::fs::write(root.join("a.txt"), "one\n").unwrap();
        let app = App::open_in(Some(&dir.path().join("data")), Environment::isolated()).unwrap();
        let project = app.add_project(&root, None).unwrap().project;
        let first = app.history(&project, 1).unwrap()[0].hash.clone();
        let mut events = app.subscribe();
        let changed = format!("ProjectChanged {{ project_id: {} }}", project.id);

        app.save_file(&project, "a.txt", b"two\n").unwrap();
        app.rename_file(&project, "a.txt", "b.txt").unwrap();
        app.restore(&project, &first).unwrap();
        assert_eq!(said(&mut events), [changed.as_str(); 3]);

        // The buffer was loaded from a file that is no longer there: nothing is written.
        let stale = Some("0000000000000000000000000000000000000000");
        let refused = app
            .save_file_checked(&project, "a.txt", b"three\n", stale)
            .unwrap();
        assert!(matches!(
            refused,
            crate::engine::SaveOutcome::ChangedOnDisk { .. }
        ));
        assert!(app.delete_file(&project, "missing.txt").is_err());
        assert_eq!(said(&mut events), Vec::<String>::new());

        // Nothing to undo (no proposal was approved): refused, and not said.
        assert!(app.undo(&project).is_err());
        app.delete_file(&project, "a.txt").unwrap();
        assert_eq!(said(&mut events), [changed.as_str()]);
    }

    #[test]
    fn a_proposal_added_or_rejected_says_its_chat_changed_and_an_approved_one_its_project() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("project");
        std::fs::create_dir(&root).unwrap();
        let app = App::open_in(Some(&dir.path().join("data")), Environment::isolated()).unwrap();
        let project = app.add_project(&root, None).unwrap().project;
        let mut events = app.subscribe();
        let write = |path: &str| format!("<tandem-write path=\"{path}\">\nx\n</tandem-write>\n");

        let first = app
            .propose(&project, None, Some("one"), &write("one.txt"))
            .unwrap();
        let (chat_id, project_id) = (first.chat.id, project.id);
        let chats = format!("ChatsChanged {{ project_id: {project_id} }}");
        let chat = format!("ChatChanged {{ chat_id: {chat_id} }}");
        assert_eq!(said(&mut events), [chats.as_str(), &chat]);
        app.approve(first.message.id, None, None).unwrap();
        let project_changed = format!("ProjectChanged {{ project_id: {project_id} }}");
        assert_eq!(said(&mut events), [project_changed]);

        let second = app
            .propose(&project, Some(chat_id), Some("two"), &write("two.txt"))
            .unwrap();
        assert_eq!(said(&mut events), [chats.as_str(), &chat]);
        app.reject(second.message.id, Some("not now")).unwrap();
        assert_eq!(said(&mut events), [chat.as_str()]);
        // Decided already: refused, and nothing is said.
        assert!(app.reject(second.message.id, None).is_err());
        assert!(app.reject(first.message.id, None).is_err());
        assert_eq!(said(&mut events), Vec::<String>::new());
    }
}
