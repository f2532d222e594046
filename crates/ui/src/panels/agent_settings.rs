//! The Agent section of the settings window: the project's trust level, the approval
//! policy and limits, MCP servers, and the approval gateway. Saved by background jobs.

use crate::command::{AgentCommand, Command};
use crate::model::agent_state::{AgentForm, ApproverStatus, GatewayStatus, McpFormKind};
use crate::model::state::AppState;
use crate::widgets::theme;
use tandem_core::agent::gateway::CodeResponsePolicy;
use tandem_core::store::McpTransport;
use tandem_core::trust::{Risk, Trust};

const TRUST: [(Trust, &str, &str); 3] = [
    (
        Trust::Trusted,
        "Trusted",
        "May also write outside the project (high risk: asked first by default)",
    ),
    (
        Trust::Scoped,
        "Scoped",
        "May change this project only; every command runs in the sandbox",
    ),
    (
        Trust::ReadOnly,
        "Read-only",
        "May only read and search: no edits, no commands, no MCP tools",
    ),
];

const LEVELS: [(Option<Risk>, &str); 4] = [
    (None, "none"),
    (Some(Risk::Low), "low"),
    (Some(Risk::Medium), "medium"),
    (Some(Risk::High), "high"),
];

pub fn show(ui: &mut egui::Ui, state: &mut AppState, commands: &mut Vec<Command>) {
    ui.heading("Agent");
    if let Some(project) = &state.project {
        ui.strong(format!("Trust for {}", project.project.name));
        let current = project.project.settings.agent_trust.unwrap_or_default();
        for (trust, label, explanation) in TRUST {
            ui.horizontal_wrapped(|ui| {
                if ui.radio(current == trust, label).clicked() {
                    commands.push(AgentCommand::SetTrust(trust).into());
                }
                ui.weak(explanation);
            });
        }
        // Trusted runs CLI agents with their own approvals and sandbox off: asked once.
        if current == Trust::Trusted {
            let mut bypass = project.project.settings.cli_agent_bypass;
            let response = ui
                .checkbox(
                    &mut bypass,
                    "Let CLI agents (Codex, Claude Code) run without their own approvals and sandbox",
                )
                .on_hover_text(
                    "Tandem's sandbox still keeps them in their scratch copy. Without this, a \
                     Trusted turn with a CLI agent is refused.",
                );
            if response.changed() {
                commands.push(AgentCommand::AllowCliAgentBypass(bypass).into());
            }
        }
    }
    let form = &mut state.agent.form;
    if !form.loaded {
        ui.horizontal(|ui| {
            ui.spinner();
            ui.weak("Loading the agent settings…");
        });
        return;
    }
    sandbox(ui, form);
    super::workspaces::show(ui, &state.workspaces, commands);
    policy(ui, form, commands);
    ui.add_space(6.0);
    mcp(ui, state, commands);
    ui.add_space(6.0);
    gateway(ui, state, commands);
    ui.separator();
    approver(ui, state, commands);
}

/// What the sandbox enforces here; where it has gaps, every command is asked.
fn sandbox(ui: &mut egui::Ui, form: &AgentForm) {
    let Some(found) = &form.sandbox else {
        return;
    };
    let gaps = found.gaps();
    if gaps.is_empty() {
        ui.weak(
            "Sandbox: a container of its own on this machine (no home, no network, no \
             terminal, limits; .git read-only)",
        )
        .on_hover_text(found.summary());
    } else {
        ui.colored_label(
            theme::WARN,
            format!(
                "⚠ The sandbox here cannot stop {}: every command is asked",
                gaps.join(", ")
            ),
        )
        .on_hover_text(found.summary());
    }
}

fn policy(ui: &mut egui::Ui, form: &mut AgentForm, commands: &mut Vec<Command>) {
    ui.horizontal(|ui| {
        ui.label("Approve without asking up to");
        for (level, label) in LEVELS {
            if ui
                .selectable_label(form.auto_approve_up_to == level, label)
                .clicked()
            {
                form.auto_approve_up_to = level;
                form.dirty = true;
            }
        }
    })
    .response
    .on_hover_text("Calls above this risk wait for your approval");
    ui.weak(
        "Patterns, one a line: a shell command glob such as `cargo test *`, or `tool:NAME` \
         for a tool. Deny wins over ask, ask over allow; built-in hard denies always apply.",
    );
    let mut changed = false;
    egui::Grid::new("agent_policy")
        .num_columns(2)
        .show(ui, |ui| {
            for (label, text, hint) in [
                ("Deny", &mut form.deny, "rm -rf *"),
                ("Ask", &mut form.ask, "git push *"),
                ("Allow", &mut form.allow, "cargo test *"),
            ] {
                ui.label(label);
                changed |= ui
                    .add(
                        egui::TextEdit::multiline(text)
                            .hint_text(hint)
                            .desired_rows(2)
                            .desired_width(320.0)
                            .code_editor(),
                    )
                    .changed();
                ui.end_row();
            }
            ui.label("Max steps per turn");
            changed |= ui
                .add(egui::TextEdit::singleline(&mut form.max_steps).desired_width(60.0))
                .changed();
            ui.end_row();
            ui.label("Shell timeout (seconds)");
            changed |= ui
                .add(egui::TextEdit::singleline(&mut form.shell_timeout).desired_width(60.0))
                .changed();
            ui.end_row();
            ui.label("Sandbox may also read").on_hover_text(
                "Commands run in a container holding the system, the project and the usual \
                 toolchains and caches (~/.cargo/bin, ~/.rustup, ~/.cache/pip…), each by its own \
                 path. One more directory a line, mounted read-only; ~/ is your home. \
                 Credentials (~/.ssh, ~/.aws, ~/.config…) stay hidden.",
            );
            changed |= ui
                .add(
                    egui::TextEdit::multiline(&mut form.sandbox_readable)
                        .hint_text("~/.sdkman")
                        .desired_rows(2)
                        .desired_width(320.0)
                        .code_editor(),
                )
                .changed();
            ui.end_row();
            ui.label("Variables commands see").on_hover_text(
                "Besides PATH, the locale and toolchain settings (CARGO_HOME, GOPATH…): one \
                 name a line. Names that look like secrets (…_TOKEN, …_KEY, passwords) are \
                 never passed.",
            );
            changed |= ui
                .add(
                    egui::TextEdit::multiline(&mut form.sandbox_env)
                        .hint_text("MY_TOOL_HOME")
                        .desired_rows(1)
                        .desired_width(320.0)
                        .code_editor(),
                )
                .changed();
            ui.end_row();
            ui.label("Command limits").on_hover_text(
                "What each command and everything it starts may use: processes alive at once, \
                 memory per process (MiB), the largest file (MiB), CPU time per process \
                 (seconds), each private temp directory (MiB)",
            );
            ui.vertical(|ui| {
                let names = [
                    "processes at once",
                    "MiB of memory per process",
                    "MiB per file",
                    "s of CPU per process",
                    "MiB of temp space",
                ];
                for (field, name) in form.limits.iter_mut().zip(names) {
                    ui.horizontal(|ui| {
                        changed |= ui
                            .add(egui::TextEdit::singleline(field).desired_width(60.0))
                            .changed();
                        ui.weak(name);
                    });
                }
            });
            ui.end_row();
            ui.label("Tool calling");
            ui.horizontal(|ui| {
                for (value, hint) in [
                    (
                        "auto",
                        "Native when the model supports it, else the text protocol",
                    ),
                    ("native", "The provider's function calling"),
                    (
                        "text",
                        "Directives in the reply text (for models without tools)",
                    ),
                ] {
                    if ui
                        .selectable_label(form.tool_calling == value, value)
                        .on_hover_text(hint)
                        .clicked()
                    {
                        form.tool_calling = value.to_string();
                        changed = true;
                    }
                }
            });
            ui.end_row();
        });
    form.dirty |= changed;
    if ui.button("Save agent settings").clicked() {
        commands.push(AgentCommand::SaveSettings.into());
    }
}

fn mcp(ui: &mut egui::Ui, state: &mut AppState, commands: &mut Vec<Command>) {
    ui.strong("MCP servers");
    ui.weak("Their tools are offered in Agent mode, named server/tool; calls are asked about.");
    for server in &state.agent.mcp_servers {
        ui.horizontal_wrapped(|ui| {
            let mut enabled = server.enabled;
            if ui.checkbox(&mut enabled, &server.name).changed() {
                commands.push(AgentCommand::SetMcpServerEnabled(server.id, enabled).into());
            }
            let what = match &server.transport {
                McpTransport::Stdio { command, args, .. } => {
                    format!("{command} {}", args.join(" "))
                }
                McpTransport::Http { url, .. } => url.clone(),
                McpTransport::Sse { url, .. } => format!("{url} (SSE)"),
            };
            ui.monospace(what);
            // Header values are secrets: only their masked form is ever shown.
            for header in server.transport.masked_headers() {
                ui.weak(header);
            }
            if ui.small_button("Remove").clicked() {
                commands.push(AgentCommand::RemoveMcpServer(server.id).into());
            }
        });
    }
    let form = &mut state.agent.form.mcp;
    egui::Grid::new("mcp_form").num_columns(2).show(ui, |ui| {
        ui.label("Name");
        ui.add(egui::TextEdit::singleline(&mut form.name).hint_text("letters, digits, - and _"));
        ui.end_row();
        ui.label("Transport");
        ui.horizontal(|ui| {
            ui.selectable_value(&mut form.kind, McpFormKind::Stdio, "stdio (a command)");
            ui.selectable_value(&mut form.kind, McpFormKind::Http, "HTTP");
            ui.selectable_value(&mut form.kind, McpFormKind::Sse, "SSE (legacy)");
        });
        ui.end_row();
        if form.kind != McpFormKind::Stdio {
            ui.label("URL");
            let hint = match form.kind {
                McpFormKind::Sse => "http://127.0.0.1:8080/sse",
                _ => "http://127.0.0.1:8080/mcp",
            };
            ui.add(egui::TextEdit::singleline(&mut form.url).hint_text(hint));
            ui.end_row();
            ui.label("Headers");
            ui.add(
                egui::TextEdit::multiline(&mut form.headers)
                    .hint_text("Name: value, one a line (Authorization: Bearer …)")
                    .password(true)
                    .desired_rows(2),
            );
            ui.end_row();
        } else {
            ui.label("Command");
            ui.add(egui::TextEdit::singleline(&mut form.command).hint_text("npx"));
            ui.end_row();
            ui.label("Arguments");
            ui.add(egui::TextEdit::singleline(&mut form.args).hint_text("separated by spaces"));
            ui.end_row();
            ui.label("Environment");
            ui.add(
                egui::TextEdit::multiline(&mut form.env)
                    .hint_text("NAME=value, one a line; ${NAME} passes the app's NAME")
                    .desired_rows(2),
            );
            ui.end_row();
        }
    });
    if ui.button("Add MCP server").clicked() {
        commands.push(AgentCommand::AddMcpServer.into());
    }
}

fn gateway(ui: &mut egui::Ui, state: &mut AppState, commands: &mut Vec<Command>) {
    ui.strong("Approval gateway");
    ui.weak(
        "A WebSocket server on 127.0.0.1 through which external tools ask you before running \
         code and before giving its output to a model. Requests appear in the Approvals tab.",
    );
    let form = &mut state.agent.form;
    let mut enabled = form.gateway_enabled;
    if ui
        .checkbox(&mut enabled, "Enable the approval gateway")
        .changed()
    {
        commands.push(AgentCommand::SetGatewayEnabled(enabled).into());
    }
    match &state.agent.gateway.status {
        GatewayStatus::Running { port } => {
            ui.colored_label(theme::OK, format!("Listening on ws://127.0.0.1:{port}/"));
        }
        GatewayStatus::Starting => {
            ui.weak("Starting…");
        }
        GatewayStatus::Failed(error) => {
            ui.colored_label(theme::ERROR, error);
        }
        GatewayStatus::Off => {}
    }
    egui::Grid::new("gateway_form")
        .num_columns(2)
        .show(ui, |ui| {
            ui.label("Port");
            ui.add(egui::TextEdit::singleline(&mut form.gateway_port).desired_width(70.0));
            ui.end_row();
            ui.label("Token");
            ui.horizontal(|ui| {
                if form.gateway_token.is_empty() {
                    ui.weak("made when the gateway is first enabled");
                } else {
                    ui.monospace(&form.gateway_token);
                    if ui.small_button("Copy").clicked() {
                        ui.ctx().copy_text(form.gateway_token.clone());
                    }
                }
                if ui
                    .small_button("Regenerate")
                    .on_hover_text("Clients holding the old token can no longer connect")
                    .clicked()
                {
                    commands.push(AgentCommand::RegenerateGatewayToken.into());
                }
            });
            ui.end_row();
            ui.label("Approve evaluations up to");
            ui.horizontal(|ui| {
                for (level, label) in LEVELS {
                    ui.selectable_value(&mut form.gateway_auto.evaluations_up_to, level, label);
                }
            });
            ui.end_row();
            ui.label("Approve code responses");
            ui.horizontal(|ui| {
                let auto = &mut form.gateway_auto.code_responses;
                ui.selectable_value(auto, CodeResponsePolicy::Always, "always");
                ui.selectable_value(auto, CodeResponsePolicy::OnSuccess, "on exit 0");
                ui.selectable_value(auto, CodeResponsePolicy::Never, "never");
            });
            ui.end_row();
        });
    if ui.button("Apply gateway settings").clicked() {
        commands.push(AgentCommand::SaveGateway.into());
    }
}

/// The approval client: Tandem connects out to an executor and answers its requests with the
/// gateway's rules above.
fn approver(ui: &mut egui::Ui, state: &mut AppState, commands: &mut Vec<Command>) {
    ui.strong("Executor (approval client)");
    ui.weak(
        "Connect out to an executor's WebSocket and answer its security evaluations and code \
         responses with the auto-approve rules above. Requests appear in the Approvals tab.",
    );
    let approver = &mut state.agent.approver;
    let line = approver.status_line(std::time::Instant::now());
    match &approver.status {
        ApproverStatus::Connected => ui.colored_label(theme::OK, line),
        ApproverStatus::Refused(_) => ui.colored_label(theme::ERROR, line),
        ApproverStatus::Reconnecting { .. } => ui.colored_label(theme::WARN, line),
        ApproverStatus::Connecting | ApproverStatus::Stopped => ui.weak(line),
    };
    egui::Grid::new("approver_form")
        .num_columns(2)
        .show(ui, |ui| {
            ui.label("Address");
            ui.add(
                egui::TextEdit::singleline(&mut approver.url)
                    .hint_text("ws://127.0.0.1:4002/")
                    .desired_width(260.0),
            );
            ui.end_row();
            ui.label("Token");
            let hint = match &approver.token_hint {
                Some(hint) => format!("saved ({hint}); type to replace"),
                None => "the executor's token".to_string(),
            };
            ui.add(
                egui::TextEdit::singleline(&mut approver.token)
                    .password(true)
                    .hint_text(hint)
                    .desired_width(260.0),
            );
            ui.end_row();
        });
    ui.horizontal(|ui| {
        if ui.button("Connect").clicked() {
            commands.push(AgentCommand::ConnectApprover.into());
        }
        let connected = approver.status != ApproverStatus::Stopped;
        if ui
            .add_enabled(connected, egui::Button::new("Disconnect"))
            .clicked()
        {
            commands.push(AgentCommand::DisconnectApprover.into());
        }
    });
}
