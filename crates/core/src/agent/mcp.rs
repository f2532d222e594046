//! MCP servers as agent tools, through the official SDK (`rmcp`).
//!
//! An [`McpHub`] holds the servers of one agent turn. The app keeps them across turns in an
//! [`McpPool`]: one set per project, started on the project's first agent turn and stopped when
//! the project closes or a server is removed, disabled or changed. Servers start concurrently
//! and independently: one that cannot start, crashes or never answers the handshake is
//! reported in the returned errors and the others still serve their tools.
//!
//! A server that drops is restarted on the next call to it (after a failed restart, the next
//! attempt waits, doubling up to a minute). Meanwhile the tools it listed stay offered, and a
//! call to one is [`McpError::Unavailable`]: a tool error the model reads, not a failed turn.
//!
//! Transports: stdio (a child in its own process group: stopping it kills the whole group),
//! streamable HTTP (rmcp's, with the record's headers on every request) and the legacy
//! HTTP+SSE transport ([`SseClientTransport`]).
//!
//! A tool is `server/tool` for the approval policy and the UI ([`McpTool::qualified`]) and
//! `server__tool` for the model ([`McpTool::wire_name`]): provider APIs only accept
//! `^[A-Za-z0-9_-]{1,64}$`, and server names are validated to fit (`store::validate_mcp_server_name`).
//!
//! Stdio servers are third-party programs: they do not inherit the app's secrets (see
//! `store::stdio_server_env`), and their stderr is captured (the last lines are quoted in
//! errors), never inherited, since it would scribble over the terminal UI.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use futures_util::future::join_all;
use reqwest::header::{HeaderName, HeaderValue};
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ClientCapabilities, ClientConfig,
    ContentBlock, Implementation, ResourceContents,
};
use rmcp::service::RunningService;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::transport::{StreamableHttpClientTransport, TokioChildProcess};
use rmcp::{Peer, RoleClient, ServiceError, ServiceExt};
use serde_json::Value;
use tokio::io::AsyncReadExt;
use tokio::process::ChildStderr;
use tokio_util::sync::CancellationToken;

use crate::llm::ToolSpec;
use crate::process::group::GroupGuard;
use crate::store::{McpServerRecord, McpTransport, stdio_server_env};

mod pool;
mod sse;

pub use pool::McpPool;
pub use sse::{SseClientTransport, SseError};

/// The most characters of tool output handed to the model; the rest is cut with a notice.
pub const MAX_OUTPUT_CHARS: usize = 20_000;
/// How long one tool call may take unless [`McpHub::with_call_timeout`] says otherwise.
pub const DEFAULT_CALL_TIMEOUT: Duration = Duration::from_secs(120);
/// How long stopping one server may take before its process group is killed.
const STOP_TIMEOUT: Duration = Duration::from_secs(10);
/// How much of a server's stderr is kept for error messages.
const STDERR_TAIL_BYTES: usize = 2_000;

/// One tool offered by a server.
#[derive(Debug, Clone, PartialEq)]
pub struct McpTool {
    pub server: String,
    pub name: String,
    pub description: String,
    /// The JSON Schema of the arguments, as the server sent it.
    pub input_schema: Value,
}

impl McpTool {
    /// `server/tool`: how the policy and the UI name it.
    pub fn qualified(&self) -> String {
        format!("{}/{}", self.server, self.name)
    }

    /// `server__tool`, made to match `^[A-Za-z0-9_-]{1,64}$` for provider APIs.
    pub fn wire_name(&self) -> String {
        wire_name(&self.server, &self.name)
    }

    /// The tool as offered to the model.
    pub fn spec(&self) -> ToolSpec {
        let description = if self.description.trim().is_empty() {
            format!("Tool {} of the MCP server {}.", self.name, self.server)
        } else {
            self.description.clone()
        };
        ToolSpec {
            name: self.wire_name(),
            description,
            parameters: provider_schema(&self.input_schema),
        }
    }
}

/// `server__tool` when that is already a valid wire name; otherwise the sanitized (and, past
/// 64 characters, shortened) name plus a hash of the original, so two tools whose names only
/// differ in replaced characters still get different names, the same on every run.
fn wire_name(server: &str, tool: &str) -> String {
    let raw = format!("{server}__{tool}");
    let valid = |c: char| c.is_ascii_alphanumeric() || c == '_' || c == '-';
    if raw.len() <= 64 && raw.chars().all(valid) {
        return raw;
    }
    let clean: String = raw
        .chars()
        .map(|c| if valid(c) { c } else { '_' })
        .take(55)
        .collect();
    // FNV-1a: tiny, stable across Rust versions (unlike `DefaultHasher`).
    let hash = raw.bytes().fold(0x811c_9dc5_u32, |h, b| {
        (h ^ u32::from(b)).wrapping_mul(0x0100_0193)
    });
    format!("{clean}_{hash:08x}")
}

/// The schema as providers accept it: an object schema, without the `$schema` key that
/// some reject.
fn provider_schema(schema: &Value) -> Value {
    let mut schema = schema.as_object().cloned().unwrap_or_default();
    schema.remove("$schema");
    schema.entry("type").or_insert_with(|| "object".into());
    Value::Object(schema)
}

/// What a tool call returned.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct McpCallOutput {
    /// Text contents joined by newlines, others described in brackets; ≤ [`MAX_OUTPUT_CHARS`].
    pub text: String,
    /// The server marked the result as a tool-level error.
    pub is_error: bool,
}

#[derive(Debug, thiserror::Error)]
pub enum McpError {
    #[error("MCP server {server}: cannot start `{command}`: {source}")]
    Spawn {
        server: String,
        command: String,
        source: std::io::Error,
    },
    /// The handshake or the tool listing failed or took too long.
    #[error("MCP server {server} did not start: {reason}{}", quote_stderr(.stderr))]
    Handshake {
        server: String,
        reason: String,
        stderr: String,
    },
    /// The server dropped and could not be restarted (or waits before the next attempt): the
    /// model reads this as the call's result and can carry on without the tool.
    #[error(
        "MCP server {server} is unavailable: {reason}. Its tools cannot be used right now; \
         carry on without them (tandem restarts the server on a later call)"
    )]
    Unavailable { server: String, reason: String },
    #[error("no MCP server offers a tool named {name:?}")]
    UnknownTool { name: String },
    #[error("MCP server {server}: {tool} was cancelled")]
    Cancelled { server: String, tool: String },
    #[error("MCP server {server}: {tool} did not answer within {after:?}")]
    Timeout {
        server: String,
        tool: String,
        after: Duration,
    },
    #[error("MCP server {server}: {tool} failed: {failure}")]
    Call {
        server: String,
        tool: String,
        failure: CallFailure,
    },
}

/// Why a call failed, other than by cancellation or timeout.
#[derive(Debug, thiserror::Error)]
pub enum CallFailure {
    #[error("the arguments must be a JSON object")]
    BadArguments,
    /// A JSON-RPC error: unknown tool, invalid parameters, a server fault.
    #[error("{message} (JSON-RPC error {code})")]
    Rejected { code: i32, message: String },
    #[error("the server asked for {0}, which tandem does not support")]
    Unsupported(&'static str),
    #[error("{source}{}", quote_stderr(.stderr))]
    Connection {
        source: Box<ServiceError>,
        stderr: String,
    },
}

fn quote_stderr(stderr: &str) -> String {
    match stderr.trim() {
        "" => String::new(),
        tail => format!("\nserver stderr (last lines):\n{tail}"),
    }
}

/// The last [`STDERR_TAIL_BYTES`] of a server's stderr, kept by a task that drains the pipe
/// (a full pipe would block the server).
#[derive(Debug, Clone, Default)]
struct StderrTail {
    text: Arc<Mutex<String>>,
    /// Cancelled when the stream ends (at once for a server without one).
    closed: CancellationToken,
}

impl StderrTail {
    fn drain(&self, stderr: Option<ChildStderr>) {
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

    fn get(&self) -> String {
        self.text.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// The tail once the stream has ended (or after half a second): a server that dies
    /// usually says why on stderr just before, and its stdout may close first.
    async fn settled(&self) -> String {
        let _ = tokio::time::timeout(Duration::from_millis(500), self.closed.cancelled()).await;
        self.get()
    }
}

/// One running connection to a server.
struct Server {
    client: RunningService<RoleClient, ClientConfig>,
    pid: Option<u32>,
    stderr: StderrTail,
    /// A stdio server's process group: killed (grandchildren too) when the server stops.
    group: GroupGuard,
    /// Which start of the slot this is (a failure only retires its own connection).
    generation: u64,
}

impl Server {
    fn is_alive(&self) -> bool {
        !self.client.is_closed() && !self.client.peer().is_transport_closed()
    }

    /// Closes the connection (a stdio server: stdin closed, SIGTERM, SIGKILL, waited for),
    /// then kills whatever is left of its process group.
    async fn stop(mut self) {
        let _ = tokio::time::timeout(STOP_TIMEOUT, self.client.close()).await;
        self.group.kill_now();
    }
}

/// What a slot knows between calls.
#[derive(Default)]
struct SlotState {
    server: Option<Server>,
    /// Starts so far (the first included).
    starts: u64,
    /// Failed starts in a row, for the backoff.
    failures: u32,
    /// No new start before this.
    retry_at: Option<Instant>,
    /// Why the last start failed, or the connection was lost.
    last_error: Option<String>,
    /// Stopped for good (project closed, server removed, disabled or changed).
    stopped: bool,
}

/// One configured server: its connection (started on demand, restarted when it dropped) and
/// the tools it listed last, which stay offered while it is down.
pub(crate) struct Slot {
    record: McpServerRecord,
    /// Where a stdio server runs (the project's folder), if anywhere in particular.
    cwd: Option<PathBuf>,
    state: tokio::sync::Mutex<SlotState>,
    tools: std::sync::RwLock<Vec<McpTool>>,
}

/// How a slot starts and restarts its server.
#[derive(Debug, Clone, Copy)]
pub struct Timing {
    /// For the handshake and the tool listing of one start.
    pub connect: Duration,
    /// For one tool call.
    pub call: Duration,
    /// The wait after the first failed restart; doubled after each further one …
    pub backoff_min: Duration,
    /// … up to this.
    pub backoff_max: Duration,
}

impl Default for Timing {
    fn default() -> Self {
        Timing {
            connect: Duration::from_secs(15),
            call: DEFAULT_CALL_TIMEOUT,
            backoff_min: Duration::from_secs(1),
            backoff_max: Duration::from_secs(60),
        }
    }
}

impl Slot {
    pub(crate) fn new(record: McpServerRecord, cwd: Option<PathBuf>) -> Arc<Slot> {
        Arc::new(Slot {
            record,
            cwd,
            state: Default::default(),
            tools: Default::default(),
        })
    }

    pub(crate) fn record(&self) -> &McpServerRecord {
        &self.record
    }

    pub(crate) fn cwd(&self) -> Option<&Path> {
        self.cwd.as_deref()
    }

    fn name(&self) -> &str {
        &self.record.name
    }

    fn tools(&self) -> Vec<McpTool> {
        self.tools.read().unwrap_or_else(|p| p.into_inner()).clone()
    }

    fn state_error(&self, state: &SlotState) -> McpError {
        let reason = if state.stopped {
            "it was stopped (its project closed, or it was removed, disabled or changed)".into()
        } else {
            let last = state.last_error.as_deref().unwrap_or("it stopped");
            match state
                .retry_at
                .map(|at| at.saturating_duration_since(Instant::now()))
            {
                Some(wait) if !wait.is_zero() => {
                    format!(
                        "{last} (next restart attempt in {}s)",
                        wait.as_secs().max(1)
                    )
                }
                _ => last.to_string(),
            }
        };
        McpError::Unavailable {
            server: self.name().to_string(),
            reason,
        }
    }

    /// The running connection: the one there is if it is alive, else a new start (unless the
    /// backoff after failed starts says to wait).
    async fn live(&self, timing: &Timing) -> Result<(Peer<RoleClient>, StderrTail, u64), McpError> {
        let mut state = self.state.lock().await;
        if state.stopped {
            return Err(self.state_error(&state));
        }
        if let Some(server) = &state.server {
            if server.is_alive() {
                let peer = server.client.peer().clone();
                return Ok((peer, server.stderr.clone(), server.generation));
            }
            let stderr = server.stderr.settled().await;
            state.last_error = Some(format!("it stopped{}", quote_stderr(&stderr)));
            if let Some(dead) = state.server.take() {
                dead.stop().await;
            }
        }
        if state.retry_at.is_some_and(|at| Instant::now() < at) {
            return Err(self.state_error(&state));
        }
        state.starts += 1;
        let generation = state.starts;
        match connect_within(
            &self.record,
            self.cwd.as_deref(),
            timing.connect,
            generation,
        )
        .await
        {
            Ok((server, tools)) => {
                *self.tools.write().unwrap_or_else(|p| p.into_inner()) = tools;
                let live = (
                    server.client.peer().clone(),
                    server.stderr.clone(),
                    generation,
                );
                state.server = Some(server);
                state.failures = 0;
                state.retry_at = None;
                state.last_error = None;
                Ok(live)
            }
            Err(e) => {
                state.failures += 1;
                let exponent = state.failures.saturating_sub(1).min(16);
                let wait = timing.backoff_min.saturating_mul(1 << exponent);
                state.retry_at = Some(Instant::now() + wait.min(timing.backoff_max));
                state.last_error = Some(e.to_string());
                Err(e)
            }
        }
    }

    /// Retires the connection of `generation` after it failed (the next call starts anew).
    async fn lost(&self, generation: u64, why: String) {
        let mut state = self.state.lock().await;
        if state
            .server
            .as_ref()
            .is_some_and(|s| s.generation == generation)
            && let Some(server) = state.server.take()
        {
            state.last_error = Some(why);
            server.stop().await;
        }
    }

    /// Stops the server for good (and its whole process group).
    pub(crate) async fn stop(&self) {
        let mut state = self.state.lock().await;
        state.stopped = true;
        if let Some(server) = state.server.take() {
            server.stop().await;
        }
    }

    async fn pid(&self) -> Option<u32> {
        let state = self.state.lock().await;
        state.server.as_ref().filter(|s| s.is_alive())?.pid
    }

    async fn starts(&self) -> u64 {
        self.state.lock().await.starts
    }
}

/// The MCP servers of one agent turn (or one project, through [`McpPool`]) and their tools.
pub struct McpHub {
    slots: Vec<Arc<Slot>>,
    timing: Timing,
    /// The hub stops its servers on [`McpHub::shutdown`]; a pool's hub leaves that to the pool.
    owned: bool,
}

impl McpHub {
    /// Starts the enabled servers concurrently, each given `timeout` to start, finish the
    /// handshake and list its tools. Failures are returned next to the hub, not instead of it.
    /// The hub owns the servers: [`McpHub::shutdown`] stops them.
    pub async fn connect(
        servers: &[McpServerRecord],
        timeout: Duration,
    ) -> (McpHub, Vec<McpError>) {
        let slots = servers
            .iter()
            .filter(|s| s.enabled)
            .map(|record| Slot::new(record.clone(), None))
            .collect();
        let timing = Timing {
            connect: timeout,
            ..Timing::default()
        };
        let hub = McpHub {
            slots,
            timing,
            owned: true,
        };
        let errors = hub.start().await;
        (hub, errors)
    }

    /// A pool's view of a project's servers (which the pool stops, not this hub).
    pub(crate) fn shared(slots: Vec<Arc<Slot>>, timing: Timing) -> McpHub {
        McpHub {
            slots,
            timing,
            owned: false,
        }
    }

    /// Starts every server that is not running (unless its backoff says to wait, or it still
    /// has tools from before: those start on their next call). The errors of those that could
    /// not; a server that never listed tools and waits is reported too.
    pub(crate) async fn start(&self) -> Vec<McpError> {
        let starts = self.slots.iter().map(|slot| async move {
            let fresh = slot.tools.read().map(|t| t.is_empty()).unwrap_or(true);
            match fresh {
                true => slot.live(&self.timing).await.err(),
                false => None,
            }
        });
        join_all(starts).await.into_iter().flatten().collect()
    }

    /// Replaces the per-call time limit ([`DEFAULT_CALL_TIMEOUT`]).
    pub fn with_call_timeout(mut self, timeout: Duration) -> Self {
        self.timing.call = timeout;
        self
    }

    /// Replaces the wait between failed restarts of a server that dropped: `min` after the
    /// first, doubling up to `max`.
    pub fn with_backoff(mut self, min: Duration, max: Duration) -> Self {
        self.timing.backoff_min = min;
        self.timing.backoff_max = max;
        self
    }

    /// Every tool of every server, in server order: what each listed when it last started
    /// (so a server that dropped keeps its tools offered; calling them says it is unavailable).
    pub fn tools(&self) -> Vec<McpTool> {
        // Wire names embed a hash of anything they change, so only a tool listed twice (or a
        // server configured twice) can clash: its first listing is kept.
        let mut wires = HashSet::new();
        let all = self.slots.iter().flat_map(|slot| slot.tools());
        all.filter(|t| wires.insert(t.wire_name())).collect()
    }

    /// The process id of a running stdio server (none for HTTP servers, or when it is down).
    pub async fn server_pid(&self, server: &str) -> Option<u32> {
        self.slot(server)?.pid().await
    }

    /// How many times the server was started (restarts included).
    pub async fn server_starts(&self, server: &str) -> u64 {
        match self.slot(server) {
            Some(slot) => slot.starts().await,
            None => 0,
        }
    }

    fn slot(&self, server: &str) -> Option<&Arc<Slot>> {
        self.slots.iter().find(|s| s.name() == server)
    }

    pub fn resolve_wire_name(&self, wire: &str) -> Option<McpTool> {
        self.tools().into_iter().find(|t| t.wire_name() == wire)
    }

    /// The tool named `server/tool` or `server__tool`.
    pub fn resolve(&self, name: &str) -> Option<McpTool> {
        let tools = self.tools();
        let qualified = tools.iter().position(|t| t.qualified() == name);
        let index = qualified.or_else(|| tools.iter().position(|t| t.wire_name() == name))?;
        tools.into_iter().nth(index)
    }

    /// Calls a tool. Returns promptly with [`McpError::Cancelled`] once `cancel` fires (the
    /// server is told with `notifications/cancelled`), and gives up after the call timeout.
    /// A server that dropped is restarted first; one that cannot be is
    /// [`McpError::Unavailable`], for the model to read.
    pub async fn call(
        &self,
        qualified_or_wire: &str,
        arguments: Value,
        cancel: CancellationToken,
    ) -> Result<McpCallOutput, McpError> {
        let unknown = || McpError::UnknownTool {
            name: qualified_or_wire.to_string(),
        };
        let tool = self.resolve(qualified_or_wire).ok_or_else(unknown)?;
        let slot = self.slot(&tool.server).ok_or_else(unknown)?;
        let (name, tool_name) = (tool.server.clone(), tool.name.clone());
        let fail = |failure| McpError::Call {
            server: tool.server.clone(),
            tool: tool.name.clone(),
            failure,
        };
        let mut params = CallToolRequestParams::new(tool.name.clone());
        params.arguments = match arguments {
            Value::Object(map) => Some(map),
            Value::Null => None,
            _ => return Err(fail(CallFailure::BadArguments)),
        };
        let live = tokio::select! {
            biased;
            () = cancel.cancelled() => None,
            live = slot.live(&self.timing) => Some(live),
        };
        let Some(live) = live else {
            return Err(McpError::Cancelled {
                server: name,
                tool: tool_name,
            });
        };
        // A server that cannot be (re)started is unavailable: the model reads why and goes on.
        let (peer, stderr, generation) = live.map_err(|e| match e {
            McpError::Unavailable { .. } => e,
            other => McpError::Unavailable {
                server: name.clone(),
                reason: format!("starting it again failed: {other}"),
            },
        })?;
        let request = peer.call_tool_once(params);
        // Dropping the request (on cancel or timeout) sends `notifications/cancelled`.
        let response = tokio::select! {
            biased;
            () = cancel.cancelled() => None,
            response = tokio::time::timeout(self.timing.call, request) => Some(response),
        };
        let Some(response) = response else {
            return Err(McpError::Cancelled {
                server: name,
                tool: tool_name,
            });
        };
        let Ok(response) = response else {
            let after = self.timing.call;
            return Err(McpError::Timeout {
                server: name,
                tool: tool_name,
                after,
            });
        };
        match response {
            Ok(CallToolResponse::Complete(result)) => Ok(render(result)),
            Ok(CallToolResponse::InputRequired(_)) => {
                Err(fail(CallFailure::Unsupported("input from the user")))
            }
            Ok(_task) => Err(fail(CallFailure::Unsupported("a background task"))),
            Err(ServiceError::McpError(e)) => Err(fail(CallFailure::Rejected {
                code: e.code.0,
                message: e.message.into_owned(),
            })),
            Err(source) => {
                let stderr = stderr.settled().await;
                let why = format!("the connection was lost: {source}{}", quote_stderr(&stderr));
                slot.lost(generation, why).await;
                let source = Box::new(source);
                Err(fail(CallFailure::Connection { source, stderr }))
            }
        }
    }

    /// Stops every server this hub started. A stdio server gets its stdin closed, then
    /// SIGTERM, then SIGKILL (a few seconds apart) and is waited for, then its process group
    /// is killed, so nothing it started outlives this. A pool's hub leaves its servers
    /// running for the next turn (the pool stops them).
    pub async fn shutdown(self) {
        if self.owned {
            join_all(self.slots.iter().map(|slot| slot.stop())).await;
        }
    }
}

async fn connect_within(
    record: &McpServerRecord,
    cwd: Option<&Path>,
    timeout: Duration,
    generation: u64,
) -> Result<(Server, Vec<McpTool>), McpError> {
    let stderr = StderrTail::default();
    // On timeout the half-started server is dropped with the future, which kills its group.
    let connecting = connect(record, cwd, stderr.clone(), generation);
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
    cwd: Option<&Path>,
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
    let mut pid = None;
    // Armed as soon as there is a process: a failed handshake drops it, killing the group.
    let mut group = GroupGuard(None);
    let served = match &record.transport {
        McpTransport::Stdio { command, args, env } => {
            let mut cmd = tokio::process::Command::new(command);
            cmd.args(args).env_clear().kill_on_drop(true);
            cmd.envs(stdio_server_env(env, std::env::vars_os()));
            if let Some(cwd) = cwd {
                cmd.current_dir(cwd);
            }
            // Its own process group, so stopping it stops what it started too.
            crate::process::in_own_group(cmd.as_std_mut());
            let spawned = TokioChildProcess::builder(cmd)
                .stderr(Stdio::piped())
                .spawn();
            let (process, pipe) = spawned.map_err(|source| McpError::Spawn {
                server: name.clone(),
                command: command.clone(),
                source,
            })?;
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
    };
    Ok((server, tools))
}

fn render(result: CallToolResult) -> McpCallOutput {
    let mut parts: Vec<String> = result.content.iter().map(describe).collect();
    if parts.is_empty()
        && let Some(structured) = &result.structured_content
    {
        parts.push(structured.to_string());
    }
    McpCallOutput {
        text: cap(parts.join("\n")),
        is_error: result.is_error.unwrap_or(false),
    }
}

/// Text as is; what the model cannot read (images, audio, binary resources) as a short note.
fn describe(block: &ContentBlock) -> String {
    match block {
        ContentBlock::Text(t) => t.text.clone(),
        ContentBlock::Image(i) => {
            format!("[image {}, {} bytes of base64]", i.mime_type, i.data.len())
        }
        ContentBlock::Audio(a) => {
            format!("[audio {}, {} bytes of base64]", a.mime_type, a.data.len())
        }
        ContentBlock::Resource(r) => match &r.resource {
            ResourceContents::TextResourceContents { uri, text, .. } => {
                format!("[resource {uri}]\n{text}")
            }
            ResourceContents::BlobResourceContents { uri, blob, .. } => {
                format!("[binary resource {uri}, {} bytes of base64]", blob.len())
            }
            _ => "[a resource of a kind tandem cannot show]".into(),
        },
        ContentBlock::ResourceLink(link) => format!("[resource link {} <{}>]", link.name, link.uri),
        _ => "[content of a kind tandem cannot show]".into(),
    }
}

/// Cuts `text` to at most [`MAX_OUTPUT_CHARS`] characters, saying how much was cut.
fn cap(text: String) -> String {
    let total = text.chars().count();
    if total <= MAX_OUTPUT_CHARS {
        return text;
    }
    let kept = MAX_OUTPUT_CHARS - 120; // room for the notice
    let mut out: String = text.chars().take(kept).collect();
    out.push_str(&format!(
        "\n[output cut: {} of {total} characters left out, the first {kept} are shown]",
        total - kept
    ));
    out
}
