//! A project, an engine, a chat service and a fake provider server, wired together for the
//! chat and agent integration tests.

use std::sync::Arc;

use tandem_core::Engine;
use tandem_core::chat::ChatService;
use tandem_core::llm::ProviderKind;
use tandem_core::llm::secrets::Secrets;
use tandem_core::store::{ChatMode, MessageStatus, ProviderSettings};

use super::FakeProvider;

pub struct Setup {
    pub _dir: tempfile::TempDir,
    pub root: std::path::PathBuf,
    pub engine: Arc<Engine>,
    pub service: Arc<ChatService>,
    pub project: tandem_core::store::Project,
    pub server: FakeProvider,
}

pub fn base_url(kind: ProviderKind, url: &str) -> String {
    match kind {
        ProviderKind::Ollama => url.to_string(),
        ProviderKind::Openai | ProviderKind::Anthropic => format!("{url}/v1"),
        ProviderKind::Gemini => format!("{url}/v1beta"),
        ProviderKind::Codex | ProviderKind::ClaudeCode => unreachable!("HTTP kinds only"),
    }
}

pub async fn setup(kind: ProviderKind) -> Setup {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("project");
    crate::common::repo_with(
        &root,
        &[
            ("src/main.rs", "fn main() {}\n"),
            ("AI_RULES.md", "Always use tabs.\n"),
        ],
    );
    let engine = Arc::new(Engine::open(Some(&dir.path().join("data"))).unwrap());
    let project = engine.add_project(&root, None).unwrap().project;
    let server = FakeProvider::start().await;
    add_provider(&engine, "fake", kind, &server);
    let store = engine.store();
    store.set_setting("chat.default_provider", "fake").unwrap();
    store.set_setting("chat.generate_titles", &false).unwrap();
    let service = ChatService::new(
        Arc::clone(&engine),
        Secrets::file_only(&dir.path().join("secrets.json")),
    );
    Setup {
        root: root.canonicalize().unwrap(),
        _dir: dir,
        engine,
        service,
        project,
        server,
    }
}

pub fn add_provider(engine: &Engine, name: &str, kind: ProviderKind, server: &FakeProvider) {
    let settings = ProviderSettings {
        default_model: Some("test-model".into()),
        context_length: Some(32_768),
    };
    engine
        .store()
        .insert_provider(name, kind, &base_url(kind, &server.url()), None, &settings)
        .unwrap();
}

impl Setup {
    /// Sets the project's check command, with the scratch copies beside the project.
    pub fn set_check(&self, command: &str) {
        let store = self.engine.store();
        let mut project = store.project(self.project.id).unwrap();
        project.settings.check_command = Some(command.into());
        store
            .update_project_settings(project.id, &project.settings)
            .unwrap();
        let scratch = self.root.parent().unwrap().join("scratch");
        store
            .set_setting("checks.scratch_dir", &scratch.to_string_lossy())
            .unwrap();
    }

    pub fn chat(&self, mode: ChatMode) -> i64 {
        self.service.new_chat(self.project.id, mode).unwrap().id
    }

    /// Every reply has settled: nothing streaming, no leftover parts.
    pub fn assert_settled(&self, chat: i64) {
        for message in self.engine.store().messages(chat).unwrap() {
            assert_ne!(message.status, MessageStatus::Streaming, "{message:?}");
        }
    }

    pub fn chat_requests(&self) -> Vec<super::Recorded> {
        self.server
            .requests()
            .into_iter()
            .filter(|r| {
                r.method == "POST"
                    && (r.path.contains("chat")
                        || r.path.contains("messages")
                        || r.path.contains("Generate"))
            })
            .collect()
    }
}
