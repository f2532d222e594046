//! An agent turn's trace in the chat: its plan as a checklist, each tool call as a compact
//! card (the essential argument, risk, decision, duration, a short result with the rest
//! folded), protocol corrections as dim lines, and the call waiting for the person with
//! Approve / Reject / Always allow. Raw JSON only when the person unfolds it.

use std::collections::BTreeMap;

use serde_json::Value;

use crate::command::Command;
use crate::model::agent_state::AgentView;
use crate::widgets::theme;
use tandem_core::display::visible;
use tandem_core::store::{AgentStep, StepDecision, StepKind};
use tandem_core::trust::Risk;

/// Output lines shown before the rest is folded away.
const OUTPUT_LINES: usize = 6;
/// Longer essential arguments are cut (the whole text is on hover).
const ESSENTIAL_CHARS: usize = 300;

// The card of the call waiting for the person.
mod approval;

/// The steps of reply `message_id`, then the calls it waits on.
pub fn trace(
    ui: &mut egui::Ui,
    message_id: i64,
    steps: &[AgentStep],
    agent: &AgentView,
    commands: &mut Vec<Command>,
) {
    let mut read: Vec<&str> = Vec::new();
    for step in steps
        .iter()
        .filter(|s| s.tool.as_deref() == Some("read_file") && ran(s))
    {
        if let Some(path) = step
            .arguments
            .as_ref()
            .and_then(|a| a.get("path")?.as_str())
            && !read.contains(&path)
        {
            read.push(path);
        }
    }
    if !read.is_empty() {
        ui.weak(format!("files read: {}", read.join(", ")));
    }
    for (index, step) in steps.iter().enumerate() {
        match step.kind {
            StepKind::Plan => plan(ui, step, &steps[index + 1..]),
            StepKind::StepDone => {
                // Ticked in its plan's checklist; shown alone only without a plan.
                if !steps[..index].iter().any(|s| s.kind == StepKind::Plan) {
                    let note = step.result.as_deref().unwrap_or("");
                    let n = done_index(step).unwrap_or(0);
                    ui.weak(format!("step {n} done {note}"));
                }
            }
            StepKind::Tool => tool(ui, step),
            StepKind::Correction => {
                let text = step.result.as_deref().unwrap_or("");
                ui.weak(format!("protocol correction: {}", first_line(text)))
                    .on_hover_text(text);
            }
            StepKind::Repair => repair(ui, step),
            StepKind::Check => check(ui, step),
            StepKind::Trimmed => {
                let text = step.result.as_deref().unwrap_or("");
                ui.weak(format!("context trimmed: {}", first_line(text)))
                    .on_hover_text(text);
            }
            StepKind::Final => {}
        }
    }
    for view in agent.approvals_for(message_id) {
        approval::approval(ui, view, agent, commands);
    }
}

fn ran(step: &AgentStep) -> bool {
    step.decision.is_some_and(StepDecision::ran)
}

fn done_index(step: &AgentStep) -> Option<usize> {
    let index = step.arguments.as_ref()?.get("index")?.as_u64()?;
    usize::try_from(index).ok()
}

/// A repair round: the edits that failed and the reply they came from, folded.
fn repair(ui: &mut egui::Ui, step: &AgentStep) {
    let arguments = step.arguments.as_ref();
    let round = arguments
        .and_then(|a| a.get("round")?.as_u64())
        .unwrap_or(0);
    let errors: Vec<(String, String)> = arguments
        .and_then(|a| a.get("errors")?.as_array().cloned())
        .unwrap_or_default()
        .iter()
        .map(|e| {
            let field = |k: &str| e.get(k).and_then(Value::as_str).unwrap_or("").to_string();
            (field("path"), field("error"))
        })
        .collect();
    let title = match errors.len() {
        0 => format!("the check failed; sent back to the model (round {round})"),
        n => format!("{n} edit(s) failed; sent back to the model (round {round})"),
    };
    egui::CollapsingHeader::new(egui::RichText::new(title).weak())
        .id_salt(("repair", step.id))
        .default_open(false)
        .show(ui, |ui| {
            for (path, error) in &errors {
                ui.label(egui::RichText::new(path).strong());
                ui.weak(visible(error));
            }
            if let Some(reply) = step.result.as_deref() {
                egui::CollapsingHeader::new("The reply that failed")
                    .id_salt(("repair-reply", step.id))
                    .default_open(false)
                    .show(ui, |ui| ui.weak(visible(reply)));
            }
        });
}

/// A run of the project's check on the proposal: passed or failed, its problems, its output.
fn check(ui: &mut egui::Ui, step: &AgentStep) {
    let arguments = step.arguments.as_ref();
    let field = |k: &str| arguments.and_then(|a| a.get(k));
    let command = field("command").and_then(Value::as_str).unwrap_or("check");
    let passed = field("passed").and_then(Value::as_bool).unwrap_or(false);
    let problems = field("problems")
        .and_then(Value::as_array)
        .map_or(0, Vec::len);
    // Only a check that took a while says how long (a quick one's time is noise).
    let took = match step.duration_ms.unwrap_or(0) {
        ms if ms >= 2000 => format!(" ({:.1} s)", ms as f64 / 1000.0),
        _ => String::new(),
    };
    let (color, verdict) = match passed {
        true => (theme::OK, "passed".to_string()),
        false => (theme::ERROR, format!("failed · {problems} problem(s)")),
    };
    let title = egui::RichText::new(format!("check `{command}` {verdict}{took}")).color(color);
    egui::CollapsingHeader::new(title)
        .id_salt(("check", step.id))
        .default_open(false)
        .show(ui, |ui| {
            let output = step.result.as_deref().unwrap_or("");
            ui.weak(visible(output));
        });
}

fn first_line(text: &str) -> &str {
    text.lines().find(|l| !l.trim().is_empty()).unwrap_or("")
}

/// A bordered card the width of the panel (steps, approvals, gateway requests).
pub(super) fn card(ui: &mut egui::Ui, stroke: egui::Color32, content: impl FnOnce(&mut egui::Ui)) {
    egui::Frame::new()
        .stroke(egui::Stroke::new(1.0, stroke))
        .corner_radius(4.0)
        .inner_margin(6.0)
        .show(ui, |ui| {
            ui.set_width(ui.available_width());
            content(ui);
        });
    ui.add_space(2.0);
}

fn border(ui: &egui::Ui) -> egui::Color32 {
    ui.visuals().widgets.noninteractive.bg_stroke.color
}

/// The plan with the steps marked done after it (until a newer plan).
fn plan(ui: &mut egui::Ui, step: &AgentStep, later: &[AgentStep]) {
    let items: Vec<&str> = step
        .arguments
        .as_ref()
        .and_then(Value::as_array)
        .map(|a| a.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let mut done: BTreeMap<usize, &str> = BTreeMap::new();
    for s in later.iter().take_while(|s| s.kind != StepKind::Plan) {
        if s.kind == StepKind::StepDone
            && let Some(index) = done_index(s)
        {
            done.insert(index, s.result.as_deref().unwrap_or(""));
        }
    }
    card(ui, border(ui), |ui| {
        ui.horizontal(|ui| {
            ui.strong("Plan");
            let ticked = (1..=items.len()).filter(|n| done.contains_key(n)).count();
            ui.weak(format!("{ticked}/{}", items.len()));
        });
        if items.is_empty() {
            ui.label(step.result.as_deref().unwrap_or(""));
        }
        for (i, item) in items.iter().enumerate() {
            ui.horizontal_wrapped(|ui| match done.get(&(i + 1)) {
                Some(note) => {
                    ui.colored_label(theme::OK, "✔");
                    ui.label(*item);
                    if !note.trim().is_empty() {
                        ui.weak(format!("· {}", note.trim()));
                    }
                }
                None => {
                    ui.weak("•");
                    ui.label(*item);
                }
            });
        }
    });
}

/// What a call is about, in one line: its path, pattern or command, control and invisible
/// characters escaped (see [`visible`]), cut after [`ESSENTIAL_CHARS`].
pub fn essential(tool: &str, args: &Value) -> Option<String> {
    let found = essential_whole(tool, args)?;
    Some(match found.char_indices().nth(ESSENTIAL_CHARS) {
        Some((at, _)) => format!("{}…", &found[..at]),
        None => found,
    })
}

/// [`essential`] uncut, for the approval card's "Show whole command".
fn essential_whole(tool: &str, args: &Value) -> Option<String> {
    let text = |key: &str| args.get(key).and_then(Value::as_str);
    let line = |key: &str| args.get(key).and_then(Value::as_u64);
    let found = match tool {
        "run_shell" => text("command").map(str::to_string),
        "grep" => text("pattern").map(|p| match text("path").or(text("glob")) {
            Some(within) => format!("{p}   in {within}"),
            None => p.to_string(),
        }),
        "rename_file" => Some(format!("{} ➡ {}", text("from")?, text("to")?)),
        "list_files" => Some(text("path").or(text("glob")).unwrap_or(".").to_string()),
        "find_definitions" | "find_references" => text("name").map(str::to_string),
        "read_file" => text("path").map(|p| match (line("start_line"), line("end_line")) {
            (Some(a), Some(b)) => format!("{p}:{a}-{b}"),
            (Some(a), None) => format!("{p}:{a}-"),
            _ => p.to_string(),
        }),
        _ => text("path").map(str::to_string).or_else(|| {
            let compact = args.to_string();
            (compact != "{}" && compact != "null").then_some(compact)
        }),
    }?;
    Some(visible(&found))
}

pub fn risk_badge(ui: &mut egui::Ui, risk: Risk) {
    let color = match risk {
        Risk::Low => theme::OK,
        Risk::Medium => theme::WARN,
        Risk::High => theme::ERROR,
    };
    egui::Frame::new()
        .stroke(egui::Stroke::new(1.0, color))
        .corner_radius(3.0)
        .inner_margin(egui::Margin::symmetric(4, 0))
        .show(ui, |ui| {
            ui.colored_label(color, egui::RichText::new(format!("{risk} risk")).small());
        });
}

fn decision_label(ui: &mut egui::Ui, decision: StepDecision) {
    let (text, color) = match decision {
        StepDecision::Allowed => ("✔ allowed", theme::MUTED),
        StepDecision::Approved => ("✔ approved", theme::OK),
        StepDecision::Rejected => ("✖ rejected", theme::WARN),
        StepDecision::Denied => ("✖ denied", theme::ERROR),
        StepDecision::Cancelled => ("⏹ cancelled", theme::MUTED),
    };
    ui.colored_label(color, text);
}

fn duration(ms: i64) -> String {
    if ms < 1000 {
        format!("{ms} ms")
    } else {
        format!("{:.1} s", ms as f64 / 1000.0)
    }
}

fn tool(ui: &mut egui::Ui, step: &AgentStep) {
    let name = step.tool.as_deref().unwrap_or("tool");
    let null = Value::Null;
    let args = step.arguments.as_ref().unwrap_or(&null);
    let result = step.result.as_deref().unwrap_or("");
    let stroke = if step.is_error && ran(step) {
        theme::ERROR
    } else {
        border(ui)
    };
    card(ui, stroke, |ui| {
        ui.horizontal_wrapped(|ui| {
            ui.strong(name);
            if let Some(text) = essential(name, args) {
                ui.monospace(text);
            }
            if let Some(risk) = step.risk {
                risk_badge(ui, risk);
            }
            if let Some(decision) = step.decision {
                decision_label(ui, decision);
            }
            if let Some(code) = step.exit_code {
                let color = if code == 0 { theme::OK } else { theme::ERROR };
                ui.colored_label(color, format!("exit {code}"));
            }
            if let Some(ms) = step.duration_ms {
                ui.weak(duration(ms));
            }
        });
        if step.decision == Some(StepDecision::Denied) {
            let reason = step.reason.as_deref().unwrap_or("refused by the policy");
            ui.colored_label(theme::ERROR, format!("denied: {reason}"));
        }
        if ran(step) {
            match name {
                "run_shell" => shell(ui, step.id, result),
                _ => summary(ui, name, step.is_error, result),
            }
        }
        egui::CollapsingHeader::new("details")
            .id_salt(("step-details", step.id))
            .default_open(false)
            .show(ui, |ui| {
                let pretty = serde_json::to_string_pretty(args).unwrap_or_default();
                ui.weak("arguments");
                ui.monospace(pretty);
                if name != "run_shell" && !result.is_empty() {
                    ui.weak("result");
                    ui.monospace(result);
                }
            });
    });
}

/// One line on what a non-shell call did; errors in the error colour.
fn summary(ui: &mut egui::Ui, tool: &str, is_error: bool, result: &str) {
    for warning in result.lines().filter(|l| l.starts_with("Warning:")) {
        ui.colored_label(theme::WARN, format!("⚠ {warning}"));
    }
    if is_error {
        ui.colored_label(theme::ERROR, first_line(result));
        return;
    }
    // Listings and matches are counted; a read names its lines; the rest say it themselves.
    let counted = result
        .lines()
        .filter(|l| !l.trim().is_empty() && !l.starts_with('[') && !l.starts_with('…'))
        .count();
    let none = ["No files", "No matches", "No definition", "No references"]
        .iter()
        .any(|no| result.starts_with(no));
    match tool {
        "list_files" if !none => ui.weak(format!("{counted} files listed")),
        "grep" | "find_references" if !none => ui.weak(format!("{counted} matching lines")),
        "find_definitions" if !none => ui.weak(format!("{counted} definitions")),
        _ => ui.weak(first_line(result)),
    };
}

/// A shell result as the model saw it: notes (exit code, timeouts, sandbox), then the
/// `[stdout]` and `[stderr]` sections.
pub struct ShellResult<'a> {
    pub notes: Vec<&'a str>,
    pub stdout: Vec<&'a str>,
    pub stderr: Vec<&'a str>,
}

pub fn parse_shell(result: &str) -> ShellResult<'_> {
    let mut parsed = ShellResult {
        notes: Vec::new(),
        stdout: Vec::new(),
        stderr: Vec::new(),
    };
    let mut section = 0;
    for line in result.lines() {
        if line.starts_with("[stdout") && line.ends_with(']') {
            section = 1;
        } else if line.starts_with("[stderr") && line.ends_with(']') {
            section = 2;
        } else {
            match section {
                0 if !line.trim().is_empty() => parsed.notes.push(line),
                1 => parsed.stdout.push(line),
                2 => parsed.stderr.push(line),
                _ => {}
            }
        }
    }
    for lines in [&mut parsed.stdout, &mut parsed.stderr] {
        while lines.last().is_some_and(|l| l.trim().is_empty()) {
            lines.pop();
        }
        if lines.as_slice() == ["(empty)"] {
            lines.clear();
        }
    }
    parsed
}

fn shell(ui: &mut egui::Ui, id: i64, result: &str) {
    let parsed = parse_shell(result);
    for note in &parsed.notes {
        if note.starts_with("Exit code:") {
            continue;
        } else if note.starts_with("Warning:")
            || note.starts_with("Timed out")
            || note.starts_with("Cancelled")
            || note.starts_with("Killed")
        {
            ui.colored_label(theme::WARN, format!("⚠ {note}"));
        } else if let Some(gaps) = note.split_once("NOT enforced here: ") {
            // The kernel lacked a protection: say which, not just "sandboxed".
            let missing = gaps.1.split(['.', ';']).next().unwrap_or_default();
            ui.colored_label(theme::WARN, format!("⚠ sandbox without: {missing}"))
                .on_hover_text(*note);
        } else if note.starts_with("Sandbox:") {
            let label = match note.contains("network allowed") {
                true => "sandboxed · network allowed",
                false => "sandboxed · no network",
            };
            ui.weak(label).on_hover_text(*note);
        } else {
            ui.weak(*note);
        }
    }
    let mut output: Vec<&str> = parsed.stdout.clone();
    if !parsed.stderr.is_empty() {
        output.push("[stderr]");
        output.extend(&parsed.stderr);
    }
    if output.is_empty() {
        ui.weak("no output");
        return;
    }
    let shown = output.len().min(OUTPUT_LINES);
    ui.monospace(output[..shown].join("\n"));
    if output.len() > shown {
        egui::CollapsingHeader::new(format!("{} more lines", output.len() - shown))
            .id_salt(("shell-output", id))
            .default_open(false)
            .show(ui, |ui| ui.monospace(output[shown..].join("\n")));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn shell_results_split_into_notes_and_output() {
        let text = "Exit code: 3\nWarning: the write sandbox is unavailable (old kernel); the command ran without write restrictions.\n\n[stdout]\nhello\nworld\n\n[stderr (truncated)]\n(empty)\n";
        let parsed = parse_shell(text);
        assert_eq!(parsed.notes.len(), 2);
        assert!(parsed.notes[1].starts_with("Warning: the write sandbox"));
        assert_eq!(parsed.stdout, ["hello", "world"]);
        assert!(parsed.stderr.is_empty());
    }

    #[test]
    fn the_essential_argument_is_the_path_pattern_or_command() {
        assert_eq!(
            essential("run_shell", &json!({"command": "cargo test"})).as_deref(),
            Some("cargo test")
        );
        assert_eq!(
            essential(
                "read_file",
                &json!({"path": "a.rs", "start_line": 3, "end_line": 9})
            )
            .as_deref(),
            Some("a.rs:3-9")
        );
        assert_eq!(
            essential("grep", &json!({"pattern": "fn main", "glob": "*.rs"})).as_deref(),
            Some("fn main   in *.rs")
        );
        assert_eq!(
            essential("find_definitions", &json!({"name": "parse_args"})).as_deref(),
            Some("parse_args")
        );
        assert_eq!(
            essential("outline", &json!({"path": "src/lib.rs"})).as_deref(),
            Some("src/lib.rs")
        );
        assert_eq!(essential("github/search", &json!({})), None);
        let long = "x".repeat(400);
        let cut = essential("run_shell", &json!({ "command": long })).unwrap();
        assert_eq!(cut.chars().count(), ESSENTIAL_CHARS + 1);
    }
}
