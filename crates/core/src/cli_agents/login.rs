//! Whether a CLI agent is installed and logged in, and its device-code login. These run for
//! the person (not for a model), outside the sandbox: the login writes the agent's own
//! credentials.

use std::process::Stdio;
use std::time::Duration;

use serde::Serialize;
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio_util::sync::CancellationToken;

use super::CliAgent;
use super::run::{RunError, resolve_program};
use crate::process::group::GroupGuard;
use crate::process::in_own_group;

const STATUS_TIMEOUT: Duration = Duration::from_secs(20);

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "state", content = "detail", rename_all = "snake_case")]
pub enum LoginStatus {
    /// Not installed: what to do.
    Missing(String),
    LoggedIn(String),
    LoggedOut(String),
    /// It has no status command (or it did not answer): what it said.
    Unknown(String),
}

impl LoginStatus {
    pub fn is_ready(&self) -> bool {
        matches!(self, LoginStatus::LoggedIn(_) | LoginStatus::Unknown(_))
    }
}

/// Installed? Logged in? (`codex login status`; agents without a status command are
/// `Unknown` once found.)
pub async fn login_status(agent: &dyn CliAgent, program: &str) -> LoginStatus {
    let Some(path) = resolve_program(program, &here()) else {
        return LoginStatus::Missing(format!(
            "`{program}` is not on PATH: {}",
            agent.install_hint()
        ));
    };
    let args = agent.login_status_args();
    if args.is_empty() {
        return LoginStatus::Unknown(format!(
            "{} is installed at {}; it reports its login when a chat runs",
            agent.name(),
            path.display()
        ));
    }
    let mut command = tokio::process::Command::new(&path);
    command.args(args).stdin(Stdio::null()).kill_on_drop(true);
    match tokio::time::timeout(STATUS_TIMEOUT, command.output()).await {
        Ok(Ok(output)) => {
            let said = [output.stdout, output.stderr]
                .iter()
                .map(|b| String::from_utf8_lossy(b).trim().to_string())
                .filter(|s| !s.is_empty())
                .collect::<Vec<_>>()
                .join("\n");
            match output.status.success() {
                true => LoginStatus::LoggedIn(said),
                false => LoginStatus::LoggedOut(said),
            }
        }
        Ok(Err(e)) => LoginStatus::Unknown(format!("could not ask {}: {e}", agent.name())),
        Err(_) => LoginStatus::Unknown(format!(
            "{} did not answer within {} s",
            agent.name(),
            STATUS_TIMEOUT.as_secs()
        )),
    }
}

/// Runs the agent's device-code login, giving each line it prints (the link and the code to
/// enter there) to `on_line`. True when it exited 0. Cancel kills it.
pub async fn login(
    agent: &dyn CliAgent,
    program: &str,
    cancel: &CancellationToken,
    mut on_line: impl FnMut(String),
) -> Result<bool, RunError> {
    let path = resolve_program(program, &here()).ok_or_else(|| RunError::Missing {
        agent: agent.name(),
        program: program.to_string(),
        hint: agent.install_hint(),
    })?;
    let args = agent.login_args();
    if args.is_empty() {
        on_line(format!(
            "{} logs in from a terminal: run `{program}` there once and follow what it says.",
            agent.name()
        ));
        return Ok(false);
    }
    let mut std_command = std::process::Command::new(&path);
    std_command
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    in_own_group(&mut std_command);
    let mut child = tokio::process::Command::from(std_command)
        .spawn()
        .map_err(|source| RunError::Spawn {
            agent: agent.name(),
            program: path.display().to_string(),
            source,
        })?;
    let mut group = GroupGuard(child.id());
    let mut out = child.stdout.take().map(|s| BufReader::new(s).lines());
    let mut err = child.stderr.take().map(|s| BufReader::new(s).lines());
    let mut status = None;
    while out.is_some() || err.is_some() || status.is_none() {
        tokio::select! {
            line = async { out.as_mut()?.next_line().await.ok().flatten() }, if out.is_some() => {
                match line {
                    Some(line) => on_line(strip_ansi(&line)),
                    None => out = None,
                }
            }
            line = async { err.as_mut()?.next_line().await.ok().flatten() }, if err.is_some() => {
                match line {
                    Some(line) => on_line(strip_ansi(&line)),
                    None => err = None,
                }
            }
            done = child.wait(), if status.is_none() => {
                status = Some(done.map(|s| s.success()).unwrap_or(false));
                group.kill_now();
            }
            () = cancel.cancelled() => {
                group.kill_now();
                let _ = child.start_kill();
                return Ok(false);
            }
        }
    }
    Ok(status.unwrap_or(false))
}

/// The line without terminal colour codes (`ESC [ … letter`).
fn strip_ansi(line: &str) -> String {
    let mut out = String::with_capacity(line.len());
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\u{1b}' && chars.peek() == Some(&'[') {
            chars.next();
            for c in chars.by_ref() {
                if c.is_ascii_alphabetic() {
                    break;
                }
            }
            continue;
        }
        out.push(c);
    }
    out
}

/// Where a login runs: the person's own command, unconfined, in Tandem's directory (a
/// program named by a relative path is found there).
fn here() -> std::path::PathBuf {
    std::env::current_dir().unwrap_or_default()
}

#[cfg(test)]
mod tests {
    #[test]
    fn colour_codes_are_stripped() {
        assert_eq!(
            super::strip_ansi("\u{1b}[1;32mABCD-1234\u{1b}[0m at https://x"),
            "ABCD-1234 at https://x"
        );
    }
}
