//! Background events applied to the state, once per frame, before the UI is laid out: the
//! turns' events in `chat.rs`, the agent's settings and gateways in `agent.rs`.

mod agent;
mod chat;

use crate::backend::{Event, FileContent, Stale};
use crate::model::chat_state::{ChatState, MessageView, Streaming};
use crate::model::state::{AppState, ProjectState, Status, Tab};
use tandem_core::store::MessageStatus;

impl AppState {
    pub fn on_event(&mut self, event: Event) {
        match event {
            Event::Ready {
                projects,
                providers,
                settings,
            } => {
                self.status = Status::Ready;
                self.projects = projects;
                self.providers = providers;
                self.provider = settings.default_provider;
                self.model = settings.default_model.or_else(|| {
                    self.providers
                        .first()
                        .and_then(|p| p.settings.default_model.clone())
                });
                self.auto_approve = settings.auto_approve;
            }
            Event::ProjectOpened(opened) => {
                let tandem_core::app::OpenedProject {
                    project,
                    chats,
                    files,
                    history,
                } = *opened;
                self.prefs.last_project = Some(project.id);
                if !self.projects.iter().any(|p| p.id == project.id) {
                    self.projects.insert(0, project.clone());
                }
                // The project being left keeps its unsaved buffers: they come back as dirty
                // tabs when it is opened again.
                self.drafts = crate::unsaved::drafts(self);
                self.project = Some(ProjectState::new(project, chats, files, history));
            }
            Event::ChatsChanged { project_id, chats } => {
                if let Some(project) = &mut self.project
                    && project.project.id == project_id
                {
                    if let Some(chat) = &mut project.chat
                        && let Some(fresh) = chats.iter().find(|c| c.id == chat.chat.id)
                    {
                        chat.chat = fresh.clone();
                    }
                    project.chats = chats;
                }
            }
            Event::ArchivedChats { project_id, chats } => {
                if let Some(project) = &mut self.project
                    && project.project.id == project_id
                {
                    project.archived = chats;
                }
            }
            Event::ChatHits { query, hits } => {
                if let Some(project) = &mut self.project {
                    project.chat_hits = Some((query, hits));
                }
            }
            Event::Usage { seq, .. } if seq < self.usage_seq => {}
            Event::Usage {
                seq,
                report,
                prices,
            } => {
                self.usage_seq = seq;
                // A price saved from the form: the form is free again.
                let form = &mut self.settings;
                if prices.contains_key(form.price_model.trim()) {
                    form.price_model.clear();
                    form.price_input.clear();
                    form.price_output.clear();
                }
                self.usage = Some(*report);
                self.prices = prices;
            }
            Event::Attached { attached, errors } => {
                self.attachments.extend(attached);
                for error in errors {
                    self.toast(&error, true);
                }
            }
            Event::SearchResults { key, result } => {
                self.search.results = Some((key, result));
            }
            Event::Prompts(prompts) => {
                // The editor's prompt was saved: the form is free for the next one.
                let form = &mut self.settings;
                if prompts
                    .iter()
                    .any(|p| p.name == form.prompt_name.trim() && p.text == form.prompt_text)
                {
                    form.prompt_editing = None;
                    form.prompt_name.clear();
                    form.prompt_text.clear();
                }
                self.prompts = prompts;
            }
            Event::ChatLoaded(loaded) => {
                let tandem_core::app::LoadedChat {
                    chat,
                    messages,
                    mut steps,
                    review,
                    approvals,
                    summaries,
                    mut attachments,
                } = *loaded;
                for approval in approvals {
                    self.agent.add_approval(approval);
                }
                let Some(project) = &mut self.project else {
                    return;
                };
                if chat.project_id != project.project.id {
                    return;
                }
                self.prefs.last_chat = Some(chat.id);
                self.mode = chat.mode;
                // The chat goes on with the model it was last sent with.
                if let (Some(id), Some(model)) = (chat.provider_id, &chat.model)
                    && let Some(provider) = self.providers.iter().find(|p| p.id == id)
                {
                    self.provider = Some(provider.name.clone());
                    self.model = Some(model.clone());
                }
                let same = project.chat.as_ref().is_some_and(|c| c.chat.id == chat.id);
                let (streaming, breakdown) = match project.chat.take() {
                    Some(old) if same => (old.streaming, old.breakdown),
                    _ => (None, None),
                };
                // A reply still streaming keeps its live view.
                let streaming = streaming.filter(|s| {
                    messages
                        .iter()
                        .any(|m| m.id == s.message_id && m.status == MessageStatus::Streaming)
                });
                let messages = messages
                    .into_iter()
                    .map(|m| {
                        let steps = steps.remove(&m.id).unwrap_or_default();
                        let attached = attachments.remove(&m.id).unwrap_or_default();
                        MessageView {
                            attachments: attached,
                            ..MessageView::with_steps(m, steps)
                        }
                    })
                    .collect();
                project.chat = Some(ChatState {
                    chat,
                    messages,
                    streaming,
                    review: None,
                    breakdown,
                    summaries,
                });
                self.set_review(review);
            }
            Event::TurnStarted {
                chat_id,
                user,
                reply_id,
            } => {
                let Some(chat) = self.chat_mut().filter(|c| c.chat.id == chat_id) else {
                    return;
                };
                if let Some(user) = user {
                    chat.messages.push(MessageView::new(user));
                }
                chat.review = None;
                if chat.streaming.as_ref().map(|s| s.message_id) != Some(reply_id) {
                    chat.streaming = Some(Streaming::new(reply_id));
                }
            }
            Event::Chat(event) => self.on_chat_event(event),
            Event::Approved { outcome, .. } => match outcome.commit {
                Some(commit) => self.toast(
                    format!("Applied as commit {}", tandem_core::vcs::short(&commit)),
                    false,
                ),
                None => self.toast("Nothing needed changing", false),
            },
            Event::Rejected(_) => self.toast("Proposal rejected; nothing changed", false),
            Event::FileOpened { path, content } => self.open_tab(path, content),
            Event::Definitions { name, result } => self.definitions_found(name, result),
            Event::References { name, result } => self.references_found(name, result),
            Event::SymbolMatches { query, result } => self.symbols_matched(query, result),
            Event::FileChangedOnDisk { path, text } => {
                let Some(project) = &mut self.project else {
                    return;
                };
                let Some(tab) = project.tabs.iter_mut().find(|t| t.path == path) else {
                    return;
                };
                if tab.read_only.is_some() || tab.saved == text {
                    return;
                }
                if tab.dirty() {
                    tab.disk_changed = Some(text);
                } else {
                    tab.text = text.clone();
                    tab.saved = text;
                    tab.revision += 1;
                    self.log.push(format!("{path} changed on disk: reloaded"));
                }
            }
            Event::FileSaved { path, text, commit } => {
                self.saved(&path, text);
                let note = match commit {
                    Some(c) => format!("Saved {path} (commit {})", tandem_core::vcs::short(&c)),
                    None => format!("Saved {path} (unchanged)"),
                };
                self.toast(note, false);
            }
            Event::SaveConflict { path, disk } => self.save_conflict(&path, disk),
            // Read again in `TandemApp::update`: the end of a turn in it (the reply as it
            // ended replaces the live view), a proposal decided, a commit.
            Event::Stale(stale) => {
                self.chat_stale |= self.chat().is_some_and(|open| match stale {
                    Stale::Chat(id) => open.chat.id == id,
                    Stale::ChatsOf(id) => open.chat.project_id == id,
                });
            }
            Event::Files { project_id, files } => {
                if let Some(project) = self.project_mut(project_id) {
                    project.files.set_files(files);
                }
            }
            Event::History {
                project_id,
                history,
            } => {
                if let Some(project) = self.project_mut(project_id) {
                    project.history = history;
                }
            }
            Event::VersionDiff { commit, diff } => {
                if let Some(project) = &mut self.project {
                    project.version_diff = Some((commit, diff));
                }
            }
            Event::Restored(outcome) => {
                let text = match outcome.commit {
                    Some(_) => format!(
                        "Restored {}; {} later message(s) removed",
                        tandem_core::vcs::short(&outcome.restored),
                        outcome.removed_messages
                    ),
                    None => "Already at that version".to_string(),
                };
                self.toast_with_notes(text, outcome.notes());
                self.reload_open_tabs();
            }
            Event::Undone(outcome) => {
                let text = format!("Undid {}", tandem_core::vcs::short(&outcome.reverted));
                self.toast_with_notes(text, outcome.notes());
                self.reload_open_tabs();
            }
            Event::Providers(providers) => self.providers = providers,
            Event::ProviderKeys { provider, keys } => {
                self.provider_keys.insert(provider, keys);
            }
            Event::CliAgentStatus { provider, status } => {
                self.agent.cli_agents.entry(provider).or_default().status = Some(status);
            }
            Event::CliAgentLogin {
                provider,
                line,
                done,
            } => {
                let view = self.agent.cli_agents.entry(provider).or_default();
                view.login_lines.extend(line);
                if done.is_some() {
                    view.logging_in = false;
                }
            }
            Event::WorkspaceRun { chat_id, result } => {
                self.workspaces.finished(chat_id, *result);
            }
            Event::Workspaces(list) => self.workspaces.list = Some(list),
            Event::WorkspacesCleaned(cleaned) => {
                let text = crate::model::workspaces::cleaned_text(&cleaned);
                self.toast(text, false);
            }
            Event::ModelProfile(profile) => {
                let form = &mut self.settings;
                let text = |v: Option<String>| v.unwrap_or_default();
                form.model_context = text(profile.settings.context_length.map(|n| n.to_string()));
                form.model_temperature = text(profile.settings.temperature.map(|t| t.to_string()));
                form.model_max_output =
                    text(profile.settings.max_output_tokens.map(|n| n.to_string()));
                form.model_effort = profile.settings.reasoning_effort;
                form.profile = Some(profile);
            }
            Event::Models { provider, models } => {
                // With no model chosen yet, take the first one the default provider serves.
                let default = self
                    .provider
                    .clone()
                    .or_else(|| self.providers.first().map(|p| p.name.clone()));
                if self.model.is_none()
                    && default.as_deref() == Some(provider.as_str())
                    && let Some(first) = models.as_ref().ok().and_then(|m| m.first())
                {
                    self.provider = Some(provider.clone());
                    self.model = Some(first.id.clone());
                }
                self.models.insert(provider, models);
            }
            Event::NotSent {
                deleted_chat,
                prompt,
                mut attachments,
                message,
            } => {
                if let Some(project) = &mut self.project
                    && deleted_chat.is_some()
                    && project.chat.as_ref().map(|c| c.chat.id) == deleted_chat
                {
                    project.chat = None;
                }
                // Back in the composer, before whatever was typed since.
                self.composer = match self.composer.trim().is_empty() {
                    true => prompt,
                    false => format!("{prompt}\n\n{}", self.composer),
                };
                attachments.append(&mut self.attachments);
                self.attachments = attachments;
                self.toast(
                    format!("Not sent: {message}. The prompt is back in the composer."),
                    true,
                );
            }
            Event::Error { action, message } => {
                if self.status == Status::Loading {
                    self.status = Status::Failed(message.clone());
                }
                self.toast(format!("Error {action}: {message}"), true);
            }
            Event::Log(line) => self.log.push(line),
            Event::ContextPreview {
                prompt,
                focus,
                breakdown,
            } => {
                self.preview = Some((prompt, breakdown));
                self.preview_focus = focus;
            }
            Event::ContextCounts {
                include,
                exclude,
                counts,
            } => self.settings.glob_counts = Some((include, exclude, counts)),
            // Handled by the app, which owns the backend.
            Event::FolderPicked(_) => {}
            event => self.on_agent_event(event),
        }
    }

    fn open_tab(&mut self, path: String, content: FileContent) {
        let Some(project) = &mut self.project else {
            return;
        };
        let (text, read_only) = match content {
            FileContent::Text(text) => (text, None),
            FileContent::ReadOnly { text, reason } => (text, Some(reason)),
            FileContent::Binary { bytes } => (
                String::new(),
                Some(format!("binary file ({bytes} bytes): not shown")),
            ),
        };
        let mut restored = None;
        match project.tabs.iter().position(|t| t.path == path) {
            Some(index) => {
                let tab = &mut project.tabs[index];
                if !tab.dirty() {
                    tab.text = text.clone();
                    tab.saved = text;
                    tab.revision += 1;
                }
                project.active_tab = Some(index);
            }
            None => {
                let mut tab = Tab::new(path, text, read_only);
                restored =
                    crate::unsaved::restore_draft(&mut self.drafts, project.project.id, &mut tab);
                project.tabs.push(tab);
                project.active_tab = Some(project.tabs.len() - 1);
            }
        }
        self.prefs.open_tabs = project.tabs.iter().map(|t| t.path.clone()).collect();
        if let Some(note) = restored {
            self.log.push(note.clone());
            self.toast(note, false);
        }
    }

    /// After a restore or undo, open files may have changed on disk.
    fn reload_open_tabs(&mut self) {
        self.pending_reloads = self
            .project
            .as_ref()
            .map(|p| p.tabs.iter().map(|t| t.path.clone()).collect())
            .unwrap_or_default();
    }
}
