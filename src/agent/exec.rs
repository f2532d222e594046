//! `run_shell`: runs an agent's shell command with a timeout, cancellation, bounded output,
//! a scrubbed environment and, on Linux, the kernel sandbox (see `sandbox`).
//!
//! The command gets its own process group so that a timeout, a cancel or dropping the future
//! kills everything it started, not just `/bin/sh`.

use std::collections::VecDeque;
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{ExitStatus, Stdio};
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncReadExt};
use tokio::process::Command;
use tokio::time::{Instant, sleep_until};
use tokio_util::sync::CancellationToken;

use crate::sandbox::{self, Confinement, Protections, SandboxError};

pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(120);
/// Characters kept per stream (head and tail): enough to see what happened, small enough for
/// the model's context.
pub const DEFAULT_OUTPUT_CAP: usize = 20_000;

/// How long to keep reading once the shell has exited or been killed. A process that left
/// the group (`setsid`) can hold the pipes open for ever; we do not wait for it.
const PIPE_GRACE: Duration = Duration::from_millis(500);

#[derive(Debug, Clone, PartialEq, Eq)]
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

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SandboxStatus {
    NotRequested,
    /// The kernel confined the command; what it enforced.
    Enforced(Protections),
    /// A sandbox was requested but the command ran without one; show `reason` to the user.
    Unavailable {
        reason: String,
    },
}

impl SandboxStatus {
    /// The warning to show when a requested sandbox could not be applied.
    pub fn warning(&self) -> Option<String> {
        let SandboxStatus::Unavailable { reason } = self else {
            return None;
        };
        Some(format!(
            "Warning: the sandbox is unavailable ({reason}); the command ran without \
             restrictions."
        ))
    }

    /// What the step card and `--json` show: `confined`, the protections that applied and the
    /// `gaps` (what the kernel here could not stop), or why there was no sandbox.
    pub fn to_json(&self) -> serde_json::Value {
        match self {
            SandboxStatus::NotRequested => serde_json::json!({ "confined": false }),
            SandboxStatus::Unavailable { reason } => {
                serde_json::json!({ "confined": false, "unavailable": reason })
            }
            SandboxStatus::Enforced(p) => {
                let mut value = serde_json::to_value(p).unwrap_or_default();
                value["confined"] = true.into();
                value["gaps"] = p.gaps().into();
                value
            }
        }
    }
}

#[derive(Debug, Clone)]
pub struct ShellRequest {
    pub command: String,
    pub cwd: PathBuf,
    pub timeout: Duration,
    pub output_cap: usize,
    pub sandbox: Sandbox,
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
    check_cwd(&request.cwd).await?;
    let started = Instant::now();
    let mut command = Command::new("/bin/sh");
    command
        .arg("-c")
        .arg(&request.command)
        .current_dir(&request.cwd)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .env_clear()
        .envs(scrubbed_env(utf8_vars()))
        .process_group(0);
    let prepared = match &request.sandbox {
        Sandbox::None => None,
        Sandbox::Confined(confinement) => {
            // Relative to `cwd`, like the command's own paths (not to the app's directory).
            let confinement = Confinement {
                project: request.cwd.join(&confinement.project),
                temp: request.cwd.join(&confinement.temp),
                ..confinement.clone()
            };
            command.envs(confinement.env());
            let prepared = sandbox::prepare(&confinement)?;
            prepared.install(command.as_std_mut());
            Some(prepared)
        }
    };
    let sandbox_status = match &prepared {
        None => SandboxStatus::NotRequested,
        Some(p) => match p.unavailable() {
            Some(reason) => SandboxStatus::Unavailable {
                reason: reason.to_string(),
            },
            None => SandboxStatus::Enforced(p.protections().clone()),
        },
    };
    let mut child = command.spawn().map_err(|source| ExecError::Spawn {
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
        signal: exit.and_then(|s| s.signal()),
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

/// The process environment without non-UTF-8 variables (on which `std::env::vars` panics).
fn utf8_vars() -> impl Iterator<Item = (String, String)> {
    std::env::vars_os()
        .filter_map(|(name, value)| Some((name.into_string().ok()?, value.into_string().ok()?)))
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

/// Kills the command's process group when dropped, so cancelling by dropping the future
/// leaves no orphans.
struct GroupGuard(Option<u32>);

impl GroupGuard {
    /// Kills the group once; later calls and the drop do nothing. Disarming matters: once the
    /// shell is reaped its pid may be reused, so the group is never signalled again.
    fn kill_now(&mut self) {
        if let Some(pid) = self.0.take() {
            kill_process_group(pid);
        }
    }
}

impl Drop for GroupGuard {
    fn drop(&mut self) {
        self.kill_now();
    }
}

/// SIGKILLs the process group led by `pid` (a child spawned with `process_group(0)`).
/// Refuses pids 0 and 1: `kill(0)` and `kill(-1)` would hit our own group or every process.
#[allow(unsafe_code)]
pub fn kill_process_group(pid: u32) {
    let Ok(pid) = libc::pid_t::try_from(pid) else {
        return;
    };
    if pid <= 1 {
        return;
    }
    // SAFETY: kill(2) with a negative pid signals the process group we created for the child
    // (process_group(0) made its pid the group id); it touches no memory of ours.
    unsafe {
        libc::kill(-pid, libc::SIGKILL);
    }
}

/// Inherited variables that make a shell run or read what the policy never saw: startup
/// files of non-interactive shells, `cd`'s search path (the judged `cd x` would go elsewhere),
/// options and trace prompts that expand commands. Exported bash functions (`BASH_FUNC_…`)
/// would replace the programs the policy judged.
const SHELL_HIJACKS: &[&str] = &[
    "BASH_ENV",
    "ENV",
    "CDPATH",
    "SHELLOPTS",
    "BASHOPTS",
    "PS4",
    "PROMPT_COMMAND",
    "GLOBIGNORE",
    "IFS",
];

/// The environment for agent commands: the given variables minus the app's secrets and the
/// shell hijacks. The model chooses the commands, so anything that looks like a credential
/// stays out of reach (`env`, `printenv` or a malicious script would otherwise read it).
pub fn scrubbed_env(vars: impl IntoIterator<Item = (String, String)>) -> Vec<(String, String)> {
    let hijack = |name: &str| SHELL_HIJACKS.contains(&name) || name.starts_with("BASH_FUNC_");
    vars.into_iter()
        .filter(|(name, _)| !crate::llm::secrets::is_secret_env_name(name) && !hijack(name))
        .collect()
}

fn omitted_marker(chars: usize) -> String {
    format!("\n… {chars} characters omitted …\n")
}

/// Keeps the first and last characters of `text` (at most `cap` in all) with a marker
/// saying how many were cut; `true` when something was cut. Cuts on char boundaries.
pub fn cap_output(text: &str, cap: usize) -> (String, bool) {
    let total = text.chars().count();
    if total <= cap {
        return (text.to_string(), false);
    }
    let head_chars = cap / 2;
    let byte_at = |nth: usize| text.char_indices().nth(nth).map_or(text.len(), |(i, _)| i);
    let head_end = byte_at(head_chars);
    let tail_start = byte_at(total - (cap - head_chars));
    let marker = omitted_marker(total - cap);
    (
        format!("{}{marker}{}", &text[..head_end], &text[tail_start..]),
        true,
    )
}

/// One output stream as it arrives: the first bytes and a rolling window of the last ones,
/// so memory stays bounded however much the command prints.
struct Capture {
    cap: usize,
    /// Bytes kept at each end: 4 per character, so each end holds at least `cap` characters.
    window: usize,
    head: Vec<u8>,
    tail: VecDeque<u8>,
    /// Characters that fell out of the tail window (counted by UTF-8 lead bytes).
    dropped_chars: usize,
}

impl Capture {
    fn new(cap: usize) -> Self {
        Capture {
            cap,
            window: cap.saturating_mul(4).max(4),
            head: Vec::new(),
            tail: VecDeque::new(),
            dropped_chars: 0,
        }
    }

    fn push(&mut self, bytes: &[u8]) {
        let room = self.window.saturating_sub(self.head.len()).min(bytes.len());
        let (head, rest) = bytes.split_at(room);
        self.head.extend_from_slice(head);
        self.tail.extend(rest);
        let excess = self.tail.len().saturating_sub(self.window);
        for byte in self.tail.drain(..excess) {
            if byte & 0xC0 != 0x80 {
                self.dropped_chars += 1;
            }
        }
    }

    fn finish(mut self) -> (String, bool) {
        if self.dropped_chars == 0 {
            let mut all = self.head;
            all.extend(self.tail);
            return cap_output(&String::from_utf8_lossy(&all), self.cap);
        }
        // Each end holds at least `cap` characters, so a character split at a window edge
        // (decoded as U+FFFD) is always among the omitted ones.
        let head = String::from_utf8_lossy(&self.head);
        let tail = String::from_utf8_lossy(self.tail.make_contiguous());
        let head_keep = self.cap / 2;
        let tail_keep = self.cap - head_keep;
        let (head_total, tail_total) = (head.chars().count(), tail.chars().count());
        let kept_head: String = head.chars().take(head_keep).collect();
        let tail_skip = tail_total.saturating_sub(tail_keep);
        let kept_tail: String = tail.chars().skip(tail_skip).collect();
        let omitted = head_total.saturating_sub(head_keep) + self.dropped_chars + tail_skip;
        (
            format!("{kept_head}{}{kept_tail}", omitted_marker(omitted)),
            true,
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cap_output_keeps_head_and_tail_on_char_boundaries() {
        assert_eq!(cap_output("short", 10), ("short".to_string(), false));
        let text = format!("HEAD{}TAIL", "é".repeat(100));
        let (capped, cut) = cap_output(&text, 10);
        assert!(cut);
        assert_eq!(capped, "HEADé\n… 98 characters omitted …\néTAIL");
    }

    #[test]
    fn capture_of_huge_output_stays_bounded_and_counts_what_it_cut() {
        let mut capture = Capture::new(10);
        capture.push(b"0123456789");
        for _ in 0..1000 {
            capture.push("é€😀x".as_bytes());
            assert!(capture.head.len() + capture.tail.len() <= 2 * capture.window);
        }
        capture.push(b"abcdefghij");
        let (text, cut) = capture.finish();
        assert!(cut);
        // 10 + 4000 + 10 characters, 10 kept.
        assert_eq!(text, "01234\n… 4010 characters omitted …\nfghij");
        // Nothing cut: the bytes come back whole, even split across pushes mid-character.
        let mut small = Capture::new(10);
        let bytes = "é€😀".as_bytes();
        small.push(&bytes[..1]);
        small.push(&bytes[1..]);
        assert_eq!(small.finish(), ("é€😀".to_string(), false));
    }

    #[test]
    fn scrubbed_env_removes_secrets_and_keeps_the_rest() {
        let kept = "PATH HOME LANG TERM USER CARGO_HOME KEYMAP TMPDIR";
        let secrets = "OPENAI_API_KEY anthropic_api_key GITHUB_TOKEN NPM_TOKEN STRIPE_SECRET \
            DB_PASSWORD MYSQL_PASSWD CLIENT_SECRET_FILE GOOGLE_APPLICATION_CREDENTIALS \
            AWS_ACCESS_KEY_ID AWS_SECRET_ACCESS_KEY AWS_SESSION_TOKEN TANDEM_MODEL \
            SSH_AUTH_SOCK SIGNING_KEY BASH_ENV ENV CDPATH SHELLOPTS PS4 BASH_FUNC_ls%%";
        let vars = kept.split(' ').chain(secrets.split_whitespace());
        let vars = vars.map(|name| (name.to_string(), "v".to_string()));
        let names: Vec<String> = scrubbed_env(vars).into_iter().map(|(n, _)| n).collect();
        assert_eq!(names.join(" "), kept);
    }
}
