//! What is asked of the background once the person stops typing (for [`ESTIMATE_AFTER`]): the
//! composer's context estimate, the Search tab's matches, the chats matching the sidebar's
//! filter, and what the settings' context globs select.

use crate::TandemApp;
use crate::backend;
use crate::model;

/// Typing pause after which the composer's context estimate is computed.
const ESTIMATE_AFTER: std::time::Duration = std::time::Duration::from_millis(400);
/// The Search tab shows at most this many matches.
const SEARCH_MAX_MATCHES: usize = 1_000;

/// True once, when `edited` is [`ESTIMATE_AFTER`] old (it is then cleared); until then a
/// repaint is asked for the moment it will be.
pub(crate) fn typing_paused(
    edited: &mut Option<std::time::Instant>,
    ctx: &egui::Context,
    now: std::time::Instant,
) -> bool {
    let Some(at) = *edited else {
        return false;
    };
    let waited = now.duration_since(at);
    if waited < ESTIMATE_AFTER {
        ctx.request_repaint_after(ESTIMATE_AFTER - waited);
        return false;
    }
    *edited = None;
    true
}

impl TandemApp {
    /// Counts what the settings' context globs select once typing pauses.
    pub(crate) fn ask_for_glob_counts(&mut self, ctx: &egui::Context, now: std::time::Instant) {
        let form = &mut self.state.settings;
        if !typing_paused(&mut form.globs_edited, ctx, now) {
            return;
        }
        if let Some(project) = &self.state.project {
            // The globs as typed, not yet saved.
            let (include, exclude) = (form.include.clone(), form.exclude.clone());
            let root = project.project.path.clone();
            let split = model::state::split_globs;
            let (included, excluded) = (split(&include), split(&exclude));
            self.backend.query(
                "counting the context",
                move |app| {
                    let count = app.count_context(&root, included, excluded);
                    anyhow::Ok(count.map(|c| c.to_string()).map_err(|e| e.to_string()))
                },
                move |counts| backend::Event::ContextCounts {
                    include,
                    exclude,
                    counts,
                },
            );
        }
    }

    /// Searches the project's files for the Search tab once typing pauses.
    pub(crate) fn ask_for_project_search(&mut self, ctx: &egui::Context, now: std::time::Instant) {
        if !typing_paused(&mut self.state.search.edited, ctx, now) {
            return;
        }
        let key = self.state.search.query.clone();
        if let Some(project) = &self.state.project
            && !key.text.is_empty()
        {
            let project = project.project.clone();
            self.backend.query(
                "searching",
                move |app| {
                    let glob = key.glob.trim();
                    let query = tandem_core::app::SearchQuery {
                        pattern: &key.text,
                        literal: !key.regex,
                        case_insensitive: !key.match_case,
                        glob: (!glob.is_empty()).then_some(glob),
                        start: None,
                        max_matches: SEARCH_MAX_MATCHES,
                        // The person's own search: their files, shown to them.
                        leave_out_secrets: false,
                    };
                    let result = app.search(&project, &query).map_err(|e| e.to_string());
                    anyhow::Ok((key, result))
                },
                |(key, result)| backend::Event::SearchResults { key, result },
            );
        }
    }

    /// Searches the chats' messages for the sidebar's filter once typing pauses.
    pub(crate) fn ask_for_chat_search(&mut self, ctx: &egui::Context, now: std::time::Instant) {
        let Some(project) = &mut self.state.project else {
            return;
        };
        if !typing_paused(&mut project.chat_filter_edited, ctx, now) {
            return;
        }
        let query = project.chat_filter.trim().to_string();
        if !query.is_empty() {
            let (project_id, asked) = (project.project.id, query.clone());
            self.backend.query(
                "searching the chats",
                move |app| app.search_chats(project_id, &asked),
                move |hits| backend::Event::ChatHits { query, hits },
            );
        }
    }

    /// Asks for the composer's context estimate once typing pauses for [`ESTIMATE_AFTER`],
    /// and again when the editor's tabs or selection change (the estimate packs them too).
    pub(crate) fn ask_for_context_estimate(
        &mut self,
        ctx: &egui::Context,
        now: std::time::Instant,
    ) {
        let focus = (self.state.project.as_ref()).map_or(0, model::selection::focus_key);
        if focus != self.state.focus_key {
            self.state.focus_key = focus;
            if !self.state.composer.trim().is_empty() {
                self.state.composer_edited = Some(now);
            }
        }
        if !typing_paused(&mut self.state.composer_edited, ctx, now) {
            return;
        }
        let prompt = self.state.composer.trim().to_string();
        let Some(project) = &self.state.project else {
            return;
        };
        if prompt.is_empty() || self.state.chat().is_some_and(|c| c.streaming.is_some()) {
            return;
        }
        // In the chat, else in a new one, with the editor's state (whose fingerprint is
        // `focus`).
        let chat = self.state.chat().map(|c| c.chat.id);
        let options = self.state.send_options();
        let (project, focus) = (project.project.clone(), self.state.focus_key);
        self.backend.query_async(
            "estimating the context",
            move |app| async move {
                let breakdown = app.preview(&project, chat, &prompt, &options).await;
                anyhow::Ok((prompt, breakdown.map_err(|e| e.to_string())))
            },
            move |(prompt, breakdown)| backend::Event::ContextPreview {
                prompt,
                focus,
                breakdown,
            },
        );
    }
}
