//! The call waiting for the person: what it is about (escaped so that nothing in it can hide,
//! long commands shown whole on request), why it is asked, and Approve / Reject / Always
//! allow, with the gateway requests about the same command.

use serde_json::Value;

use super::{ESSENTIAL_CHARS, essential, essential_whole, risk_badge};
use crate::command::{AgentCommand, Command};
use crate::model::agent_state::{AgentView, PermissionView};
use crate::widgets::theme;
use tandem_core::agent::runner::Answer;
use tandem_core::display::{has_hidden, visible};

/// The card, drawn under the steps of the reply that waits on it.
pub(super) fn approval(
    ui: &mut egui::Ui,
    view: &PermissionView,
    agent: &AgentView,
    commands: &mut Vec<Command>,
) {
    let a = &view.approval;
    egui::Frame::new()
        .stroke(egui::Stroke::new(1.5, theme::WARN))
        .corner_radius(4.0)
        .inner_margin(8.0)
        .show(ui, |ui| {
            ui.set_width(ui.available_width());
            ui.horizontal_wrapped(|ui| {
                ui.colored_label(theme::WARN, "⚠ Approval needed:");
                ui.strong(visible(&a.tool));
                risk_badge(ui, a.risk);
            });
            subject(ui, a.id, &a.tool, &a.arguments);
            if let Some(description) = a.arguments.get("description").and_then(Value::as_str) {
                ui.label(visible(description));
            }
            if !a.reason.is_empty() {
                ui.label(visible(&a.reason));
            }
            for reason in &a.reasons {
                ui.weak(format!("• {}", visible(reason)));
            }
            egui::CollapsingHeader::new("all arguments")
                .id_salt(("approval-args", a.id))
                .default_open(false)
                .show(ui, |ui| {
                    let pretty = serde_json::to_string_pretty(&a.arguments).unwrap_or_default();
                    ui.monospace(visible(&pretty));
                });
            for request in agent.gateway_matches(view) {
                let client = request.client.as_deref().unwrap_or("an external tool");
                ui.colored_label(
                    theme::ACCENT,
                    format!(
                        "{} asks about this same command (gateway request #{}): \
                         deciding here answers both",
                        visible(client),
                        request.id
                    ),
                );
            }
            ui.horizontal_wrapped(|ui| {
                let mut answer = |answer: Answer| {
                    commands.push(AgentCommand::Answer { id: a.id, answer }.into());
                };
                let key = |answer| {
                    let command = AgentCommand::AnswerWaiting(answer).into();
                    crate::keymap::hint(ui, &command)
                };
                let (yes, no, always) = (
                    key(Answer::Approve),
                    key(Answer::Reject),
                    key(Answer::AlwaysAllow),
                );
                if ui.button("Approve").on_hover_text(yes).clicked() {
                    answer(Answer::Approve);
                }
                if ui.button("Reject").on_hover_text(no).clicked() {
                    answer(Answer::Reject);
                }
                if ui
                    .button(format!("Always allow \"{}\"", visible(&a.always_pattern)))
                    .on_hover_text(format!(
                        "{always}: approve, and allow calls matching this pattern from now on"
                    ))
                    .clicked()
                {
                    answer(Answer::AlwaysAllow);
                }
            });
        });
    ui.add_space(2.0);
}

/// The command (or path, pattern…) in a code frame: escaped, cut when long with the whole of
/// it one click away, and a warning when it holds characters a display would hide.
fn subject(ui: &mut egui::Ui, id: u64, tool: &str, arguments: &Value) {
    let Some(text) = essential(tool, arguments) else {
        return;
    };
    egui::Frame::new()
        .fill(ui.visuals().code_bg_color)
        .corner_radius(4.0)
        .inner_margin(6.0)
        .show(ui, |ui| {
            ui.set_width(ui.available_width());
            ui.monospace(text);
        });
    let raw = arguments.get("command").and_then(Value::as_str);
    if raw.is_some_and(has_hidden) {
        ui.colored_label(
            theme::WARN,
            "⚠ The command holds control or invisible characters, shown escaped (\\r, \\x1b, \
             \\u{202e}…): what runs is exactly what is shown.",
        );
    }
    let Some(whole) = essential_whole(tool, arguments) else {
        return;
    };
    if whole.chars().count() > ESSENTIAL_CHARS {
        egui::CollapsingHeader::new("Show whole command")
            .id_salt(("approval-whole", id))
            .default_open(false)
            .show(ui, |ui| {
                ui.monospace(whole);
            });
    }
}
