//! MCP servers as agent tools, through the official SDK (`rmcp`).
//!
//! An [`McpHub`] holds the servers of one agent turn. The app keeps them in an [`McpPool`]:
//! a stdio server per chat, for its turn, running in the chat's workspace inside the agent's
//! container ([`World`]: what it changes there joins the proposal, and it reaches nothing
//! else); a remote server (HTTP, SSE) per project, across turns. They stop when the turn ends
//! (stdio), when the project closes or a server is removed, disabled or changed. Servers start concurrently
//! and independently: one that cannot start, crashes or never answers the handshake is
//! reported in the returned errors and the others still serve their tools.
//!
//! A server that drops is restarted on the next call to it (after a failed restart, the next
//! attempt waits, doubling up to a minute). Meanwhile the tools it listed stay offered, and a
//! call to one is [`McpError::Unavailable`]: a tool error the model reads, not a failed turn.
//!
//! Transports: stdio (a child in the agent's container, in its own process group: stopping it
//! kills the whole group and the container with it),
//! streamable HTTP (rmcp's, with the record's headers on every request) and the legacy
//! HTTP+SSE transport ([`SseClientTransport`]).
//!
//! A tool is `server/tool` for the approval policy and the UI ([`McpTool::qualified`]) and
//! `server__tool` for the model ([`McpTool::wire_name`]): provider APIs only accept
//! `^[A-Za-z0-9_-]{1,64}$`, and server names are validated to fit (`store::validate_mcp_server_name`).
//!
//! Stdio servers are third-party programs: they get the allow-listed environment of every
//! command run for a model plus their record's variables (see `store::stdio_server_env`), no
//! network, and their stderr is captured (the last lines are quoted in errors), never
//! inherited, since it would scribble over the terminal UI. Where no sandbox can be built,
//! a stdio server is not started ([`McpError::Unconfined`]).

use std::collections::HashSet;
use std::sync::Arc;
use std::time::Duration;

use futures_util::future::join_all;
use rmcp::ServiceError;
use rmcp::model::{CallToolRequestParams, CallToolResponse};
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use crate::llm::ToolSpec;
use crate::store::McpServerRecord;

mod connect;
mod output;
mod pool;
mod slot;
mod sse;
mod world;

pub use pool::McpPool;
pub use slot::Timing;
pub use world::World;

use output::render;
use slot::Slot;
pub use sse::{SseClientTransport, SseError};

/// The most characters of tool output handed to the model; the rest is cut with a notice.
pub const MAX_OUTPUT_CHARS: usize = 20_000;
/// How long one tool call may take unless [`McpHub::with_call_timeout`] says otherwise.
pub const DEFAULT_CALL_TIMEOUT: Duration = Duration::from_secs(120);
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
    /// A stdio server that cannot run in a world made for it is not started at all.
    #[error("MCP server {server} was not started, as it cannot be confined: {reason}")]
    Unconfined { server: String, reason: String },
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

/// The MCP servers of one agent turn (or one project, through [`McpPool`]) and their tools.
pub struct McpHub {
    slots: Vec<Arc<Slot>>,
    timing: Timing,
    /// The hub stops its servers on [`McpHub::shutdown`]; a pool's hub leaves that to the pool.
    owned: bool,
}

impl McpHub {
    /// Starts the enabled servers concurrently (stdio ones in `world`), each given `timeout`
    /// to start, finish the handshake and list its tools. Failures are returned next to the
    /// hub, not instead of it. The hub owns the servers: [`McpHub::shutdown`] stops them.
    pub async fn connect(
        servers: &[McpServerRecord],
        world: &World,
        timeout: Duration,
    ) -> (McpHub, Vec<McpError>) {
        let slots = servers
            .iter()
            .filter(|s| s.enabled)
            .map(|record| {
                let stdio = matches!(record.transport, crate::store::McpTransport::Stdio { .. });
                Slot::new(record.clone(), stdio.then(|| world.clone()))
            })
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

    /// A pool's view of a turn's servers (which the pool stops, not this hub).
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

    /// Whether the tool named `server/tool` (or `server__tool`) is a stdio server's: a
    /// process of Tandem's, in the agent's container, which may change the workspace.
    pub fn runs_here(&self, name: &str) -> bool {
        let server = self.resolve(name).map(|tool| tool.server);
        let slot = server.and_then(|server| self.slot(&server).cloned());
        slot.is_some_and(|slot| slot.world().is_some())
    }

    /// Whether any of its servers is a stdio server, which may change the workspace while
    /// no call of its runs (as it starts, or in the background).
    pub fn runs_servers(&self) -> bool {
        self.slots.iter().any(|slot| slot.world().is_some())
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
