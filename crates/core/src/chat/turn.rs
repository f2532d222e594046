//! One turn from start to end: the placeholder reply saved and the turn spawned, then its
//! course — the request ([`super::prepare`]), the reply ([`super::stream`]), the proposal
//! ([`super::review`]) and the check rounds ([`super::checks`]) — and its title.

use std::sync::Arc;

use futures_util::StreamExt;
use serde::Serialize;
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

use super::focus::EditorFocus;
use super::models::{self, FALLBACK_CONTEXT, ModelChoice};
use super::prompt::{self, ContextBreakdown};
use super::repair;
use super::{Active, ChatError, ChatEvent, ChatEventKind, ChatService, SendOptions, TurnHandle};
use crate::edits::EditPlan;
use crate::engine::{ApproveOutcome, TITLE_CHARS, title_from_prompt, truncate};
use crate::llm::{ChatRequest, StreamEvent, Usage};
use crate::store::keys::{AUTO_APPROVE, GENERATE_TITLES, REPAIR_ROUNDS};
use crate::store::{Chat, ChatMode, MessageStatus, NewMessage, Project, Role};

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
    pub(super) replaces: Vec<i64>,
    pub(super) message_id: i64,
    pub(super) cancel: CancellationToken,
    pub(super) auto_approve: bool,
    pub(super) allow_risk: Option<crate::agent::policy::Risk>,
    /// What the person was looking at in the editor when they sent.
    pub(super) editor: EditorFocus,
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
            // A CLI agent reads the project itself: no request is prepared.
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
            // A CLI agent's changes are checked too (nothing goes back to it).
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
                approve_error: outcome.approve_error.clone(),
            },
        );
        outcome
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
