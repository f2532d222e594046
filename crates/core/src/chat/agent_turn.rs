//! Agent and Plan turns: the chat service as the agent loop's [`Host`]. Each model reply
//! streams like a Build reply (native-mode prose is shown live; text-protocol directives are
//! not prose and only their steps are shown), every step is stored and published, and calls
//! the policy asks about wait for [`ChatService::answer`].

use std::collections::HashMap;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use futures_util::StreamExt;
use futures_util::future::BoxFuture;
use serde::Serialize;
use tokio::sync::oneshot;

use super::stream::sleep_until;
use super::turn::{Turn, TurnOutcome};
use super::writer::{Coalescer, DB_FLUSH_INTERVAL, EVENT_INTERVAL, StreamWriter};
use super::{ChatEventKind, ChatService};
use crate::agent::policy::{PolicySettings, Risk, Trust};
use crate::agent::runner::{
    self, AgentConfig, Answer, DEFAULT_MAX_STEPS, Host, LoopEnd, ModelReply, Pending, StepRecord,
};
use crate::agent::tools::AgentMode;
use crate::checks::CheckRun;
use crate::edits::Action;
use crate::llm::{ChatMessage, ChatRequest, StreamEvent, ToolSpec, Usage};
use crate::store::keys::{
    AGENT_POLICY, MAX_STEPS, REPAIR_ROUNDS, SHELL_TIMEOUT_SECS, TOOL_CALLING,
};
use crate::store::{ChatMode, MessageStatus};

/// A call waiting for the person, as subscribers see it.
#[derive(Debug, Clone, Serialize)]
pub struct PendingPermission {
    pub id: u64,
    pub chat_id: i64,
    pub message_id: i64,
    pub tool: String,
    pub arguments: serde_json::Value,
    pub risk: Risk,
    pub reason: String,
    /// Why this risk, one line per part of a command.
    pub reasons: Vec<String>,
    /// The pattern "Always allow" would add.
    pub always_pattern: String,
}

/// The approvals waiting for an answer.
#[derive(Default)]
pub(super) struct Permissions {
    next: AtomicU64,
    waiting: Mutex<HashMap<u64, (PendingPermission, oneshot::Sender<Answer>)>>,
}

impl Permissions {
    fn waiting(
        &self,
    ) -> std::sync::MutexGuard<'_, HashMap<u64, (PendingPermission, oneshot::Sender<Answer>)>> {
        self.waiting.lock().unwrap_or_else(|p| p.into_inner())
    }
}

impl ChatService {
    /// Answers a pending approval. False when it is no longer waiting.
    pub fn answer(&self, approval_id: u64, answer: Answer) -> bool {
        match self.approvals.waiting().remove(&approval_id) {
            Some((_, reply)) => reply.send(answer).is_ok(),
            None => false,
        }
    }

    /// The approvals waiting now (for a subscriber that arrives late).
    pub fn pending_approvals(&self) -> Vec<PendingPermission> {
        let mut all: Vec<_> = self
            .approvals
            .waiting()
            .values()
            .map(|(p, _)| p.clone())
            .collect();
        all.sort_by_key(|p| p.id);
        all
    }

    /// The sandbox settings of agent commands: the engine's, with the secrets file (which may
    /// live outside the data directory) hidden too.
    pub fn sandbox_settings(&self) -> crate::sandbox::Settings {
        let mut settings = self.engine.sandbox_settings();
        settings.hidden.push(self.secrets.file().to_path_buf());
        settings
    }

    /// Runs an Agent or Plan turn from its prepared first request.
    pub(super) async fn agent(&self, turn: &Turn, request: ChatRequest, outcome: &mut TurnOutcome) {
        let store = self.engine.store();
        let policy = store
            .setting::<PolicySettings>(AGENT_POLICY)
            .ok()
            .flatten()
            .unwrap_or_default();
        let mut profile = super::models::model_profile(store, &turn.choice).await;
        let tool_calling = store.setting::<String>(TOOL_CALLING).ok().flatten();
        // First Agent turn with this model and nothing forced: the check-up finds out whether
        // native tool calls really come back (servers often claim less, or more).
        if tool_calling.as_deref().is_none_or(|t| t == "auto")
            && profile.checked_at.is_none()
            && !turn.choice.record.kind.tools_always_native()
        {
            let probe = tokio::select! {
                probe = super::checkup::probe_tools(&turn.choice) => Some(probe),
                _ = turn.cancel.cancelled() => None,
            };
            if let Some(probe) = probe {
                let _ = store.save_checkup(turn.choice.record.id, &profile.info, probe);
                profile.tools_probe = probe;
            }
        }
        let native_tools =
            super::models::native_tools(tool_calling.as_deref(), &profile, turn.choice.record.kind);
        let shell_timeout = store
            .setting::<u64>(SHELL_TIMEOUT_SECS)
            .ok()
            .flatten()
            .map_or(crate::process::DEFAULT_TIMEOUT, Duration::from_secs);
        let mut notes = String::new();
        // Fails closed: an Agent turn whose workspace cannot be opened does not start, as its
        // commands would change the person's project directly.
        let workspace = match (self.open_workspace(turn).await, turn.chat.mode) {
            (Ok(workspace), _) => workspace,
            (Err(why), ChatMode::Plan) => {
                notes.push_str(&format!("> {why}: this turn reads the project itself.\n\n"));
                None
            }
            (Err(why), _) => {
                outcome.error = Some(format!("{why}. The turn did not start."));
                return;
            }
        };
        let config = AgentConfig {
            workspace: workspace.clone(),
            indexes: runner::CodeIndexes {
                indexes: std::sync::Arc::clone(&self.indexes),
                files: turn.project.settings.context_options(),
            },
            root: turn.project.path.clone(),
            mode: match turn.chat.mode {
                ChatMode::Plan => AgentMode::Plan,
                _ => AgentMode::Agent,
            },
            native_tools,
            trust: turn.project.settings.agent_trust.unwrap_or(Trust::Scoped),
            policy: runner::with_allow_risk(policy, turn.allow_risk),
            max_steps: store
                .setting::<usize>(MAX_STEPS)
                .ok()
                .flatten()
                .unwrap_or(DEFAULT_MAX_STEPS),
            shell_timeout,
            sandbox: self.sandbox_settings(),
            request_budget: request
                .context_window
                .map(|window| (window as usize).saturating_sub(request.reply_reserve()))
                // The budget is in estimated tokens: what the server counts more is kept free.
                .map(|room| crate::llm::fitting(room, request.estimate_scale)),
            check_rounds: store
                .setting::<usize>(REPAIR_ROUNDS)
                .ok()
                .flatten()
                .unwrap_or(super::repair::DEFAULT_REPAIR_ROUNDS),
        };
        // The chat's stdio servers run in its workspace, in the agent's container, for this
        // turn; the project's remote servers keep running across turns.
        let hub = match (config.mode, &workspace, store.mcp_servers()) {
            (AgentMode::Agent, Some(tracker), Ok(servers)) => {
                let world = crate::agent::mcp::World::workspace(tracker, config.sandbox.clone());
                let (project, chat) = (turn.project.id, turn.chat.id);
                let (hub, errors) = self.mcp.hub(project, chat, &world, &servers).await;
                for error in errors {
                    notes.push_str(&format!("> MCP: {error}\n\n"));
                }
                Some(hub)
            }
            _ => None,
        };
        let host = AgentHost {
            service: self,
            turn,
            base: ChatRequest {
                messages: Vec::new(),
                tools: Vec::new(),
                ..request.clone()
            },
            stream: Mutex::new(Streamed {
                content: notes,
                writer: StreamWriter::new(store, turn.message_id, DB_FLUSH_INTERVAL),
                usage: None,
            }),
            checks: Mutex::new(Vec::new()),
            workspace: workspace.clone(),
        };
        let result =
            runner::run(&host, &config, request.messages, hub.as_ref(), &turn.cancel).await;
        // Its stdio servers stop before its workspace closes: none outlives the view it
        // writes into. What they changed since their last call is this turn's proposal's.
        if let Some(hub) = &hub {
            let servers = hub.runs_servers();
            self.mcp.close_chat(turn.chat.id).await;
            if let (true, Some(tracker)) = (servers, &workspace) {
                let after = crate::agent::changed_since_last_look(tracker).await;
                self.carry(turn, &after.unwrap_or_default(), runner::BETWEEN_CALLS);
            }
        }
        outcome.checks = host.checks.into_inner().unwrap_or_else(|p| p.into_inner());
        let streamed = host.stream.into_inner().unwrap_or_else(|p| p.into_inner());
        outcome.content = streamed.content;
        outcome.usage = streamed.usage;
        let mut append = |text: &str| {
            if !outcome.content.is_empty() && !text.is_empty() {
                outcome.content.push_str("\n\n");
            }
            outcome.content.push_str(text);
        };
        outcome.status = match result.end {
            LoopEnd::Final(text) => {
                // Native prose was streamed already; a text-protocol answer was not.
                if !native_tools {
                    append(&text);
                }
                MessageStatus::Complete
            }
            LoopEnd::StepLimit(note) => {
                append(&format!("_{note}_"));
                MessageStatus::Complete
            }
            LoopEnd::Cancelled => MessageStatus::Cancelled,
            LoopEnd::Failed(error) => {
                outcome.error = Some(error);
                MessageStatus::Error
            }
        };
    }
}

struct Streamed<'a> {
    content: String,
    writer: StreamWriter<'a>,
    usage: Option<Usage>,
}

struct AgentHost<'a> {
    service: &'a ChatService,
    turn: &'a Turn,
    /// Model, window and limits for every request of the turn.
    base: ChatRequest,
    stream: Mutex<Streamed<'a>>,
    /// The checks run on the turn's edits, in order.
    checks: Mutex<Vec<CheckRun>>,
    /// The chat's workspace, when the agent works in one: the check runs there.
    workspace: Option<std::sync::Arc<crate::layer::Tracker>>,
}

impl<'s> AgentHost<'s> {
    /// Keeps a check's run; the report to send back when the model can fix what failed (a
    /// check that could not run at all is not its to fix).
    fn checked(&self, run: CheckRun) -> Option<String> {
        let fixable = !run.passed && (run.exit_code.is_some() || run.timed_out);
        let report = fixable.then(|| crate::checks::report(&run));
        self.checks
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(run);
        report
    }

    fn streamed(&self) -> std::sync::MutexGuard<'_, Streamed<'s>> {
        self.stream.lock().unwrap_or_else(|p| p.into_inner())
    }

    async fn stream_reply(
        &self,
        messages: &[ChatMessage],
        tools: &[ToolSpec],
        visible: bool,
    ) -> Result<ModelReply, String> {
        let request = ChatRequest {
            messages: messages.to_vec(),
            tools: tools.to_vec(),
            ..self.base.clone()
        };
        let warns = self.turn.choice.record.kind.request_sets_window();
        let mut stream = self.turn.choice.provider.stream(request.clone());
        let mut reply = ModelReply::default();
        let mut deltas = Coalescer::new(EVENT_INTERVAL);
        let mut separated = false;
        loop {
            let due = deltas.due_at();
            let next = tokio::select! {
                _ = sleep_until(due), if due.is_some() => None,
                next = stream.next() => Some(next),
            };
            match next {
                None => {}
                Some(Some(Ok(StreamEvent::Text(text)))) => {
                    reply.text.push_str(&text);
                    if visible {
                        let mut s = self.streamed();
                        if !separated && !s.content.is_empty() {
                            s.content.push_str("\n\n");
                            deltas.text.push_str("\n\n");
                        }
                        separated = true;
                        s.content.push_str(&text);
                        deltas.text.push_str(&text);
                    }
                }
                Some(Some(Ok(StreamEvent::Reasoning(text)))) => deltas.reasoning.push_str(&text),
                Some(Some(Ok(StreamEvent::ToolCall(call)))) => reply.calls.push(call),
                Some(Some(Ok(StreamEvent::Usage(usage)))) => {
                    self.service
                        .learn_prompt_count(self.turn, &request, usage.input_tokens);
                    let mut s = self.streamed();
                    if warns && let Some(warning) = request.truncation_warning(&usage) {
                        let note = format!("\n\n> **Context overflow:** {warning}\n");
                        s.content.push_str(&note);
                        deltas.text.push_str(&note);
                    }
                    let total = s.usage.get_or_insert_with(Usage::default);
                    total.input_tokens += usage.input_tokens;
                    total.output_tokens += usage.output_tokens;
                }
                Some(Some(Ok(StreamEvent::Done { .. }))) | Some(None) => break,
                Some(Some(Err(e))) => {
                    // Refused as longer than the window, with the server's count: learnt, so
                    // the next turn is packed and trimmed to fit it (this one ends here).
                    if let Some(counted) = e.counted_prompt()
                        && self
                            .service
                            .learn_prompt_count(self.turn, &request, counted)
                    {
                        return Err(format!(
                            "{e}. Tandem now keeps room for how this model counts tokens: \
                             send again to go on"
                        ));
                    }
                    return Err(e.to_string());
                }
            }
            {
                let mut guard = self.streamed();
                let s = &mut *guard;
                if let Err(e) = s.writer.update(&s.content) {
                    return Err(format!("the reply could not be saved: {e}"));
                }
            }
            if let Some((text, reasoning)) = deltas.take(false) {
                self.service
                    .event(self.turn, ChatEventKind::Delta { text, reasoning });
            }
        }
        if let Some((text, reasoning)) = deltas.take(true) {
            self.service
                .event(self.turn, ChatEventKind::Delta { text, reasoning });
        }
        Ok(reply)
    }
}

struct Settled<'a, 'b> {
    host: &'a AgentHost<'b>,
    id: u64,
}

impl Drop for Settled<'_, '_> {
    fn drop(&mut self) {
        self.host.service.approvals.waiting().remove(&self.id);
        let id = self.id;
        self.host
            .service
            .event(self.host.turn, ChatEventKind::ApprovalSettled { id });
    }
}

impl Host for AgentHost<'_> {
    fn complete<'a>(
        &'a self,
        messages: &'a [ChatMessage],
        tools: &'a [ToolSpec],
        visible: bool,
    ) -> BoxFuture<'a, Result<ModelReply, String>> {
        Box::pin(self.stream_reply(messages, tools, visible))
    }

    fn ask<'a>(&'a self, pending: &'a Pending) -> BoxFuture<'a, Answer> {
        Box::pin(async move {
            let approvals = &self.service.approvals;
            let id = approvals.next.fetch_add(1, Ordering::Relaxed) + 1;
            let approval = PendingPermission {
                id,
                chat_id: self.turn.chat.id,
                message_id: self.turn.message_id,
                tool: pending.tool.clone(),
                arguments: pending.arguments.clone(),
                risk: pending.assessment.risk,
                reason: pending.assessment.decision.reason().to_string(),
                reasons: pending.assessment.reasons.clone(),
                always_pattern: runner::always_pattern(&pending.tool, &pending.arguments),
            };
            let (reply, answer) = oneshot::channel();
            approvals.waiting().insert(id, (approval.clone(), reply));
            self.service
                .event(self.turn, ChatEventKind::Approval { approval });
            // Removes the entry and tells subscribers however the wait ends: answered, or
            // dropped because the turn was cancelled.
            let _settled = Settled { host: self, id };
            // A dropped sender (the service went away) counts as a rejection.
            answer.await.unwrap_or(Answer::Reject)
        })
    }

    fn record(&self, record: StepRecord<'_>) {
        let store = self.service.engine.store();
        match store.add_agent_step(self.turn.message_id, record.kind, &record.step) {
            Ok(step) => self.service.event(self.turn, ChatEventKind::Step { step }),
            Err(e) => {
                let mut s = self.streamed();
                s.content
                    .push_str(&format!("\n\n> A step could not be saved: {e}\n\n"));
            }
        }
    }

    fn always_allow(&self, pattern: &str) {
        let store = self.service.engine.store();
        let mut policy = store
            .setting::<PolicySettings>(AGENT_POLICY)
            .ok()
            .flatten()
            .unwrap_or_default();
        if !policy.allow.iter().any(|p| p == pattern) {
            policy.allow.push(pattern.to_string());
            let _ = store.set_setting(AGENT_POLICY, &policy);
        }
    }

    fn check<'a>(&'a self, edits: &'a [Action], round: usize) -> BoxFuture<'a, Option<String>> {
        Box::pin(async move {
            if let Some(tracker) = &self.workspace {
                let run = self
                    .service
                    .check_workspace(self.turn, tracker.workspace(), round)
                    .await?;
                return self.checked(run);
            }
            let root = self.turn.project.path.clone();
            let actions = edits.to_vec();
            let plan = tokio::task::spawn_blocking(move || {
                crate::edits::plan::plan_actions(&root, actions.into_iter().map(Ok))
            })
            .await;
            let plan = match plan {
                Ok(Ok(plan)) => plan,
                // Each edit was checked when it was made: a plan that cannot be built now
                // (the project folder went away) shows up when the proposal is reviewed.
                _ => return None,
            };
            let run = self.service.check(self.turn, &plan, round).await?;
            self.checked(run)
        })
    }
}
