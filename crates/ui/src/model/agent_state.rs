//! Agent mode as plain data: the tool calls waiting for the person, the approval gateway's
//! requests, and the Agent section of the settings window. Steps live with their message
//! ([`crate::model::chat_state::MessageView::steps`],
//! [`crate::model::chat_state::Streaming::steps`]). No egui here.

use std::collections::BTreeSet;

use tandem_core::agent::gateway::{AutoAnswer, CodeResponsePolicy};
use tandem_core::agent::policy::PolicySettings;
use tandem_core::app::PendingPermission;
use tandem_core::store::{ExecutorRequest, ExecutorRequestKind, McpServerRecord};
use tandem_core::trust::Risk;

pub use tandem_core::app::{
    AgentSettings, ApproverStatus, DEFAULT_GATEWAY_PORT, GatewaySettings, GatewayStatus,
};

#[derive(Default)]
pub struct AgentView {
    /// Tool calls waiting for an answer, every chat's, oldest first.
    pub approvals: Vec<PermissionView>,
    /// Approvals answered or dropped: a chat reload's snapshot must not bring them back.
    pub settled: BTreeSet<u64>,
    pub gateway: GatewayView,
    /// The approval client: its connection to the executor and its form.
    pub approver: ApproverView,
    pub mcp_servers: Vec<McpServerRecord>,
    pub form: AgentForm,
    /// The stored agent settings changed behind the form (an "Always allow"): reload them.
    pub reload_settings: bool,
    /// CLI agent providers (Codex, Claude Code), by provider name: login state and output.
    pub cli_agents: std::collections::BTreeMap<String, CliAgentView>,
}

/// A CLI agent provider as Settings shows it.
#[derive(Debug, Default, Clone)]
pub struct CliAgentView {
    pub status: Option<tandem_core::app::LoginStatus>,
    /// What its login printed (the link and the code to enter there).
    pub login_lines: Vec<String>,
    pub logging_in: bool,
}

/// A waiting call, with the fingerprint a gateway request about the same command would have.
#[derive(Debug, Clone)]
pub struct PermissionView {
    pub approval: PendingPermission,
    pub fingerprint: Option<String>,
}

impl PermissionView {
    pub fn new(approval: PendingPermission) -> Self {
        let fingerprint = tandem_core::app::call_fingerprint(&approval.tool, &approval.arguments);
        PermissionView {
            approval,
            fingerprint,
        }
    }
}

/// The approval client as Settings shows it. The saved token never comes here, only its hint.
#[derive(Debug, Default)]
pub struct ApproverView {
    pub status: ApproverStatus,
    /// When `status` arrived (a reconnect's countdown runs from it).
    pub since: Option<std::time::Instant>,
    pub url: String,
    /// A new token as typed; empty keeps the saved one.
    pub token: String,
    pub token_hint: Option<String>,
}

impl ApproverView {
    /// The status line: connected, reconnecting in N s (and why), refused, disconnected.
    pub fn status_line(&self, now: std::time::Instant) -> String {
        match &self.status {
            ApproverStatus::Connecting => "Connecting…".into(),
            ApproverStatus::Connected => format!("Connected to {}", self.url),
            ApproverStatus::Reconnecting { after, error } => {
                let waited = self.since.map(|since| now.duration_since(since));
                let waited = waited.unwrap_or_default();
                let left = after.saturating_sub(waited).as_secs_f32().ceil();
                format!("Reconnecting in {left:.0} s ({error})")
            }
            ApproverStatus::Refused(why) => format!("Not connected: {why}"),
            ApproverStatus::Stopped => "Disconnected".into(),
        }
    }
}

#[derive(Default)]
pub struct GatewayView {
    pub status: GatewayStatus,
    /// The latest requests, newest first.
    pub requests: Vec<ExecutorRequest>,
}

/// The Agent section of the settings window, as typed (saved with its buttons).
#[derive(Debug, Clone)]
pub struct AgentForm {
    /// Filled from the database at least once.
    pub loaded: bool,
    /// Edited since loaded: a reload (after "Always allow") must not overwrite it.
    pub dirty: bool,
    pub auto_approve_up_to: Option<Risk>,
    pub deny: String,
    pub ask: String,
    pub allow: String,
    pub max_steps: String,
    pub shell_timeout: String,
    pub tool_calling: String,
    /// Extra directories sandboxed commands may read, one a line.
    pub sandbox_readable: String,
    /// Extra variables sandboxed commands see, one name a line.
    pub sandbox_env: String,
    /// The limits as typed: processes, memory (MiB), file size (MiB), CPU (s), temp (MiB).
    pub limits: [String; 5],
    /// What the sandbox enforces on this machine (probed by the loading job).
    pub sandbox: Option<tandem_core::sandbox::Protections>,
    pub gateway_enabled: bool,
    pub gateway_port: String,
    pub gateway_token: String,
    pub gateway_auto: AutoAnswer,
    pub mcp: McpForm,
}

impl Default for AgentForm {
    fn default() -> Self {
        AgentForm {
            loaded: false,
            dirty: false,
            auto_approve_up_to: PolicySettings::default().auto_approve_up_to,
            deny: String::new(),
            ask: String::new(),
            allow: String::new(),
            max_steps: tandem_core::agent::runner::DEFAULT_MAX_STEPS.to_string(),
            shell_timeout: tandem_core::process::DEFAULT_TIMEOUT.as_secs().to_string(),
            tool_calling: "auto".into(),
            sandbox_readable: String::new(),
            sandbox_env: String::new(),
            limits: limit_fields(&tandem_core::sandbox::Limits::default()),
            sandbox: None,
            gateway_enabled: false,
            gateway_port: DEFAULT_GATEWAY_PORT.to_string(),
            gateway_token: String::new(),
            gateway_auto: AutoAnswer {
                evaluations_up_to: None,
                code_responses: CodeResponsePolicy::Never,
            },
            mcp: McpForm::default(),
        }
    }
}

/// The limits as the form's five fields.
fn limit_fields(l: &tandem_core::sandbox::Limits) -> [String; 5] {
    [
        l.processes.to_string(),
        l.memory_mb.to_string(),
        l.file_size_mb.to_string(),
        l.cpu_secs.to_string(),
        l.tmp_mb.to_string(),
    ]
}

impl AgentForm {
    /// The limits typed, or what is wrong with them.
    pub fn limits(&self) -> Result<tandem_core::sandbox::Limits, String> {
        let number = |i: usize, what: &str| {
            self.limits[i]
                .trim()
                .parse::<u64>()
                .ok()
                .filter(|n| *n > 0)
                .ok_or_else(|| format!("The {what} limit must be a whole number above 0"))
        };
        Ok(tandem_core::sandbox::Limits {
            processes: u32::try_from(number(0, "process")?)
                .map_err(|_| "The process limit is too large".to_string())?,
            memory_mb: number(1, "memory")?,
            file_size_mb: number(2, "file size")?,
            cpu_secs: number(3, "CPU time")?,
            tmp_mb: number(4, "temp space")?,
        })
    }
}

/// A new MCP server as typed.
#[derive(Debug, Clone, Default)]
pub struct McpForm {
    pub name: String,
    pub kind: McpFormKind,
    pub command: String,
    /// Arguments separated by spaces (quote nothing: one argument per word).
    pub args: String,
    /// `NAME=value`, one a line.
    pub env: String,
    pub url: String,
    /// `Name: value`, one a line (HTTP and SSE).
    pub headers: String,
}

/// The transport picked in the form.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum McpFormKind {
    #[default]
    Stdio,
    Http,
    Sse,
}

impl AgentForm {
    /// Takes what the database holds. Unsaved edits to the policy are kept, but allow
    /// patterns added meanwhile ("Always allow") join them, so saving cannot drop them.
    pub fn load(&mut self, settings: &AgentSettings) {
        if self.dirty {
            let typed = self.policy().allow;
            for pattern in settings.policy.allow.iter().filter(|p| !typed.contains(p)) {
                if !self.allow.is_empty() && !self.allow.ends_with('\n') {
                    self.allow.push('\n');
                }
                self.allow.push_str(pattern);
            }
        } else {
            let policy = &settings.policy;
            self.auto_approve_up_to = policy.auto_approve_up_to;
            self.deny = policy.deny.join("\n");
            self.ask = policy.ask.join("\n");
            self.allow = policy.allow.join("\n");
            self.max_steps = settings.max_steps.to_string();
            self.shell_timeout = settings.shell_timeout_secs.to_string();
            self.tool_calling = settings.tool_calling.clone();
            self.sandbox_readable = settings.sandbox_readable.join("\n");
            self.sandbox_env = settings.sandbox_env.join("\n");
            self.limits = limit_fields(&settings.limits);
        }
        self.load_gateway(&settings.gateway);
        self.sandbox = Some(settings.sandbox.clone());
        self.loaded = true;
    }

    pub fn load_gateway(&mut self, gateway: &GatewaySettings) {
        self.gateway_enabled = gateway.enabled;
        self.gateway_port = gateway.port.to_string();
        self.gateway_token = gateway.token.clone();
        self.gateway_auto = gateway.auto;
    }

    /// The policy as typed: one pattern a line, blank lines ignored.
    pub fn policy(&self) -> PolicySettings {
        let lines = |text: &str| -> Vec<String> {
            text.lines()
                .map(str::trim)
                .filter(|l| !l.is_empty())
                .map(str::to_string)
                .collect()
        };
        PolicySettings {
            deny: lines(&self.deny),
            ask: lines(&self.ask),
            allow: lines(&self.allow),
            auto_approve_up_to: self.auto_approve_up_to,
        }
    }

    /// The gateway settings as typed, or what is wrong with them.
    pub fn gateway(&self) -> Result<GatewaySettings, String> {
        let port = self
            .gateway_port
            .trim()
            .parse::<u16>()
            .map_err(|_| "The gateway port must be a number from 0 to 65535".to_string())?;
        Ok(GatewaySettings {
            enabled: self.gateway_enabled,
            port,
            token: self.gateway_token.clone(),
            auto: self.gateway_auto,
        })
    }
}

impl AgentView {
    /// The waiting calls of one reply.
    pub fn approvals_for(&self, message_id: i64) -> impl Iterator<Item = &PermissionView> {
        self.approvals
            .iter()
            .filter(move |a| a.approval.message_id == message_id)
    }

    /// The oldest call waiting in `chat_id`.
    pub fn first_waiting(&self, chat_id: i64) -> Option<&PermissionView> {
        self.approvals
            .iter()
            .find(|a| a.approval.chat_id == chat_id)
    }

    pub fn add_approval(&mut self, approval: PendingPermission) {
        if self.settled.contains(&approval.id)
            || self.approvals.iter().any(|a| a.approval.id == approval.id)
        {
            return;
        }
        self.approvals.push(PermissionView::new(approval));
        self.approvals.sort_by_key(|a| a.approval.id);
    }

    pub fn settle(&mut self, id: u64) {
        self.settled.insert(id);
        self.approvals.retain(|a| a.approval.id != id);
    }

    /// Pending gateway evaluations about the same command as the waiting call `view`.
    pub fn gateway_matches<'a>(
        &'a self,
        view: &'a PermissionView,
    ) -> impl Iterator<Item = &'a ExecutorRequest> {
        self.gateway.requests.iter().filter(move |r| {
            r.is_pending()
                && r.kind == ExecutorRequestKind::Evaluation
                && view.fingerprint.as_deref() == Some(r.fingerprint.as_str())
        })
    }

    /// Waiting calls in `chat_id` about the same command as the gateway request `record`.
    pub fn agent_matches<'a>(
        &'a self,
        record: &'a ExecutorRequest,
        chat_id: Option<i64>,
    ) -> impl Iterator<Item = &'a PermissionView> {
        self.approvals.iter().filter(move |a| {
            record.kind == ExecutorRequestKind::Evaluation
                && Some(a.approval.chat_id) == chat_id
                && a.fingerprint.as_deref() == Some(record.fingerprint.as_str())
        })
    }
}

/// A line from a gateway request's payload (the frame as the client sent it).
pub fn payload_text<'a>(record: &'a ExecutorRequest, field: &str) -> Option<&'a str> {
    record.payload.get(field)?.as_str()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn approval(id: u64, tool: &str, arguments: serde_json::Value) -> PendingPermission {
        PendingPermission {
            id,
            chat_id: 1,
            message_id: 10,
            tool: tool.into(),
            arguments,
            risk: Risk::Medium,
            reason: "asked".into(),
            reasons: Vec::new(),
            always_pattern: "tool:x".into(),
        }
    }

    #[test]
    fn a_settled_approval_is_not_brought_back_by_a_late_snapshot() {
        let mut view = AgentView::default();
        view.add_approval(approval(2, "write_file", json!({})));
        view.add_approval(approval(1, "write_file", json!({})));
        assert_eq!(view.approvals[0].approval.id, 1, "oldest first");
        view.settle(1);
        view.add_approval(approval(1, "write_file", json!({})));
        assert_eq!(view.approvals.len(), 1);
        assert_eq!(view.first_waiting(1).map(|a| a.approval.id), Some(2));
    }

    #[test]
    fn the_approver_status_line_counts_down_to_the_next_attempt() {
        let start = std::time::Instant::now();
        let mut view = ApproverView {
            url: "ws://127.0.0.1:4002/".into(),
            ..Default::default()
        };
        assert_eq!(view.status_line(start), "Disconnected");
        view.status = ApproverStatus::Reconnecting {
            after: std::time::Duration::from_secs(8),
            error: "connection refused".into(),
        };
        view.since = Some(start);
        let later = start + std::time::Duration::from_millis(2500);
        assert_eq!(
            view.status_line(later),
            "Reconnecting in 6 s (connection refused)"
        );
        view.status = ApproverStatus::Connected;
        assert_eq!(view.status_line(later), "Connected to ws://127.0.0.1:4002/");
    }

    #[test]
    fn shell_calls_carry_the_gateway_fingerprint_of_their_command() {
        let view = PermissionView::new(approval(1, "run_shell", json!({"command": "cargo  test"})));
        assert_eq!(
            view.fingerprint.as_deref(),
            Some(tandem_core::agent::gateway::fingerprint("cargo test").as_str())
        );
        let other = PermissionView::new(approval(2, "write_file", json!({"command": "x"})));
        assert_eq!(other.fingerprint, None);
    }

    #[test]
    fn the_policy_form_reads_one_pattern_a_line() {
        let form = AgentForm {
            allow: "cargo test *\n\n  git status \n".into(),
            ..AgentForm::default()
        };
        assert_eq!(form.policy().allow, ["cargo test *", "git status"]);
        let bad = AgentForm {
            gateway_port: "70000".into(),
            ..AgentForm::default()
        };
        assert!(bad.gateway().is_err());
    }

    #[test]
    fn a_reload_keeps_unsaved_edits_but_adds_new_allow_patterns() {
        let mut form = AgentForm {
            dirty: true,
            allow: "cargo test *".into(),
            max_steps: "7".into(),
            ..AgentForm::default()
        };
        let stored = AgentSettings {
            policy: PolicySettings {
                allow: vec!["tool:write_file".into()],
                ..PolicySettings::default()
            },
            max_steps: 25,
            shell_timeout_secs: 120,
            tool_calling: "auto".into(),
            sandbox_readable: Vec::new(),
            sandbox_env: Vec::new(),
            limits: tandem_core::sandbox::Limits::default(),
            sandbox: tandem_core::sandbox::Protections::none(),
            gateway: GatewaySettings::default(),
        };
        form.load(&stored);
        assert_eq!(form.allow, "cargo test *\ntool:write_file");
        assert_eq!(form.max_steps, "7");
        form.dirty = false;
        form.load(&stored);
        assert_eq!(form.allow, "tool:write_file");
        assert_eq!(form.max_steps, "25");
    }
}
