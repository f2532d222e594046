//! The chat: messages as markdown with highlighted code, thinking collapsed, each edit tag as a
//! card; the live reply; errors with Retry; the composer and the context meter.

use egui_commonmark::CommonMarkCache;

use crate::command::{AgentCommand, Command};
use crate::model::agent_state::AgentView;
use crate::model::chat_state::{ChatState, MessageView};
use crate::model::outcomes::{Outcome, outcomes};
use crate::model::state::AppState;
use crate::widgets::highlight::HighlightCache;
use crate::widgets::theme;
use tandem_core::edits::{OpStatus, Operation, Segment, Tag, TagKind};
use tandem_core::store::{ApprovalState, ChatMode, MessageStatus, Role};

pub fn show(
    ui: &mut egui::Ui,
    state: &mut AppState,
    markdown: &mut CommonMarkCache,
    highlight: &mut HighlightCache,
    commands: &mut Vec<Command>,
) {
    let send_key = state.prefs.send_key;
    let Some(chat) = state.chat() else {
        ui.vertical_centered(|ui| {
            ui.add_space(40.0);
            ui.label("Ask for a change below: sending starts a new chat.");
        });
        ui.add_space((ui.available_height() - super::composer::height(state) - 10.0).max(0.0));
        super::composer::show(ui, state, false, send_key, commands);
        return;
    };
    let title = if chat.chat.title.is_empty() {
        "New chat"
    } else {
        &chat.chat.title
    };
    // Summarize is laid out first; the title gets what is left, cut short with "…" (whole
    // on hover) rather than running under the button.
    egui::Sides::new().shrink_left().truncate().show(
        ui,
        |ui| ui.add(egui::Label::new(egui::RichText::new(title).strong()).truncate()),
        |ui| {
            let busy = chat.streaming.is_some();
            if ui
                .add_enabled(
                    !busy && !chat.messages.is_empty(),
                    egui::Button::new("Summarize").small(),
                )
                .on_hover_text("Start a new chat from a summary of this one")
                .clicked()
            {
                commands.push(Command::SummarizeIntoNewChat);
            }
        },
    );
    let typed = state.composer.trim();
    // An estimate for this text and for what the editor shows now (tabs, selection).
    let estimate = state
        .preview
        .as_ref()
        .filter(|(prompt, _)| !typed.is_empty() && prompt == typed)
        .filter(|_| state.preview_focus == state.focus_key)
        .map(|(_, estimate)| estimate);
    super::context_meter::show(ui, chat, estimate);
    ui.separator();
    let streaming = chat.streaming.is_some();
    let composer_height = super::composer::height(state);
    egui::ScrollArea::vertical()
        .id_salt("messages")
        .stick_to_bottom(true)
        .auto_shrink([false, false])
        .max_height((ui.available_height() - composer_height).max(80.0))
        .show_viewport(ui, |ui, viewport| {
            if let Some(summary) = chat.summaries.last() {
                summary_card(ui, summary);
            }
            let agent = &state.agent;
            messages(ui, viewport, chat, agent, markdown, highlight, commands)
        });
    ui.separator();
    super::composer::show(ui, state, streaming, send_key, commands);
}

/// Message heights measured when last shown, by message id and panel width: messages outside
/// the viewport are not laid out, only their space is kept (a 500-message chat costs what
/// the visible ones cost).
type Heights = std::collections::HashMap<(i64, u32), f32>;

/// Height assumed for a message never shown at this width.
const ESTIMATED_HEIGHT: f32 = 90.0;
const GAP: f32 = 6.0;

fn messages(
    ui: &mut egui::Ui,
    viewport: egui::Rect,
    chat: &ChatState,
    agent: &AgentView,
    markdown: &mut CommonMarkCache,
    highlight: &mut HighlightCache,
    commands: &mut Vec<Command>,
) {
    let review_ops = chat
        .review
        .as_ref()
        .map(|r| (r.message_id, &r.plan.operations));
    let streaming_id = chat.streaming.as_ref().map(|s| s.message_id);
    // A Plan chat's finished plan can be handed to the agent.
    let plan_reply = (chat.chat.mode == ChatMode::Plan && streaming_id.is_none())
        .then(|| {
            chat.messages
                .iter()
                .rev()
                .find(|m| m.message.role == Role::Assistant)
        })
        .flatten()
        .filter(|m| m.message.status == MessageStatus::Complete)
        .map(|m| m.message.id);
    let heights_id = egui::Id::unique(("message_heights", chat.chat.id));
    let mut heights: Heights = ui.data_mut(|d| d.get_temp(heights_id)).unwrap_or_default();
    let width = ui.available_width().round() as u32;
    // Positions are relative to the content's top, like the viewport.
    let top = ui.min_rect().top();
    for view in &chat.messages {
        if Some(view.message.id) == streaming_id {
            continue;
        }
        let key = (view.message.id, width);
        let y = ui.cursor().top() - top;
        let height = heights.get(&key).copied().unwrap_or(ESTIMATED_HEIGHT);
        let visible = y + height >= viewport.top() - 200.0 && y <= viewport.bottom() + 200.0;
        if visible {
            let ops = review_ops
                .filter(|(id, _)| *id == view.message.id)
                .map(|(_, ops)| ops);
            let start = ui.cursor().top();
            let plan = plan_reply == Some(view.message.id);
            message(ui, view, ops, agent, plan, markdown, highlight, commands);
            heights.insert(key, ui.cursor().top() - start);
        } else {
            ui.allocate_space(egui::vec2(ui.available_width(), height));
        }
        ui.add_space(GAP);
    }
    ui.data_mut(|d| d.insert_temp(heights_id, heights));
    if let Some(streaming) = &chat.streaming {
        bubble(ui, false, |ui| {
            let asking = agent.approvals_for(streaming.message_id).next().is_some();
            ui.horizontal(|ui| {
                if asking {
                    ui.colored_label(theme::WARN, "waiting for your approval");
                    return;
                }
                ui.spinner();
                ui.weak(match streaming.tokens_per_second() {
                    Some(rate) => format!("streaming · {rate:.0} tok/s"),
                    None => "waiting for the model…".to_string(),
                });
            });
            if !streaming.reasoning.is_empty() {
                egui::CollapsingHeader::new("Thinking…")
                    .id_salt(("thinking-live", streaming.message_id))
                    .default_open(false)
                    .show(ui, |ui| ui.weak(&streaming.reasoning));
            }
            let id = streaming.message_id;
            crate::panels::agent_steps::trace(ui, id, &streaming.steps, agent, commands);
            let mut segments: Vec<Segment> = streaming.parser.completed().to_vec();
            segments.extend(streaming.parser.pending());
            render_segments(
                ui,
                streaming.message_id,
                &segments,
                None,
                &[],
                markdown,
                highlight,
            );
        });
    }
}

#[allow(clippy::too_many_arguments)] // the message and everything drawn with it
fn message(
    ui: &mut egui::Ui,
    view: &MessageView,
    ops: Option<&Vec<Operation>>,
    agent: &AgentView,
    plan: bool,
    markdown: &mut CommonMarkCache,
    highlight: &mut HighlightCache,
    commands: &mut Vec<Command>,
) {
    let m = &view.message;
    let user = m.role == Role::User;
    bubble(ui, user, |ui| {
        ui.horizontal(|ui| {
            ui.strong(if user { "You" } else { "Tandem" });
            if let Some(model) = &m.model {
                ui.weak(model);
            }
            match m.approval_state {
                Some(ApprovalState::Pending) => {
                    ui.colored_label(theme::WARN, "waiting for review");
                }
                Some(ApprovalState::Approved) => {
                    let commit = m
                        .commit_hash
                        .as_deref()
                        .map(tandem_core::vcs::short)
                        .unwrap_or("no changes");
                    let part = m
                        .approval_note
                        .as_ref()
                        .and_then(tandem_core::store::ApprovalNote::part_applied)
                        .map(|p| format!(" · {p}"))
                        .unwrap_or_default();
                    let label = ui.colored_label(theme::OK, format!("applied{part} · {commit}"));
                    note_hover(label, m);
                }
                Some(ApprovalState::Rejected) => {
                    note_hover(ui.weak("rejected"), m);
                }
                None => {}
            }
        });
        if user {
            ui.label(&m.content);
            attachments(ui, &view.attachments);
            return;
        }
        crate::panels::agent_steps::trace(ui, m.id, &view.steps, agent, commands);
        let outcomes = outcomes(m, &view.segments);
        render_segments(
            ui,
            m.id,
            &view.segments,
            ops,
            &outcomes,
            markdown,
            highlight,
        );
        if plan
            && ui
                .button("Implement this plan")
                .on_hover_text("Switches the chat to Agent mode and asks it to carry the plan out")
                .clicked()
        {
            commands.push(AgentCommand::ImplementPlan(m.id).into());
        }
        match m.status {
            MessageStatus::Complete | MessageStatus::Streaming => {}
            MessageStatus::Cancelled => {
                ui.colored_label(theme::MUTED, "⏹ cancelled — the text so far is kept");
            }
            MessageStatus::Interrupted => {
                ui.colored_label(
                    theme::WARN,
                    "⚠ interrupted — Tandem stopped while this streamed",
                );
            }
            MessageStatus::Error => {
                ui.horizontal_wrapped(|ui| {
                    ui.colored_label(
                        theme::ERROR,
                        format!("⚠ {}", m.error.as_deref().unwrap_or("the reply failed")),
                    );
                    if ui.button("Retry").clicked() {
                        commands.push(Command::Redo);
                    }
                });
            }
        }
    });
}

fn bubble(ui: &mut egui::Ui, user: bool, content: impl FnOnce(&mut egui::Ui)) {
    let fill = if user {
        ui.visuals().faint_bg_color
    } else {
        ui.visuals().extreme_bg_color
    };
    egui::Frame::new()
        .fill(fill)
        .corner_radius(6.0)
        .inner_margin(8.0)
        .show(ui, |ui| {
            ui.set_width(ui.available_width());
            content(ui);
        });
}

fn render_segments(
    ui: &mut egui::Ui,
    message_id: i64,
    segments: &[Segment],
    ops: Option<&Vec<Operation>>,
    outcomes: &[Option<Outcome>],
    markdown: &mut CommonMarkCache,
    highlight: &mut HighlightCache,
) {
    let mut op_index = 0;
    for (i, segment) in segments.iter().enumerate() {
        match segment {
            Segment::Text { text, .. } => {
                crate::widgets::prose::show(ui, (message_id, i), text, markdown, highlight)
            }
            Segment::Tag(tag) if tag.kind == TagKind::Think => {
                egui::CollapsingHeader::new("Thinking")
                    .id_salt(("think", message_id, i))
                    .default_open(false)
                    .show(ui, |ui| ui.weak(tag.body.trim()));
            }
            Segment::Tag(tag) => {
                let is_op = matches!(
                    tag.kind,
                    TagKind::Write
                        | TagKind::Rename
                        | TagKind::Delete
                        | TagKind::SearchReplace
                        | TagKind::AddDependency
                );
                let op = if is_op && tag.complete {
                    let op = ops.and_then(|o| o.get(op_index));
                    op_index += 1;
                    op
                } else {
                    None
                };
                card(ui, tag, op, outcomes.get(i).and_then(Option::as_ref));
            }
        }
    }
}

fn card(ui: &mut egui::Ui, tag: &Tag, op: Option<&Operation>, outcome: Option<&Outcome>) {
    let (icon, title) = match tag.kind {
        TagKind::Write => ("✏", tag.attr("path").unwrap_or("?").to_string()),
        TagKind::SearchReplace => ("✂", tag.attr("path").unwrap_or("?").to_string()),
        TagKind::Rename => (
            "➡",
            format!(
                "{} ➡ {}",
                tag.attr("from").unwrap_or("?"),
                tag.attr("to").unwrap_or("?")
            ),
        ),
        TagKind::Delete => ("🗑", tag.attr("path").unwrap_or("?").to_string()),
        TagKind::AddDependency => (
            "📦",
            format!("install {}", tag.attr("packages").unwrap_or("")),
        ),
        TagKind::ChatSummary => ("✔", tag.body.trim().to_string()),
        TagKind::ExecuteSql => ("🗄", "SQL (shown, not executed)".to_string()),
        TagKind::SecurityFinding => (
            "🛡",
            tag.attr("title").unwrap_or("Security finding").to_string(),
        ),
        TagKind::ProblemReport => ("⚠", "Problem report".to_string()),
        TagKind::Think => ("", String::new()),
    };
    let (status, color) = match (tag.complete, op) {
        (false, _) => ("in progress…".to_string(), theme::MUTED),
        (true, Some(op)) if op.status == OpStatus::Error => (
            format!("failed: {}", op.error.as_deref().unwrap_or("")),
            theme::ERROR,
        ),
        (true, Some(op)) if op.status == OpStatus::AlreadyApplied => {
            ("already applied".into(), theme::MUTED)
        }
        (true, Some(op)) => (
            format!("ready · +{} −{}", op.added, op.removed),
            theme::ACCENT,
        ),
        (true, None) => match outcome {
            Some(outcome @ Outcome::Applied) => (outcome.text(), theme::OK),
            Some(outcome @ Outcome::Partly { .. }) => (outcome.text(), theme::WARN),
            Some(outcome) => (outcome.text(), theme::MUTED),
            None => (String::new(), theme::MUTED),
        },
    };
    // A partly applied file shows the hunks it left out on hover.
    let left_out = match outcome {
        Some(Outcome::Partly { left_out, .. }) => left_out.join("\n"),
        _ => String::new(),
    };
    egui::Frame::new()
        .stroke(egui::Stroke::new(
            1.0,
            ui.visuals().widgets.noninteractive.bg_stroke.color,
        ))
        .corner_radius(4.0)
        .inner_margin(6.0)
        .show(ui, |ui| {
            ui.set_width(ui.available_width());
            ui.horizontal_wrapped(|ui| {
                ui.label(icon);
                ui.monospace(title);
                if let Some(description) = tag.attr("description") {
                    ui.weak(description);
                }
            });
            if !status.is_empty() {
                let shown = ui.colored_label(color, status);
                if !left_out.is_empty() {
                    shown.on_hover_ui(|ui| {
                        ui.weak("Left out:");
                        ui.monospace(&left_out);
                    });
                }
            }
            if let Some(note) = op.and_then(|op| op.note.as_deref()) {
                ui.weak(format!("note: {note}"));
            }
            if tag.kind == TagKind::SecurityFinding
                || tag.kind == TagKind::ProblemReport
                || tag.kind == TagKind::ExecuteSql
            {
                ui.weak(tag.body.trim());
            }
        });
}

/// What was attached to a message: images as thumbnails, files by name.
fn attachments(ui: &mut egui::Ui, attached: &[tandem_core::app::ShownAttachment]) {
    if attached.is_empty() {
        return;
    }
    ui.horizontal_wrapped(|ui| {
        for shown in attached {
            let name = &shown.attachment.name;
            let thumb = shown
                .image
                .as_ref()
                .and_then(|bytes| crate::widgets::thumbnail::show(ui, bytes, 96.0));
            match thumb {
                Some(image) => {
                    image.on_hover_text(name);
                }
                None => {
                    ui.weak(format!("attached: {name}"));
                }
            }
        }
    });
}

/// What the person left out of a proposal and why, on hover over its state.
fn note_hover(label: egui::Response, message: &tandem_core::store::Message) {
    let Some(note) = &message.approval_note else {
        return;
    };
    let mut text = String::new();
    for left in &note.left_out {
        let what = match (left.whole, left.hunks.len()) {
            (true, _) => "the whole change".to_string(),
            (false, n) => format!("{n} hunk(s)"),
        };
        text.push_str(&format!("left out: {} ({what})\n", left.path));
    }
    if let Some(reason) = &note.reason {
        text.push_str(&format!("reason: {reason}"));
    }
    label.on_hover_text(text.trim_end());
}

/// The summary sent in place of older turns: what it stands for, folded open on demand.
fn summary_card(ui: &mut egui::Ui, summary: &tandem_core::store::ChatSummary) {
    let what = match (summary.source_chat_id, summary.up_to_message_id) {
        (Some(_), 0) => format!(
            "Started from a summary of another chat ({} turns)",
            summary.turns
        ),
        _ => format!(
            "{} earlier turn(s) summarized: the model gets this summary in their place",
            summary.turns
        ),
    };
    egui::CollapsingHeader::new(egui::RichText::new(what).weak())
        .id_salt(("summary", summary.id))
        .default_open(false)
        .show(ui, |ui| {
            ui.label(&summary.content);
            if let Some(model) = &summary.model {
                ui.weak(format!("by {model}"));
            }
        });
}
