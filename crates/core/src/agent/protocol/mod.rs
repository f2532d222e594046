//! The text protocol for models without native tool calling. Each reply carries exactly one
//! directive line — `PLAN {…}` first, then `TOOL_CALL {…}`, `STEP_DONE {…}` or `FINAL {…}` —
//! which [`parse_turn`] reads and [`ProtocolState::accept`] checks against the sequence rules.
//! Anything wrong becomes a [`correction`]: a short message sent back as the next user turn
//! saying exactly what to send instead, because small models recover from a precise
//! instruction far more often than from a vague one.
//!
//! Parsing is lenient about form and strict about meaning. `<think>` blocks, prose, code
//! fences, a colon after the keyword, any letter case and pretty-printed or slightly broken
//! JSON (raw line breaks in strings, trailing commas) are all accepted; so are the tool-call
//! shapes local models are trained on (`<tool_call>{…}</tool_call>`, `<function=NAME>…`,
//! `<function_call>`, `[TOOL_CALLS]`, a bare `{"name": …, "arguments": …}`). Two different
//! directives in one reply are refused rather than guessed between; the same directive
//! repeated (in prose and again in a code fence) counts once. What the model quotes is not a
//! directive: one inside a code fence counts only when it is all the fence holds (the
//! keyword may stand before the fence), and one on a Markdown quote line (`> …`) never does,
//! so a README or a tool result shown back, calls and all, runs nothing.
//!
//! In native tool-calling mode [`tool_calls_in_text`] is stricter still: a call written as
//! text counts only when it is the whole reply.
//!
//! Replanning is not supported: a second `PLAN` is refused. A small model that may replan
//! tends to replan instead of working; a step that turns out unnecessary is closed with
//! `STEP_DONE` and a note saying so.

mod calls;
mod keywords;
mod scan;

use std::fmt::Write as _;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::llm::{ToolCall, ToolSpec};

/// The protocol instructions; `{tools}` and `{max_steps}` are filled in by [`protocol_prompt`].
const TEMPLATE: &str = include_str!("../../../../../prompts/agent_protocol.md");
/// Longest tool description put in the prompt: MCP servers can ship essays.
const MAX_DESCRIPTION_CHARS: usize = 400;

/// What one reply asks for.
#[derive(Debug, Clone, PartialEq)]
pub enum Directive {
    Plan {
        steps: Vec<String>,
    },
    ToolCall(ToolCall),
    /// `index` is 1-based, as the model sees the plan.
    StepDone {
        index: usize,
        note: Option<String>,
    },
    Final {
        message: String,
    },
}

impl Directive {
    /// The keyword, for logs and messages.
    pub fn keyword(&self) -> &'static str {
        match self {
            Directive::Plan { .. } => "PLAN",
            Directive::ToolCall(_) => "TOOL_CALL",
            Directive::StepDone { .. } => "STEP_DONE",
            Directive::Final { .. } => "FINAL",
        }
    }
}

/// Why a reply could not be read. `keyword` fields name the directive or tool-call form as the
/// model wrote it (`TOOL_CALL`, `<tool_call>`…), so the message points at the right place.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ProtocolError {
    #[error(
        "the reply contains no directive (a line starting with PLAN, TOOL_CALL, STEP_DONE or FINAL)"
    )]
    NoDirective,
    #[error("the reply contains {} directives ({}); exactly one is allowed per reply", .found.len(), .found.join(", "))]
    MultipleDirectives { found: Vec<String> },
    #[error(
        "`{keyword}` is not a directive; the only directives are PLAN, TOOL_CALL, STEP_DONE and FINAL"
    )]
    UnknownKeyword { keyword: String },
    #[error("{keyword} must be followed by a JSON object on the same line")]
    MissingJson { keyword: &'static str },
    #[error(
        "the JSON after {keyword} is never closed: a `}}` or `]` is missing, or a string has no closing quote"
    )]
    UnclosedJson { keyword: &'static str },
    #[error("the JSON after {keyword} is not valid: {message}")]
    BadJson {
        keyword: &'static str,
        message: String,
    },
    #[error("{keyword} must be followed by a JSON object `{{…}}`, not {found}")]
    NotAnObject {
        keyword: &'static str,
        found: &'static str,
    },
    #[error("the JSON of {keyword} has no \"{field}\" field; it must hold {expected}")]
    MissingField {
        keyword: &'static str,
        field: &'static str,
        expected: &'static str,
    },
    #[error("the \"{field}\" field of {keyword} must be {expected}")]
    WrongField {
        keyword: &'static str,
        field: &'static str,
        expected: &'static str,
    },
    #[error(
        "the arguments of the `{tool}` call must be a JSON object (like {{\"path\": \"src/main.rs\"}}), not {found}"
    )]
    ArgumentsNotObject { tool: String, found: &'static str },
    #[error("the PLAN has no steps")]
    EmptyPlan,
}

impl ProtocolError {
    /// The directive the error is about, when known; tool-call forms count as `TOOL_CALL`.
    fn directive(&self) -> Option<&'static str> {
        use ProtocolError as E;
        match self {
            E::NoDirective | E::MultipleDirectives { .. } | E::UnknownKeyword { .. } => None,
            E::EmptyPlan => Some("PLAN"),
            E::ArgumentsNotObject { .. } => Some("TOOL_CALL"),
            E::MissingJson { keyword }
            | E::UnclosedJson { keyword }
            | E::BadJson { keyword, .. }
            | E::NotAnObject { keyword, .. }
            | E::MissingField { keyword, .. }
            | E::WrongField { keyword, .. } => match *keyword {
                k @ ("PLAN" | "STEP_DONE" | "FINAL") => Some(k),
                _ => Some("TOOL_CALL"),
            },
        }
    }
}

/// Reads the one directive in a model's reply. See the module docs for what is tolerated.
pub fn parse_turn(text: &str) -> Result<Directive, ProtocolError> {
    parse_turn_after(text, &[])
}

/// [`parse_turn`] for a reply that follows the tool results `shown` (this turn's, as the
/// model received them): a directive written exactly as it stands in one of them is the
/// model repeating what it read, not asking, and does not count.
pub fn parse_turn_after(text: &str, shown: &[&str]) -> Result<Directive, ProtocolError> {
    let text = scan::strip_think(text);
    let by_keyword = keywords::keyword_directives(&text);
    let claimed: Vec<(usize, usize)> = by_keyword.found.iter().map(|f| (f.start, f.end)).collect();
    let mut found = by_keyword.found;
    found.extend(calls::alternative_calls(&text, &claimed));
    // Quoted text (a fence around more than the directive, a `> ` line) is never a directive.
    let mut found = scan::drop_quoted(&text, found);
    found.retain(|f| {
        !text
            .get(f.start..f.end)
            .is_some_and(|quote| in_any(shown, quote))
    });
    found.sort_by_key(|f| f.start);
    let mut unique: Vec<scan::Found> = Vec::new();
    for f in found {
        if !unique.iter().any(|u| u.result == f.result) {
            unique.push(f);
        }
    }
    match unique.len() {
        0 => Err(
            match (by_keyword.bare.first(), keywords::unknown_keyword(&text)) {
                (Some(keyword), _) => ProtocolError::MissingJson {
                    keyword: keyword.name(),
                },
                (None, Some(keyword)) => ProtocolError::UnknownKeyword { keyword },
                (None, None) => ProtocolError::NoDirective,
            },
        ),
        1 => unique
            .pop()
            .map_or(Err(ProtocolError::NoDirective), |f| f.result),
        _ => Err(ProtocolError::MultipleDirectives {
            found: unique.iter().map(|f| f.what.to_string()).collect(),
        }),
    }
}

/// The tool calls of a reply written as text by a model that has native tool calling but did
/// not use it — only when the reply is nothing but calls: after its `<think>` blocks are
/// removed, the whole reply is one call (`<tool_call>{…}`, `<function=NAME>…`,
/// `<function_call>{…}`, `[TOOL_CALLS] […]` or a bare `{"name": …, "arguments": …}`), or
/// several of them separated only by whitespace, optionally wrapped in one code fence around
/// exactly that. A call with prose around it, inside a fence that holds anything else, or
/// quoted from a file or a tool result is the model talking about a call, not making one, so
/// the reply is its answer and nothing runs. Empty when any form in it is malformed.
pub fn tool_calls_in_text(text: &str) -> Vec<ToolCall> {
    tool_calls_in_text_after(text, &[])
}

/// [`tool_calls_in_text`] for a reply that follows the tool results `shown`: a reply that
/// repeats a call exactly as it stands in one of them runs nothing.
pub fn tool_calls_in_text_after(text: &str, shown: &[&str]) -> Vec<ToolCall> {
    let stripped = scan::strip_think(text);
    let body = scan::unfence(stripped.trim());
    if in_any(shown, body.trim()) {
        return Vec::new();
    }
    let mut calls = Vec::new();
    let mut covered = 0;
    for found in calls::alternative_calls(body, &[]) {
        // The calls of one `[TOOL_CALLS] […]` list share its range.
        let same_range = found.start < covered && found.end <= covered;
        let gap = body.get(covered..found.start);
        if !same_range && gap.is_none_or(|gap| !gap.trim().is_empty()) {
            return Vec::new();
        }
        match found.result {
            Ok(Directive::ToolCall(call)) => calls.push(call),
            _ => return Vec::new(),
        }
        covered = covered.max(found.end);
    }
    if body
        .get(covered..)
        .is_none_or(|rest| !rest.trim().is_empty())
    {
        return Vec::new();
    }
    calls
}

/// Whether `quote` (not blank) stands in one of `shown`.
fn in_any(shown: &[&str], quote: &str) -> bool {
    let quote = quote.trim();
    !quote.is_empty() && shown.iter().any(|s| s.contains(quote))
}

const ALL_FORMS: &str = r#"TOOL_CALL {"name": "read_file", "arguments": {"path": "src/main.rs"}}
STEP_DONE {"index": 1, "note": "what was done"}
FINAL {"message": "what you did, for the user"}
(PLAN {"steps": ["first step", "second step"]} is only for your first reply.)"#;

fn example(directive: &str) -> &'static str {
    match directive {
        "PLAN" => r#"PLAN {"steps": ["Read src/main.rs", "Fix the bug"]}"#,
        "STEP_DONE" => r#"STEP_DONE {"index": 1, "note": "what was done"}"#,
        "FINAL" => r#"FINAL {"message": "what you did, for the user"}"#,
        _ => r#"TOOL_CALL {"name": "read_file", "arguments": {"path": "src/main.rs"}}"#,
    }
}

/// The next user turn after a reply that could not be read: what was wrong, and what to send.
pub fn correction(error: &ProtocolError) -> String {
    use ProtocolError as E;
    let example = error.directive().map(example).unwrap_or(ALL_FORMS);
    match error {
        E::NoDirective | E::UnknownKeyword { .. } => format!(
            "Nothing was done: {error}. Reply with exactly one line in one of these forms:\n{ALL_FORMS}"
        ),
        E::MultipleDirectives { .. } => format!(
            "Nothing was done: {error}. Send only the first one now; you will see its result \
             before you send the next."
        ),
        E::BadJson { .. } | E::UnclosedJson { .. } => format!(
            "Nothing was done: {error}. Write the JSON with double quotes around every key and \
             string; inside a string write a line break as \\n and a double quote as \\\". \
             For example:\n{example}"
        ),
        _ => format!("Nothing was done: {error}. Send it again like this:\n{example}"),
    }
}

/// One step of the model's plan.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PlanStep {
    pub text: String,
    pub done: bool,
    /// What the model said when it closed the step.
    pub note: Option<String>,
}

/// The sequence rules: a plan first (1 to `max_plan_steps` steps, sent once), then tool calls
/// and steps closed in any order, and `FINAL` only once every step is closed.
#[derive(Debug, Clone)]
pub struct ProtocolState {
    max_plan_steps: usize,
    /// Empty until the plan is accepted; an accepted plan is never empty.
    plan: Vec<PlanStep>,
}

impl ProtocolState {
    /// `max_plan_steps` below 1 is taken as 1.
    pub fn new(max_plan_steps: usize) -> Self {
        ProtocolState {
            max_plan_steps: max_plan_steps.max(1),
            plan: Vec::new(),
        }
    }

    /// Ok(()) when `directive` is allowed now (and records it: plan, steps done); Err(correction
    /// text) otherwise, naming what is allowed instead.
    pub fn accept(&mut self, directive: &Directive) -> Result<(), String> {
        let max = self.max_plan_steps;
        match directive {
            Directive::Plan { steps } if self.plan.is_empty() => {
                if steps.iter().all(|s| s.trim().is_empty()) {
                    return Err(correction(&ProtocolError::EmptyPlan));
                }
                if steps.len() > max {
                    return Err(format!(
                        "Your plan has {} steps; at most {max} are allowed. Merge steps and send \
                         PLAN again with {max} steps or fewer.",
                        steps.len()
                    ));
                }
                if steps.iter().any(|s| s.trim().is_empty()) {
                    return Err(correction(&ProtocolError::WrongField {
                        keyword: "PLAN",
                        field: "steps",
                        expected: "a list of non-empty strings, one per step",
                    }));
                }
                self.plan = steps.iter().map(|s| PlanStep::new(s)).collect();
                Ok(())
            }
            Directive::Plan { .. } => Err(format!(
                "You already have a plan; it cannot be replaced. Continue with TOOL_CALL, \
                 STEP_DONE or FINAL. {} If a step turns out to be unnecessary, send STEP_DONE for \
                 it with a note saying why.",
                self.remaining_text()
            )),
            _ if self.plan.is_empty() => Err(format!(
                "Start by sending your plan, and nothing else, as one line:\n{}\nUse 1 to {max} \
                 short steps.",
                example("PLAN")
            )),
            Directive::ToolCall(_) => Ok(()),
            Directive::StepDone { index, note } => {
                let len = self.plan.len();
                let Some(step) = index.checked_sub(1).and_then(|i| self.plan.get_mut(i)) else {
                    return Err(format!(
                        "There is no step {index}: the plan has steps 1 to {len}. {}",
                        self.remaining_text()
                    ));
                };
                if step.done {
                    return Err(format!(
                        "Step {index} is already done. {}",
                        self.remaining_text()
                    ));
                }
                (step.done, step.note) = (true, note.clone());
                Ok(())
            }
            Directive::Final { .. } if !self.remaining().is_empty() => Err(format!(
                "You cannot finish yet. {} Finish each one and send STEP_DONE for it (for a step \
                 that is not needed, STEP_DONE with a note saying why), then FINAL.",
                self.remaining_text()
            )),
            Directive::Final { .. } => Ok(()),
        }
    }

    pub fn plan(&self) -> &[PlanStep] {
        &self.plan
    }

    /// 1-based numbers of the steps not done yet (empty before a plan exists).
    pub fn remaining(&self) -> Vec<usize> {
        (1..=self.plan.len())
            .filter(|&i| self.plan.get(i - 1).is_some_and(|s| !s.done))
            .collect()
    }

    /// Whether a plan has been accepted.
    pub fn has_plan(&self) -> bool {
        !self.plan.is_empty()
    }

    fn remaining_text(&self) -> String {
        let remaining = self.remaining();
        if remaining.is_empty() {
            return "Every step is done; send FINAL.".into();
        }
        let mut text = String::from("Steps not done yet:");
        for i in remaining {
            if let Some(step) = self.plan.get(i - 1) {
                let _ = write!(text, " {i}. {:?};", step.text);
            }
        }
        text.pop();
        text.push('.');
        text
    }
}

impl PlanStep {
    fn new(text: &str) -> Self {
        PlanStep {
            text: text.trim().to_string(),
            done: false,
            note: None,
        }
    }
}

/// The protocol instructions with the tools (name, description, arguments) and the step limit
/// filled in.
pub fn protocol_prompt(tools: &[ToolSpec], max_plan_steps: usize) -> String {
    // The tools go in last, so a description that happens to contain a placeholder stays as is.
    TEMPLATE
        .replace("{max_steps}", &max_plan_steps.max(1).to_string())
        .replace("{tools}", render_tools(tools).trim_end())
}

/// One entry per tool: the name and description, then each argument with its type, whether it
/// is required, and its description; required arguments first. A schema without `properties`
/// is shown as JSON.
fn render_tools(tools: &[ToolSpec]) -> String {
    let mut out = String::new();
    for tool in tools {
        let _ = writeln!(out, "- {}: {}", tool.name, one_line(&tool.description));
        let params = &tool.parameters;
        let required: Vec<&str> = params
            .get("required")
            .and_then(Value::as_array)
            .map(|r| r.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        let Some(props) = params.get("properties").and_then(Value::as_object) else {
            let _ = writeln!(out, "  arguments (JSON Schema): {params}");
            continue;
        };
        if props.is_empty() {
            out.push_str("  arguments: none, send {}\n");
        }
        let mut props: Vec<(&String, &Value)> = props.iter().collect();
        props.sort_by_key(|(name, _)| !required.contains(&name.as_str()));
        for (name, schema) in props {
            let need = if required.contains(&name.as_str()) {
                "required"
            } else {
                "optional"
            };
            let _ = write!(out, "  - \"{name}\" ({}, {need})", type_name(schema));
            match schema.get("description").and_then(Value::as_str) {
                Some(d) => {
                    let _ = writeln!(out, ": {}", one_line(d));
                }
                None => out.push('\n'),
            }
        }
    }
    out
}

fn type_name(schema: &Value) -> String {
    if let Some(values) = schema.get("enum").and_then(Value::as_array) {
        let values: Vec<String> = values.iter().map(Value::to_string).collect();
        return format!("one of {}", values.join(", "));
    }
    match schema.get("type") {
        Some(Value::String(t)) if t == "array" => {
            let items = schema.get("items").map_or("any".into(), type_name);
            format!("list of {items}")
        }
        Some(Value::String(t)) => t.clone(),
        Some(Value::Array(types)) => {
            let types: Vec<&str> = types.iter().filter_map(Value::as_str).collect();
            types.join(" or ")
        }
        _ => "any".into(),
    }
}

fn one_line(text: &str) -> String {
    let text = text.split_whitespace().collect::<Vec<_>>().join(" ");
    match text.char_indices().nth(MAX_DESCRIPTION_CHARS) {
        Some((cut, _)) => format!("{}…", &text[..cut]),
        None => text,
    }
}

#[cfg(test)]
mod state_tests;
#[cfg(test)]
mod tests;
