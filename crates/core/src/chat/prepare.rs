//! A turn's request: the history (compacted when long), the project's rules, the files ranked
//! for the prompt and the editor, fitted to the model's window; and the previews of it.

use std::sync::Arc;

use super::compact;
use super::focus::{EditorFocus, SentSelection};
use super::models::{self, FALLBACK_CONTEXT, ModelChoice};
use super::prompt::{self, ContextBreakdown, HistoryTurn, PromptError, PromptInputs};
use super::ranking::{editor_files, rank_files, repository_and_recent};
use super::turn::Turn;
use super::{ChatError, ChatEventKind, ChatService, SendOptions};
use crate::folder::context::{ContextOptions, Priority, Walk, mentioned_paths};
use crate::index::{Changes, Indexes};
use crate::llm::ChatRequest;
use crate::store::keys::HISTORY_TURNS;
use crate::store::{Chat, ChatMode, ChatSummary, Project};

/// Why a file `@`-mentioned in the prompt is sent.
const MENTIONED_WHY: &str = "mentioned";
/// Why a file the prompt names without `@` is sent.
const NAMED_WHY: &str = "named in the prompt";

const DEFAULT_HISTORY_TURNS: usize = 10;

/// What the person sends: the prompt's text (with its attached files), and the editor's
/// tabs and selection.
pub(super) struct Asked<'a> {
    text: &'a str,
    editor: &'a EditorFocus,
}

impl ChatService {
    /// The turn's request. Turns past the history setting, or too many for the window, are
    /// compacted first: summarised (with the chat's current summary folded in), the summary
    /// stored and sent in their place. If summarising fails, they are left out as before and
    /// the breakdown says so.
    pub(super) async fn prepare_turn(
        &self,
        turn: &Turn,
    ) -> Result<(ChatRequest, ContextBreakdown), ChatError> {
        let (summary, turns) = self.history_before(turn.chat.id, Some(turn.history_before))?;
        let keep_from = turns.len().saturating_sub(self.history_setting()?);
        let (older, kept) = turns.split_at(keep_from);
        // The prompt's attachments: text files go with its text (and are fitted with it),
        // images on its message.
        let attached = self.engine.store().attachments(turn.history_before)?;
        let (files, images) = super::attachments::load(self.engine.store(), &attached);
        let text = &format!("{}{files}", turn.prompt);
        let asked = &Asked {
            text,
            editor: &turn.editor,
        };
        let (project, mode, choice) = (&turn.project, turn.chat.mode, &turn.choice);
        let with_images = |(mut request, mut breakdown): (ChatRequest, ContextBreakdown)| {
            if let Some(last) = request.messages.last_mut()
                && last.role == crate::llm::ChatRole::User
                && !images.is_empty()
            {
                last.images = images.clone();
                breakdown.prompt += images.len() * crate::tokens::IMAGE_TOKENS;
            }
            (request, breakdown)
        };
        let first = with_images(
            self.prepare(project, mode, kept, summary.as_ref(), choice, asked)
                .await?,
        );
        let dropped = first.1.turns_dropped.min(kept.len());
        if older.is_empty() && dropped == 0 {
            return Ok(first);
        }
        let folded: Vec<HistoryTurn> = older.iter().chain(&kept[..dropped]).cloned().collect();
        let window = first.1.window;
        let made = tokio::select! {
            made = compact::summarize(choice, window, summary.as_ref(), &folded) => made,
            _ = turn.cancel.cancelled() => return Err(ChatError::Task("cancelled".into())),
        };
        let Ok(content) = made else {
            return Ok(first);
        };
        let store = self.engine.store();
        let new = compact::store_summary(
            store,
            turn.chat.id,
            summary.as_ref(),
            &folded,
            &content,
            &choice.model,
        )?;
        self.event(
            turn,
            ChatEventKind::Compacted {
                summary: new.clone(),
            },
        );
        Ok(with_images(
            self.prepare(project, mode, &kept[dropped..], Some(&new), choice, asked)
                .await?,
        ))
    }

    /// What a request for `prompt` would contain now, without sending it.
    pub async fn preview(
        &self,
        project: &Project,
        prompt: &str,
        options: &SendOptions,
    ) -> Result<ContextBreakdown, ChatError> {
        let choice = self.choose(options)?;
        // An unfinished `@prompt:` name while typing is counted as typed.
        let prompt = &self.expand(prompt).unwrap_or_else(|_| prompt.to_string());
        let asked = &Asked {
            text: prompt,
            editor: &options.editor,
        };
        let (_, breakdown) = self
            .prepare(project, ChatMode::Build, &[], None, &choice, asked)
            .await?;
        Ok(breakdown)
    }

    /// What sending `prompt` in `chat_id` would cost now: the chat's mode and history, the
    /// codebase, the prompt (the composer's live context meter).
    pub async fn preview_in_chat(
        &self,
        chat_id: i64,
        prompt: &str,
        options: &SendOptions,
    ) -> Result<ContextBreakdown, ChatError> {
        let store = self.engine.store();
        let chat = store.chat(chat_id)?;
        let project = store.project(chat.project_id)?;
        let choice = self.choose(&self.chat_options(&chat, options.clone()))?;
        let prompt = &self.expand(prompt).unwrap_or_else(|_| prompt.to_string());
        let (summary, turns) = self.history_before(chat.id, None)?;
        let keep = turns.len().saturating_sub(self.history_setting()?);
        let asked = &Asked {
            text: prompt,
            editor: &options.editor,
        };
        let (_, breakdown) = self
            .prepare(
                &project,
                chat.mode,
                &turns[keep..],
                summary.as_ref(),
                &choice,
                asked,
            )
            .await?;
        Ok(breakdown)
    }

    /// `options` with the chat's own provider and model when they name none (the model a
    /// chat was last sent with is the one it goes on with).
    pub(super) fn chat_options(&self, chat: &Chat, mut options: SendOptions) -> SendOptions {
        if options.provider.is_none() && options.model.is_none() {
            let remembered = chat
                .provider_id
                .and_then(|id| self.engine.store().provider(id).ok());
            if let (Some(provider), Some(model)) = (remembered, &chat.model) {
                options.provider = Some(provider.name);
                options.model = Some(model.clone());
            }
        }
        options
    }

    /// The provider and model a send in `chat` uses (see [`Self::chat_options`]).
    pub(super) fn choose_for(
        &self,
        chat: &Chat,
        options: &SendOptions,
    ) -> Result<ModelChoice, ChatError> {
        self.choose(&self.chat_options(chat, options.clone()))
    }

    /// The provider and model for a send.
    pub(super) fn choose(&self, options: &SendOptions) -> Result<ModelChoice, ChatError> {
        let (provider, model) = (options.provider.as_deref(), options.model.as_deref());
        models::choose(self.engine.store(), &self.secrets, provider, model)
    }

    /// The chat's current summary and the complete turns after it, before message `before`
    /// (all of them when `None`).
    pub(super) fn history_before(
        &self,
        chat_id: i64,
        before: Option<i64>,
    ) -> Result<(Option<ChatSummary>, Vec<HistoryTurn>), ChatError> {
        let store = self.engine.store();
        let summary = store.latest_chat_summary(chat_id)?;
        let covered = summary.as_ref().map_or(0, |s| s.up_to_message_id);
        let earlier: Vec<_> = store
            .messages(chat_id)?
            .into_iter()
            .filter(|m| before.is_none_or(|b| m.id < b) && m.id > covered)
            .collect();
        Ok((summary, prompt::history_turns(&earlier)))
    }

    /// How many earlier turns a request carries whole.
    pub(super) fn history_setting(&self) -> Result<usize, ChatError> {
        Ok(self
            .engine
            .store()
            .setting::<usize>(HISTORY_TURNS)?
            .unwrap_or(DEFAULT_HISTORY_TURNS))
    }

    /// Builds the request: model window, system prompt and rules, history, codebase, the
    /// prompt with the editor's selection.
    pub(super) async fn prepare(
        &self,
        project: &Project,
        mode: ChatMode,
        history: &[HistoryTurn],
        summary: Option<&ChatSummary>,
        choice: &ModelChoice,
        asked: &Asked<'_>,
    ) -> Result<(ChatRequest, ContextBreakdown), ChatError> {
        let history: Vec<_> = history
            .iter()
            .map(|t| (t.user.clone(), t.reply.clone()))
            .collect();
        let summary = summary.map(compact::section);
        let profile = models::model_profile(self.engine.store(), choice).await;
        let window = profile.context_length().unwrap_or(FALLBACK_CONTEXT) as usize;
        // The reply's room: the model's output limit when the person set one.
        let reply_reserve = profile
            .settings
            .max_output_tokens
            .map_or_else(|| crate::llm::reply_reserve_for(window), |n| n as usize);
        // A server that counted more tokens than Tandem estimated gets the difference kept free.
        let estimate_scale = profile.estimate_scale();
        let root = project.path.clone();
        let settings = project.settings.clone();
        let text = asked.text.to_string();
        let editor = asked.editor.clone();
        let cache = Arc::clone(&self.cache);
        let indexes = Arc::clone(&self.indexes);
        let whole_files = mode == ChatMode::Build && models::prefers_whole_files(&profile);
        let (messages, breakdown) = tokio::task::spawn_blocking(move || {
            // Rules files are read like any project file: only a regular one (a named pipe
            // there would hang every turn).
            let read = |name: &str| crate::folder::read_project_text(&root, name);
            let rules = read("AI_RULES.md");
            let security = (mode == ChatMode::Security).then(|| read("SECURITY_RULES.md"));
            let last_change = match mode {
                ChatMode::Security => last_change(&root),
                _ => None,
            };
            let mut options = settings.context_options();
            let agent = matches!(mode, ChatMode::Agent | ChatMode::Plan);
            // One walk: its paths are the candidates for mentions, and it is packed below
            // (sizes asked on the walker's threads only for a window that takes nearly all).
            // The history is read meanwhile.
            let (walk, changes, (repo, recent)) = std::thread::scope(|s| {
                let recent = (!agent).then(|| s.spawn(|| repository_and_recent(&root)));
                let walk_options = ContextOptions {
                    budget_tokens: window,
                    ..options.clone()
                };
                // The code index needs every file's stamp (asked on the walker's threads)
                // unless the change journal says which files changed.
                let (walk, changes) = match agent {
                    true => (Walk::new(&root, &walk_options), None),
                    false => {
                        let changes = indexes.changes(&root);
                        (Indexes::walk(&root, &walk_options, &changes), Some(changes))
                    }
                };
                let recent = recent.map(|r| r.join().unwrap_or_default());
                (walk, changes, recent.unwrap_or_default())
            });
            let walk = walk?;
            let candidates: Vec<&str> = walk.paths().collect();
            let focus = editor.resolve(&root, &candidates);
            let excerpt = focus.selection.as_ref().map(|s| s.render());
            // Files named with `@` first, in every mode; then files the prompt names
            // otherwise and the recently edited ones.
            let because = |paths: Vec<String>, why: &'static str| {
                paths.into_iter().map(move |p| Priority::new(p, why))
            };
            let explicit = super::mentions::mentioned_files(&text, &candidates);
            if agent {
                // The agent reads files through its tools: it gets the file list and the
                // files the person put in, and the window stays free for tool results.
                options.budget_tokens = if explicit.is_empty() { 0 } else { usize::MAX };
                options.only_priority = true;
                options.priority = because(explicit, MENTIONED_WHY).collect();
            } else {
                let named = mentioned_paths(&text, &candidates);
                let selected = focus.selection.as_ref();
                let signals = crate::index::Signals {
                    prompt: &text,
                    mentioned: &explicit,
                    named: &named,
                    open: &focus.open,
                    selected: selected.map(|s| s.path.as_str()),
                    selection: selected.map_or("", |s| s.text.as_str()),
                    recent: &recent,
                };
                let changes = changes.unwrap_or_else(Changes::unknown);
                let ranked = rank_files(&indexes, &root, repo.as_ref(), &walk, &changes, &signals);
                // Mentioned files lead even when the index cannot read them (too large).
                options.priority = because(explicit, MENTIONED_WHY).collect();
                options.priority.extend(because(named, NAMED_WHY));
                options.priority.extend(ranked);
                options.priority.extend(editor_files(&focus));
                options.mapper = Some(crate::index::map_of);
            }
            let mut system = prompt::system_prompt(
                mode,
                &prompt::ProjectRules {
                    all_modes: rules.as_deref(),
                    this_mode: settings.mode_rules.get(mode.as_str()).map(String::as_str),
                    security: security.flatten().as_deref(),
                    last_change: last_change.as_ref().map(|(a, b)| (a.as_str(), b.as_str())),
                },
            );
            if let Some(summary) = &summary {
                system.push_str(summary);
            }
            if whole_files {
                system.push_str("\n\n");
                system.push_str(prompt::WHOLE_FILES_PROMPT);
            }
            // The selection follows the prompt, counted with it.
            let sent = match &excerpt {
                Some(excerpt) => format!("{text}{excerpt}"),
                None => text,
            };
            let (messages, mut breakdown) = prompt::assemble(
                PromptInputs {
                    system,
                    history,
                    prompt: &sent,
                    window,
                    reply_reserve,
                    estimate_scale,
                    walk: &walk,
                    context: options,
                },
                &cache,
            )?;
            breakdown.selection =
                (focus.selection.zip(excerpt)).map(|(s, excerpt)| SentSelection {
                    path: s.path,
                    first_line: s.first_line,
                    last_line: s.last_line,
                    tokens: crate::tokens::estimate(&excerpt),
                });
            Ok::<_, PromptError>((messages, breakdown))
        })
        .await
        .map_err(|e| ChatError::Task(e.to_string()))??;
        let request = ChatRequest {
            model: choice.model.clone(),
            messages,
            max_output_tokens: profile.settings.max_output_tokens,
            // Each request (this one, and every agent step after it) is sized from this.
            context_window: Some(u32::try_from(window).unwrap_or(u32::MAX)),
            temperature: profile.settings.temperature,
            tools: Vec::new(),
            reasoning_effort: profile.settings.reasoning_effort,
            estimate_scale,
        };
        Ok((request, breakdown))
    }
}

/// The project's last commit, named (short hash and subject) with its diff, for Security
/// reviews; `None` without commits.
fn last_change(root: &std::path::Path) -> Option<(String, String)> {
    let repo = crate::vcs::open(root).ok()?;
    let head = crate::vcs::head(&repo).ok()??;
    let versions = crate::vcs::log(&repo, 1).ok()?;
    let subject = versions
        .first()
        .map(|v| v.message.lines().next().unwrap_or("").to_string())
        .unwrap_or_default();
    // No more than the prompt takes (a character is at most four bytes): the last commit of
    // a fresh import is the whole project.
    let most = prompt::LAST_CHANGE_MAX_CHARS.saturating_mul(4);
    let patch = crate::vcs::commit_patch_head(&repo, &head, most).ok()?;
    Some((
        format!("commit {} \"{subject}\"", crate::vcs::short(&head)),
        patch,
    ))
}
