//! A turn run by an external CLI agent (Codex, Claude Code): it works in a scratch copy of the
//! project, never in the person's tree. Its messages stream as the reply, its reasoning as
//! thinking, its plan and its commands as step cards; what it changed in the copy is recorded
//! as edit steps, which make the reply's proposal — reviewed, approved per hunk and committed
//! by Tandem like any other.

use std::collections::HashMap;

use super::stream::sleep_until;
use super::turn::{Turn, TurnOutcome};
use super::writer::{Coalescer, DB_FLUSH_INTERVAL, EVENT_INTERVAL, StreamWriter};
use super::{ChatEventKind, ChatService};
use crate::cli_agents::{self, Access, Action, AgentEvent, CliAgent, PlanItem, RunSpec};
use crate::layer::Change;
use crate::llm::Usage;
use crate::store::{ChatMode, MessageStatus, NewStep, StepDecision, StepKind};
use crate::trust::Trust;

/// The most of a command's output kept on its step.
const STEP_OUTPUT_CAP: usize = 16 * 1024;

/// What the agent may do in this turn: nothing but read in the modes that do not change
/// files; in Build and Agent mode, as far as the project's trust goes. Trusted means the
/// agent's own bypass flag, which the person must have confirmed for the project.
pub(super) fn access(
    mode: ChatMode,
    trust: Trust,
    bypass_confirmed: bool,
    agent: &dyn CliAgent,
) -> Result<Access, String> {
    if !mode.proposes_changes() || mode == ChatMode::Security {
        return Ok(Access::ReadOnly);
    }
    match trust {
        Trust::ReadOnly => Ok(Access::ReadOnly),
        Trust::Scoped => Ok(Access::Workspace),
        Trust::Trusted if bypass_confirmed => Ok(Access::Bypass),
        Trust::Trusted => Err(format!(
            "this project trusts the agent fully, which runs {} without its own approvals and \
             sandbox: confirm that once for the project (Settings → Project, or `tandem \
             project config --allow-agent-bypass`), or lower the trust to scoped",
            agent.name()
        )),
    }
}

/// The prompt the agent gets: the earlier turns (it remembers nothing between runs), the
/// person's prompt with its attached files, and for read-only modes what not to do.
fn agent_prompt(
    summary: Option<&str>,
    history: &[(String, String)],
    prompt: &str,
    mode: ChatMode,
) -> String {
    let mut text = String::new();
    if let Some(summary) = summary {
        text.push_str(summary.trim());
        text.push_str("\n\n");
    }
    if !history.is_empty() {
        text.push_str("Earlier in this conversation:\n\n");
        for (user, reply) in history {
            text.push_str(&format!("User:\n{user}\n\nAssistant:\n{reply}\n\n"));
        }
        text.push_str("Now the user asks:\n\n");
    }
    text.push_str(prompt);
    match mode {
        ChatMode::Ask => text.push_str("\n\n(Answer only; do not change any file.)"),
        ChatMode::Plan => {
            text.push_str("\n\n(Make a plan only; do not change any file or run commands.)");
        }
        ChatMode::Security => text.push_str(
            "\n\n(Review the code for security problems; report them, do not change files.)",
        ),
        ChatMode::Build | ChatMode::Agent => {}
    }
    text
}

/// The turn's live state, as events come in.
struct Progress<'a> {
    service: &'a ChatService,
    turn: &'a Turn,
    content: String,
    /// Whether a `<think>` block is open in `content`.
    thinking: bool,
    writer: StreamWriter<'a>,
    deltas: Coalescer,
    usage: Option<Usage>,
    failed: Option<String>,
    /// The agent's last notice (a retry it made), the reason if it then fails unexplained.
    notice: Option<String>,
    result: Option<String>,
    /// Actions started and not yet done: their tool and arguments.
    running: HashMap<String, (String, serde_json::Value)>,
    /// The plan's items as last recorded, and which were reported done.
    plan: Vec<PlanItem>,
    save_error: Option<String>,
}

impl Progress<'_> {
    fn text(&mut self, text: &str, reasoning: bool) {
        if reasoning != self.thinking {
            let tag = if reasoning { "<think>" } else { "</think>\n" };
            self.content.push_str(tag);
            self.thinking = reasoning;
        } else if !self.content.is_empty() && !text.is_empty() {
            self.content.push_str("\n\n");
            match reasoning {
                true => self.deltas.reasoning.push_str("\n\n"),
                false => self.deltas.text.push_str("\n\n"),
            }
        }
        self.content.push_str(text);
        match reasoning {
            true => self.deltas.reasoning.push_str(text),
            false => self.deltas.text.push_str(text),
        }
    }

    fn step(&mut self, kind: StepKind, step: NewStep<'_>) {
        let store = self.service.engine.store();
        match store.add_agent_step(self.turn.message_id, kind, &step) {
            Ok(step) => self.service.event(self.turn, ChatEventKind::Step { step }),
            Err(e) => self.save_error = Some(format!("a step could not be saved: {e}")),
        }
    }

    fn plan(&mut self, items: Vec<PlanItem>) {
        let texts: Vec<&str> = items.iter().map(|i| i.text.as_str()).collect();
        let known: Vec<&str> = self.plan.iter().map(|i| i.text.as_str()).collect();
        if texts != known {
            let steps = serde_json::json!(texts);
            let numbered: String = texts
                .iter()
                .enumerate()
                .map(|(i, t)| format!("{}. {t}\n", i + 1))
                .collect();
            self.step(
                StepKind::Plan,
                NewStep {
                    arguments: Some(&steps),
                    result: Some(&numbered),
                    ..NewStep::default()
                },
            );
            self.plan = items
                .iter()
                .map(|i| PlanItem {
                    done: false,
                    ..i.clone()
                })
                .collect();
        }
        for (index, item) in items.iter().enumerate() {
            if item.done && !self.plan[index].done {
                self.plan[index].done = true;
                let at = serde_json::json!({ "index": index + 1 });
                self.step(
                    StepKind::StepDone,
                    NewStep {
                        arguments: Some(&at),
                        ..NewStep::default()
                    },
                );
            }
        }
    }

    fn action(&mut self, action: Action, agent: &dyn CliAgent) {
        if action.running {
            self.running
                .insert(action.id.clone(), (action.tool, action.arguments));
            return;
        }
        let (tool, arguments) = match self.running.remove(&action.id) {
            Some(started) if action.tool.is_empty() => started,
            _ => (action.tool, action.arguments),
        };
        let output = cli_agents::clip(action.output.as_deref().unwrap_or(""), STEP_OUTPUT_CAP);
        let reason = format!("run by {} in its sandbox", agent.name());
        self.step(
            StepKind::Tool,
            NewStep {
                tool: Some(&tool),
                call_id: Some(&action.id),
                arguments: Some(&arguments),
                decision: Some(StepDecision::Allowed),
                reason: Some(&reason),
                result: Some(&output),
                exit_code: action.exit_code,
                is_error: action.failed,
                ..NewStep::default()
            },
        );
    }

    fn event(&mut self, event: AgentEvent, agent: &dyn CliAgent) {
        match event {
            AgentEvent::Text(text) => self.text(&text, false),
            AgentEvent::Reasoning(text) => self.text(&text, true),
            AgentEvent::Plan(items) => self.plan(items),
            AgentEvent::Action(action) => self.action(action, agent),
            AgentEvent::Usage(usage) => {
                let total = self.usage.get_or_insert_default();
                total.input_tokens += usage.input_tokens;
                total.output_tokens += usage.output_tokens;
            }
            AgentEvent::Failed(message) => self.failed = Some(message),
            AgentEvent::Notice(message) => {
                // Shown in the trace once per change ("waiting for network" repeats).
                if self.notice.as_deref() != Some(message.as_str()) {
                    self.text(&format!("⚠ {}: {message}", agent.name()), true);
                }
                self.notice = Some(message);
            }
            AgentEvent::Result(text) => self.result = Some(text),
            AgentEvent::Session(_) => {}
        }
        if let Err(e) = self.writer.update(&self.content) {
            self.save_error = Some(format!("the reply could not be saved: {e}"));
        }
        self.publish(false);
    }

    /// Publishes the text gathered since the last delta (when due, or now with `force`).
    fn publish(&mut self, force: bool) {
        if let Some((text, reasoning)) = self.deltas.take(force) {
            self.service
                .event(self.turn, ChatEventKind::Delta { text, reasoning });
        }
    }

    fn close_thinking(&mut self) {
        if std::mem::take(&mut self.thinking) {
            self.content.push_str("</think>\n");
        }
    }
}

impl ChatService {
    /// Runs the turn with the chat's CLI agent.
    pub(super) async fn cli_agent(&self, turn: &Turn, outcome: &mut TurnOutcome) {
        let Some(agent) = cli_agents::agent_for(turn.choice.record.kind) else {
            outcome.error = Some("this provider is not a CLI agent".into());
            return;
        };
        let settings = &turn.project.settings;
        let access = match access(
            turn.chat.mode,
            settings.agent_trust.unwrap_or_default(),
            settings.cli_agent_bypass,
            agent,
        ) {
            Ok(access) => access,
            Err(e) => {
                outcome.error = Some(e);
                return;
            }
        };
        let store = self.engine.store();
        let prompt = match self.cli_prompt(turn) {
            Ok(prompt) => prompt,
            Err(e) => {
                outcome.error = Some(e);
                return;
            }
        };
        // The agent works in the chat's workspace, shown at the project's own path in its
        // container (no copy per turn); what it changes there becomes the proposal.
        let tracker = match self.open_workspace(turn).await {
            Ok(Some(tracker)) => tracker,
            Ok(None) => {
                outcome.error = Some("The chat has no workspace to work in.".into());
                return;
            }
            Err(why) => {
                outcome.error = Some(format!("{why}. The turn did not start."));
                return;
            }
        };
        let config = &turn.choice.provider.config().clone();
        let spec = RunSpec {
            program: config.base_url.clone(),
            workdir: tracker.workspace().project().to_path_buf(),
            view: Some(tracker.workspace().project_view()),
            model: turn.choice.model.clone(),
            access,
            last_message_file: None,
        };
        let mut progress = Progress {
            service: self,
            turn,
            content: String::new(),
            thinking: false,
            writer: StreamWriter::new(store, turn.message_id, DB_FLUSH_INTERVAL),
            deltas: Coalescer::new(EVENT_INTERVAL),
            usage: None,
            failed: None,
            notice: None,
            result: None,
            running: HashMap::new(),
            plan: Vec::new(),
            save_error: None,
        };
        let sandbox = self.sandbox_settings();
        let (events, mut received) = tokio::sync::mpsc::unbounded_channel();
        let key = cli_agents::CliProvider::key_env(config);
        let run = cli_agents::run(
            agent,
            &spec,
            &prompt,
            &key,
            Some(&sandbox),
            &turn.cancel,
            move |event| {
                let _ = events.send(event);
            },
        );
        tokio::pin!(run);
        // Events as they come; text held back by the coalescer goes out when it is due.
        let ran = loop {
            let due = progress.deltas.due_at();
            tokio::select! {
                biased;
                Some(event) = received.recv() => progress.event(event, agent),
                () = sleep_until(due), if due.is_some() => progress.publish(false),
                ran = &mut run => break ran,
            }
        };
        while let Ok(event) = received.try_recv() {
            progress.event(event, agent);
        }
        progress.close_thinking();
        let end = match ran {
            Ok(end) => end,
            Err(e) => {
                outcome.content = progress.content;
                outcome.error = Some(e.to_string());
                return;
            }
        };
        // The final message: Codex's file (or Claude Code's result) when the streamed
        // messages do not already end with it.
        let last = end.last_message.clone().or(progress.result.take());
        if let Some(last) = last.map(|l| l.trim().to_string())
            && !last.is_empty()
            && !progress.content.trim_end().ends_with(&last)
        {
            progress.text(&last, false);
        }
        if let Some(warning) = end.sandbox.warning() {
            progress.text(&format!("> {warning}"), false);
        }
        outcome.usage = progress.usage;
        outcome.status = if end.cancelled {
            MessageStatus::Cancelled
        } else if let Some(error) = progress.failed.take().or_else(|| {
            // A failed exit says more with the agent's last notice than with its stderr.
            let failure = end.failure(agent)?;
            Some(match progress.notice.take() {
                Some(notice) => format!("{} failed: {notice}", agent.name()),
                None => failure,
            })
        }) {
            let provider = &turn.choice.record.name;
            outcome.error = Some(cli_agents::with_login_hint(agent, provider, error));
            MessageStatus::Error
        } else if let Some(error) = progress.save_error.take() {
            outcome.error = Some(error);
            MessageStatus::Error
        } else {
            MessageStatus::Complete
        };
        if outcome.status == MessageStatus::Complete && access != Access::ReadOnly {
            self.carry_changes(&tracker, agent, &mut progress).await;
        }
        progress.publish(true);
        outcome.content = progress.content;
        if let Some(error) = progress.save_error {
            outcome.status = MessageStatus::Error;
            outcome.error = Some(error);
        }
    }

    /// The agent's prompt: history, attached text files, the prompt. Images are refused
    /// (nothing is sent without them).
    fn cli_prompt(&self, turn: &Turn) -> Result<String, String> {
        let store = self.engine.store();
        let attached = store
            .attachments(turn.history_before)
            .map_err(|e| e.to_string())?;
        let (files, images) = super::attachments::load(self.engine.store(), &attached);
        if !images.is_empty() {
            return Err(format!(
                "{} runs as a CLI agent here and Tandem does not pass images to it yet: remove \
                 the images, or choose another provider",
                turn.choice.record.name
            ));
        }
        let (summary, turns) = self
            .history_before(turn.chat.id, Some(turn.history_before))
            .map_err(|e| e.to_string())?;
        let keep = turns
            .len()
            .saturating_sub(self.history_setting().map_err(|e| e.to_string())?);
        let history: Vec<(String, String)> = turns[keep..]
            .iter()
            .map(|t| (t.user.content.clone(), t.reply.content.clone()))
            .collect();
        let summary = summary.as_ref().map(super::compact::section);
        Ok(agent_prompt(
            summary.as_deref(),
            &history,
            &format!("{}{files}", turn.prompt),
            turn.chat.mode,
        ))
    }

    /// Records what the agent changed in its copy as edit steps (the proposal), and says in
    /// the reply what could not be carried back.
    async fn carry_changes(
        &self,
        tracker: &std::sync::Arc<crate::layer::Tracker>,
        agent: &dyn CliAgent,
        progress: &mut Progress<'_>,
    ) {
        let collected = {
            let tracker = std::sync::Arc::clone(tracker);
            tokio::task::spawn_blocking(move || tracker.collect()).await
        };
        let changes = match collected.map_err(|e| e.to_string()) {
            Ok(Ok(changes)) => Ok(changes),
            Ok(Err(e)) => Err(e.to_string()),
            Err(e) => Err(e),
        };
        let changes = match changes {
            Ok(changes) => changes,
            Err(e) => {
                progress.save_error = Some(format!("its changes could not be read: {e}"));
                return;
            }
        };
        let description = format!("changed by {}", agent.name());
        let mut skipped = Vec::new();
        for change in changes {
            let (tool, arguments) = match change {
                Change::Write { path, content } => (
                    "write_file",
                    serde_json::json!({ "path": path, "content": content, "description": description }),
                ),
                Change::Delete { path } => ("delete_file", serde_json::json!({ "path": path })),
                Change::Skipped { path, reason } => {
                    skipped.push(format!("- `{path}`: {reason}"));
                    continue;
                }
            };
            progress.step(
                StepKind::Tool,
                NewStep {
                    tool: Some(tool),
                    arguments: Some(&arguments),
                    decision: Some(StepDecision::Allowed),
                    reason: Some(&description),
                    ..NewStep::default()
                },
            );
        }
        if !skipped.is_empty() {
            let note = format!(
                "> {} also changed files Tandem cannot propose (review them yourself):\n{}",
                agent.name(),
                skipped.join("\n")
            );
            progress.text(&note, false);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cli_agents::codex::Codex;

    #[test]
    fn trust_maps_to_access_and_trusted_needs_a_confirmation() {
        let a = |mode, trust, ok| access(mode, trust, ok, &Codex);
        assert_eq!(a(ChatMode::Ask, Trust::Trusted, true), Ok(Access::ReadOnly));
        assert_eq!(
            a(ChatMode::Security, Trust::Scoped, true),
            Ok(Access::ReadOnly)
        );
        assert_eq!(
            a(ChatMode::Build, Trust::ReadOnly, true),
            Ok(Access::ReadOnly)
        );
        assert_eq!(
            a(ChatMode::Build, Trust::Scoped, false),
            Ok(Access::Workspace)
        );
        assert_eq!(a(ChatMode::Agent, Trust::Trusted, true), Ok(Access::Bypass));
        let refused = a(ChatMode::Agent, Trust::Trusted, false).unwrap_err();
        assert!(refused.contains("--allow-agent-bypass"), "{refused}");
    }

    #[test]
    fn the_prompt_carries_the_conversation() {
        let history = vec![("Add a flag".to_string(), "Added --verbose.".to_string())];
        let text = agent_prompt(None, &history, "Now document it", ChatMode::Build);
        assert!(text.starts_with("Earlier in this conversation:"));
        assert!(text.contains("Added --verbose.") && text.ends_with("Now document it"));
        let ask = agent_prompt(None, &[], "Why?", ChatMode::Ask);
        assert!(ask.starts_with("Why?") && ask.contains("do not change any file"));
    }
}
