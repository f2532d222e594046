//! The chats' workspaces from the terminal: `tandem workspace list|clean`, and `tandem run`,
//! the person's own command in a chat's workspace (what it changes stays there).

use std::process::ExitCode;

use anyhow::{Context, Result};
use clap::Subcommand;
use serde_json::json;
use tandem_core::app::{CleanScope, WorkspaceRun, human_bytes};
use tokio_util::sync::CancellationToken;

use super::ctx::{Ctx, runtime};

#[derive(Subcommand)]
pub enum WorkspaceCommand {
    /// Every chat's workspace: its chat, project, kind, size, and whether a proposal waits.
    List,
    /// Remove workspaces. Without flags: the stale ones (chat gone or archived, or no pending
    /// proposal). One a turn or a run has open is never removed.
    Clean {
        /// Only this chat's.
        #[arg(long, conflicts_with = "all")]
        chat: Option<i64>,
        /// Every one.
        #[arg(long)]
        all: bool,
    },
}

#[derive(clap::Args)]
pub struct RunArgs {
    /// The chat whose workspace the command runs in.
    #[arg(long)]
    pub chat: i64,
    /// After `--`: one argument is a shell command line, several are a program and its
    /// arguments. Without one: the project's check command.
    #[arg(last = true, value_name = "CMD")]
    pub command: Vec<String>,
}

pub fn workspace(ctx: &Ctx, command: WorkspaceCommand) -> Result<()> {
    match command {
        WorkspaceCommand::List => {
            let workspaces = ctx.app.workspaces()?;
            let mut text = String::new();
            for w in &workspaces {
                let state = match (w.pending, w.in_use) {
                    (_, true) => "in use",
                    (true, false) => "pending",
                    (false, false) => "unused",
                };
                text.push_str(&format!(
                    "chat {:>5}  {:<30} {:<8} {:>9}  {:<7}  {}\n",
                    w.chat_id,
                    w.title.as_deref().unwrap_or("(chat gone)"),
                    w.kind,
                    human_bytes(w.bytes),
                    state,
                    w.project
                        .as_ref()
                        .map(|p| p.display().to_string())
                        .unwrap_or_default(),
                ));
            }
            if workspaces.is_empty() {
                text.push_str("no workspaces\n");
            }
            ctx.out(json!({ "workspaces": workspaces }), text);
        }
        WorkspaceCommand::Clean { chat, all } => {
            let scope = match (chat, all) {
                (Some(id), _) => CleanScope::Chat(id),
                (None, true) => CleanScope::All,
                (None, false) => CleanScope::Stale,
            };
            let cleaned = ctx.app.clean_workspaces(scope)?;
            let mut text = match cleaned.removed.len() {
                0 => "no workspace removed\n".to_string(),
                n => format!(
                    "removed {n} workspace(s) (chat {}), freed {}\n",
                    join(&cleaned.removed),
                    human_bytes(cleaned.bytes_freed)
                ),
            };
            if !cleaned.in_use.is_empty() {
                text.push_str(&format!("kept, in use: chat {}\n", join(&cleaned.in_use)));
            }
            ctx.out(serde_json::to_value(&cleaned)?, text);
        }
    }
    Ok(())
}

fn join(ids: &[i64]) -> String {
    ids.iter()
        .map(i64::to_string)
        .collect::<Vec<_>>()
        .join(", ")
}

/// `tandem run`: prints the command's output and exits with its exit code.
pub fn run(ctx: &Ctx, args: RunArgs) -> Result<ExitCode> {
    let command = shell_line(&args.command);
    let app = &ctx.app;
    let runtime = runtime()?;
    let mut interrupts = {
        let _inside = runtime.enter();
        super::interrupt::Interrupts::listen().context("listening for Ctrl-C")?
    };
    let ran = runtime.block_on(async {
        let cancel = CancellationToken::new();
        let run = app.run_in_workspace(args.chat, command.as_deref(), cancel.clone());
        tokio::pin!(run);
        loop {
            tokio::select! {
                ran = &mut run => break ran,
                _ = interrupts.next() => cancel.cancel(),
            }
        }
    })?;
    if ctx.json {
        let value = json!({
            "chat_id": ran.chat_id,
            "command": ran.command,
            "exit_code": ran.exit_code,
            "signal": ran.signal,
            "stdout": ran.stdout,
            "stderr": ran.stderr,
            "timed_out": ran.timed_out,
            "duration_ms": ran.duration_ms,
            "sandbox": ran.sandbox,
            "kind": ran.kind,
            "proposal": ran.proposal,
        });
        super::output::json(&value);
    } else {
        super::output::raw(&ran.stdout);
        eprint!("{}", ran.stderr);
        for note in ran.proposal.iter().flat_map(|p| p.notes()) {
            eprintln!("tandem: {note}");
        }
        if let Some(note) = ending(&ran) {
            eprintln!("tandem: {note}");
        }
    }
    Ok(exit_code(&ran))
}

/// The command line of `tandem run`'s arguments: one is a shell command line as it is;
/// several are quoted one by one, so each stays one argument.
fn shell_line(args: &[String]) -> Option<String> {
    match args {
        [] => None,
        [line] => Some(line.clone()),
        args => Some(args.iter().map(|a| quote(a)).collect::<Vec<_>>().join(" ")),
    }
}

/// `arg` as one word of a POSIX shell command line.
fn quote(arg: &str) -> String {
    let plain = !arg.is_empty()
        && arg
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_./=:,+@%".contains(c));
    match plain {
        true => arg.to_string(),
        false => format!("'{}'", arg.replace('\'', r"'\''")),
    }
}

/// How the command ended when it did not exit by itself.
fn ending(ran: &WorkspaceRun) -> Option<String> {
    match (ran.timed_out, ran.cancelled, ran.exit_code, ran.signal) {
        (true, _, _, _) => Some(format!("timed out after {} ms", ran.duration_ms)),
        (_, true, _, _) => Some("interrupted".into()),
        (_, _, None, Some(signal)) => Some(format!("killed by signal {signal}")),
        _ => None,
    }
}

/// The command's exit code; 124 when it timed out (as `timeout(1)`), 128 + the signal that
/// killed it (as shells say).
fn exit_code(ran: &WorkspaceRun) -> ExitCode {
    let code = match (ran.timed_out, ran.exit_code, ran.signal) {
        (true, _, _) => 124,
        (false, Some(code), _) => u8::try_from(code).unwrap_or(1),
        (false, None, Some(signal)) => u8::try_from(128 + signal).unwrap_or(1),
        (false, None, None) => 1,
    };
    ExitCode::from(code)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arguments_become_one_shell_line() {
        let args = |a: &[&str]| a.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert_eq!(shell_line(&[]), None);
        assert_eq!(
            shell_line(&args(&["cargo test && echo ok"])).as_deref(),
            Some("cargo test && echo ok")
        );
        assert_eq!(
            shell_line(&args(&["sh", "-c", "echo hi > made.txt; cat made.txt"])).as_deref(),
            Some("sh -c 'echo hi > made.txt; cat made.txt'")
        );
        assert_eq!(
            shell_line(&args(&["echo", "it's", ""])).as_deref(),
            Some(r"echo 'it'\''s' ''")
        );
    }
}
