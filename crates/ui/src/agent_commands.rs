//! Agent commands: answering waiting tool calls and gateway requests, implementing a plan,
//! and the Agent settings. Part of [`Command`](crate::command::Command) (as
//! `Command::Agent`): buttons, shortcuts, the palette and tests send the same values.

use std::collections::BTreeMap;

use crate::backend::{AgentSettings, Backend, Event};
use crate::calls::{cli_agent_status, save_project_settings};
use crate::model::agent_state::McpFormKind;
use crate::model::state::AppState;
use tandem_core::agent::runner::Answer;
use tandem_core::store::{ChatMode, McpTransport};
use tandem_core::trust::Trust;

#[derive(Debug, Clone, PartialEq)]
pub enum AgentCommand {
    /// Answers the waiting tool call `id` (and gateway requests about the same command).
    Answer {
        id: u64,
        answer: Answer,
    },
    /// Answers the oldest call waiting in the open chat (shortcuts, palette).
    AnswerWaiting(Answer),
    /// Switches the chat to Agent mode and asks it to implement the plan in reply `id`.
    ImplementPlan(i64),
    /// Saves the policy, the limits and the tool-calling choice as typed.
    SaveSettings,
    SetTrust(Trust),
    /// At full trust, CLI agents may run without their own sandbox (the person confirmed).
    AllowCliAgentBypass(bool),
    /// Asks CLI agent provider NAME whether it is installed and logged in.
    CliAgentStatus(String),
    /// Starts CLI agent provider NAME's device login.
    CliAgentLogin(String),
    AddMcpServer,
    SetMcpServerEnabled(i64, bool),
    RemoveMcpServer(i64),
    SetGatewayEnabled(bool),
    /// Saves the gateway's port and auto-approval as typed (restarting it if it runs).
    SaveGateway,
    RegenerateGatewayToken,
    /// Saves the executor's address (and the token if one was typed) and connects to it.
    ConnectApprover,
    /// Disconnects from the executor.
    DisconnectApprover,
    /// The person's decision on gateway request `id` (and on the agent's waiting call about
    /// the same command).
    DecideGateway {
        id: i64,
        approved: bool,
    },
}

impl AppState {
    pub(super) fn apply_agent(&mut self, command: AgentCommand, backend: &Backend) {
        match command {
            AgentCommand::Answer { id, answer } => self.answer(id, answer, backend),
            AgentCommand::AnswerWaiting(answer) => {
                let chat = self.chat().map(|c| c.chat.id);
                match chat.and_then(|c| self.agent.first_waiting(c)) {
                    Some(view) => {
                        let id = view.approval.id;
                        self.answer(id, answer, backend);
                    }
                    None => self.toast("No tool call is waiting for approval", false),
                }
            }
            AgentCommand::ImplementPlan(message_id) => self.implement_plan(message_id, backend),
            AgentCommand::SaveSettings => self.save_agent_settings(backend),
            AgentCommand::SetTrust(trust) => {
                if let Some(project) = &mut self.project {
                    project.project.settings.agent_trust = Some(trust);
                    save_project_settings(backend, project.project.clone());
                }
            }
            AgentCommand::AllowCliAgentBypass(allow) => {
                if let Some(project) = &mut self.project {
                    project.project.settings.cli_agent_bypass = allow;
                    save_project_settings(backend, project.project.clone());
                }
            }
            AgentCommand::CliAgentStatus(name) => cli_agent_status(backend, name),
            AgentCommand::CliAgentLogin(name) => {
                let view = self.agent.cli_agents.entry(name.clone()).or_default();
                view.login_lines.clear();
                view.logging_in = true;
                backend.cli_agent_login(name);
            }
            AgentCommand::AddMcpServer => self.add_mcp_server(backend),
            AgentCommand::SetMcpServerEnabled(id, enabled) => {
                backend.run("changing the MCP server", move |app| {
                    app.set_mcp_server_enabled(id, enabled)
                });
            }
            AgentCommand::RemoveMcpServer(id) => {
                backend.run("removing the MCP server", move |app| {
                    app.remove_mcp_server(id)
                });
            }
            AgentCommand::SetGatewayEnabled(enabled) => {
                self.agent.form.gateway_enabled = enabled;
                self.save_gateway(backend, false);
            }
            AgentCommand::SaveGateway => self.save_gateway(backend, false),
            AgentCommand::RegenerateGatewayToken => self.save_gateway(backend, true),
            AgentCommand::ConnectApprover => {
                let approver = &mut self.agent.approver;
                let url = approver.url.trim().to_string();
                if url.is_empty() {
                    return self.toast("Type the executor's ws:// address first", true);
                }
                if approver.token.trim().is_empty() && approver.token_hint.is_none() {
                    return self.toast("Type the executor's token first", true);
                }
                // The typed token goes to the key store; the form forgets it.
                let token = std::mem::take(&mut approver.token);
                backend.connect_approver(url, token);
            }
            AgentCommand::DisconnectApprover => backend.disconnect_approver(),
            AgentCommand::DecideGateway { id, approved } => {
                // The agent's calls in the open chat about the same command are answered
                // with it; their cards go when the turn says they are settled.
                backend.decide_request(id, approved, self.chat().map(|c| c.chat.id));
            }
        }
    }

    fn answer(&mut self, id: u64, answer: Answer, backend: &Backend) {
        // Gateway requests about the same command are decided with it.
        backend.answer_call(id, answer);
        // The card goes at once; the turn confirms with `ApprovalSettled`.
        self.agent.settle(id);
    }

    fn implement_plan(&mut self, message_id: i64, backend: &Backend) {
        self.mode = ChatMode::Agent;
        let options = self.send_options();
        backend.turn("implementing the plan", move |app| async move {
            app.implement_plan(message_id, options).await
        });
    }

    fn save_agent_settings(&mut self, backend: &Backend) {
        let form = &self.agent.form;
        let max_steps = match form.max_steps.trim().parse::<usize>() {
            Ok(n) if n > 0 => n,
            _ => return self.toast("Max steps must be a whole number above 0", true),
        };
        let shell_timeout_secs = match form.shell_timeout.trim().parse::<u64>() {
            Ok(n) if n > 0 => n,
            _ => return self.toast("The shell timeout must be a whole number of seconds", true),
        };
        let gateway = match form.gateway() {
            Ok(gateway) => gateway,
            Err(e) => return self.toast(e, true),
        };
        let limits = match form.limits() {
            Ok(limits) => limits,
            Err(e) => return self.toast(e, true),
        };
        let settings = AgentSettings {
            policy: form.policy(),
            max_steps,
            shell_timeout_secs,
            tool_calling: form.tool_calling.clone(),
            sandbox_readable: form
                .sandbox_readable
                .lines()
                .map(str::trim)
                .filter(|l| !l.is_empty())
                .map(str::to_string)
                .collect(),
            sandbox_env: form
                .sandbox_env
                .split(|c: char| c == ',' || c.is_whitespace())
                .filter(|n| !n.is_empty())
                .map(str::to_string)
                .collect(),
            limits,
            sandbox: form
                .sandbox
                .clone()
                .unwrap_or_else(tandem_core::sandbox::Protections::none),
            gateway,
        };
        self.agent.form.dirty = false;
        // The policy and the limits (the gateway has its own command).
        backend.query(
            "saving the agent settings",
            move |app| app.save_agent_settings(&settings),
            |_| Event::Log("agent settings saved".into()),
        );
    }

    fn add_mcp_server(&mut self, backend: &Backend) {
        let form = &self.agent.form.mcp;
        let name = form.name.trim().to_string();
        let mut headers = BTreeMap::new();
        for line in form
            .headers
            .lines()
            .map(str::trim)
            .filter(|l| !l.is_empty())
        {
            match tandem_core::app::parse_mcp_header(line) {
                Ok((header, value)) => {
                    headers.insert(header, value);
                }
                Err(e) => return self.toast(e.to_string(), true),
            }
        }
        let url = form.url.trim().to_string();
        let transport = match form.kind {
            McpFormKind::Http => McpTransport::Http { url, headers },
            McpFormKind::Sse => McpTransport::Sse { url, headers },
            McpFormKind::Stdio => {
                let mut env = BTreeMap::new();
                for line in form.env.lines().map(str::trim).filter(|l| !l.is_empty()) {
                    match line.split_once('=') {
                        Some((key, value)) if !key.trim().is_empty() => {
                            env.insert(key.trim().to_string(), value.to_string());
                        }
                        _ => {
                            let text = format!("Environment lines are NAME=value, not {line:?}");
                            return self.toast(text, true);
                        }
                    }
                }
                McpTransport::Stdio {
                    command: form.command.trim().to_string(),
                    args: form.args.split_whitespace().map(str::to_string).collect(),
                    env,
                }
            }
        };
        // The form is cleared when the list comes back with the new server.
        backend.run("adding the MCP server", move |app| {
            app.add_mcp_server(&name, transport)
        });
    }

    fn save_gateway(&mut self, backend: &Backend, new_token: bool) {
        match self.agent.form.gateway() {
            Ok(settings) => backend.save_gateway(settings, new_token),
            Err(e) => self.toast(e, true),
        }
    }
}
