//! The agent loop: the model works in steps until it answers without calling a tool (native
//! tool calling) or sends `FINAL` (the text protocol for models without it).
//!
//! The loop knows nothing of the chat service, the GUI or the terminal: a [`Host`] streams
//! each model reply, records each step, and asks the person when the policy says to ask.
//! Every call is judged by [`policy::assess`] (the model's own words about safety never
//! count), then runs through [`super::dispatch`].

use std::path::PathBuf;
use std::time::Duration;

use futures_util::future::BoxFuture;
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use super::fit::{self, ResultEntry};
use super::mcp::McpHub;
use super::policy::{self, Assessment, PolicySettings, Risk, Trust};
use super::protocol::{self, Directive, ProtocolState};
use super::tools::{AgentMode, builtin_specs};
use crate::edits::Action;
use crate::llm::{ChatMessage, ChatRole, ToolCall, ToolSpec};
use crate::sandbox;
use crate::store::{NewStep, StepDecision, StepKind};

mod call;

use call::normalize_arguments;

/// The label of what the chat's stdio servers changed while no call of theirs ran (as they
/// started, in the background, after their last call).
pub const BETWEEN_CALLS: &str = "changed by the chat's MCP servers outside their calls";

/// The most tool steps in one turn unless the setting (`store::keys::MAX_STEPS`) says.
pub const DEFAULT_MAX_STEPS: usize = 25;
/// The longest plan the text protocol accepts.
pub const MAX_PLAN_STEPS: usize = 12;
/// Protocol violations in a row before the turn gives up.
pub const MAX_CORRECTIONS: usize = 3;

/// What the loop needs to know about this turn.
#[derive(Debug, Clone)]
pub struct AgentConfig {
    pub root: PathBuf,
    pub mode: AgentMode,
    /// The model takes `tools` natively; otherwise the text protocol is used.
    pub native_tools: bool,
    pub trust: Trust,
    pub policy: PolicySettings,
    pub max_steps: usize,
    pub shell_timeout: Duration,
    /// What confined commands may also read, and must never read.
    pub sandbox: sandbox::Settings,
    /// Tokens each request may take (the model's window less the reply's room); earlier
    /// tool results are elided to stay within it. `None`: unknown, nothing is trimmed.
    pub request_budget: Option<usize>,
    /// How many times a failing check on the edits goes back to the model before the turn
    /// ends anyway (the check itself runs once more, on the last fix).
    pub check_rounds: usize,
    /// The chat's workspace, when the agent works in one (see [`crate::layer`]).
    pub workspace: Option<std::sync::Arc<crate::layer::Tracker>>,
    /// The code indexes the symbol tools ask (the chat service's).
    pub indexes: CodeIndexes,
}

pub use super::tools::CodeIndexes;

/// One model reply: its text and the tool calls it made natively.
#[derive(Debug, Clone, Default)]
pub struct ModelReply {
    pub text: String,
    pub calls: Vec<ToolCall>,
}

/// The person's answer to an approval question.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Answer {
    Approve,
    Reject,
    /// Approve, and add an allow pattern for calls like this one.
    AlwaysAllow,
}

/// A call waiting for the person.
#[derive(Debug, Clone)]
pub struct Pending {
    pub tool: String,
    pub arguments: Value,
    pub assessment: Assessment,
}

/// A recorded step as the host receives it.
pub struct StepRecord<'a> {
    pub kind: StepKind,
    pub step: NewStep<'a>,
}

/// Where the loop meets the world.
pub trait Host: Send + Sync {
    /// Streams one reply to `messages`, offering `tools` natively (none for the text protocol).
    /// `visible`: its text is part of what the person reads (native mode prose).
    fn complete<'a>(
        &'a self,
        messages: &'a [ChatMessage],
        tools: &'a [ToolSpec],
        visible: bool,
    ) -> BoxFuture<'a, Result<ModelReply, String>>;
    /// Asks the person about a call; `Reject` when nobody can answer.
    fn ask<'a>(&'a self, pending: &'a Pending) -> BoxFuture<'a, Answer>;
    /// Persists (and publishes) a step.
    fn record(&self, record: StepRecord<'_>);
    /// Remembers an "always allow" pattern in the policy settings.
    fn always_allow(&self, pattern: &str);
    /// Runs the project's check on the turn's edits before it ends (check `round`, from 1):
    /// the report of a failure the model can fix, `None` when it passed or nothing ran.
    fn check<'a>(&'a self, edits: &'a [Action], round: usize) -> BoxFuture<'a, Option<String>>;
}

/// How the loop ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LoopEnd {
    /// The model answered: its final text.
    Final(String),
    Cancelled,
    /// The step limit was reached; the text says so.
    StepLimit(String),
    Failed(String),
}

/// What the loop leaves behind: how it ended and the edits for the proposal.
#[derive(Debug, Clone)]
pub struct LoopOutcome {
    pub end: LoopEnd,
    pub steps: usize,
    pub edits: Vec<Action>,
}

struct State<'a, H: Host> {
    host: &'a H,
    config: &'a AgentConfig,
    mcp: Option<&'a McpHub>,
    cancel: &'a CancellationToken,
    policy: PolicySettings,
    steps: usize,
    edits: Vec<Action>,
    /// The edits checked so far; dropped after a call that may change files on disk.
    checker: std::sync::Arc<std::sync::Mutex<Option<crate::edits::plan::EditChecker>>>,
    next_id: usize,
    /// The tool results in the conversation, oldest first, for fitting it to the window.
    results: Vec<ResultEntry>,
    /// Checks run on the edits so far.
    checks_run: usize,
    /// Commands changed files in the workspace (they join the proposal).
    changed: bool,
}

/// Runs the loop. `messages` holds the system prompt, history and the prompt.
pub async fn run<H: Host>(
    host: &H,
    config: &AgentConfig,
    mut messages: Vec<ChatMessage>,
    mcp: Option<&McpHub>,
    cancel: &CancellationToken,
) -> LoopOutcome {
    let mut tools = builtin_specs(config.mode);
    if config.mode == AgentMode::Agent
        && let Some(hub) = mcp
    {
        tools.extend(hub.tools().iter().map(|t| t.spec()));
    }
    let mut state = State {
        host,
        config,
        mcp,
        cancel,
        policy: config.policy.clone(),
        steps: 0,
        edits: Vec::new(),
        checker: Default::default(),
        next_id: 0,
        results: Vec::new(),
        checks_run: 0,
        changed: false,
    };
    let end = if config.native_tools {
        state.native(&mut messages, &tools).await
    } else {
        let prompt = protocol::protocol_prompt(&tools, MAX_PLAN_STEPS);
        match messages.iter_mut().find(|m| m.role == ChatRole::System) {
            Some(system) => system.content = format!("{}\n\n{prompt}", system.content),
            None => messages.insert(0, ChatMessage::new(ChatRole::System, prompt)),
        }
        state.text_protocol(&mut messages).await
    };
    LoopOutcome {
        end,
        steps: state.steps,
        edits: state.edits,
    }
}

/// The result of a call the turn ended before: cancelled, or out of steps.
const NOT_RUN_CANCELLED: &str = "Not run: the turn was cancelled.";
const NOT_RUN_LIMIT: &str = "Not run: the step limit for this turn was reached.";

/// What the model is asked after a failed check (native tools, then the text protocol).
const FIX_NATIVE: &str = "Your edits are still only a proposal: the user's files are unchanged. \
     Fix these problems with more edits (they apply on top of your earlier ones), then answer \
     again.";
const FIX_PROTOCOL: &str = "Your edits are still only a proposal: the user's files are unchanged. Fix these \
     problems with TOOL_CALLs to the edit tools (they apply on top of your earlier edits), then \
     send FINAL again.";

impl<H: Host> State<'_, H> {
    /// Before an Agent turn with edits ends, the project's check runs on them; a failure
    /// the model can fix goes back to it while rounds remain (`Some`: the report to send).
    async fn check_before_final(&mut self) -> Option<String> {
        if self.config.mode != AgentMode::Agent
            || (self.edits.is_empty() && !self.changed)
            || self.cancel.is_cancelled()
        {
            return None;
        }
        self.checks_run += 1;
        let report = self.host.check(&self.edits, self.checks_run).await?;
        (self.checks_run <= self.config.check_rounds && !self.cancel.is_cancelled())
            .then_some(report)
    }

    /// Fits the conversation to the window, then streams the model's next reply.
    async fn complete(
        &mut self,
        messages: &mut [ChatMessage],
        tools: &[ToolSpec],
        visible: bool,
    ) -> Result<ModelReply, LoopEnd> {
        if let Some(budget) = self.config.request_budget {
            match fit::fit(messages, &mut self.results, tools, budget) {
                Ok(None) => {}
                Ok(Some(trimmed)) => {
                    let text = trimmed.describe();
                    let elided = serde_json::json!({
                        "elided": trimmed.elided,
                        "arguments_elided": trimmed.arguments,
                        "cut": trimmed.cut.as_ref().map(|(label, kept, of)| {
                            serde_json::json!({"label": label, "kept_lines": kept, "lines": of})
                        }),
                        "tokens_before": trimmed.before,
                        "tokens_after": trimmed.after,
                    });
                    self.record(StepKind::Trimmed, |s| {
                        s.arguments = Some(&elided);
                        s.result = Some(&text);
                    });
                }
                Err(overflow) => return Err(LoopEnd::Failed(overflow.to_string())),
            }
        }
        let messages = &*messages;
        tokio::select! {
            biased;
            _ = self.cancel.cancelled() => Err(LoopEnd::Cancelled),
            reply = self.host.complete(messages, tools, visible) => reply.map_err(|e| {
                if self.cancel.is_cancelled() { LoopEnd::Cancelled } else { LoopEnd::Failed(e) }
            }),
        }
    }

    fn limit_reached(&self) -> Option<LoopEnd> {
        (self.steps >= self.config.max_steps).then(|| {
            LoopEnd::StepLimit(format!(
                "Stopped after {} tool steps (the limit per turn; change it in settings).",
                self.steps
            ))
        })
    }

    async fn native(&mut self, messages: &mut Vec<ChatMessage>, tools: &[ToolSpec]) -> LoopEnd {
        loop {
            let reply = match self.complete(messages, tools, true).await {
                Ok(reply) => reply,
                Err(end) => return end,
            };
            let mut calls = reply.calls;
            if calls.is_empty() {
                // Local models often write the call as text even when offered tools. Only a
                // reply that is nothing but the call counts, and not one repeated from a
                // tool result: a call quoted in prose, a fence or a file is not a request.
                let shown: Vec<&str> = messages
                    .iter()
                    .filter(|m| m.role == ChatRole::Tool)
                    .map(|m| m.content.as_str())
                    .collect();
                calls = protocol::tool_calls_in_text_after(&reply.text, &shown);
            }
            if calls.is_empty() {
                if let Some(report) = self.check_before_final().await {
                    messages.push(ChatMessage::new(ChatRole::Assistant, reply.text));
                    messages.push(ChatMessage::new(
                        ChatRole::User,
                        format!("{report}\n\n{FIX_NATIVE}"),
                    ));
                    continue;
                }
                return LoopEnd::Final(reply.text);
            }
            for call in &mut calls {
                if call.id.is_none() {
                    self.next_id += 1;
                    call.id = Some(format!("call_{}", self.next_id));
                }
            }
            messages.push(ChatMessage::assistant_with_calls(reply.text, calls.clone()));
            // Every call of the batch gets its result, recorded and in the conversation, even
            // when the turn ends part-way (cancelled, or out of steps): none is left unanswered.
            let mut ended = None;
            for call in &calls {
                let result = match (&ended, self.limit_reached()) {
                    (Some(_), _) => self.not_run(call, NOT_RUN_CANCELLED),
                    (None, Some(_)) => self.not_run(call, NOT_RUN_LIMIT),
                    (None, None) => match self.call(call).await {
                        Ok(result) => result,
                        Err((result, end)) => {
                            ended = Some(end);
                            result
                        }
                    },
                };
                messages.push(ChatMessage::tool_result(call, result));
                self.results.push(ResultEntry {
                    index: messages.len() - 1,
                    label: fit::label(&call.name, &call.arguments),
                    elided: false,
                });
            }
            if let Some(end) = ended.or_else(|| self.limit_reached()) {
                return end;
            }
        }
    }

    /// Records a call of a batch that is not run because the turn ends first; the text the
    /// model would get back.
    fn not_run(&self, call: &ToolCall, text: &str) -> String {
        let (tool, arguments) = (self.tool_name(call), normalize_arguments(&call.arguments));
        self.host.record(StepRecord {
            kind: StepKind::Tool,
            step: NewStep {
                tool: Some(&tool),
                call_id: call.id.as_deref(),
                arguments: Some(&arguments),
                decision: Some(StepDecision::Cancelled),
                result: Some(text),
                is_error: true,
                ..NewStep::default()
            },
        });
        text.to_string()
    }

    async fn text_protocol(&mut self, messages: &mut Vec<ChatMessage>) -> LoopEnd {
        let mut state = ProtocolState::new(MAX_PLAN_STEPS);
        let mut corrections = 0;
        // This turn's tool results: a directive copied from one of them does not count.
        let mut shown: Vec<String> = Vec::new();
        loop {
            let reply = match self.complete(messages, &[], false).await {
                Ok(reply) => reply,
                Err(end) => return end,
            };
            messages.push(ChatMessage::new(ChatRole::Assistant, reply.text.clone()));
            let shown_refs: Vec<&str> = shown.iter().map(String::as_str).collect();
            let directive = protocol::parse_turn_after(&reply.text, &shown_refs)
                .map_err(|e| protocol::correction(&e))
                .and_then(|d| state.accept(&d).map(|()| d));
            let directive = match directive {
                Ok(directive) => directive,
                Err(correction) => {
                    corrections += 1;
                    self.record(StepKind::Correction, |s| {
                        s.result = Some(&correction);
                        s.is_error = true;
                    });
                    if corrections > MAX_CORRECTIONS {
                        return LoopEnd::Failed(format!(
                            "the model did not follow the step protocol after {MAX_CORRECTIONS} corrections; \
                             try a larger model or one with native tool calling"
                        ));
                    }
                    messages.push(ChatMessage::new(ChatRole::User, correction));
                    continue;
                }
            };
            corrections = 0;
            // Set when `next` carries a tool's result (which may be elided later to fit).
            let mut result_of = None;
            let next = match directive {
                Directive::Plan { steps } => {
                    let plan = serde_json::json!(steps);
                    let text = numbered(&steps);
                    self.record(StepKind::Plan, |s| {
                        s.arguments = Some(&plan);
                        s.result = Some(&text);
                    });
                    "Plan accepted. Work on step 1 now: send one TOOL_CALL.".to_string()
                }
                Directive::ToolCall(mut call) => {
                    if let Some(end) = self.limit_reached() {
                        return end;
                    }
                    self.next_id += 1;
                    call.id
                        .get_or_insert_with(|| format!("call_{}", self.next_id));
                    let result = match self.call(&call).await {
                        Ok(result) => result,
                        Err((_, end)) => return end,
                    };
                    let next = format!(
                        "Result of {}:\n{result}\n\nReply with one directive: TOOL_CALL, STEP_DONE or FINAL.",
                        call.name
                    );
                    shown.push(result);
                    result_of = Some(fit::label(&call.name, &call.arguments));
                    next
                }
                Directive::StepDone { index, note } => {
                    let at = serde_json::json!({"index": index});
                    self.record(StepKind::StepDone, |s| {
                        s.arguments = Some(&at);
                        s.result = note.as_deref();
                    });
                    match state.remaining().first() {
                        Some(next) => format!("Step {index} done. Now work on step {next}."),
                        None => "Every step is done. Send FINAL with a short summary for the user."
                            .to_string(),
                    }
                }
                Directive::Final { message } => match self.check_before_final().await {
                    Some(report) => format!("{report}\n\n{FIX_PROTOCOL}"),
                    None => {
                        self.record(StepKind::Final, |s| s.result = Some(&message));
                        return LoopEnd::Final(message);
                    }
                },
            };
            messages.push(ChatMessage::new(ChatRole::User, next));
            if let Some(label) = result_of {
                self.results.push(ResultEntry {
                    index: messages.len() - 1,
                    label,
                    elided: false,
                });
            }
        }
    }

    fn record<'s>(&self, kind: StepKind, fill: impl FnOnce(&mut NewStep<'s>)) {
        let mut step = NewStep::default();
        fill(&mut step);
        self.host.record(StepRecord { kind, step });
    }
}

/// The pattern "Always allow" adds: the command's program and subcommand for shell calls
/// (`cargo test *`), the tool itself otherwise.
pub fn always_pattern(tool: &str, arguments: &Value) -> String {
    match arguments.get("command").and_then(Value::as_str) {
        Some(command) if tool == "run_shell" => policy::allow_pattern_for(command),
        _ => format!("tool:{tool}"),
    }
}

fn numbered(steps: &[String]) -> String {
    let lines: Vec<String> = steps
        .iter()
        .enumerate()
        .map(|(i, s)| format!("{}. {s}", i + 1))
        .collect();
    lines.join("\n")
}

/// The risk the CLI's `--allow-risk` pre-approves up to, as the policy's auto-approve level.
pub fn with_allow_risk(mut policy: PolicySettings, allow: Option<Risk>) -> PolicySettings {
    if let Some(risk) = allow {
        policy.auto_approve_up_to = Some(policy.auto_approve_up_to.map_or(risk, |r| r.max(risk)));
    }
    policy
}
