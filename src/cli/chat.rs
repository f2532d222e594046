//! CLI commands that talk to models: summarize, chat, and reading a reply (`show`).

use std::io::Write;

use anyhow::{Context, Result, bail};
use serde_json::json;

use tandem_core::app::{AppEvent, ChatEventKind, EditorFocus, EditorSelection, SendOptions};
use tandem_core::display::{TerminalStream, visible};
use tandem_core::store::{AgentStep, ChatMode, MessageStatus, StepKind};
use tandem_core::trust::Risk;

use super::ctx::{Ctx, runtime};
use super::terminal;

/// `tandem summarize --chat ID`: a new chat that starts from a summary of this one.
pub fn summarize(
    ctx: &Ctx,
    chat_id: i64,
    provider: Option<String>,
    model: Option<String>,
) -> Result<()> {
    let options = SendOptions {
        provider,
        model,
        ..SendOptions::default()
    };
    let chat = runtime()?.block_on(ctx.app.summarize_into_new_chat(chat_id, &options))?;
    let summary = ctx
        .app
        .load_chat(chat.id)?
        .summaries
        .pop()
        .map(|s| s.content)
        .unwrap_or_default();
    ctx.out(
        json!({"chat_id": chat.id, "title": chat.title, "from_chat_id": chat_id, "summary": summary}),
        format!("new chat {} \"{}\", starting from:\n\n{summary}\n", chat.id, chat.title),
    );
    Ok(())
}

#[derive(clap::Args)]
pub struct ChatArgs {
    #[arg(long)]
    pub project: String,
    /// Continue this chat (default: a new one).
    #[arg(long)]
    pub chat: Option<i64>,
    #[arg(long, value_parser = parse_mode)]
    pub mode: Option<ChatMode>,
    #[arg(long)]
    pub provider: Option<String>,
    #[arg(long)]
    pub model: Option<String>,
    /// Apply the proposal at once (auto-approve for this turn).
    #[arg(long)]
    pub approve: bool,
    /// Agent mode: pre-approve tool calls up to this risk (low, medium, high) instead of
    /// asking on the terminal. Hard denies, the trust level and the sandbox still apply.
    #[arg(long, value_parser = parse_risk)]
    pub allow_risk: Option<Risk>,
    /// Send a file with the prompt (repeat): an image (PNG, JPEG, GIF, WebP) in the
    /// provider's image format, a text file as context.
    #[arg(long, value_name = "FILE")]
    pub attach: Vec<std::path::PathBuf>,
    #[command(flatten)]
    pub editor: EditorArgs,
    /// Instead of a prompt: ask Agent mode, in that reply's chat, to implement the plan reply
    /// MESSAGE_ID made.
    #[arg(long, value_name = "MESSAGE_ID", conflicts_with_all = ["prompt", "mode", "chat"])]
    pub implement_plan: Option<i64>,
    /// Instead of a prompt: ask Build mode to fix what the chat's last check reported.
    #[arg(long, requires = "chat", conflicts_with_all = ["prompt", "mode"])]
    pub fix_problems: bool,
    /// Instead of a prompt: ask Build mode to fix finding N (1 = the most severe, as listed)
    /// of the chat's newest security review.
    #[arg(long, value_name = "N", requires = "chat", conflicts_with_all = ["prompt", "mode"])]
    pub fix_finding: Option<std::num::NonZeroUsize>,
    #[arg(required_unless_present_any = ["implement_plan", "fix_problems", "fix_finding"])]
    pub prompt: Option<String>,
}

/// How the turn starts: the person's prompt, or one that follows from what the chat holds.
enum Start {
    Prompt(String),
    ImplementPlan(i64),
    FixProblems,
    FixFinding(usize),
}

impl ChatArgs {
    fn start(&self) -> Start {
        match (&self.prompt, self.implement_plan, self.fix_finding) {
            (Some(prompt), _, _) => Start::Prompt(prompt.clone()),
            (None, Some(message), _) => Start::ImplementPlan(message),
            (None, None, Some(n)) => Start::FixFinding(n.get() - 1),
            (None, None, None) => Start::FixProblems,
        }
    }
}

/// What the editor would show as the prompt is sent, given on the command line: the files
/// open in it and the lines selected (the window sends its own).
#[derive(clap::Args)]
pub struct EditorArgs {
    /// A file open in the editor (repeat; the first is the active tab): ranked above files
    /// nothing points to ("open in the editor"). Paths that are not project files are passed
    /// over.
    #[arg(long = "open", value_name = "PATH")]
    pub open: Vec<String>,
    /// Lines selected in the editor, as they are on disk: sent after the prompt, their file
    /// ranked ("selected in the editor") and their words searched.
    #[arg(long, value_name = "PATH:START-END", value_parser = parse_selection)]
    pub selection: Option<EditorSelection>,
}

impl EditorArgs {
    pub fn focus(self) -> EditorFocus {
        EditorFocus {
            open: self.open,
            selection: self.selection,
        }
    }
}

/// `PATH:START-END` or `PATH:LINE` (lines from 1) as a selection of the file's lines on disk.
fn parse_selection(text: &str) -> Result<EditorSelection, String> {
    let usage = || format!("{text:?}: expected PATH:START-END or PATH:LINE (lines from 1)");
    let (path, lines) = text.rsplit_once(':').ok_or_else(usage)?;
    let (first, last) = lines.split_once('-').unwrap_or((lines, lines));
    let line = |n: &str| n.trim().parse::<usize>().ok().filter(|n| *n > 0);
    match (line(first), line(last)) {
        (Some(first_line), Some(last_line)) if first_line <= last_line && !path.is_empty() => {
            Ok(EditorSelection {
                path: path.to_string(),
                first_line,
                last_line,
                text: None,
            })
        }
        _ => Err(usage()),
    }
}

/// A Security reply's findings: `[{"title", "level", "path", "lines", "description"}]`, most
/// severe first.
fn findings_json(content: &str) -> serde_json::Value {
    let findings: Vec<_> = tandem_core::app::security_findings(content)
        .into_iter()
        .map(|f| {
            json!({
                "title": f.title,
                "level": f.level,
                "path": f.path,
                "lines": f.lines,
                "description": f.body,
            })
        })
        .collect();
    json!(findings)
}

fn parse_risk(text: &str) -> Result<Risk, String> {
    text.parse()
}

fn parse_mode(text: &str) -> Result<ChatMode, String> {
    text.parse()
}

pub fn chat(ctx: &Ctx, args: ChatArgs) -> Result<()> {
    let app = &ctx.app;
    let project = app.project(&args.project)?;
    // Read before anything is created: a missing file leaves no empty chat behind.
    let attachments = args
        .attach
        .iter()
        .map(|path| tandem_core::app::Attach::from_path(path))
        .collect::<Result<Vec<_>, _>>()?;
    for attach in &attachments {
        attach.kind()?;
    }
    let runtime = runtime()?;
    let start = args.start();
    // A chat made for this prompt is deleted again if the send does not start.
    let (chat, new) = match (&start, args.chat) {
        (Start::ImplementPlan(message), _) => {
            let chat_id = app.message(*message)?.chat_id;
            (app.chat_in_project(&project, chat_id, None)?, None)
        }
        (_, Some(id)) => (app.chat_in_project(&project, id, args.mode)?, None),
        (_, None) => {
            let new = app.start_chat(project.id, args.mode.unwrap_or(ChatMode::Build))?;
            (new.chat.clone(), Some(new))
        }
    };
    let options = SendOptions {
        provider: args.provider,
        model: args.model,
        auto_approve: args.approve.then_some(true),
        allow_risk: args.allow_risk,
        attachments,
        editor: args.editor.focus(),
    };
    let json = ctx.json;
    let mut interrupts = {
        let _inside = runtime.enter();
        super::interrupt::Interrupts::listen().context("listening for Ctrl-C")?
    };
    let outcome = runtime.block_on(async {
        let mut events = app.subscribe();
        let started = match (start, new) {
            (Start::Prompt(prompt), Some(new)) => new.send(&prompt, options).await?,
            (Start::Prompt(prompt), None) => app.send(chat.id, None, &prompt, options).await?,
            (Start::ImplementPlan(message), _) => app.implement_plan(message, options).await?,
            (Start::FixProblems, _) => app.fix_problems(chat.id, options).await?,
            (Start::FixFinding(index), _) => app.fix_finding(chat.id, index, options).await?,
        };
        let message_id = started.reply_id;
        let mut outcome = std::pin::pin!(started.finish());
        let mut stdout = std::io::stdout();
        // The reply and its reasoning arrive in pieces: each escaped as its whole text would be.
        let (mut reply, mut thinking) = (TerminalStream::default(), TerminalStream::default());
        loop {
            tokio::select! {
                // Events before the outcome: the turn's last deltas are queued before it
                // finishes, and must be printed before the loop ends with it.
                biased;
                _ = interrupts.next() => { app.cancel(chat.id); }
                event = events.recv() => {
                    // The terminal follows this turn only (not what the lists show).
                    let Ok(AppEvent::Chat(event)) = event else { continue };
                    if event.message_id != message_id { continue; }
                    if let ChatEventKind::Approval { approval } = &event.kind {
                        terminal::ask_on_terminal(app, approval.clone());
                        continue;
                    }
                    if json { continue; }
                    match event.kind {
                        ChatEventKind::Step { step } => {
                            super::output::println(format!("\n{}", step_line(&step)));
                        }
                        ChatEventKind::Delta { text, reasoning } => {
                            // The model's text, which may repeat what a command printed:
                            // no escape sequence reaches the terminal.
                            if !reasoning.is_empty() { eprint!("{}", thinking.push(&reasoning)); }
                            super::output::raw(&reply.push(&text));
                            let _ = stdout.flush();
                        }
                        ChatEventKind::Compacted { summary } => {
                            super::output::eprintln(format_args!("note: earlier turns are now sent as a summary ({} turn(s) in all)", summary.turns));
                        }
                        ChatEventKind::Retrying { round } => {
                            super::output::println(format!("\n--- repair round {round}: the corrected reply follows ---"));
                        }
                        ChatEventKind::Started { breakdown, .. } if breakdown.turns_dropped > 0 || !breakdown.files_listed.is_empty() => {
                            super::output::eprintln(format_args!("note: to fit the model's window, {} history turn(s) were left out and {} file(s) are sent by path only", breakdown.turns_dropped, breakdown.files_listed.len()));
                        }
                        _ => {}
                    }
                }
                result = &mut outcome => {
                    eprint!("{}", thinking.finish());
                    super::output::raw(reply.finish());
                    break result;
                }
            }
        }
    })?;
    // The mode the turn ran in (a follow-up switches the chat to its own).
    let chat = app.chat(chat.id)?;
    let operations = outcome
        .plan
        .as_ref()
        .map(|p| serde_json::to_value(&p.operations).unwrap_or_default());
    let commit = outcome.approval.as_ref().and_then(|a| a.commit.clone());
    if json {
        let mut value = json!({
            "chat_id": outcome.chat_id,
            "message_id": outcome.message_id,
            "status": outcome.status,
            "operations": operations.unwrap_or_else(|| json!([])),
            "content": outcome.content,
        });
        if let Some(commit) = &commit {
            value["commit"] = json!(commit);
        }
        if let Some(error) = &outcome.error {
            value["error"] = json!(error);
        }
        if let Some(error) = &outcome.approve_error {
            value["approve_error"] = json!(error);
        }
        if let Some(usage) = &outcome.usage {
            value["usage"] = json!(usage);
        }
        let steps = app.agent_steps(outcome.message_id)?;
        // Agent turns, and any turn that recorded steps (a CLI agent's commands, checks).
        if matches!(chat.mode, ChatMode::Agent | ChatMode::Plan)
            || args.mode.is_some()
            || !steps.is_empty()
        {
            value["steps"] = steps_json(&steps);
        }
        // Each round whose edits failed and went back to the model: its errors.
        let repairs: Vec<_> = steps
            .iter()
            .filter(|s| s.kind == StepKind::Repair)
            .filter_map(|s| s.arguments.clone())
            .collect();
        value["repairs"] = json!(repairs);
        value["checks"] = json!(outcome.checks);
        if chat.mode == ChatMode::Security || args.mode == Some(ChatMode::Security) {
            value["findings"] = findings_json(&outcome.content);
        }
        super::output::json(&value);
    } else {
        super::output::println("");
        if chat.mode == ChatMode::Security {
            for f in tandem_core::app::security_findings(&outcome.content) {
                let place = match (&f.path, &f.lines) {
                    (Some(path), Some(lines)) => format!("  {path}:{lines}"),
                    (Some(path), None) => format!("  {path}"),
                    _ => String::new(),
                };
                super::output::eprintln(format_args!("  [{}] {}{place}", f.level, f.title));
            }
        }
        match outcome.status {
            MessageStatus::Complete => {}
            MessageStatus::Cancelled => {
                super::output::eprintln(format_args!("[cancelled: the reply so far is kept]"))
            }
            status => super::output::eprintln(format_args!(
                "[{status}: {}]",
                outcome.error.as_deref().unwrap_or("")
            )),
        }
        if let Some(plan) = &outcome.plan
            && plan.is_proposal()
        {
            for op in &plan.operations {
                let op_name = serde_json::to_value(op.op)
                    .ok()
                    .and_then(|v| v.as_str().map(str::to_string))
                    .unwrap_or_default();
                let state = match (&op.error, &op.note) {
                    (Some(error), _) => error.clone(),
                    (None, Some(note)) => format!("ok ({note})"),
                    (None, None) => "ok".into(),
                };
                super::output::eprintln(format_args!(
                    "  {op_name:<15} {:<40} +{} -{}  {state}",
                    op.path, op.added, op.removed
                ));
            }
            match (&commit, &outcome.approve_error) {
                (Some(c), _) => super::output::eprintln(format_args!("applied: commit {c}")),
                (None, Some(e)) => super::output::eprintln(format_args!("not applied: {e}")),
                (None, None) => super::output::eprintln(format_args!(
                    "review: tandem diff {0} | approve: tandem approve {0} | reject: tandem reject {0}",
                    outcome.message_id
                )),
            }
        }
    }
    if outcome.status == MessageStatus::Error {
        bail!(
            "{}",
            outcome.error.unwrap_or_else(|| "the reply failed".into())
        );
    }
    Ok(())
}

pub fn show(ctx: &Ctx, id: i64) -> Result<()> {
    let m = ctx.app.message(id)?;
    let value = json!({
        "id": m.id, "chat_id": m.chat_id, "role": m.role, "status": m.status,
        "approval_state": m.approval_state, "commit": m.commit_hash, "content": m.content,
        "error": m.error, "model": m.model,
    });
    let text = format!(
        "message {} ({}, {}){}\n{}\n",
        m.id,
        m.role,
        m.status,
        m.approval_state
            .map(|s| format!(", {s}"))
            .unwrap_or_default(),
        m.content
    );
    ctx.out(value, text);
    Ok(())
}

/// One line per agent step for the terminal.
fn step_line(step: &AgentStep) -> String {
    // Escaped: a check's result is what the checked code printed in the container, and a
    // command's arguments are the model's: an escape sequence must not reach the terminal.
    let args = visible(
        &step
            .arguments
            .as_ref()
            .map(|a| a.to_string())
            .unwrap_or_default(),
    );
    let result = visible(step.result.as_deref().unwrap_or_default());
    let result = result.as_str();
    let first = result.lines().next().unwrap_or_default();
    match step.kind {
        StepKind::Plan => format!("[plan]\n{result}"),
        StepKind::StepDone => format!("[step done] {args} {result}"),
        StepKind::Correction => format!("[protocol correction] {first}"),
        StepKind::Final => "[final]".to_string(),
        StepKind::Trimmed => format!("[context trimmed] {first}"),
        StepKind::Repair => format!("[edits failed, sent back to the model] {args}"),
        StepKind::Check => format!("[check] {args}\n{result}"),
        StepKind::Tool => {
            let decision = step.decision.map(|d| d.as_str()).unwrap_or("?");
            let exit = step
                .exit_code
                .map(|c| format!(" exit {c}"))
                .unwrap_or_default();
            let lines = result.lines().count();
            format!(
                "[{}] {args} -> {decision}{exit} ({lines} line(s) of output){}",
                step.tool.as_deref().unwrap_or("?"),
                if step.is_error {
                    format!(": {first}")
                } else {
                    String::new()
                }
            )
        }
    }
}

/// The `steps` array of `--json`: every tool call with its decision, exit code and, for
/// commands, the sandbox's protections.
fn steps_json(steps: &[AgentStep]) -> serde_json::Value {
    let calls = steps.iter().filter(|s| s.kind == StepKind::Tool).map(|s| {
        let mut call = json!({
            "tool": s.tool,
            "arguments": s.arguments,
            "decision": s.decision,
        });
        if let Some(code) = s.exit_code {
            call["exit_code"] = json!(code);
        }
        if s.is_error {
            call["is_error"] = json!(true);
        }
        if let Some(sandbox) = &s.sandbox {
            call["sandbox"] = sandbox.clone();
        }
        call
    });
    serde_json::Value::Array(calls.collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use tandem_core::display::for_terminal;

    /// A check runs the proposal's code in the container, and its output is the check
    /// step's result: printed raw, an escape sequence in it reaches the person's terminal
    /// (OSC 52 sets the clipboard the person pastes from next; others retitle, hide or
    /// fake text, and some terminals answer queries as typed input).
    #[test]
    fn container_output_reaches_the_terminal_only_escaped() {
        let osc52 = "\u{1b}]52;c;Y3VybCBldmlsIHwgc2g=\u{7}";
        let step = AgentStep {
            id: 1,
            message_id: 1,
            seq: 1,
            kind: StepKind::Check,
            tool: None,
            call_id: None,
            arguments: Some(json!({"command": format!("cargo test{osc52}")})),
            risk: None,
            decision: None,
            reason: None,
            result: Some(format!("running 1 test\n{osc52}\u{1b}[2K\rok\n")),
            exit_code: Some(1),
            is_error: true,
            duration_ms: None,
            created_at: 0,
            sandbox: None,
        };
        for kind in [
            StepKind::Check,
            StepKind::Tool,
            StepKind::Plan,
            StepKind::StepDone,
        ] {
            let line = step_line(&AgentStep {
                kind,
                ..step.clone()
            });
            assert!(
                !line.chars().any(|c| c.is_control() && c != '\n'),
                "{kind:?}: {line:?}"
            );
        }
        let text = format!("a\tb \\t\n{osc52}");
        assert_eq!(
            for_terminal(&text),
            "a\tb \\t\n\\x1b]52;c;Y3VybCBldmlsIHwgc2g=\\x07"
        );
    }
}
