//! One tool call in the loop: judged by the policy (and asked about when it says so, with
//! the sandbox's gaps taken into account), run through `dispatch`, and recorded as a step,
//! with what a command changed in the workspace recorded as edits.

use serde_json::Value;

use super::{
    Answer, BETWEEN_CALLS, Host, LoopEnd, NOT_RUN_CANCELLED, Pending, State, StepRecord,
    always_pattern,
};
use crate::agent::dispatch::{self, Dispatched, ShellGrant};
use crate::agent::policy::{self, Assessment, Decision, ToolCallView, Trust};
use crate::agent::tools::AgentMode;
use crate::layer::Change;
use crate::llm::ToolCall;
use crate::sandbox::{self, Protections};
use crate::store::{NewStep, StepDecision, StepKind};

impl<H: Host> State<'_, H> {
    /// The tool a call names: an MCP tool by its qualified name, else the built-in's.
    pub(super) fn tool_name(&self, call: &ToolCall) -> String {
        match self.mcp.and_then(|hub| hub.resolve_wire_name(&call.name)) {
            Some(mcp_tool) => mcp_tool.qualified(),
            None => call.name.clone(),
        }
    }

    /// Judges, maybe asks, runs and records one call; the text the model gets back, with how
    /// the turn ends when it ends here (cancelled while the call waited or ran).
    pub(super) async fn call(&mut self, call: &ToolCall) -> Result<String, (String, LoopEnd)> {
        let arguments = normalize_arguments(&call.arguments);
        let tool = self.tool_name(call);
        let trust = match self.config.mode {
            AgentMode::Plan => Trust::ReadOnly,
            AgentMode::Agent => self.config.trust,
        };
        let view = ToolCallView {
            tool: &tool,
            arguments: &arguments,
        };
        let mut assessment = policy::assess(&view, trust, &self.policy, &self.config.root);
        self.steps += 1;
        let by_pattern = assessment.by_pattern;
        let shell = tool == "run_shell";
        // A stdio server's tool runs in the same sandbox as a command: where the kernel cannot
        // give its protections, it is asked about the same way.
        let contained = shell || self.mcp.is_some_and(|hub| hub.runs_here(&tool));
        if contained && !by_pattern {
            compensate(&mut assessment, sandbox::probe());
        }
        // The person should know what a yes opens: the network comes only with approval.
        if let (true, true, Decision::Ask { reason }) =
            (shell, assessment.network, &mut assessment.decision)
        {
            reason.push_str("; approving also lets this command use the network");
        }
        let (decision, reason) = match &assessment.decision {
            Decision::Allow { reason } => (StepDecision::Allowed, reason.clone()),
            Decision::Deny { reason } => (StepDecision::Denied, reason.clone()),
            Decision::Ask { reason } => {
                let pending = Pending {
                    tool: tool.clone(),
                    arguments: arguments.clone(),
                    assessment: assessment.clone(),
                };
                let answer = tokio::select! {
                    biased;
                    _ = self.cancel.cancelled() => None,
                    answer = self.host.ask(&pending) => Some(answer),
                };
                match answer {
                    None => (
                        StepDecision::Cancelled,
                        "the turn was cancelled".to_string(),
                    ),
                    Some(Answer::Reject) => (StepDecision::Rejected, reason.clone()),
                    Some(Answer::Approve) => (StepDecision::Approved, reason.clone()),
                    Some(Answer::AlwaysAllow) => {
                        let pattern = always_pattern(&tool, &arguments);
                        self.policy.allow.push(pattern.clone());
                        self.host.always_allow(&pattern);
                        (
                            StepDecision::Approved,
                            format!("always allowed: `{pattern}`"),
                        )
                    }
                }
            }
        };
        let risk = assessment.risk;
        let base = NewStep {
            tool: Some(&tool),
            call_id: call.id.as_deref(),
            arguments: Some(&arguments),
            risk: Some(risk),
            decision: Some(decision),
            reason: Some(&reason),
            ..NewStep::default()
        };
        if !decision.ran() {
            let text = match decision {
                StepDecision::Denied => format!("Refused by the approval policy: {reason}."),
                StepDecision::Cancelled => NOT_RUN_CANCELLED.to_string(),
                _ => "The user rejected this call. Do not retry it; choose another way or explain what you need.".to_string(),
            };
            let step = NewStep {
                result: Some(&text),
                is_error: true,
                ..base
            };
            self.host.record(StepRecord {
                kind: StepKind::Tool,
                step,
            });
            return match decision {
                StepDecision::Cancelled => Err((text, LoopEnd::Cancelled)),
                _ => Ok(text),
            };
        }
        let started = std::time::Instant::now();
        // Auto-approved commands always run confined; under scoped trust every command does.
        // The network only for a network command the person approved (now or by a pattern).
        let approved = by_pattern || decision == StepDecision::Approved;
        let grant = ShellGrant {
            confine: trust != Trust::Trusted || !approved,
            network: assessment.network && approved,
        };
        // A stdio server may have written while no call of its ran (as it started, or in
        // the background): that is the proposal's under its own label, not this call's.
        if let Some(tracker) = self.config.workspace.as_ref()
            && self.mcp.is_some_and(|hub| hub.runs_servers())
        {
            let between = dispatch::changed_since_last_look(tracker).await;
            self.record_labelled(BETWEEN_CALLS, between.unwrap_or_default());
        }
        let context = dispatch::Context {
            root: &self.config.root,
            shell: grant,
            sandbox: &self.config.sandbox,
            shell_timeout: self.config.shell_timeout,
            mcp: self.mcp,
            cancel: self.cancel,
            edits: &self.edits,
            checker: &self.checker,
            workspace: self.config.workspace.as_ref(),
            indexes: &self.config.indexes,
        };
        let Dispatched {
            text,
            is_error,
            exit_code,
            edit,
            sandbox,
            changes,
        } = dispatch::run(&context, &tool, &arguments).await;
        crate::failpoint::hit("agent-after-tool");
        // Besides an edit, what changed is not the edit's doing (a server in the background).
        let by_edit = edit.is_some();
        if let Some(edit) = edit {
            self.edits.push(edit);
        } else if !matches!(
            tool.as_str(),
            "list_files"
                | "read_file"
                | "grep"
                | "find_definitions"
                | "find_references"
                | "outline"
                | "write_file"
                | "search_replace"
                | "rename_file"
                | "delete_file"
        ) {
            // A command or an MCP tool may have changed files: check later edits against
            // the disk as it is then.
            *self.checker.lock().unwrap_or_else(|p| p.into_inner()) = None;
        }
        let duration = i64::try_from(started.elapsed().as_millis()).unwrap_or(i64::MAX);
        let step = NewStep {
            result: Some(&text),
            exit_code,
            is_error,
            duration_ms: Some(duration),
            sandbox: sandbox.as_ref(),
            ..base
        };
        self.host.record(StepRecord {
            kind: StepKind::Tool,
            step,
        });
        match by_edit {
            true => self.record_labelled(BETWEEN_CALLS, changes),
            false => self.record_changes(&tool, &arguments, changes),
        }
        if self.cancel.is_cancelled() {
            return Err((text, LoopEnd::Cancelled));
        }
        Ok(text)
    }

    /// Records what a command or an MCP tool changed in the workspace as edit steps of the
    /// proposal, labelled with the command or the tool (they replay, in order, with the
    /// agent's own edits).
    fn record_changes(&mut self, tool: &str, arguments: &Value, changes: Vec<Change>) {
        let command = match tool {
            "run_shell" => arguments.get("command").and_then(Value::as_str),
            _ => Some(tool),
        };
        let command = command.unwrap_or("a command");
        let first = command.lines().next().unwrap_or_default();
        let short: String = first.chars().take(80).collect();
        let more = if short.len() < command.trim_end().len() {
            "…"
        } else {
            ""
        };
        self.record_labelled(&format!("changed by `{short}{more}`"), changes);
    }

    /// Records `changes` as edit steps of the proposal, each saying `label`.
    fn record_labelled(&mut self, label: &str, changes: Vec<Change>) {
        for change in changes {
            let (tool, arguments) = match change {
                Change::Write { path, content } => (
                    "write_file",
                    serde_json::json!({ "path": path, "content": content, "description": label }),
                ),
                Change::Delete { path } => ("delete_file", serde_json::json!({ "path": path })),
                Change::Skipped { .. } => continue,
            };
            self.changed = true;
            self.host.record(StepRecord {
                kind: StepKind::Tool,
                step: NewStep {
                    tool: Some(tool),
                    arguments: Some(&arguments),
                    decision: Some(StepDecision::Allowed),
                    reason: Some(label),
                    result: Some(label),
                    ..NewStep::default()
                },
            });
        }
    }
}

/// Where the kernel cannot give the sandbox's protections, a command the policy would
/// auto-approve is asked instead: the sandbox, not the classifier, is what makes
/// auto-approval safe.
fn compensate(assessment: &mut Assessment, protections: &Protections) {
    let gaps = protections.gaps();
    if gaps.is_empty() || !matches!(assessment.decision, Decision::Allow { .. }) {
        return;
    }
    assessment.decision = Decision::Ask {
        reason: format!(
            "{} risk, but the sandbox here cannot stop {}: asking instead of auto-approving",
            assessment.risk,
            gaps.join(", ")
        ),
    };
}

/// Arguments as an object: some models send them as a JSON string.
pub(super) fn normalize_arguments(arguments: &Value) -> Value {
    match arguments {
        Value::String(text) => match serde_json::from_str::<Value>(text) {
            Ok(parsed @ Value::Object(_)) => parsed,
            _ => serde_json::json!({}),
        },
        Value::Null => serde_json::json!({}),
        other => other.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::agent::policy::Risk;
    use crate::sandbox::Network;

    fn allowed(risk: Risk) -> Assessment {
        Assessment {
            risk,
            decision: Decision::Allow {
                reason: "auto".into(),
            },
            reasons: Vec::new(),
            parts: Vec::new(),
            by_pattern: false,
            network: false,
        }
    }

    #[test]
    fn a_sandbox_with_gaps_turns_auto_approval_into_a_question() {
        let complete = Protections {
            landlock_abi: Some(7),
            container: true,
            reads: true,
            writes: true,
            git_read_only: true,
            network: Network::Isolated,
            signals: true,
            abstract_sockets: true,
            no_terminal: true,
            processes_end: true,
            limits: crate::sandbox::Limits::default(),
            processes_limited: true,
            notes: Vec::new(),
        };
        let mut kept = allowed(Risk::Low);
        compensate(&mut kept, &complete);
        assert!(matches!(kept.decision, Decision::Allow { .. }));

        let weaker = Protections {
            network: Network::TcpDenied,
            signals: false,
            ..complete
        };
        let mut asked = allowed(Risk::Low);
        compensate(&mut asked, &weaker);
        let Decision::Ask { reason } = &asked.decision else {
            panic!("{asked:?}");
        };
        assert!(
            reason.contains("network access, signals to other processes"),
            "{reason}"
        );

        let mut nothing = allowed(Risk::Low);
        compensate(&mut nothing, &Protections::none());
        assert!(matches!(nothing.decision, Decision::Ask { .. }));
        // A denial stays a denial.
        let mut denied = allowed(Risk::High);
        denied.decision = Decision::Deny { reason: "x".into() };
        compensate(&mut denied, &Protections::none());
        assert!(matches!(denied.decision, Decision::Deny { .. }));
    }
}
