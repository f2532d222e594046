//! What is sent to the model: the system prompt for the mode, the project's rules, the
//! codebase, the recent history and the prompt — fitted into the model's context window.
//!
//! Budget, when everything does not fit: the reply keeps its reserve; the system prompt and the
//! new prompt are required; older history turns are dropped first (down to a quarter of what
//! is left, or all of it when the codebase leaves no room); then the codebase keeps the files
//! that fit (prompt-mentioned and recently edited files first) and lists the rest by path.
//! Whatever is dropped is reported, never silent.

use serde::Serialize;

use crate::edits::{Segment, TagKind, parse};
use crate::folder::context::{
    CodebaseContext, ContextCache, ContextError, ContextOptions, PackedAs, SkipReason, Walk, render,
};
use crate::llm::{ChatMessage, ChatRole};
use crate::store::{ApprovalState, ChatMode, Message, MessageStatus, Role};
use crate::tokens::{MESSAGE_OVERHEAD, estimate as estimate_tokens};

pub const BUILD_PROMPT: &str = include_str!("../../../../prompts/build.md");
pub const ASK_PROMPT: &str = include_str!("../../../../prompts/ask.md");
pub const AGENT_PROMPT: &str = include_str!("../../../../prompts/agent.md");
pub const PLAN_PROMPT: &str = include_str!("../../../../prompts/plan.md");
pub const SECURITY_PROMPT: &str = include_str!("../../../../prompts/security.md");
pub const RULES_HEADER: &str = include_str!("../../../../prompts/rules_header.md");
pub const TITLE_PROMPT: &str = include_str!("../../../../prompts/title.md");
pub const WHOLE_FILES_PROMPT: &str = include_str!("../../../../prompts/whole_files.md");
pub const SUMMARY_PROMPT: &str = include_str!("../../../../prompts/summary.md");

/// Token counts of each part of a request, against the model's window.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct ContextBreakdown {
    pub window: usize,
    pub reply_reserve: usize,
    /// Kept free because the model's server counts more tokens than Tandem estimates (what
    /// its replies reported): the estimate of what is sent, times that, fits with the reply's
    /// room. 0 for a model never seen counting more.
    pub margin: usize,
    pub system: usize,
    pub codebase: usize,
    pub history: usize,
    pub prompt: usize,
    pub files_included: usize,
    /// The files sent, in the order they are in the prompt: how many tokens each takes, how
    /// (whole, or its map of definitions) and why it was chosen.
    pub included: Vec<IncludedFile>,
    /// Files that did not fit, sent by path only.
    pub files_listed: Vec<String>,
    pub files_skipped: Vec<(String, SkipReason)>,
    /// History turns left out to fit.
    pub turns_dropped: usize,
    /// The editor's selection, sent after the prompt (its tokens are in `prompt`).
    pub selection: Option<super::focus::SentSelection>,
}

/// One file sent with the prompt, as the breakdown reports it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct IncludedFile {
    pub path: String,
    pub tokens: usize,
    #[serde(rename = "as")]
    pub packed_as: PackedAs,
    pub why: String,
}

impl ContextBreakdown {
    pub fn total(&self) -> usize {
        self.system + self.codebase + self.history + self.prompt
    }

    /// Whether the request and the reply reserve fit the window.
    pub fn fits(&self) -> bool {
        self.total() + self.reply_reserve + self.margin <= self.window
    }

    /// The share of the window the request and the reply reserve take (over 1 when they do
    /// not fit).
    pub fn used_fraction(&self) -> f64 {
        (self.total() + self.reply_reserve + self.margin) as f64 / self.window.max(1) as f64
    }

    /// The meter's line, in the window and the CLI alike: what is sent, what is reserved for
    /// the reply, of what window, and the share of it those two take.
    pub fn meter(&self) -> String {
        let margin = match self.margin {
            0 => String::new(),
            m => format!(" + {m} kept free (this model counts more tokens than estimated)"),
        };
        format!(
            "{} sent + {} reserved for the reply{margin}, of {} tokens ({}%)",
            self.total(),
            self.reply_reserve,
            self.window,
            (self.used_fraction() * 100.0).round()
        )
    }
}

#[derive(Debug, thiserror::Error)]
pub enum PromptError {
    #[error(
        "the prompt alone needs about {needed} tokens but the model's window leaves {available} \
         after reserving room for the reply; shorten it or choose a model with a larger context"
    )]
    TooLarge { needed: usize, available: usize },
    #[error(transparent)]
    Context(#[from] ContextError),
}

/// What the project says for a turn, all optional: `AI_RULES.md` (every mode), its rules for
/// this mode (project settings), and in Security mode `SECURITY_RULES.md` and the last change.
#[derive(Debug, Clone, Copy, Default)]
pub struct ProjectRules<'a> {
    pub all_modes: Option<&'a str>,
    pub this_mode: Option<&'a str>,
    pub security: Option<&'a str>,
    /// The last commit: a line naming it, and its unified diff.
    pub last_change: Option<(&'a str, &'a str)>,
}

/// The most of the last change's diff put in a Security prompt.
pub const LAST_CHANGE_MAX_CHARS: usize = 60_000;

/// The system prompt for a mode, followed by the project's rules that apply to it.
pub fn system_prompt(mode: ChatMode, rules: &ProjectRules<'_>) -> String {
    let base = match mode {
        ChatMode::Ask => ASK_PROMPT,
        ChatMode::Build => BUILD_PROMPT,
        ChatMode::Agent => AGENT_PROMPT,
        ChatMode::Plan => PLAN_PROMPT,
        ChatMode::Security => SECURITY_PROMPT,
    };
    let given = |text: Option<&str>| {
        text.map(str::trim)
            .filter(|t| !t.is_empty())
            .map(str::to_string)
    };
    let mut out = base.to_string();
    if let Some(all) = given(rules.all_modes) {
        out.push_str(&format!("\n{RULES_HEADER}\n{all}\n"));
    }
    if let Some(this) = given(rules.this_mode) {
        let mode = mode.as_str();
        out.push_str(&format!(
            "\nThe project's rules for {mode} mode follow; they take precedence too:\n{this}\n"
        ));
    }
    if mode == ChatMode::Security {
        if let Some(security) = given(rules.security) {
            out.push_str(&format!(
                "\nThe project's security rules (SECURITY_RULES.md), to review against:\n{security}\n"
            ));
        }
        if let Some((what, diff)) = rules.last_change {
            let fence = crate::folder::context::code_fence(diff);
            let cut: String = diff.chars().take(LAST_CHANGE_MAX_CHARS).collect();
            let note = match cut.len() < diff.len() {
                true => "\n(The diff is cut here: it is longer than this prompt allows.)",
                false => "",
            };
            out.push_str(&format!(
                "\nThe last change ({what}), as a unified diff:\n{fence}diff\n{cut}\n{fence}{note}\n"
            ));
        }
    }
    out
}

/// A reply as history: `<think>` blocks removed (they are the model's scratch work, and
/// sending them back wastes context).
pub fn strip_for_history(content: &str) -> String {
    let mut out = String::with_capacity(content.len());
    for segment in parse(content) {
        match segment {
            Segment::Text { text, .. } => out.push_str(&text),
            Segment::Tag(tag) if tag.kind == TagKind::Think => {}
            Segment::Tag(tag) => out.push_str(content.get(tag.span).unwrap_or_default()),
        }
    }
    out.trim().to_string()
}

/// One complete exchange of a chat's history, with its reply's id.
#[derive(Debug, Clone)]
pub struct HistoryTurn {
    pub reply_id: i64,
    pub user: ChatMessage,
    pub reply: ChatMessage,
}

/// The last `max_turns` complete exchanges (user prompt + finished reply), oldest first.
/// Replies that failed or were cancelled with no text are left out with their prompt.
pub fn history(messages: &[Message], max_turns: usize) -> Vec<(ChatMessage, ChatMessage)> {
    let turns = history_turns(messages);
    let skip = turns.len().saturating_sub(max_turns);
    turns
        .into_iter()
        .skip(skip)
        .map(|t| (t.user, t.reply))
        .collect()
}

/// Every complete exchange of `messages`, oldest first (see [`history`]).
pub fn history_turns(messages: &[Message]) -> Vec<HistoryTurn> {
    let mut turns = Vec::new();
    let mut pending_user: Option<&Message> = None;
    for message in messages {
        match message.role {
            Role::User => pending_user = Some(message),
            Role::Assistant => {
                let usable = !matches!(message.status, MessageStatus::Streaming);
                if let (Some(user), true) = (pending_user.take(), usable) {
                    let mut reply = strip_for_history(&message.content);
                    // What the person left out of this reply's proposal, and why.
                    if let Some(note) = &message.approval_note {
                        let approved = message.approval_state == Some(ApprovalState::Approved);
                        reply.push_str("\n\n");
                        reply.push_str(&crate::engine::partial::for_the_model(note, approved));
                    }
                    if !reply.is_empty() {
                        turns.push(HistoryTurn {
                            reply_id: message.id,
                            user: ChatMessage::new(ChatRole::User, user.content.clone()),
                            reply: ChatMessage::new(ChatRole::Assistant, reply),
                        });
                    }
                }
            }
            Role::System => {}
        }
    }
    turns
}

fn tokens(message: &ChatMessage) -> usize {
    estimate_tokens(&message.content) + MESSAGE_OVERHEAD
}

/// Everything a request is built from.
pub struct PromptInputs<'a> {
    pub system: String,
    pub history: Vec<(ChatMessage, ChatMessage)>,
    pub prompt: &'a str,
    pub window: usize,
    pub reply_reserve: usize,
    /// What the model's server counts per estimated token (at least 1; see
    /// [`crate::store::ModelProfile::estimate_scale`]).
    pub estimate_scale: f64,
    /// The project's files, walked with `context`'s globs (packed here, as often as fitting
    /// takes).
    pub walk: &'a Walk,
    pub context: ContextOptions,
}

/// The messages to send and their breakdown.
pub fn assemble(
    mut inputs: PromptInputs<'_>,
    cache: &ContextCache,
) -> Result<(Vec<ChatMessage>, ContextBreakdown), PromptError> {
    let room = inputs.window.saturating_sub(inputs.reply_reserve);
    // The estimate of what is sent, times the scale, must fit the room: the rest is kept free.
    let available = crate::llm::fitting(room, inputs.estimate_scale);
    let mut breakdown = ContextBreakdown {
        window: inputs.window,
        reply_reserve: inputs.reply_reserve,
        margin: room - available,
        system: estimate_tokens(&inputs.system) + MESSAGE_OVERHEAD,
        prompt: estimate_tokens(inputs.prompt) + MESSAGE_OVERHEAD,
        ..ContextBreakdown::default()
    };
    let fixed = breakdown.system + breakdown.prompt;
    if fixed > available {
        return Err(PromptError::TooLarge {
            needed: fixed,
            available,
        });
    }
    let remaining = available - fixed;

    // Nothing beyond what is left could be sent, so nothing beyond it is read.
    let mut first = inputs.context.clone();
    first.budget_tokens = first.budget_tokens.min(remaining);
    first.listing_budget = listing_share(remaining, &first);
    let full = cache.pack(inputs.walk, &first)?;
    let full_tokens = codebase_tokens(&full);
    let history_all: usize = inputs
        .history
        .iter()
        .map(|(u, a)| tokens(u) + tokens(a))
        .sum();

    let mut history = std::mem::take(&mut inputs.history);
    let codebase = if full_tokens + history_all <= remaining {
        full
    } else {
        let history_cap = remaining.saturating_sub(full_tokens).max(remaining / 4);
        let mut kept = history_all;
        while kept > history_cap && !history.is_empty() {
            let (u, a) = history.remove(0);
            kept -= tokens(&u) + tokens(&a);
            breakdown.turns_dropped += 1;
        }
        fit_codebase(cache, &inputs, remaining.saturating_sub(kept), &full)?
    };
    breakdown.history = history.iter().map(|(u, a)| tokens(u) + tokens(a)).sum();
    let rendered = render(&codebase);
    breakdown.codebase = rendered_tokens(&rendered);
    breakdown.files_included = codebase.included.len();
    breakdown.included = (codebase.included.iter())
        .map(|f| IncludedFile {
            path: f.path.clone(),
            tokens: f.tokens,
            packed_as: f.packed_as,
            why: f.why.to_string(),
        })
        .collect();
    breakdown.files_listed = (codebase.listed_only.iter())
        .map(|(p, _)| p.to_string())
        .collect();
    breakdown.files_skipped = codebase.skipped;

    let system = if rendered.is_empty() {
        inputs.system
    } else {
        format!(
            "{}\n\n# The project's files\n\n{rendered}",
            inputs.system.trim_end()
        )
    };
    let mut messages = vec![ChatMessage::new(ChatRole::System, system)];
    for (user, assistant) in history {
        messages.push(user);
        messages.push(assistant);
    }
    messages.push(ChatMessage::new(ChatRole::User, inputs.prompt));
    Ok((messages, breakdown))
}

/// The names of the files not sent take at most a sixteenth of the codebase's room; past it
/// they become an outline of folders, those of the files the prompt is about opened first (a
/// 14,000-path list would fill twenty small windows). Measured on the recall bench (29
/// repositories, micro recall at 8k / 32k / 128k, Tandem against BM25 under the same content
/// budget): a quarter 25.6 / 48.6 / 77.2 against 20.0 / 35.8 / 66.6; an eighth 27.1 / 49.6 /
/// 77.4 against 20.9 / 36.9 / 66.9; a sixteenth 28.0 / 49.9 / 77.4 against 21.4 / 37.4 / 67.1
/// (32k's mean content budget 20.6k → 22.5k tokens). When files are not ranked into the room
/// (the agent's modes: the files mentioned, or none, and the names of the rest, as the agent
/// reads through its tools), the names have a quarter.
fn listing_share(budget: usize, options: &ContextOptions) -> usize {
    match options.only_priority || options.budget_tokens == 0 {
        true => budget / 4,
        false => budget / 16,
    }
}

fn codebase_tokens(context: &CodebaseContext) -> usize {
    rendered_tokens(&render(context))
}

/// The tokens of the codebase rendered, with its section's heading.
fn rendered_tokens(rendered: &str) -> usize {
    if rendered.is_empty() {
        0
    } else {
        estimate_tokens(rendered) + 8
    }
}

/// The codebase within `budget` tokens as rendered (file headers and the path list included).
/// `tried` (the codebase packed for more room) tells what besides the files' content the
/// rendering takes, so that packing again is rarely needed: each packing of a big project
/// goes through every path.
fn fit_codebase(
    cache: &ContextCache,
    inputs: &PromptInputs<'_>,
    budget: usize,
    tried: &CodebaseContext,
) -> Result<CodebaseContext, ContextError> {
    let mut options = inputs.context.clone();
    options.listing_budget = listing_share(budget, &options);
    // The section's heading and what the estimate of the whole adds; the files' headers are
    // in the packing's budget.
    let headings = codebase_tokens(tried)
        .saturating_sub(tried.content_tokens + tried.header_tokens + tried.listing_tokens);
    let besides = headings + tried.listing_tokens.min(options.listing_budget);
    options.budget_tokens = options.budget_tokens.min(budget.saturating_sub(besides));
    let mut context = cache.pack(inputs.walk, &options)?;
    // Headers and the path list cost tokens too: shrink the content budget until it all fits.
    for _ in 0..4 {
        let over = codebase_tokens(&context).saturating_sub(budget);
        if over == 0 {
            break;
        }
        options.budget_tokens = options.budget_tokens.saturating_sub(over + 16);
        context = cache.pack(inputs.walk, &options)?;
    }
    Ok(context)
}

#[cfg(test)]
mod tests;
