//! `run_shell`: runs an agent's shell command with a timeout, cancellation, bounded output,
//! a scrubbed environment and, on Linux, the kernel sandbox (see `sandbox`).
//!
//! The command gets its own process group so that a timeout, a cancel or dropping the future
//! kills everything it started, not just `/bin/sh`.

use std::path::{Path, PathBuf};
use std::process::{ExitStatus, Stdio};
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncReadExt};
use tokio::process::Command;
use tokio::time::{Instant, sleep_until};
use tokio_util::sync::CancellationToken;

use super::group::{GroupGuard, exit_signal};
use super::{Capture, SandboxStatus, confine};
use crate::sandbox::{Confinement, SandboxError};

pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(120);
/// Characters kept per stream (head and tail): enough to see what happened, small enough for
/// the model's context.
pub const DEFAULT_OUTPUT_CAP: usize = 20_000;

/// How long to keep reading once the shell has exited or been killed. A process that left
/// the group (`setsid`) can hold the pipes open for ever; we do not wait for it.
const PIPE_GRACE: Duration = Duration::from_millis(500);

#[derive(Debug, Clone, PartialEq, Eq)]
#[allow(clippy::large_enum_variant)] // one per command, moved once: boxing buys nothing
pub enum Sandbox {
    None,
    /// Confined by the kernel to what `Confinement` allows (see `sandbox`).
    Confined(Confinement),
}

impl Sandbox {
    /// The usual confinement: the project, `temp` (which becomes `TMPDIR`), the toolchains,
    /// no network.
    pub fn project(project: impl Into<PathBuf>, temp: impl Into<PathBuf>) -> Self {
        Sandbox::Confined(Confinement::new(project, temp))
    }
}

#[derive(Debug, Clone)]
pub struct ShellRequest {
    pub command: String,
    pub cwd: PathBuf,
    pub timeout: Duration,
    pub output_cap: usize,
    pub sandbox: Sandbox,
    /// Variables passed besides the built-in list (`agent.sandbox_env`).
    pub env_names: Vec<String>,
}

impl ShellRequest {
    /// A request with the default timeout and output cap, unsandboxed.
    pub fn new(command: impl Into<String>, cwd: impl Into<PathBuf>) -> Self {
        ShellRequest {
            command: command.into(),
            cwd: cwd.into(),
            timeout: DEFAULT_TIMEOUT,
            output_cap: DEFAULT_OUTPUT_CAP,
            sandbox: Sandbox::None,
            env_names: Vec::new(),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ShellOutcome {
    pub exit_code: Option<i32>,
    pub signal: Option<i32>,
    pub stdout: String,
    pub stderr: String,
    pub stdout_truncated: bool,
    pub stderr_truncated: bool,
    pub timed_out: bool,
    pub cancelled: bool,
    pub duration: Duration,
    pub sandbox: SandboxStatus,
}

impl ShellOutcome {
    /// The text the model sees: exit code/signal, timed out/cancelled notes, sandbox warning,
    /// stdout and stderr sections. The notes come first so a truncated output cannot hide them.
    pub fn render_for_model(&self) -> String {
        let mut text = match (self.exit_code, self.signal) {
            (Some(code), _) => format!("Exit code: {code}\n"),
            (None, Some(signal)) => format!("Killed by signal {signal}\n"),
            (None, None) => "Exit status unknown (the shell could not be reaped in time)\n".into(),
        };
        let secs = self.duration.as_secs_f32();
        let stops = [
            (self.timed_out, "Timed out"),
            (self.cancelled, "Cancelled by the user"),
        ];
        for (_, what) in stops.iter().filter(|(happened, _)| *happened) {
            text.push_str(&format!(
                "{what} after {secs:.1} s: the command and everything it started were killed.\n"
            ));
        }
        if let SandboxStatus::Enforced(protections) = &self.sandbox {
            text.push_str(&protections.summary());
            text.push('\n');
        }
        if let Some(warning) = self.sandbox.warning() {
            text.push_str(&format!("{warning}\n"));
        }
        for (name, body, truncated) in [
            ("stdout", &self.stdout, self.stdout_truncated),
            ("stderr", &self.stderr, self.stderr_truncated),
        ] {
            let note = if truncated { " (truncated)" } else { "" };
            let body = match body.trim_end_matches('\n') {
                "" => "(empty)",
                body => body,
            };
            text.push_str(&format!("\n[{name}{note}]\n{body}\n"));
        }
        text
    }
}

#[derive(Debug, thiserror::Error)]
pub enum ExecError {
    #[error("cannot run a command in {path}: {source}")]
    Cwd {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("could not start `/bin/sh -c {command}`: {source}")]
    Spawn {
        command: String,
        source: std::io::Error,
    },
    #[error(transparent)]
    Sandbox(#[from] SandboxError),
    #[error("lost track of the running command: {source}")]
    Wait { source: std::io::Error },
}

/// Runs `/bin/sh -c <command>` in `cwd`. Returns when the shell has exited (or was killed on
/// timeout/cancel) and its pipes have closed or `PIPE_GRACE` has passed. Every process left
/// in the command's group is killed before returning: nothing it started outlives the call.
pub async fn run_shell(
    request: ShellRequest,
    cancel: CancellationToken,
) -> Result<ShellOutcome, ExecError> {
    // In a view (the agent's workspace) the directory may exist only there: the sandbox
    // checks it in the view.
    let in_view = matches!(&request.sandbox, Sandbox::Confined(c) if c.view.is_some());
    if !in_view {
        check_cwd(&request.cwd).await?;
    }
    let started = Instant::now();
    let mut command = std::process::Command::new("/bin/sh");
    command
        .arg("-c")
        .arg(&request.command)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    // Relative to `cwd`, like the command's own paths (not to the app's directory).
    let confinement = match &request.sandbox {
        Sandbox::None => None,
        Sandbox::Confined(confinement) => Some(Confinement {
            project: request.cwd.join(&confinement.project),
            temp: request.cwd.join(&confinement.temp),
            ..confinement.clone()
        }),
    };
    let (sandbox_status, prepared) = confine(
        &mut command,
        confinement.as_ref(),
        &request.cwd,
        &request.env_names,
    )?;
    let mut child = Command::from(command)
        .spawn()
        .map_err(|source| ExecError::Spawn {
            command: request.command.clone(),
            source,
        })?;
    // The child has restricted itself; the ruleset fd is no longer needed.
    drop(prepared);
    let mut group = GroupGuard(child.id());

    let mut stdout = child.stdout.take();
    let mut stderr = child.stderr.take();
    let mut out = Capture::new(request.output_cap);
    let mut err = Capture::new(request.output_cap);
    let mut out_buf = vec![0u8; 16 * 1024];
    let mut err_buf = vec![0u8; 16 * 1024];
    // A timeout too large for the clock (`Duration::MAX`) means "no timeout": ~30 years.
    let far = started + Duration::from_secs(1 << 30);
    let deadline = started.checked_add(request.timeout).unwrap_or(far);
    let mut exit: Option<ExitStatus> = None;
    // Set once the shell has exited or been killed: the moment we stop waiting for pipes.
    let mut grace: Option<Instant> = None;
    let (mut timed_out, mut cancelled) = (false, false);
    loop {
        if exit.is_some() && stdout.is_none() && stderr.is_none() {
            break;
        }
        let running = grace.is_none();
        tokio::select! {
            read = read_some(&mut stdout, &mut out_buf), if stdout.is_some() => match read {
                Some(n) => out.push(&out_buf[..n]),
                None => stdout = None,
            },
            read = read_some(&mut stderr, &mut err_buf), if stderr.is_some() => match read {
                Some(n) => err.push(&err_buf[..n]),
                None => stderr = None,
            },
            status = child.wait(), if exit.is_none() => {
                exit = Some(status.map_err(|source| ExecError::Wait { source })?);
                // Background jobs would otherwise keep the pipes open and outlive the call.
                group.kill_now();
                grace.get_or_insert(Instant::now() + PIPE_GRACE);
            }
            () = sleep_until(deadline), if running => {
                timed_out = true;
                group.kill_now();
                grace = Some(Instant::now() + PIPE_GRACE);
            }
            () = cancel.cancelled(), if running => {
                cancelled = true;
                group.kill_now();
                grace = Some(Instant::now() + PIPE_GRACE);
            }
            () = sleep_until(grace.unwrap_or(deadline)), if !running => break,
        }
    }
    let (stdout, stdout_truncated) = out.finish();
    let (stderr, stderr_truncated) = err.finish();
    Ok(ShellOutcome {
        exit_code: exit.and_then(|s| s.code()),
        signal: exit.as_ref().and_then(exit_signal),
        stdout,
        stderr,
        stdout_truncated,
        stderr_truncated,
        timed_out,
        cancelled,
        duration: started.elapsed(),
        sandbox: sandbox_status,
    })
}

async fn check_cwd(cwd: &Path) -> Result<(), ExecError> {
    let path = cwd.to_path_buf();
    match tokio::fs::metadata(cwd).await {
        Ok(meta) if meta.is_dir() => Ok(()),
        Ok(_) => Err(std::io::ErrorKind::NotADirectory.into()),
        Err(source) => Err(source),
    }
    .map_err(|source| ExecError::Cwd { path, source })
}

/// Reads once from `pipe`; `None` at end of file or on a read error.
async fn read_some<R: AsyncRead + Unpin>(pipe: &mut Option<R>, buf: &mut [u8]) -> Option<usize> {
    match pipe {
        Some(pipe) => match pipe.read(buf).await {
            Ok(0) | Err(_) => None,
            Ok(n) => Some(n),
        },
        None => std::future::pending().await,
    }
}
