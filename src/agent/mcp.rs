//! MCP servers as agent tools, through the official SDK (`rmcp`).
//!
//! An [`McpHub`] holds the connected servers of one agent turn (or of the app). Servers connect
//! concurrently and independently: one that cannot start, crashes or never answers the
//! handshake is reported in the returned errors and the others still serve their tools.
//!
//! A tool is `server/tool` for the approval policy and the UI ([`McpTool::qualified`]) and
//! `server__tool` for the model ([`McpTool::wire_name`]): provider APIs only accept
//! `^[A-Za-z0-9_-]{1,64}$`, and server names are validated to fit (`store::validate_mcp_server_name`).
//!
//! Stdio servers are third-party programs: they do not inherit the app's secrets (see
//! `store::stdio_server_env`), and their stderr is captured (the last lines are quoted in
//! errors), never inherited, since it would scribble over the terminal UI.

use std::collections::HashSet;
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures_util::future::join_all;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ClientCapabilities, ClientConfig,
    ContentBlock, Implementation, ResourceContents,
};
use rmcp::service::RunningService;
use rmcp::transport::{StreamableHttpClientTransport, TokioChildProcess};
use rmcp::{RoleClient, ServiceError, ServiceExt};
use serde_json::Value;
use tokio::io::AsyncReadExt;
use tokio::process::ChildStderr;
use tokio_util::sync::CancellationToken;

use crate::llm::ToolSpec;
use crate::store::{McpServerRecord, McpTransport, stdio_server_env};

/// The most characters of tool output handed to the model; the rest is cut with a notice.
pub const MAX_OUTPUT_CHARS: usize = 20_000;
/// How long one tool call may take unless [`McpHub::with_call_timeout`] says otherwise.
pub const DEFAULT_CALL_TIMEOUT: Duration = Duration::from_secs(120);
/// How much of a server's stderr is kept for error messages.
const STDERR_TAIL_BYTES: usize = 2_000;

/// One tool offered by a connected server.
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
    #[error("no connected MCP server has a tool named {name:?}")]
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

/// One connected server.
struct Server {
    name: String,
    client: RunningService<RoleClient, ClientConfig>,
    pid: Option<u32>,
    stderr: StderrTail,
}

/// The connected MCP servers and their tools.
pub struct McpHub {
    servers: Vec<Server>,
    tools: Vec<McpTool>,
    call_timeout: Duration,
}

impl McpHub {
    /// Connects the enabled servers concurrently, each given `timeout` to start, finish the
    /// handshake and list its tools. Failures are returned next to the hub, not instead of it.
    pub async fn connect(
        servers: &[McpServerRecord],
        timeout: Duration,
    ) -> (McpHub, Vec<McpError>) {
        let enabled = servers.iter().filter(|s| s.enabled);
        let results = join_all(enabled.map(|record| connect_within(record, timeout))).await;
        let (mut servers, mut tools, mut errors) = (Vec::new(), Vec::<McpTool>::new(), Vec::new());
        let mut wires = HashSet::new();
        for result in results {
            let (server, offered) = match result {
                Ok(connected) => connected,
                Err(e) => {
                    errors.push(e);
                    continue;
                }
            };
            // Wire names embed a hash of anything they change, so only a tool listed twice
            // (or a server configured twice) can clash: its first listing is kept.
            tools.extend(offered.into_iter().filter(|t| wires.insert(t.wire_name())));
            servers.push(server);
        }
        let call_timeout = DEFAULT_CALL_TIMEOUT;
        (
            McpHub {
                servers,
                tools,
                call_timeout,
            },
            errors,
        )
    }

    /// Replaces the per-call time limit ([`DEFAULT_CALL_TIMEOUT`]).
    pub fn with_call_timeout(mut self, timeout: Duration) -> Self {
        self.call_timeout = timeout;
        self
    }

    /// Every tool of every connected server, in server order.
    pub fn tools(&self) -> &[McpTool] {
        &self.tools
    }

    /// The process id of a connected stdio server (none for HTTP servers).
    pub fn server_pid(&self, server: &str) -> Option<u32> {
        self.servers.iter().find(|s| s.name == server)?.pid
    }

    pub fn resolve_wire_name(&self, wire: &str) -> Option<&McpTool> {
        self.tools.iter().find(|t| t.wire_name() == wire)
    }

    /// The tool named `server/tool` or `server__tool`.
    pub fn resolve(&self, name: &str) -> Option<&McpTool> {
        let qualified = self.tools.iter().find(|t| t.qualified() == name);
        qualified.or_else(|| self.resolve_wire_name(name))
    }

    /// Calls a tool. Returns promptly with [`McpError::Cancelled`] once `cancel` fires (the
    /// server is told with `notifications/cancelled`), and gives up after the call timeout.
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
        let server = self.servers.iter().find(|s| s.name == tool.server);
        let server = server.ok_or_else(unknown)?;
        let (name, tool_name) = (server.name.clone(), tool.name.clone());
        let fail = |failure| McpError::Call {
            server: server.name.clone(),
            tool: tool.name.clone(),
            failure,
        };
        let mut params = CallToolRequestParams::new(tool.name.clone());
        params.arguments = match arguments {
            Value::Object(map) => Some(map),
            Value::Null => None,
            _ => return Err(fail(CallFailure::BadArguments)),
        };
        let request = server.client.call_tool_once(params);
        // Dropping the request (on cancel or timeout) sends `notifications/cancelled`.
        let response = tokio::select! {
            biased;
            () = cancel.cancelled() => None,
            response = tokio::time::timeout(self.call_timeout, request) => Some(response),
        };
        let Some(response) = response else {
            return Err(McpError::Cancelled {
                server: name,
                tool: tool_name,
            });
        };
        let Ok(response) = response else {
            let after = self.call_timeout;
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
                let stderr = server.stderr.settled().await;
                let source = Box::new(source);
                Err(fail(CallFailure::Connection { source, stderr }))
            }
        }
    }

    /// Closes every connection. A stdio server gets its stdin closed, then SIGTERM, then
    /// SIGKILL (a few seconds apart) and is waited for, so no child outlives this.
    /// (Dropping the hub instead closes them in the background, if the runtime lives on.)
    pub async fn shutdown(self) {
        join_all(self.servers.into_iter().map(|mut server| async move {
            let _ = server.client.close().await;
        }))
        .await;
    }
}

async fn connect_within(
    record: &McpServerRecord,
    timeout: Duration,
) -> Result<(Server, Vec<McpTool>), McpError> {
    let stderr = StderrTail::default();
    // On timeout the half-started server is dropped with the future, which kills its process.
    let result = tokio::time::timeout(timeout, connect(record, stderr.clone())).await;
    result.unwrap_or_else(|_elapsed| {
        Err(McpError::Handshake {
            server: record.name.clone(),
            reason: format!("no answer within {timeout:?}"),
            stderr: stderr.get(),
        })
    })
}

async fn connect(
    record: &McpServerRecord,
    stderr: StderrTail,
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
    let served = match &record.transport {
        McpTransport::Stdio { command, args, env } => {
            let mut cmd = tokio::process::Command::new(command);
            cmd.args(args).env_clear().kill_on_drop(true);
            cmd.envs(stdio_server_env(env, std::env::vars_os()));
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
            client_info.serve(process).await
        }
        McpTransport::Http { url } => {
            crate::llm::init_tls();
            stderr.drain(None);
            let transport = StreamableHttpClientTransport::from_uri(url.as_str());
            client_info.serve(transport).await
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
        name,
        client,
        pid,
        stderr,
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

/// Cuts `text` to at most [`MAX_OUTPUT_CHARS`] characters, saying so at the end.
fn cap(text: String) -> String {
    let total = text.chars().count();
    if total <= MAX_OUTPUT_CHARS {
        return text;
    }
    let kept = MAX_OUTPUT_CHARS - 100; // room for the notice
    let mut out: String = text.chars().take(kept).collect();
    out.push_str(&format!(
        "\n[output truncated: the first {kept} of {total} characters are shown]"
    ));
    out
}
