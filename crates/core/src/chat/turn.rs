//! One turn: prepare the request, stream the reply, persist it, plan it, maybe apply it.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use futures_util::StreamExt;
use serde::Serialize;
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

use super::compact;
use super::focus::{EditorFocus, SentSelection};
use super::models::{self, FALLBACK_CONTEXT, ModelChoice};
use super::prompt::{self, ContextBreakdown, HistoryTurn, PromptError, PromptInputs};
use super::ranking::{editor_files, rank_files, recently_edited};
use super::repair;
use super::writer::{Coalescer, DB_FLUSH_INTERVAL, EVENT_INTERVAL, StreamWriter};
use super::{Active, ChatError, ChatEvent, ChatEventKind, ChatService, SendOptions, TurnHandle};
use crate::edits::EditPlan;
use crate::engine::{ApproveOutcome, TITLE_CHARS, title_from_prompt, truncate};
use crate::llm::{ChatRequest, StreamEvent, Usage};
use crate::store::keys::{
    AUTO_APPROVE, CHECK_TIMEOUT_SECS, GENERATE_TITLES, HISTORY_TURNS, REPAIR_ROUNDS, SCRATCH_DIR,
};
use crate::store::{
    Chat, ChatMode, ChatSummary, MessageStatus, NewMessage, NewStep, Project, Role, StepKind,
};
use crate::workspace::context::{ContextOptions, Priority, Walk, mentioned_paths};

/// Why a file `@`-mentioned in the prompt is sent.
const MENTIONED_WHY: &str = "mentioned";
/// Why a file the prompt names without `@` is sent.
const NAMED_WHY: &str = "named in the prompt";

const DEFAULT_HISTORY_TURNS: usize = 10;

/// How a turn ended.
#[derive(Debug, Clone, Serialize)]
pub struct TurnOutcome {
    pub chat_id: i64,
    pub message_id: i64,
    pub status: MessageStatus,
    pub error: Option<String>,
    pub content: String,
    pub usage: Option<Usage>,
    pub breakdown: Option<ContextBreakdown>,
    /// The reply's edit plan (build mode, complete replies).
    pub plan: Option<EditPlan>,
    /// Set when auto-approve applied the proposal.
    pub approval: Option<ApproveOutcome>,
    pub approve_error: Option<String>,
    /// Each run of the project's check on a proposal of this turn (Build mode, when the
    /// project has a check command), first round first.
    pub checks: Vec<crate::checks::CheckRun>,
}

pub(super) struct Turn {
    pub(super) chat: Chat,
    pub(super) project: Project,
    pub(super) choice: ModelChoice,
    pub(super) prompt: String,
    /// Messages before this id are history.
    pub(super) history_before: i64,
    /// A redo's earlier turn: deleted when this reply completes, kept if it does not.
    replaces: Vec<i64>,
    pub(super) message_id: i64,
    pub(super) cancel: CancellationToken,
    auto_approve: bool,
    pub(super) allow_risk: Option<crate::agent::policy::Risk>,
    /// What the person was looking at in the editor when they sent.
    editor: EditorFocus,
}

/// What the person sends: the prompt's text (with its attached files), and the editor's
/// tabs and selection.
struct Asked<'a> {
    text: &'a str,
    editor: &'a EditorFocus,
}

/// What a redo's new turn replaces.
pub(super) struct Redo {
    /// The earlier turn's prompt: the new turn's history ends before it.
    pub(super) prompt_id: i64,
    /// The earlier turn's messages, removed only once the new reply is complete.
    pub(super) replaces: Vec<i64>,
}

impl ChatService {
    /// Saves the placeholder reply and spawns the turn.
    pub(super) async fn start(
        self: &Arc<Self>,
        chat_id: i64,
        prompt: String,
        user_message_id: Option<i64>,
        options: SendOptions,
        redo: Option<Redo>,
    ) -> Result<TurnHandle, ChatError> {
        let store = self.engine.store();
        let chat = store.chat(chat_id)?;
        let project = store.project(chat.project_id)?;
        let choice = self.choose(&self.chat_options(&chat, options.clone()))?;
        store.set_chat_model(chat.id, choice.record.id, &choice.model)?;
        let head = crate::vcs::open(&project.path)
            .ok()
            .and_then(|repo| crate::vcs::head(&repo).ok().flatten());
        let placeholder = store.insert_message(&NewMessage {
            status: MessageStatus::Streaming,
            source_commit_hash: head.as_deref(),
            model: Some(&choice.model),
            ..NewMessage::new(chat.id, Role::Assistant, "")
        })?;
        if chat.title.is_empty() {
            store.rename_chat(chat.id, &title_from_prompt(&prompt))?;
        }
        let auto_approve = match options.auto_approve.or(project.settings.auto_approve) {
            Some(value) => value,
            None => store.setting::<bool>(AUTO_APPROVE)?.unwrap_or(false),
        };
        let cancel = CancellationToken::new();
        let (done_tx, done_rx) = watch::channel(false);
        self.active().insert(
            chat.id,
            Active {
                message_id: placeholder.id,
                cancel: cancel.clone(),
                done: done_rx,
            },
        );
        let (history_before, replaces) = match redo {
            Some(redo) => (redo.prompt_id, redo.replaces),
            None => (user_message_id.unwrap_or(placeholder.id), Vec::new()),
        };
        let turn = Turn {
            history_before,
            replaces,
            message_id: placeholder.id,
            chat,
            project,
            choice,
            prompt,
            cancel,
            auto_approve,
            allow_risk: options.allow_risk,
            editor: options.editor,
        };
        let service = Arc::clone(self);
        let outcome = tokio::spawn(async move {
            let chat_id = turn.chat.id;
            let message_id = turn.message_id;
            let first_reply = turn.chat.title.is_empty();
            let outcome = Arc::clone(&service).run(turn).await;
            {
                let mut active = service.active();
                if active
                    .get(&chat_id)
                    .is_some_and(|a| a.message_id == message_id)
                {
                    active.remove(&chat_id);
                }
            }
            let _ = done_tx.send(true);
            if first_reply && outcome.status == MessageStatus::Complete {
                service.spawn_title(chat_id, message_id);
            }
            outcome
        });
        Ok(TurnHandle {
            chat_id,
            message_id: placeholder.id,
            user_message_id,
            outcome,
        })
    }

    pub(super) fn event(&self, turn: &Turn, kind: ChatEventKind) {
        self.publish(ChatEvent {
            chat_id: turn.chat.id,
            message_id: turn.message_id,
            kind,
        });
    }

    async fn run(self: Arc<Self>, turn: Turn) -> TurnOutcome {
        let mut outcome = TurnOutcome {
            chat_id: turn.chat.id,
            message_id: turn.message_id,
            status: MessageStatus::Error,
            error: None,
            content: String::new(),
            usage: None,
            breakdown: None,
            plan: None,
            approval: None,
            approve_error: None,
            checks: Vec::new(),
        };
        let cli_agent = turn.choice.record.kind.is_cli_agent();
        let request = match cli_agent {
            // An external agent reads the project itself: no request is prepared.
            true => Err(ChatError::Task(String::new())),
            false => tokio::select! {
                prepared = self.prepare_turn(&turn) => prepared,
                _ = turn.cancel.cancelled() => Err(ChatError::Task("cancelled".into())),
            },
        };
        // A Build turn keeps its request: failed edits go back with it (see `repair`).
        let mut sent = None;
        match request {
            _ if cli_agent => {
                self.event(
                    &turn,
                    ChatEventKind::Started {
                        model: turn.choice.model.clone(),
                        breakdown: ContextBreakdown::default(),
                    },
                );
                self.cli_agent(&turn, &mut outcome).await;
                if turn.cancel.is_cancelled() && outcome.status == MessageStatus::Error {
                    outcome.status = MessageStatus::Cancelled;
                }
            }
            Ok((request, breakdown)) => {
                self.event(
                    &turn,
                    ChatEventKind::Started {
                        model: turn.choice.model.clone(),
                        breakdown: breakdown.clone(),
                    },
                );
                outcome.breakdown = Some(breakdown);
                match turn.chat.mode {
                    ChatMode::Agent | ChatMode::Plan => {
                        self.agent(&turn, request, &mut outcome).await
                    }
                    ChatMode::Build | ChatMode::Ask | ChatMode::Security => {
                        if turn.chat.mode == ChatMode::Build {
                            sent = Some(request.clone());
                        }
                        let refused = self.stream(&turn, request, &mut outcome).await;
                        // Refused as longer than the window, with the server's count learnt:
                        // packed again to fit it, and sent once more.
                        if refused
                            && !turn.cancel.is_cancelled()
                            && let Ok((request, breakdown)) = self.prepare_turn(&turn).await
                        {
                            outcome.error = None;
                            outcome.breakdown = Some(breakdown);
                            if turn.chat.mode == ChatMode::Build {
                                sent = Some(request.clone());
                            }
                            self.stream(&turn, request, &mut outcome).await;
                        }
                    }
                }
            }
            // Cancelled while preparing: nothing was sent.
            Err(_) if turn.cancel.is_cancelled() => outcome.status = MessageStatus::Cancelled,
            Err(e) => outcome.error = Some(e.to_string()),
        }
        // A redo's earlier turn goes only now that its replacement exists: a failed or
        // cancelled resend leaves it as it was.
        self.save_reply(&turn, &mut outcome, &turn.replaces);
        let rounds = match sent {
            Some(_) => self
                .engine
                .store()
                .setting::<usize>(REPAIR_ROUNDS)
                .ok()
                .flatten()
                .unwrap_or(repair::DEFAULT_REPAIR_ROUNDS),
            None => 0,
        };
        let mut round = 0;
        loop {
            if outcome.status != MessageStatus::Complete || !turn.chat.mode.proposes_changes() {
                break;
            }
            self.review(&turn, &mut outcome).await;
            self.record_edit_outcome(&turn, &outcome);
            // What goes back to the model, if anything: the edits that failed, else the
            // project's check failing on the proposal.
            let failures = outcome
                .plan
                .as_ref()
                .map(repair::failures)
                .unwrap_or_default();
            let mut feedback = (!failures.is_empty()).then(|| repair::feedback(&failures));
            // An Agent turn's edits were checked inside its loop (see `AgentHost::check`).
            let mut checked = turn.chat.mode != ChatMode::Agent
                || outcome.checks.last().is_none_or(|run| run.passed);
            // An external agent's changes are checked too (nothing goes back to it).
            if failures.is_empty()
                && (sent.is_some() || cli_agent)
                && let Some(plan) = &outcome.plan
                && let Some(run) = self.check(&turn, plan, round + 1).await
            {
                checked = run.passed;
                // A check that ran and failed is the model's to fix; one that could not run
                // at all is not.
                if !run.passed && (run.exit_code.is_some() || run.timed_out) {
                    feedback = Some(crate::checks::feedback(&run));
                }
                outcome.checks.push(run);
            }
            let next = match (&sent, feedback) {
                (Some(request), Some(feedback))
                    if round < rounds && !turn.cancel.is_cancelled() =>
                {
                    repair::follow_up(request, &outcome.content, &feedback)
                }
                _ => None,
            };
            let Some(next) = next else {
                // A proposal whose check failed waits for the person, auto-approve or not.
                if turn.auto_approve && checked {
                    self.approve(&turn, &mut outcome).await;
                }
                break;
            };
            round += 1;
            if !self.start_round(&turn, round, &failures, &mut outcome) {
                break;
            }
            self.stream(&turn, next.clone(), &mut outcome).await;
            sent = Some(next);
            self.save_reply(&turn, &mut outcome, &[]);
        }
        self.event(
            &turn,
            ChatEventKind::Finished {
                status: outcome.status,
                error: outcome.error.clone(),
                usage: outcome.usage,
                proposal: outcome.plan.as_ref().is_some_and(|p| p.is_proposal()),
                commit: outcome.approval.as_ref().and_then(|a| a.commit.clone()),
            },
        );
        outcome
    }

    /// The turn's request. Turns past the history setting, or too many for the window, are
    /// compacted first: summarised (with the chat's current summary folded in), the summary
    /// stored and sent in their place. If summarising fails, they are left out as before and
    /// the breakdown says so.
    async fn prepare_turn(
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
    fn choose(&self, options: &SendOptions) -> Result<ModelChoice, ChatError> {
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
    async fn prepare(
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
            let read = |name: &str| {
                let resolved = crate::workspace::resolve(&root, name).ok()?;
                let (bytes, _) = crate::workspace::read_regular(&resolved.abs).ok()?;
                String::from_utf8(bytes).ok()
            };
            let rules = read("AI_RULES.md");
            let security = (mode == ChatMode::Security).then(|| read("SECURITY_RULES.md"));
            let last_change = match mode {
                ChatMode::Security => last_change(&root),
                _ => None,
            };
            let mut options = ContextOptions {
                include: settings.context_include.clone(),
                exclude: settings.context_exclude.clone(),
                ..ContextOptions::default()
            };
            let agent = matches!(mode, ChatMode::Agent | ChatMode::Plan);
            // One walk: its paths are the candidates for mentions, and it is packed below
            // (sizes asked on the walker's threads only for a window that takes nearly all).
            // The history is read meanwhile.
            let (walk, recent) = std::thread::scope(|s| {
                let recent = (!agent).then(|| s.spawn(|| recently_edited(&root)));
                let walk_options = ContextOptions {
                    budget_tokens: window,
                    ..options.clone()
                };
                // The code index compares every file's stamp: asked on the walker's threads.
                let walk = match agent {
                    true => Walk::new(&root, &walk_options),
                    false => Walk::stamped(&root, &walk_options),
                };
                let recent = recent.map(|r| r.join().unwrap_or_default());
                (walk, recent.unwrap_or_default())
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
                let ranked = rank_files(&indexes, &root, &walk, &signals);
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

    /// Streams the reply into `outcome`, persisting and publishing as it goes.
    ///
    /// Returns whether the server refused the request as too long before any reply, with a
    /// count of its prompt that teaches a larger scale than the request was packed with (so
    /// packing it again fits better).
    async fn stream(&self, turn: &Turn, request: ChatRequest, outcome: &mut TurnOutcome) -> bool {
        let mut refused = false;
        let store = self.engine.store();
        let mut writer = StreamWriter::new(store, turn.message_id, DB_FLUSH_INTERVAL);
        let mut deltas = Coalescer::new(EVENT_INTERVAL);
        let warns = turn.choice.record.kind.request_sets_window();
        let mut stream = turn.choice.provider.stream(request.clone());
        let mut thinking = false;
        let content = &mut outcome.content;
        outcome.status = loop {
            let due = deltas.due_at();
            let next = tokio::select! {
                biased;
                _ = turn.cancel.cancelled() => break MessageStatus::Cancelled,
                _ = sleep_until(due), if due.is_some() => None,
                next = stream.next() => Some(next),
            };
            match next {
                None => {}
                Some(Some(Ok(StreamEvent::Text(text)))) => {
                    if std::mem::take(&mut thinking) {
                        content.push_str("</think>\n");
                    }
                    content.push_str(&text);
                    deltas.text.push_str(&text);
                }
                Some(Some(Ok(StreamEvent::Reasoning(text)))) => {
                    if !std::mem::replace(&mut thinking, true) {
                        content.push_str("<think>");
                    }
                    content.push_str(&text);
                    deltas.reasoning.push_str(&text);
                }
                Some(Some(Ok(StreamEvent::Usage(usage)))) => {
                    self.learn_prompt_count(turn, &request, &usage);
                    outcome.usage = Some(usage);
                }
                Some(Some(Ok(StreamEvent::ToolCall(_)))) => {}
                Some(Some(Ok(StreamEvent::Done { .. }))) | Some(None) => {
                    break MessageStatus::Complete;
                }
                Some(Some(Err(e))) => {
                    if let crate::llm::LlmError::TooLong {
                        counted: Some(counted),
                        ..
                    } = &e
                        && content.is_empty()
                    {
                        let usage = crate::llm::Usage {
                            input_tokens: *counted,
                            output_tokens: 0,
                        };
                        refused = self.learn_prompt_count(turn, &request, &usage);
                    }
                    let mut error = e.to_string();
                    if matches!(e, crate::llm::LlmError::Disconnected { .. }) && content.is_empty()
                    {
                        error.push_str(&full_window_hint(&request));
                    }
                    outcome.error = Some(error);
                    break MessageStatus::Error;
                }
            }
            if let Err(e) = writer.update(content) {
                outcome.error = Some(format!("the reply could not be saved: {e}"));
                break MessageStatus::Error;
            }
            if let Some((text, reasoning)) = deltas.take(false) {
                self.event(turn, ChatEventKind::Delta { text, reasoning });
            }
        };
        // Dropping the stream aborts the HTTP request.
        drop(stream);
        if thinking {
            content.push_str("</think>\n");
        }
        if warns
            && let Some(usage) = &outcome.usage
            && let Some(warning) = request.truncation_warning(usage)
        {
            let note = format!("\n\n> **Context overflow:** {warning}\n");
            content.push_str(&note);
            deltas.text.push_str(&note);
        }
        if let Some((text, reasoning)) = deltas.take(true) {
            self.event(turn, ChatEventKind::Delta { text, reasoning });
        }
        refused
    }

    /// Saves the reply's final text and status (deleting the turns in `replaced` once it is
    /// complete) and records its usage.
    fn save_reply(&self, turn: &Turn, outcome: &mut TurnOutcome, replaced: &[i64]) {
        let store = self.engine.store();
        let replaced = match outcome.status {
            MessageStatus::Complete => replaced,
            _ => &[],
        };
        if let Err(e) = store.finish_message_replacing(
            turn.message_id,
            &outcome.content,
            outcome.status,
            outcome.error.as_deref(),
            replaced,
        ) {
            outcome.status = MessageStatus::Error;
            outcome.error = Some(format!("the reply could not be saved: {e}"));
        }
        if let Some(usage) = outcome.usage {
            let _ = store.record_usage(
                turn.message_id,
                &turn.choice.record.name,
                &turn.choice.model,
                i64::try_from(usage.input_tokens).unwrap_or(i64::MAX),
                i64::try_from(usage.output_tokens).unwrap_or(i64::MAX),
            );
        }
    }

    /// Keeps how the model's server counted this request's prompt against Tandem's estimate
    /// (see [`crate::store::Store::record_prompt_count`]): the next requests keep the
    /// difference free. Returns whether that raised the scale this request was packed with.
    pub(super) fn learn_prompt_count(
        &self,
        turn: &Turn,
        request: &ChatRequest,
        usage: &crate::llm::Usage,
    ) -> bool {
        let estimated = u64::try_from(request.estimated_tokens()).unwrap_or(u64::MAX);
        let store = self.engine.store();
        let (provider, model) = (turn.choice.record.id, &turn.choice.model);
        let _ = store.record_prompt_count(provider, model, estimated, usage.input_tokens);
        store
            .model_profile(provider, model)
            .ok()
            .flatten()
            .is_some_and(|p| p.estimate_scale() > request.estimate_scale)
    }

    /// Plans a complete reply (recording its proposal for review).
    async fn review(&self, turn: &Turn, outcome: &mut TurnOutcome) {
        let engine = Arc::clone(&self.engine);
        let project = turn.project.clone();
        let id = turn.message_id;
        let result = tokio::task::spawn_blocking(move || {
            let message = engine.store().message(id)?;
            engine.record_plan(&project, &message)
        })
        .await;
        match result {
            Ok(Ok(plan)) => outcome.plan = Some(plan),
            Ok(Err(e)) => outcome.approve_error = Some(e.to_string()),
            Err(e) => outcome.approve_error = Some(e.to_string()),
        }
    }

    /// Adds this reply's search-replace record to its model's profile (how many tags it
    /// wrote and how many failed), which decides whether it is asked for whole files.
    fn record_edit_outcome(&self, turn: &Turn, outcome: &TurnOutcome) {
        let Some(plan) = &outcome.plan else { return };
        let blocks = plan
            .operations
            .iter()
            .filter(|op| op.op == crate::edits::OpKind::SearchReplace);
        let (written, failed) = blocks.fold((0u32, 0u32), |(n, f), op| {
            (
                n + 1,
                f + u32::from(op.status == crate::edits::OpStatus::Error),
            )
        });
        if written > 0 {
            let _ = self.engine.store().record_edit_blocks(
                turn.choice.record.id,
                &turn.choice.model,
                written,
                failed,
            );
        }
    }

    /// Auto-approve: applies the reviewed proposal at once.
    async fn approve(&self, turn: &Turn, outcome: &mut TurnOutcome) {
        if !outcome.plan.as_ref().is_some_and(|p| p.is_proposal()) {
            return;
        }
        let engine = Arc::clone(&self.engine);
        let id = turn.message_id;
        match tokio::task::spawn_blocking(move || engine.approve(id, None)).await {
            Ok(Ok(approved)) => outcome.approval = Some(approved),
            Ok(Err(e)) => outcome.approve_error = Some(e.to_string()),
            Err(e) => outcome.approve_error = Some(e.to_string()),
        }
    }

    /// Runs the project's check on the turn's proposal in a scratch copy, recording it as a
    /// step. `None` when there is nothing to check (no check command, no proposal, a conflict)
    /// or the turn was cancelled. A check that cannot run at all is a failed run whose output
    /// says why (it is not the model's to fix).
    pub(super) async fn check(
        &self,
        turn: &Turn,
        plan: &EditPlan,
        round: usize,
    ) -> Option<crate::checks::CheckRun> {
        if !plan.is_proposal() || plan.conflicts().next().is_some() {
            return None;
        }
        let settings = self.check_settings(turn)?;
        let result = crate::checks::check_plan(
            &turn.project.path,
            plan,
            &settings,
            round,
            turn.cancel.child_token(),
        )
        .await;
        self.record_check(turn, &settings, round, result)
    }

    /// Runs the project's check in the chat's workspace (the agent's edits and what its
    /// commands changed are there), recording it as a step.
    pub(super) async fn check_workspace(
        &self,
        turn: &Turn,
        workspace: &crate::layer::Workspace,
        round: usize,
    ) -> Option<crate::checks::CheckRun> {
        let settings = self.check_settings(turn)?;
        let result =
            crate::checks::check_workspace(workspace, &settings, round, turn.cancel.child_token())
                .await;
        self.record_check(turn, &settings, round, result)
    }

    /// How the project's check runs; `None` when it has none.
    fn check_settings(&self, turn: &Turn) -> Option<crate::checks::CheckSettings> {
        let command = turn.project.settings.check_command.clone()?;
        if command.trim().is_empty() {
            return None;
        }
        let store = self.engine.store();
        Some(crate::checks::CheckSettings {
            command,
            timeout: store
                .setting::<u64>(CHECK_TIMEOUT_SECS)
                .ok()
                .flatten()
                .map_or(crate::checks::DEFAULT_CHECK_TIMEOUT, Duration::from_secs),
            sandbox: self.sandbox_settings(),
            scratch_base: store.setting::<PathBuf>(SCRATCH_DIR).ok().flatten(),
        })
    }

    /// Records a check's run as a step (one that could not run at all as a failed run whose
    /// output says why); `None` when the turn was cancelled.
    fn record_check(
        &self,
        turn: &Turn,
        settings: &crate::checks::CheckSettings,
        round: usize,
        result: Result<crate::checks::CheckRun, crate::checks::CheckError>,
    ) -> Option<crate::checks::CheckRun> {
        if turn.cancel.is_cancelled() {
            return None;
        }
        let store = self.engine.store();
        let run = result.unwrap_or_else(|e| crate::checks::CheckRun {
            round,
            command: settings.command.clone(),
            passed: false,
            exit_code: None,
            timed_out: false,
            output: e.to_string(),
            problems: Vec::new(),
            duration_ms: 0,
        });
        let arguments = serde_json::json!({
            "round": run.round,
            "command": run.command,
            "passed": run.passed,
            "timed_out": run.timed_out,
            "problems": run.problems,
        });
        let step = NewStep {
            arguments: Some(&arguments),
            result: Some(&run.output),
            exit_code: run.exit_code.map(i64::from),
            is_error: !run.passed,
            duration_ms: i64::try_from(run.duration_ms).ok(),
            ..NewStep::default()
        };
        if let Ok(step) = store.add_agent_step(turn.message_id, StepKind::Check, &step) {
            self.event(turn, ChatEventKind::Step { step });
        }
        Some(run)
    }

    /// Keeps the failed reply as a step and starts the reply over for repair round `round`.
    /// `false` when that could not be saved (the failed reply then stays the proposal).
    fn start_round(
        &self,
        turn: &Turn,
        round: usize,
        failures: &[repair::Failure],
        outcome: &mut TurnOutcome,
    ) -> bool {
        let store = self.engine.store();
        let arguments = serde_json::json!({ "round": round, "errors": failures });
        let step = NewStep {
            arguments: Some(&arguments),
            result: Some(&outcome.content),
            is_error: true,
            ..NewStep::default()
        };
        let recorded = store
            .add_agent_step(turn.message_id, StepKind::Repair, &step)
            .and_then(|step| {
                store.restart_reply(turn.message_id)?;
                Ok(step)
            });
        match recorded {
            Ok(step) => {
                self.event(turn, ChatEventKind::Step { step });
                self.event(turn, ChatEventKind::Retrying { round });
                outcome.content.clear();
                outcome.plan = None;
                outcome.error = None;
                true
            }
            Err(e) => {
                outcome.approve_error = Some(format!("the failed edits could not be retried: {e}"));
                false
            }
        }
    }

    /// Asks the model for a short title in the background; the prompt's first words stay
    /// if that fails.
    fn spawn_title(self: &Arc<Self>, chat_id: i64, message_id: i64) {
        let service = Arc::clone(self);
        tokio::spawn(async move {
            let store = service.engine.store();
            if store.setting::<bool>(GENERATE_TITLES).ok().flatten() == Some(false) {
                return;
            }
            let Ok(message) = store.message(message_id) else {
                return;
            };
            let Some(prompt) = store
                .messages(chat_id)
                .ok()
                .and_then(|m| m.into_iter().find(|m| m.role == Role::User))
            else {
                return;
            };
            let Ok(choice) =
                models::choose(store, &service.secrets, None, message.model.as_deref())
            else {
                return;
            };
            let window = models::model_profile(store, &choice).await.context_length();
            let title = tokio::time::timeout(
                std::time::Duration::from_secs(20),
                generate_title(&choice, window, &prompt.content),
            )
            .await;
            if let Ok(Some(title)) = title
                && store.rename_chat(chat_id, &title).is_ok()
            {
                service.publish(ChatEvent {
                    chat_id,
                    message_id,
                    kind: ChatEventKind::TitleChanged { title },
                });
            }
        });
    }
}

async fn generate_title(choice: &ModelChoice, window: Option<u32>, prompt: &str) -> Option<String> {
    use crate::llm::{ChatMessage, ChatRole};
    let request = ChatRequest {
        model: choice.model.clone(),
        messages: vec![
            ChatMessage::new(ChatRole::System, prompt::TITLE_PROMPT),
            ChatMessage::new(
                ChatRole::User,
                prompt.chars().take(2000).collect::<String>(),
            ),
        ],
        max_output_tokens: Some(40),
        // Sized like every request (Ollama's default context is smaller than some prompts).
        context_window: window.or(Some(FALLBACK_CONTEXT)),
        temperature: Some(0.2),
        tools: Vec::new(),
        reasoning_effort: None,
        estimate_scale: 1.0,
    };
    let mut stream = choice.provider.stream(request);
    let mut text = String::new();
    while let Some(event) = stream.next().await {
        match event.ok()? {
            StreamEvent::Text(t) => text.push_str(&t),
            StreamEvent::Done { .. } => break,
            _ => {}
        }
    }
    let title = prompt::strip_for_history(&text);
    let line = title.lines().map(str::trim).find(|l| !l.is_empty())?;
    let line = line.trim_matches(|c: char| c == '"' || c == '\'' || c == '.' || c == '#');
    (!line.is_empty()).then(|| truncate(line.trim(), TITLE_CHARS))
}

/// Why a reply may have broken off before its first word when the request filled the model's
/// window: some servers (llama-cpp-python) fail a prompt longer than their context after
/// answering 200, and say why only in their log.
fn full_window_hint(request: &ChatRequest) -> String {
    let Some(window) = request.context_window.map(|w| w as usize) else {
        return String::new();
    };
    let used = request.counted_tokens() + request.reply_reserve();
    match used * 10 >= window * 9 {
        true => format!(
            ". The request filled the model's window ({used} of {window} tokens with the \
             reply's room, as Tandem estimates them): if the server's log says the prompt is \
             longer than its context, its tokenizer counts more than Tandem's estimate; set a \
             smaller window for this model (`tandem model set --context`, or Settings)"
        ),
        false => String::new(),
    }
}

pub(super) async fn sleep_until(at: Option<std::time::Instant>) {
    if let Some(at) = at {
        tokio::time::sleep_until(tokio::time::Instant::from_std(at)).await;
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
