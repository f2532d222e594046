//! Before each frame's UI: the files dropped on the window attached, the background's events
//! applied, and what the state then asks for done (a project watched, its last chat and tabs
//! reopened, a stale chat read again, the questions asked once typing pauses); the open files
//! compared with the disk every few seconds, and the toasts expired.

use crate::TandemApp;
use crate::backend;
use crate::calls;
use crate::command::Command;
use crate::model::state::Status;

/// How often the open files are compared with the disk (sooner after an outside change).
const DISK_CHECK_EVERY: std::time::Duration = std::time::Duration::from_secs(2);

impl TandemApp {
    /// The open project changed outside the window: its tree, history and chats are read
    /// again, and its open files compared with the disk now (a dirty buffer whose file
    /// changed asks what to keep).
    fn changed_outside(&mut self, project_id: i64, changed: tandem_core::app::Changed) {
        let Some(project) = &self.state.project else {
            return;
        };
        if project.project.id != project_id {
            return;
        }
        let chat = project
            .chat
            .as_ref()
            .filter(|c| changed.history && c.streaming.is_none())
            .map(|c| c.chat.id);
        self.backend
            .refresh_outside_change(project.project.clone(), chat);
        // The next frame looks at the open files (a report always says something changed).
        self.last_disk_check = std::time::Instant::now()
            .checked_sub(DISK_CHECK_EVERY)
            .unwrap_or(self.last_disk_check);
    }

    /// Applies background events; called before each frame's UI.
    pub fn update_state(&mut self, ctx: &egui::Context) {
        // Files dropped on the window are attached to the prompt.
        let dropped: Vec<std::path::PathBuf> = ctx.input(|i| {
            i.raw
                .dropped_files
                .iter()
                .map(|f| f.path().to_path_buf())
                .filter(|p| !p.as_os_str().is_empty())
                .collect()
        });
        if !dropped.is_empty() && self.state.project.is_some() {
            self.backend.attach_paths(dropped);
        }
        for event in self.backend.drain() {
            match event {
                backend::Event::FolderPicked(path) => self.backend.open_project(path),
                backend::Event::ChangedOutside {
                    project_id,
                    changed,
                } => self.changed_outside(project_id, changed),
                event => {
                    let opened = match &event {
                        backend::Event::ProjectOpened(opened) => Some(opened.project.clone()),
                        _ => None,
                    };
                    // Settings opened before the providers were known (or they changed).
                    let providers = matches!(
                        event,
                        backend::Event::Ready { .. } | backend::Event::Providers(_)
                    );
                    self.state.on_event(event);
                    if providers && self.state.settings_open {
                        self.state
                            .apply(Command::LoadProviderDetails, &self.backend);
                    }
                    if let Some(project) = opened {
                        self.backend.watch_project(project);
                    }
                }
            }
        }
        // A request for the person while they look elsewhere: flash the window / task bar.
        if std::mem::take(&mut self.state.wants_attention) && !ctx.input(|i| i.focused) {
            let attention = egui::UserAttentionType::Informational;
            ctx.send_viewport_cmd(egui::ViewportCommand::RequestUserAttention(attention));
        }
        // The executor's reconnect countdown stays current.
        if matches!(
            self.state.agent.approver.status,
            tandem_core::app::ApproverStatus::Reconnecting { .. }
        ) {
            ctx.request_repaint_after(std::time::Duration::from_secs(1));
        }
        if let Some((path, line)) = self.state.follow.take() {
            self.state
                .apply(Command::OpenFileAt { path, line }, &self.backend);
        }
        if !self.restored && self.state.status == Status::Ready {
            self.restored = true;
            // Probe the providers: the welcome view and the model picker show what is there.
            self.state.apply(Command::RefreshModels, &self.backend);
            if let Some(path) = self.open_at_start.take() {
                self.backend.open_project(path);
            } else if let Some(id) = self.state.prefs.last_project
                && self.state.projects.iter().any(|p| p.id == id)
            {
                self.backend.switch_project(id);
            }
        }
        // When a project has loaded, reopen its last chat (else its most recent one) once.
        if let Some(project) = &mut self.state.project
            && project.chat.is_none()
            && !project.chat_requested
        {
            project.chat_requested = true;
            let last = self
                .state
                .prefs
                .last_chat
                .filter(|id| project.chats.iter().any(|c| c.id == *id));
            if let Some(chat) = last.or_else(|| project.chats.first().map(|c| c.id)) {
                self.backend.load_chat(chat);
            }
            let mut paths = std::mem::take(&mut self.state.prefs.open_tabs);
            // Unsaved buffers kept from the last run come back with their files.
            for draft in &self.state.drafts {
                if draft.project_id == project.project.id && !paths.contains(&draft.path) {
                    paths.push(draft.path.clone());
                }
            }
            for path in paths {
                if project.files.contains(&path) {
                    calls::open_file(&self.backend, project.project.clone(), path);
                }
            }
        }
        if std::mem::take(&mut self.state.agent.reload_settings) {
            self.backend.load_agent_settings();
        }
        // The open chat read again when something said it changed (a reply still streaming
        // keeps its live view: see `Event::ChatLoaded`).
        if std::mem::take(&mut self.state.chat_stale)
            && let Some(chat) = self.state.chat()
        {
            self.backend.load_chat(chat.chat.id);
        }
        for path in std::mem::take(&mut self.state.pending_reloads) {
            if let Some(project) = &self.state.project {
                calls::open_file(&self.backend, project.project.clone(), path);
            }
        }
        let now = std::time::Instant::now();
        self.ask_for_context_estimate(ctx, now);
        self.ask_for_chat_search(ctx, now);
        self.ask_for_project_search(ctx, now);
        self.ask_for_symbol_matches(ctx, now);
        self.ask_for_glob_counts(ctx, now);
        // Every 2 s (and after an outside change), look for open files changed on disk (by another editor, git, a formatter).
        if now.duration_since(self.last_disk_check) >= DISK_CHECK_EVERY {
            self.last_disk_check = now;
            if let Some(project) = &self.state.project {
                let known: Vec<(String, String)> = project
                    .tabs
                    .iter()
                    .filter(|t| t.read_only.is_none() && t.disk_changed.is_none())
                    .map(|t| (t.path.clone(), t.saved.clone()))
                    .collect();
                if !known.is_empty() {
                    self.backend
                        .check_open_files(project.project.clone(), known);
                }
            }
            ctx.request_repaint_after(DISK_CHECK_EVERY);
        }
        self.state
            .toasts
            .retain(|t| now.duration_since(t.at).as_secs() < if t.error { 8 } else { 4 });
        if !self.state.toasts.is_empty() || self.state.chat().is_some_and(|c| c.streaming.is_some())
        {
            ctx.request_repaint_after(std::time::Duration::from_millis(250));
        }
    }
}
