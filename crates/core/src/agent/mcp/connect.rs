//! Starting one server: the stdio child in the agent's container (its own session and
//! process group, the chat's workspace at the project's path: see [`World`]) or an HTTP
//! transport with the record's headers, the handshake and the tool listing, all within a time
//! limit; and the tail of a stdio server's stderr, kept for error messages.

use std::collections::{BTreeMap, HashMap};
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use reqwest::header::{HeaderName, HeaderValue};
use rmcp::model::{ClientCapabilities, ClientConfig, Implementation};
use rmcp::service::RunningService;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::transport::{StreamableHttpClientTransport, TokioChildProcess};
use rmcp::{RoleClient, ServiceExt};
use serde_json::Value;
use tokio::io::AsyncReadExt;
use tokio::process::ChildStderr;
use tokio_util::sync::CancellationToken;

use super::{McpError, McpTool, SseClientTransport, World};
use crate::process::group::GroupGuard;
use crate::process::{SandboxStatus, confine, resolve_program};
use crate::store::{McpServerRecord, McpTransport, stdio_server_env};

/// How long stopping one server may take before its process group is killed.
const STOP_TIMEOUT: Duration = Duration::from_secs(10);
/// How much of a server's stderr is kept for error messages.
const STDERR_TAIL_BYTES: usize = 2_000;

/// The last [`STDERR_TAIL_BYTES`] of a server's stderr, kept by a task that drains the pipe
/// (a full pipe would block the server).
#[derive(Debug, Clone, Default)]
pub(super) struct StderrTail {
    text: Arc<Mutex<String>>,
    /// Cancelled when the stream ends (at once for a server without one).
    closed: CancellationToken,
}

impl StderrTail {
    pub(super) fn drain(&self, stderr: Option<ChildStderr>) {
        let (tail, closed) = (self.text.clone(), self.closed.clone());
        tokio::spawn(async move {
            // Chunks, not lines: endless text without a newline must not grow a line buffer.
            if let Some(mut stderr) = stderr {
                let mut chunk = [0; 4096];
                while let Ok(n @ 1..) = stderr.read(&mut chunk).await {
                    let mut tail = tail.lock().unwrap_or_else(|p| p.into_inner());
                    tail.push_str(&String::from_utf8_lossy(&chunk[..n]));
                    let mut cut = tail.len().saturating_sub(STDERR_TAIL_BYTES);
                    while !tail.is_char_boundary(cut) {
                        cut += 1;
                    }
                    tail.drain(..cut);
                }
            }
            closed.cancel();
        });
    }

    pub(super) fn get(&self) -> String {
        self.text.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// The tail once the stream has ended (or after half a second): a server that dies
    /// usually says why on stderr just before, and its stdout may close first.
    pub(super) async fn settled(&self) -> String {
        let _ = tokio::time::timeout(Duration::from_millis(500), self.closed.cancelled()).await;
        self.get()
    }
}

/// One running connection to a server.
pub(super) struct Server {
    pub(super) client: RunningService<RoleClient, ClientConfig>,
    pub(super) pid: Option<u32>,
    pub(super) stderr: StderrTail,
    /// A stdio server's process group: killed (grandchildren too) when the server stops.
    group: GroupGuard,
    /// Which start of the slot this is (a failure only retires its own connection).
    pub(super) generation: u64,
    /// A stdio server's private temp dir (its `TMPDIR`), removed once it has stopped.
    _temp: Option<tempfile::TempDir>,
}

impl Server {
    pub(super) fn is_alive(&self) -> bool {
        !self.client.is_closed() && !self.client.peer().is_transport_closed()
    }

    /// Closes the connection (a stdio server: stdin closed, SIGTERM, SIGKILL, waited for),
    /// then kills whatever is left of its process group.
    pub(super) async fn stop(mut self) {
        let _ = tokio::time::timeout(STOP_TIMEOUT, self.client.close()).await;
        self.group.kill_now();
    }
}

/// Starts `record`'s server, giving the start, the handshake and the tool listing `timeout`.
pub(super) async fn connect_within(
    record: &McpServerRecord,
    world: Option<&World>,
    timeout: Duration,
    generation: u64,
) -> Result<(Server, Vec<McpTool>), McpError> {
    let stderr = StderrTail::default();
    // On timeout the half-started server is dropped with the future, which kills its group.
    let connecting = connect(record, world, stderr.clone(), generation);
    let result = tokio::time::timeout(timeout, connecting).await;
    result.unwrap_or_else(|_elapsed| {
        Err(McpError::Handshake {
            server: record.name.clone(),
            reason: format!("no answer within {timeout:?}"),
            stderr: stderr.get(),
        })
    })
}

/// The headers as rmcp's HTTP transport takes them (validated when stored; checked again).
fn header_map(
    server: &str,
    headers: &BTreeMap<String, String>,
) -> Result<HashMap<HeaderName, HeaderValue>, McpError> {
    env_headers(server, headers)?
        .iter()
        .map(|(name, value)| {
            let bad = || McpError::Handshake {
                server: server.to_string(),
                reason: format!("the header {name:?} cannot be sent: remove it and add it again"),
                stderr: String::new(),
            };
            let name = HeaderName::from_bytes(name.as_bytes()).map_err(|_| bad())?;
            let mut value = HeaderValue::from_str(value).map_err(|_| bad())?;
            value.set_sensitive(true);
            Ok((name, value))
        })
        .collect()
}

/// The headers with their `${NAME}`s filled in from the environment.
fn env_headers(
    server: &str,
    headers: &BTreeMap<String, String>,
) -> Result<BTreeMap<String, String>, McpError> {
    crate::store::expand_header_values(headers, |name| std::env::var(name).ok()).map_err(|name| {
        McpError::Handshake {
            server: server.to_string(),
            reason: format!(
                "a header takes ${{{name}}} from the environment, and {name} is not set: set it \
                 before starting tandem"
            ),
            stderr: String::new(),
        }
    })
}

async fn connect(
    record: &McpServerRecord,
    world: Option<&World>,
    stderr: StderrTail,
    generation: u64,
) -> Result<(Server, Vec<McpTool>), McpError> {
    let name = record.name.clone();
    let handshake = |reason: &dyn std::fmt::Display, stderr| McpError::Handshake {
        server: name.clone(),
        reason: reason.to_string(),
        stderr,
    };
    let client_info = ClientConfig::new(
        ClientCapabilities::default(),
        Implementation::new("tandem", env!("CARGO_PKG_VERSION")),
    );
    let (mut pid, mut temp) = (None, None);
    // Armed as soon as there is a process: a failed handshake drops it, killing the group.
    let mut group = GroupGuard(None);
    let served = match &record.transport {
        McpTransport::Stdio { command, args, env } => {
            let world = world.ok_or_else(|| McpError::Unconfined {
                server: name.clone(),
                reason: "it has no workspace to run in".into(),
            })?;
            let (process, pipe, temp_dir) = spawn_confined(&name, command, args, env, world)?;
            temp = Some(temp_dir);
            stderr.drain(pipe);
            pid = process.id();
            group = GroupGuard(pid);
            client_info.serve(process).await.map_err(|e| e.to_string())
        }
        McpTransport::Http { url, headers } => {
            crate::llm::init_tls();
            stderr.drain(None);
            let mut config = StreamableHttpClientTransportConfig::with_uri(url.as_str());
            config.custom_headers = header_map(&name, headers)?;
            let transport = StreamableHttpClientTransport::from_config(config);
            client_info
                .serve(transport)
                .await
                .map_err(|e| e.to_string())
        }
        McpTransport::Sse { url, headers } => {
            stderr.drain(None);
            let headers = env_headers(&name, headers)?;
            let transport = SseClientTransport::connect(url, &headers)
                .await
                .map_err(|e| handshake(&e, String::new()))?;
            client_info
                .serve(transport)
                .await
                .map_err(|e| e.to_string())
        }
    };
    let client = match served {
        Ok(client) => client,
        Err(e) => {
            let stderr = stderr.settled().await;
            return Err(handshake(&e, stderr));
        }
    };
    let listed = client.peer().list_all_tools().await;
    let listed =
        listed.map_err(|e| handshake(&format_args!("listing tools failed: {e}"), stderr.get()))?;
    let tools = listed.into_iter().map(|tool| McpTool {
        server: name.clone(),
        name: tool.name.into_owned(),
        description: tool.description.map(|d| d.into_owned()).unwrap_or_default(),
        input_schema: Value::Object((*tool.input_schema).clone()),
    });
    let tools = tools.collect();
    let server = Server {
        client,
        pid,
        stderr,
        group,
        generation,
        _temp: temp,
    };
    Ok((server, tools))
}

/// Starts a stdio server in `world`: confined as the agent's commands are (see
/// [`crate::process::confine`]), with the allowed environment plus its record's variables.
/// Where the container cannot be built it is not started (see [`refusal`]).
fn spawn_confined(
    name: &str,
    command: &str,
    args: &[String],
    env: &BTreeMap<String, String>,
    world: &World,
) -> Result<(TokioChildProcess, Option<ChildStderr>, tempfile::TempDir), McpError> {
    let unconfined = |reason: String| McpError::Unconfined {
        server: name.to_string(),
        reason,
    };
    let temp = tempfile::Builder::new()
        .prefix("tandem-mcp-")
        .tempdir()
        .map_err(|e| unconfined(format!("no temp dir for it: {e}")))?;
    let program = resolve_program(command, world.project());
    let confinement = world.confinement(program.as_deref(), temp.path());
    let mut cmd = tokio::process::Command::new(command);
    cmd.args(args).kill_on_drop(true);
    // Its directory, environment, session (its own process group, which stopping it kills)
    // and container.
    let (status, prepared) = confine(
        cmd.as_std_mut(),
        Some(&confinement),
        world.project(),
        world.env_names(),
    )
    .map_err(|e| unconfined(e.to_string()))?;
    if let Some(reason) = refusal(&status) {
        return Err(unconfined(reason));
    }
    for (variable, value) in stdio_server_env(env, std::env::vars_os()) {
        match value {
            Some(value) => cmd.env(variable, value),
            None => cmd.env_remove(variable),
        };
    }
    let spawned = TokioChildProcess::builder(cmd)
        .stderr(Stdio::piped())
        .spawn();
    // The child has confined itself: the plan's descriptors are no longer needed.
    drop(prepared);
    let (process, pipe) = spawned.map_err(|source| McpError::Spawn {
        server: name.to_string(),
        command: command.to_string(),
        source,
    })?;
    Ok((process, pipe, temp))
}

/// Why a server confined as `status` says may not run, if it may not. Only the container
/// will do: a server starts with the turn, before anything is asked, and lives through it.
/// Landlock alone (no user namespaces: Ubuntu's default since 23.10) keeps its writes in the
/// workspace but not its processes within the turn, nor it off the network and the host's
/// sockets, where a command is asked about first and ends with its call.
fn refusal(status: &SandboxStatus) -> Option<String> {
    match status {
        SandboxStatus::Enforced(protections) if protections.container => None,
        SandboxStatus::Enforced(_) => Some(
            "the agent's container cannot be built here (no user namespaces): only part of the \
             sandbox could hold the server, which would start unasked, and whose processes \
             could outlive the turn and reach the network"
                .into(),
        ),
        SandboxStatus::Unavailable { reason } => {
            Some(format!("no sandbox can be built here ({reason})"))
        }
        SandboxStatus::NotRequested => Some("no sandbox was asked for".into()),
    }
}

#[cfg(test)]
mod refusal_tests {
    use super::*;
    use crate::sandbox::Protections;

    #[test]
    fn a_server_runs_only_in_the_container() {
        let container = Protections {
            container: true,
            ..Protections::none()
        };
        assert_eq!(refusal(&SandboxStatus::Enforced(container)), None);
        // Landlock without the container: writes held, processes and network not.
        let landlock_only = Protections {
            landlock_abi: Some(7),
            reads: true,
            writes: true,
            ..Protections::none()
        };
        let refused = refusal(&SandboxStatus::Enforced(landlock_only));
        assert!(refused.is_some_and(|r| r.contains("container")));
        let unavailable = SandboxStatus::Unavailable {
            reason: "no Landlock".into(),
        };
        assert!(refusal(&unavailable).is_some());
        assert!(refusal(&SandboxStatus::NotRequested).is_some());
    }
}
