//! Background events applied to the state, once per frame, before the UI is laid out.

use crate::backend::{Event, FileContent};
use crate::model::agent_state::{ApproverStatus, GatewayStatus};
use crate::model::chat_state::{ChatState, MessageView, Streaming};
use crate::model::state::{AppState, ProjectState, Status, Tab};
use tandem_core::agent::gateway::GatewayEvent;
use tandem_core::app::ChatEventKind;
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
            Event::TurnFinished(outcome) => {
                if let Some(error) = &outcome.approve_error {
                    self.toast(format!("The changes were not applied: {error}"), true);
                }
                if let Some(commit) = outcome.approval.as_ref().and_then(|a| a.commit.as_ref()) {
                    self.toast(
                        format!("Applied as commit {}", tandem_core::vcs::short(commit)),
                        false,
                    );
                }
            }
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
            Event::Files(files) => {
                if let Some(project) = &mut self.project {
                    project.files.set_files(files);
                }
            }
            Event::History(history) => {
                if let Some(project) = &mut self.project {
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

    fn on_chat_event(&mut self, event: tandem_core::app::ChatEvent) {
        // Waiting calls are tracked for every chat (the open one shows them inline).
        match &event.kind {
            ChatEventKind::Approval { approval } => {
                if self.chat().is_none_or(|c| c.chat.id != event.chat_id) {
                    self.toast("A tool call in another chat waits for your approval", false);
                }
                self.agent.add_approval(approval.clone());
                return;
            }
            ChatEventKind::ApprovalSettled { id } => {
                self.agent.settle(*id);
                return;
            }
            // Following the agent in the open chat: its file opens where it worked.
            ChatEventKind::Step { step }
                if self.prefs.follow_agent
                    && self.chat().is_some_and(|c| c.chat.id == event.chat_id) =>
            {
                if let Some(place) = followed(step, self.project.as_ref()) {
                    self.follow = Some(place);
                }
            }
            _ => {}
        }
        let Some(chat) = self.chat_mut().filter(|c| c.chat.id == event.chat_id) else {
            return;
        };
        match event.kind {
            ChatEventKind::Started { breakdown, .. } => {
                chat.breakdown = Some(breakdown);
                chat.live(event.message_id);
            }
            ChatEventKind::Delta { text, reasoning } => {
                let Some(streaming) = chat.live(event.message_id) else {
                    return;
                };
                if streaming.first_token.is_none() {
                    streaming.first_token = Some(std::time::Instant::now());
                }
                streaming.chars += text.chars().count() + reasoning.chars().count();
                streaming.reasoning.push_str(&reasoning);
                streaming.parser.push(&text);
            }
            ChatEventKind::Finished { .. } => {
                // The reloaded chat (sent right after) replaces the live view.
            }
            ChatEventKind::TitleChanged { title } => chat.chat.title = title,
            ChatEventKind::Compacted { summary } => {
                if !chat.summaries.iter().any(|s| s.id == summary.id) {
                    chat.summaries.push(summary);
                }
            }
            ChatEventKind::Retrying { .. } => {
                if let Some(streaming) = chat.live(event.message_id) {
                    streaming.restart();
                }
            }
            ChatEventKind::Step { step } => {
                // "Always allow" changed the saved policy: the settings form shows it.
                let always = step
                    .reason
                    .as_deref()
                    .is_some_and(|r| r.starts_with("always allowed"));
                let message_id = event.message_id;
                let steps = match chat.live(message_id) {
                    Some(live) => Some(&mut live.steps),
                    // Finished already: the reloaded message may lack this step yet.
                    None => chat
                        .messages
                        .iter_mut()
                        .find(|m| m.message.id == message_id)
                        .map(|m| &mut m.steps),
                };
                if let Some(steps) = steps
                    && !steps.iter().any(|s| s.id == step.id)
                {
                    steps.push(step);
                }
                if always {
                    self.agent.reload_settings = true;
                }
            }
            ChatEventKind::Approval { .. } | ChatEventKind::ApprovalSettled { .. } => {}
        }
    }

    fn on_agent_event(&mut self, event: Event) {
        match event {
            Event::AgentSettings(settings) => self.agent.form.load(&settings),
            Event::McpServers(servers) => {
                // The server just added is in the list: the form is done.
                let typed = self.agent.form.mcp.name.trim();
                let added = !typed.is_empty()
                    && servers.iter().any(|s| s.name == typed)
                    && !self.agent.mcp_servers.iter().any(|s| s.name == typed);
                if added {
                    self.agent.form.mcp = Default::default();
                }
                self.agent.mcp_servers = servers;
            }
            Event::ApprovalGone(id) => {
                self.agent.settle(id);
                self.toast("That tool call is no longer waiting", false);
            }
            Event::GatewayStatus(status) => {
                match &status {
                    GatewayStatus::Running { port } => self
                        .log
                        .push(format!("approval gateway listening on 127.0.0.1:{port}")),
                    GatewayStatus::Failed(error) => {
                        self.toast(format!("The approval gateway did not start: {error}"), true)
                    }
                    GatewayStatus::Off | GatewayStatus::Starting => {}
                }
                self.agent.gateway.status = status;
            }
            Event::GatewaySettings(settings) => self.agent.form.load_gateway(&settings),
            Event::ApprovalRequests(requests) => self.agent.gateway.requests = requests,
            Event::ApproverStatus(status) => {
                if let ApproverStatus::Refused(why) = &status {
                    self.toast(format!("The executor did not let Tandem in: {why}"), true);
                }
                let approver = &mut self.agent.approver;
                approver.status = status;
                approver.since = Some(std::time::Instant::now());
            }
            Event::ApproverSettings(shown) => {
                let approver = &mut self.agent.approver;
                approver.url = shown.url;
                approver.token_hint = shown.token_hint;
                approver.token.clear();
            }
            Event::Gateway(event) => match event {
                GatewayEvent::Requested { id, client, .. } => {
                    let who = client.unwrap_or_else(|| "an external tool".into());
                    self.toast(format!("Approval request #{id} from {who}"), false);
                    self.wants_attention = true;
                }
                GatewayEvent::ClientConnected { addr, .. } => {
                    self.log
                        .push(format!("gateway: client connected from {addr}"));
                }
                GatewayEvent::ClientGone {
                    client, abandoned, ..
                } => self.log.push(format!(
                    "gateway: {} left; {} request(s) still pending",
                    client.as_deref().unwrap_or("a client"),
                    abandoned.len()
                )),
                GatewayEvent::BadFrame { id, message, .. } => self.log.push(format!(
                    "approvals: a frame was refused ({}): {message}",
                    id.as_deref().unwrap_or("no id")
                )),
                GatewayEvent::Decided { .. } => {}
            },
            _ => {}
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

/// Where following the agent goes after `step`: the file it read (at the first line read) or
/// edited (at the edited text when the file is open, else its top).
fn followed(
    step: &tandem_core::store::AgentStep,
    project: Option<&crate::model::state::ProjectState>,
) -> Option<(String, usize)> {
    let arguments = step.arguments.as_ref()?;
    let path = arguments
        .get("path")?
        .as_str()?
        .trim_start_matches("./")
        .to_string();
    let line = match step.tool.as_deref()? {
        "read_file" => arguments
            .get("start_line")
            .and_then(serde_json::Value::as_u64)
            .map_or(1, |n| n.max(1) as usize),
        "search_replace" => {
            let search = arguments.get("search").and_then(serde_json::Value::as_str);
            let open = project.and_then(|p| p.tabs.iter().find(|t| t.path == path));
            match (search, open) {
                (Some(search), Some(tab)) => tab
                    .text
                    .find(search)
                    .map_or(1, |at| tab.text[..at].matches('\n').count() + 1),
                _ => 1,
            }
        }
        "write_file" => 1,
        _ => return None,
    };
    Some((path, line))
}
