//! CLI commands that talk to models: providers, models, chat, context, and reading chats.

use std::io::{Read, Write};
use std::sync::Arc;

use anyhow::{Context, Result, bail};
use clap::Subcommand;
use serde_json::json;

use tandem::agent::display::{has_hidden, visible};
use tandem::agent::runner::Answer;
use tandem::app::{App, ChatEventKind, NewProvider, PackedAs, PendingApproval, SendOptions};
use tandem::llm::ProviderKind;
use tandem::store::{AgentStep, ChatMode, MessageStatus, ProviderSettings, StepKind};
use tandem::trust::Risk;

#[derive(Subcommand)]
pub enum ProviderCommand {
    /// Add a model provider.
    Add {
        #[arg(long)]
        name: String,
        #[arg(long, value_parser = parse_kind)]
        kind: ProviderKind,
        /// The server's URL; for `codex` and `claude-code`, the program to run (default: found
        /// on PATH).
        #[arg(long, alias = "program")]
        base_url: Option<String>,
        /// The environment variable that holds the API key.
        #[arg(long)]
        api_key_env: Option<String>,
        /// The model used when none is named.
        #[arg(long)]
        default_model: Option<String>,
        /// Overrides the context length the provider reports.
        #[arg(long)]
        context_length: Option<u32>,
    },
    /// List providers (keys are never shown).
    List,
    /// Store a provider's API key, read from standard input (in the keychain, else a 0600 file).
    SetKey {
        name: String,
        /// Keep the keys already stored and add this one: requests rotate to the next key
        /// when one is rate limited or out of quota.
        #[arg(long)]
        add: bool,
    },
    /// A provider's keys by fingerprint (never the key), and which one is in use.
    Keys { name: String },
    /// Remove one stored key, named by its fingerprint (`tandem provider keys NAME`).
    RemoveKey { name: String, fingerprint: String },
    /// Remove a provider.
    Remove { name: String },
    /// A CLI agent provider (codex, claude-code): is it installed, is it logged in?
    Status { name: String },
    /// Log a CLI agent provider in (Codex: device code; prints the link and the code).
    Login { name: String },
}

fn parse_kind(text: &str) -> Result<ProviderKind, String> {
    text.parse()
}

pub struct Ctx {
    pub app: Arc<App>,
    pub json: bool,
}

impl Ctx {
    pub fn out(&self, value: serde_json::Value, text: String) {
        if self.json {
            super::output::println(&value);
        } else {
            super::output::print(&text);
        }
    }
}

pub fn runtime() -> Result<tokio::runtime::Runtime> {
    tandem::llm::init_tls();
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .context("starting the async runtime")
}

pub fn provider_cmd(ctx: &Ctx, command: ProviderCommand) -> Result<()> {
    let app = &ctx.app;
    match command {
        ProviderCommand::Add {
            name,
            kind,
            base_url,
            api_key_env,
            default_model,
            context_length,
        } => {
            let record = app.add_provider(NewProvider {
                name,
                kind,
                base_url,
                api_key_env,
                settings: ProviderSettings {
                    default_model,
                    context_length,
                },
            })?;
            let mut text = format!(
                "added provider {} ({kind}) at {}\n",
                record.name, record.base_url
            );
            let mut value = json!({"provider": record});
            // A CLI agent is looked for at once: missing or logged out is said now.
            if kind.is_cli_agent() {
                let status = runtime()?.block_on(app.agent_status(&record.name))?;
                text.push_str(&status_line(&record.name, &status));
                value["status"] = serde_json::to_value(&status)?;
            }
            ctx.out(value, text);
        }
        ProviderCommand::Status { name } => {
            let status = runtime()?.block_on(app.agent_status(&name))?;
            ctx.out(
                json!({"provider": name, "status": status, "ready": status.is_ready()}),
                status_line(&name, &status),
            );
            if let tandem::external::LoginStatus::Missing(_) = status {
                bail!("{name} is not installed");
            }
        }
        ProviderCommand::Login { name } => {
            let cancel = tokio_util::sync::CancellationToken::new();
            let json = ctx.json;
            let ok = runtime()?.block_on(app.agent_login(&name, &cancel, |line| match json {
                true => super::output::println(json!({"line": line})),
                false => super::output::println(&line),
            }))?;
            ctx.out(
                json!({"logged_in": ok}),
                format!("{}\n", if ok { "logged in" } else { "not logged in" }),
            );
            if !ok {
                bail!("the login of {name} did not complete");
            }
        }
        ProviderCommand::List => {
            let mut rows = Vec::new();
            let mut text = String::new();
            for row in app.provider_rows()? {
                let (record, key) = (row.record, row.key.to_string());
                let keys = app.provider_keys(&record.name)?;
                let in_use = keys.iter().find(|k| k.in_use).map(|k| &k.fingerprint);
                let key_text = match (keys.len(), in_use) {
                    (0, _) | (_, None) => key.clone(),
                    (1, Some(fp)) => format!("{key} ({fp})"),
                    (n, Some(fp)) => format!("{key} ({n} keys, in use {fp})"),
                };
                text.push_str(&format!(
                    "{:<14} {:<10} {:<45} key: {key_text}\n",
                    record.name, record.kind, record.base_url
                ));
                rows.push(json!({"provider": record, "key": key, "keys": keys}));
            }
            ctx.out(json!({"providers": rows}), text);
        }
        ProviderCommand::Keys { name } => {
            let keys = app.provider_keys(&name)?;
            let text: String = keys
                .iter()
                .map(|k| {
                    let mark = if k.in_use { "  (in use)" } else { "" };
                    format!("{}  {}{mark}\n", k.fingerprint, k.source)
                })
                .collect();
            let text = match keys.is_empty() {
                true => format!("{name} has no key\n"),
                false => text,
            };
            ctx.out(json!({"provider": name, "keys": keys}), text);
        }
        ProviderCommand::RemoveKey { name, fingerprint } => {
            app.remove_key(&name, &fingerprint)?;
            ctx.out(
                json!({"removed": fingerprint}),
                format!("removed the key {fingerprint} of {name}\n"),
            );
        }
        ProviderCommand::SetKey { name, add } => {
            // The provider is checked before the key is read.
            app.provider(&name)?;
            let mut key = String::new();
            std::io::stdin()
                .read_to_string(&mut key)
                .context("reading the key from standard input")?;
            if key.trim().is_empty() {
                bail!("no key on standard input");
            }
            let stored = match add {
                true => app.add_key(&name, &key)?,
                false => app.set_key(&name, &key)?,
            };
            let (location, why) = (stored.location, stored.keychain_unavailable);
            let text = match (&location, &why) {
                (tandem::llm::secrets::SecretLocation::File(path), Some(why)) => format!(
                    "stored the key for {name} in {} (mode 0600), not in the OS keychain: {why}\n",
                    path.display()
                ),
                _ => format!("stored the key for {name}: {location:?}\n"),
            };
            ctx.out(
                json!({"stored": location, "keychain_unavailable": why}),
                text,
            );
        }
        ProviderCommand::Remove { name } => {
            app.remove_provider(&name)?;
            ctx.out(
                json!({"removed": name}),
                format!("removed provider {name}\n"),
            );
        }
    }
    Ok(())
}

/// One line saying whether a CLI agent is ready.
fn status_line(name: &str, status: &tandem::external::LoginStatus) -> String {
    use tandem::external::LoginStatus::*;
    let first = |s: &str| s.lines().next().unwrap_or("").to_string();
    match status {
        Missing(why) => format!("{name}: not installed: {why}\n"),
        LoggedIn(said) => format!("{name}: logged in ({})\n", first(said)),
        LoggedOut(said) => format!(
            "{name}: not logged in ({}); run `tandem provider login {name}`\n",
            first(said)
        ),
        Unknown(said) => format!("{name}: {said}\n"),
    }
}

pub fn models(ctx: &Ctx, provider_name: Option<String>) -> Result<()> {
    let listed = runtime()?.block_on(ctx.app.models_of(provider_name.as_deref()))?;
    let mut all = Vec::new();
    let mut text = String::new();
    for entry in listed {
        let name = entry.provider;
        match entry.models {
            Ok(models) => {
                for model in &models {
                    let window = model
                        .context_length
                        .map(|c| format!("{c} tokens"))
                        .unwrap_or_default();
                    text.push_str(&format!("{name:<14} {:<40} {window}\n", model.id));
                }
                all.push(json!({"provider": name, "models": models}));
            }
            Err(e) => {
                text.push_str(&format!("{name:<14} error: {e}\n"));
                all.push(json!({"provider": name, "error": e}));
            }
        }
    }
    ctx.out(json!({"providers": all}), text);
    Ok(())
}

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
    pub prompt: String,
}

/// A Security reply's findings: `[{"title", "level", "path", "lines", "description"}]`, most
/// severe first.
fn findings_json(content: &str) -> serde_json::Value {
    let findings: Vec<_> = tandem::app::security_findings(content)
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
        .map(|path| tandem::app::Attach::from_path(path))
        .collect::<Result<Vec<_>, _>>()?;
    for attach in &attachments {
        attach.kind()?;
    }
    let runtime = runtime()?;
    let chat = match args.chat {
        Some(id) => app.chat_in_project(&project, id, args.mode)?,
        None => app.new_chat(project.id, args.mode.unwrap_or(ChatMode::Build))?,
    };
    let options = SendOptions {
        provider: args.provider,
        model: args.model,
        auto_approve: args.approve.then_some(true),
        allow_risk: args.allow_risk,
        attachments,
    };
    let json = ctx.json;
    let mut interrupts = {
        let _inside = runtime.enter();
        super::interrupt::Interrupts::listen().context("listening for Ctrl-C")?
    };
    let outcome = runtime.block_on(async {
        let mut events = app.subscribe();
        let started = match app.send(chat.id, None, &args.prompt, options).await {
            Ok(started) => started,
            Err(e) => {
                // Nothing was sent: a chat made for this prompt goes again.
                if args.chat.is_none() {
                    let _ = app.delete_chat(chat.id);
                }
                return Err(e);
            }
        };
        let message_id = started.reply_id;
        let mut outcome = std::pin::pin!(started.finish());
        let mut stdout = std::io::stdout();
        loop {
            tokio::select! {
                // Events before the outcome: the turn's last deltas are queued before it
                // finishes, and must be printed before the loop ends with it.
                biased;
                _ = interrupts.next() => { app.cancel(chat.id); }
                event = events.recv() => {
                    let Ok(event) = event else { continue };
                    if event.message_id != message_id { continue; }
                    if let ChatEventKind::Approval { approval } = &event.kind {
                        ask_on_terminal(app, approval.clone());
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
                            if !reasoning.is_empty() { eprint!("{}", printable(&reasoning)); }
                            super::output::print(printable(&text));
                            let _ = stdout.flush();
                        }
                        ChatEventKind::Compacted { summary } => {
                            eprintln!("note: earlier turns are now sent as a summary ({} turn(s) in all)", summary.turns);
                        }
                        ChatEventKind::Retrying { round } => {
                            super::output::println(format!("\n--- repair round {round}: the corrected reply follows ---"));
                        }
                        ChatEventKind::Started { breakdown, .. } if breakdown.turns_dropped > 0 || !breakdown.files_listed.is_empty() => {
                            eprintln!("note: to fit the model's window, {} history turn(s) were left out and {} file(s) are sent by path only", breakdown.turns_dropped, breakdown.files_listed.len());
                        }
                        _ => {}
                    }
                }
                result = &mut outcome => break result,
            }
        }
    })?;
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
        super::output::println(&value);
    } else {
        super::output::println("");
        if chat.mode == ChatMode::Security {
            for f in tandem::app::security_findings(&outcome.content) {
                let place = match (&f.path, &f.lines) {
                    (Some(path), Some(lines)) => format!("  {path}:{lines}"),
                    (Some(path), None) => format!("  {path}"),
                    _ => String::new(),
                };
                eprintln!("  [{}] {}{place}", f.level, f.title);
            }
        }
        match outcome.status {
            MessageStatus::Complete => {}
            MessageStatus::Cancelled => eprintln!("[cancelled: the reply so far is kept]"),
            status => eprintln!("[{status}: {}]", outcome.error.as_deref().unwrap_or("")),
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
                eprintln!(
                    "  {op_name:<15} {:<40} +{} -{}  {state}",
                    op.path, op.added, op.removed
                );
            }
            match (&commit, &outcome.approve_error) {
                (Some(c), _) => eprintln!("applied: commit {c}"),
                (None, Some(e)) => eprintln!("not applied: {e}"),
                (None, None) => eprintln!(
                    "review: tandem diff {0} | approve: tandem approve {0} | reject: tandem reject {0}",
                    outcome.message_id
                ),
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

pub fn context(
    ctx: &Ctx,
    project: &str,
    prompt: &str,
    provider_name: Option<String>,
    model: Option<String>,
) -> Result<()> {
    let project = ctx.app.project(project)?;
    let options = SendOptions {
        provider: provider_name,
        model,
        ..SendOptions::default()
    };
    let breakdown = runtime()?.block_on(ctx.app.preview(&project, None, prompt, &options))?;
    // A big project lists thousands of paths: only the form asked for is built.
    if ctx.json {
        ctx.out(json!({"breakdown": breakdown}), String::new());
        return Ok(());
    }
    let mut text = format!(
        "{}\nwindow {}: system {} + codebase {} + history {} + prompt {} = {} tokens sent, {} reserved for the reply\nfiles: {} included, {} listed by path only, {} skipped\n",
        breakdown.meter(),
        breakdown.window,
        breakdown.system,
        breakdown.codebase,
        breakdown.history,
        breakdown.prompt,
        breakdown.total(),
        breakdown.reply_reserve,
        breakdown.files_included,
        breakdown.files_listed.len(),
        breakdown.files_skipped.len()
    );
    for file in &breakdown.included {
        let how = match file.packed_as {
            PackedAs::Whole => "whole",
            PackedAs::Map => "map",
        };
        text.push_str(&format!(
            "  {how} ({} tokens): {} ({})\n",
            file.tokens, file.path, file.why
        ));
    }
    for path in &breakdown.files_listed {
        text.push_str("  by path only (over budget): ");
        text.push_str(path);
        text.push('\n');
    }
    for (path, reason) in &breakdown.files_skipped {
        text.push_str(&format!("  skipped ({reason:?}): {path}\n"));
    }
    ctx.out(serde_json::Value::Null, text);
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

/// Throws away what is waiting in the terminal's input queue, just before an approval
/// question is shown: keys typed (or injected into the terminal, or pasted with the rest of a
/// prompt) before the person could see the question must not answer it — a stray `y` would
/// approve a command never read. Only what was typed before the question is lost; the answer
/// comes after it is shown. Input that is not a terminal (a script piping its answers on
/// purpose) is left alone. A terminal in canonical mode hands over one line per read, so no
/// earlier line waits in the standard library's buffer either.
fn discard_typed_ahead() {
    use std::io::IsTerminal;
    if !std::io::stdin().is_terminal() {
        return;
    }
    #[cfg(unix)]
    flush_terminal_input();
}

#[cfg(unix)]
#[allow(unsafe_code)]
fn flush_terminal_input() {
    // SAFETY: tcflush(3) on standard input (a terminal, checked above) only discards the
    // kernel's queue of received, unread input; it touches no memory of ours. A failure
    // (input gone meanwhile) leaves things as they were, so it is ignored.
    unsafe {
        libc::tcflush(libc::STDIN_FILENO, libc::TCIFLUSH);
    }
}

/// Asks about a pending call on the terminal (stderr + a line from stdin) without blocking
/// the event loop; end of input or anything but yes/always rejects.
fn ask_on_terminal(app: &Arc<App>, approval: PendingApproval) {
    let app = Arc::clone(app);
    tokio::task::spawn_blocking(move || {
        // Escaped (agent::display): a `\r` or an escape sequence must not hide part of what
        // is approved from the terminal. The command is printed whole, however long.
        let command = approval.arguments.get("command").and_then(|c| c.as_str());
        let what = match command.map(visible) {
            Some(command) if command.contains('\n') => format!("run this command\n{command}\n"),
            Some(command) => format!("run `{command}`"),
            None => format!(
                "call {} {}",
                visible(&approval.tool),
                visible(&approval.arguments.to_string())
            ),
        };
        discard_typed_ahead();
        eprintln!("\n{} risk — {}", approval.risk, visible(&approval.reason));
        for reason in &approval.reasons {
            eprintln!("  {}", visible(reason));
        }
        if command.is_some_and(has_hidden) {
            eprintln!("  (the command holds control or invisible characters, shown escaped)");
        }
        eprint!(
            "Allow the agent to {what}? [y]es / [n]o / [a]lways allow `{}`: ",
            visible(&approval.always_pattern)
        );
        let _ = std::io::stderr().flush();
        let mut line = String::new();
        let answer = match std::io::stdin().read_line(&mut line) {
            Ok(n) if n > 0 => match line.trim().to_ascii_lowercase().as_str() {
                "y" | "yes" => Answer::Approve,
                "a" | "always" => Answer::AlwaysAllow,
                _ => Answer::Reject,
            },
            _ => {
                eprintln!("(no answer on stdin: rejected; pass --allow-risk to pre-approve)");
                Answer::Reject
            }
        };
        app.answer(approval.id, answer);
    });
}

/// `text` with control characters other than newlines and tabs shown escaped.
fn printable(text: &str) -> std::borrow::Cow<'_, str> {
    let hidden = |c: char| c.is_control() && c != '\n' && c != '\t';
    if !text.chars().any(hidden) {
        return text.into();
    }
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            c if hidden(c) => out.push_str(&format!("\\u{{{:x}}}", u32::from(c))),
            c => out.push(c),
        }
    }
    out.into()
}

#[cfg(test)]
mod tests {
    use super::*;

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
            printable(&text),
            "a\tb \\t\n\\u{1b}]52;c;Y3VybCBldmlsIHwgc2g=\\u{7}"
        );
    }
}
