//! One run of a CLI agent: found on PATH, started in its own process group inside the kernel
//! sandbox (its working directory writable, its own state directory writable, the network
//! open: it talks to its API), the prompt written to stdin, each stdout line parsed as it
//! comes. Cancelling kills the whole group.

use std::path::PathBuf;
use std::process::Stdio;

use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio_util::sync::CancellationToken;

use super::{Access, AgentEvent, CliAgent};
use crate::process::group::{GroupGuard, exit_signal};
use crate::process::{Capture, SandboxStatus, confine};
use crate::sandbox::{SandboxError, Settings};

/// The most of its stderr kept (for the error shown when it fails).
const STDERR_CAP: usize = 64 * 1024;

/// What to run.
#[derive(Debug, Clone)]
pub struct RunSpec {
    /// The program: a name looked up on PATH, or a path.
    pub program: String,
    /// Where it works: the project (shown as the chat's workspace when `view` is given), or
    /// an empty directory.
    pub workdir: PathBuf,
    /// What the container shows at `workdir`: the chat's workspace.
    pub view: Option<crate::sandbox::ProjectView>,
    /// Its model, or [`super::DEFAULT_MODEL`].
    pub model: String,
    pub access: Access,
    /// Where it writes its last message (set by [`run`]).
    pub last_message_file: Option<PathBuf>,
}

/// How a run ended.
#[derive(Debug, Clone)]
pub struct RunEnd {
    pub exit_code: Option<i32>,
    pub signal: Option<i32>,
    pub cancelled: bool,
    /// The end of what it wrote to stderr.
    pub stderr: String,
    /// Its last message, from the file it wrote (Codex), when there is one.
    pub last_message: Option<String>,
    pub sandbox: SandboxStatus,
    /// Lines of stdout that were not JSON (the first few kept, for errors).
    pub stray_lines: Vec<String>,
}

impl RunEnd {
    /// Why the run failed, when its exit says it did (`None`: it exited 0, or was cancelled).
    pub fn failure(&self, agent: &dyn CliAgent) -> Option<String> {
        if self.cancelled || self.exit_code == Some(0) {
            return None;
        }
        let how = match (self.exit_code, self.signal) {
            (Some(code), _) => format!("exited with code {code}"),
            (None, Some(signal)) => format!("was killed by signal {signal}"),
            (None, None) => "stopped".to_string(),
        };
        // What it said last on stderr, else on stdout outside its JSON.
        fn last<'a>(lines: impl Iterator<Item = &'a str>) -> Option<&'a str> {
            lines.map(str::trim).filter(|l| !l.is_empty()).last()
        }
        let detail = last(self.stderr.lines())
            .or_else(|| last(self.stray_lines.iter().map(String::as_str)))
            .map(|l| format!(": {l}"))
            .unwrap_or_default();
        Some(format!("{} {how}{detail}", agent.name()))
    }
}

#[derive(Debug, thiserror::Error)]
pub enum RunError {
    #[error("{agent} was not found (`{program}` is not on PATH): {hint}")]
    Missing {
        agent: &'static str,
        program: String,
        hint: &'static str,
    },
    #[error("could not start {agent} ({program}): {source}")]
    Spawn {
        agent: &'static str,
        program: String,
        source: std::io::Error,
    },
    #[error(transparent)]
    Sandbox(#[from] SandboxError),
    #[error("could not prepare {agent}'s run: {source}")]
    Io {
        agent: &'static str,
        source: std::io::Error,
    },
}

pub(super) use crate::process::resolve_program;

/// Variables a CLI agent needs besides the built-in list: where its state lives, and the
/// proxies it reaches its service through (it has the network).
const AGENT_ENV: [&str; 10] = [
    "CODEX_HOME",
    "CLAUDE_CONFIG_DIR",
    "HTTPS_PROXY",
    "HTTP_PROXY",
    "NO_PROXY",
    "ALL_PROXY",
    "https_proxy",
    "http_proxy",
    "no_proxy",
    "all_proxy",
];

/// Runs `agent` as `spec` says with `prompt` on stdin; `env` is added to the scrubbed
/// environment (its key, when Tandem holds one). With `sandbox`, the kernel confines it to
/// its working directory, a private temp dir, its own state paths and the toolchains.
/// `on_event` gets each event as it is read. Returns when it has exited (or was killed on
/// cancel) and its output is read.
pub async fn run(
    agent: &dyn CliAgent,
    spec: &RunSpec,
    prompt: &str,
    env: &[(String, String)],
    sandbox: Option<&Settings>,
    cancel: &CancellationToken,
    mut on_event: impl FnMut(AgentEvent),
) -> Result<RunEnd, RunError> {
    let io = |source| RunError::Io {
        agent: agent.name(),
        source,
    };
    let program =
        resolve_program(&spec.program, &spec.workdir).ok_or_else(|| RunError::Missing {
            agent: agent.name(),
            program: spec.program.clone(),
            hint: agent.install_hint(),
        })?;
    let temp = tempfile::Builder::new()
        .prefix("tandem-agent-")
        .tempdir()
        .map_err(io)?;
    let last_message = temp.path().join("last-message.txt");
    let mut spec = spec.clone();
    spec.last_message_file = Some(last_message.clone());
    let mut command = std::process::Command::new(&program);
    command
        .args(agent.args(&spec))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let confinement = sandbox.map(|settings| {
        let mut c = settings.confinement(&spec.workdir, temp.path(), true);
        c.view = spec.view.clone();
        c.run_program(&program);
        if let Some(home) = crate::sandbox::home_dir() {
            c.writable.extend(agent.state_paths(&home));
        }
        c
    });
    let (status, prepared) = confine(
        &mut command,
        confinement.as_ref(),
        &spec.workdir,
        &AGENT_ENV.map(String::from),
    )?;
    // Its key, when Tandem holds one, after the allowed environment.
    command.envs(env.iter().map(|(k, v)| (k.as_str(), v.as_str())));
    let mut child = tokio::process::Command::from(command)
        .spawn()
        .map_err(|source| RunError::Spawn {
            agent: agent.name(),
            program: program.display().to_string(),
            source,
        })?;
    drop(prepared);
    let mut group = GroupGuard(child.id());
    if let Some(mut stdin) = child.stdin.take() {
        let prompt = prompt.to_string();
        // Written beside the reading: a large prompt must not wait on a full stdout pipe.
        tokio::spawn(async move {
            let _ = stdin.write_all(prompt.as_bytes()).await;
            let _ = stdin.shutdown().await;
        });
    }
    let mut stdout = child.stdout.take().map(BufReader::new);
    let mut stderr = child.stderr.take();
    let mut err = Capture::new(STDERR_CAP);
    let (mut line, mut err_buf) = (Vec::new(), vec![0u8; 8 * 1024]);
    let mut stray_lines = Vec::new();
    let mut cancelled = false;
    let mut exit = None;
    while stdout.is_some() || stderr.is_some() || exit.is_none() {
        tokio::select! {
            read = async { stdout.as_mut()?.read_until(b'\n', &mut line).await.ok() },
                if stdout.is_some() => match read {
                Some(n) if n > 0 => {
                    let text = String::from_utf8_lossy(&line);
                    let text = text.trim();
                    match serde_json::from_str::<serde_json::Value>(text) {
                        Ok(value) => agent.parse(&value).into_iter().for_each(&mut on_event),
                        Err(_) if text.is_empty() => {}
                        Err(_) => {
                            if stray_lines.len() < 20 {
                                stray_lines.push(super::clip(text, 500));
                            }
                        }
                    }
                    line.clear();
                }
                _ => stdout = None,
            },
            read = async { stderr.as_mut()?.read(&mut err_buf).await.ok() },
                if stderr.is_some() => match read {
                Some(n) if n > 0 => err.push(&err_buf[..n]),
                _ => stderr = None,
            },
            status = child.wait(), if exit.is_none() => {
                exit = Some(status.map_err(io)?);
                // What it left running goes with it.
                group.kill_now();
            }
            () = cancel.cancelled(), if !cancelled => {
                cancelled = true;
                group.kill_now();
                let _ = child.start_kill();
            }
        }
    }
    let (stderr, _) = err.finish();
    let last_message = std::fs::read_to_string(&last_message)
        .ok()
        .filter(|t| !t.trim().is_empty());
    Ok(RunEnd {
        exit_code: exit.and_then(|s| s.code()),
        signal: exit.as_ref().and_then(exit_signal),
        cancelled,
        stderr,
        last_message,
        sandbox: status,
        stray_lines,
    })
}
