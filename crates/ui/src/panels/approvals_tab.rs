//! The Approvals tab: what external tools asked through the approval gateway, newest first,
//! with Approve / Reject for the requests still waiting.

use crate::command::{AgentCommand, Command};
use crate::model::agent_state::{ApproverStatus, GatewayStatus, payload_text};
use crate::model::state::AppState;
use crate::widgets::theme;
use tandem_core::agent::gateway::Language;
use tandem_core::display::{has_hidden, visible};
use tandem_core::store::{DecidedBy, ExecutorDecision, ExecutorRequest, ExecutorRequestKind};

pub fn show(ui: &mut egui::Ui, state: &AppState, commands: &mut Vec<Command>) {
    let gateway = &state.agent.gateway;
    ui.horizontal_wrapped(|ui| match &gateway.status {
        GatewayStatus::Off => {
            ui.weak("The approval gateway is off (turn it on in Settings, Agent).");
        }
        GatewayStatus::Starting => {
            ui.spinner();
            ui.weak("The approval gateway is starting…");
        }
        GatewayStatus::Running { port } => {
            ui.colored_label(theme::OK, format!("Listening on ws://127.0.0.1:{port}/"));
        }
        GatewayStatus::Failed(error) => {
            ui.colored_label(theme::ERROR, format!("The gateway did not start: {error}"));
        }
    });
    let approver = &state.agent.approver;
    if approver.status != ApproverStatus::Stopped {
        let line = approver.status_line(std::time::Instant::now());
        ui.weak(format!("Executor: {line}"));
    }
    egui::ScrollArea::vertical()
        .id_salt("approval_requests")
        .auto_shrink([false, false])
        .show(ui, |ui| {
            for record in &gateway.requests {
                request(ui, state, record, commands);
            }
            if gateway.requests.is_empty() {
                ui.weak("No requests yet");
            }
        });
}

fn request(
    ui: &mut egui::Ui,
    state: &AppState,
    record: &ExecutorRequest,
    commands: &mut Vec<Command>,
) {
    let stroke = if record.is_pending() {
        theme::WARN
    } else {
        ui.visuals().widgets.noninteractive.bg_stroke.color
    };
    crate::panels::agent_steps::card(ui, stroke, |ui| {
        ui.horizontal_wrapped(|ui| {
            ui.strong(format!("#{}", record.id));
            ui.label(match record.kind {
                ExecutorRequestKind::Evaluation => "may this run?",
                ExecutorRequestKind::CodeResponse => "may this output go to the model?",
            });
            ui.weak(visible(
                record.client.as_deref().unwrap_or("unnamed client"),
            ));
            if let Some(risk) = record.risk {
                crate::panels::agent_steps::risk_badge(ui, risk);
            }
            status(ui, record);
        });
        // Everything the client sent is shown escaped: nothing in it can hide the rest.
        if let Some(code) = payload_text(record, "code") {
            ui.monospace(visible(code));
            if has_hidden(code) {
                ui.colored_label(
                    theme::WARN,
                    "⚠ The code holds control or invisible characters, shown escaped.",
                );
            }
        }
        if record.kind == ExecutorRequestKind::Evaluation
            && let Some(note) = Language::of(payload_text(record, "language")).note()
        {
            let language = payload_text(record, "language").unwrap_or_default();
            ui.weak(format!("{}: {note}", visible(language)));
        }
        if let Some(explanation) = payload_text(record, "explanation")
            && !explanation.is_empty()
        {
            ui.label(visible(explanation));
        }
        if record.kind == ExecutorRequestKind::CodeResponse {
            output(ui, record);
        }
        if record.is_pending() {
            let chat = state.chat().map(|c| c.chat.id);
            if state.agent.agent_matches(record, chat).next().is_some() {
                ui.colored_label(
                        theme::ACCENT,
                        "The agent in the open chat waits on this same command: deciding here answers it too",
                    );
            }
            ui.horizontal(|ui| {
                let id = record.id;
                if ui.button("Approve").clicked() {
                    let approved = true;
                    commands.push(AgentCommand::DecideGateway { id, approved }.into());
                }
                if ui.button("Reject").clicked() {
                    let approved = false;
                    commands.push(AgentCommand::DecideGateway { id, approved }.into());
                }
            });
        }
    });
    ui.add_space(2.0);
}

fn status(ui: &mut egui::Ui, record: &ExecutorRequest) {
    let by = match record.decided_by {
        Some(DecidedBy::Auto) => " automatically",
        Some(DecidedBy::Agent) => " by the agent",
        Some(DecidedBy::User) | None => "",
    };
    match record.decision {
        None => {
            ui.colored_label(theme::WARN, "waiting for you");
        }
        Some(ExecutorDecision::Approved) => {
            ui.colored_label(theme::OK, format!("✔ approved{by}"));
        }
        Some(ExecutorDecision::Rejected) => {
            ui.colored_label(theme::ERROR, format!("✖ rejected{by}"));
        }
    }
    if let Some(reason) = &record.reason {
        ui.weak(visible(reason));
    }
}

/// A code response's exit code, stdout and stderr (long output folded).
fn output(ui: &mut egui::Ui, record: &ExecutorRequest) {
    if let Some(code) = record.payload.get("exit_code").and_then(|v| v.as_i64()) {
        let color = if code == 0 { theme::OK } else { theme::ERROR };
        ui.colored_label(color, format!("exit code {code}"));
    }
    for name in ["stdout", "stderr"] {
        let text = payload_text(record, name).unwrap_or("");
        if text.trim().is_empty() {
            continue;
        }
        let text = visible(text);
        let lines: Vec<&str> = text.lines().collect();
        ui.weak(name);
        ui.monospace(lines[..lines.len().min(4)].join("\n"));
        if lines.len() > 4 {
            egui::CollapsingHeader::new(format!("{} more lines", lines.len() - 4))
                .id_salt(("gateway-output", record.id, name))
                .default_open(false)
                .show(ui, |ui| ui.monospace(lines[4..].join("\n")));
        }
    }
}
