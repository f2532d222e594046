//! A fake LLM server for the integration tests: raw HTTP/1.1 on a tokio `TcpListener`, so
//! faults (a dropped socket mid-body, a stall, garbage) are real bytes on the wire.
//!
//! Replies are scripted per `(method, path)` in FIFO order; every request is recorded.
//! Each response is sent with `Connection: close` and the socket closed after it, so
//! every request arrives on its own connection.
#![allow(dead_code, clippy::unwrap_used)]

use std::collections::{HashMap, VecDeque};
use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::tcp::OwnedReadHalf;
use tokio::net::{TcpListener, TcpStream};

pub mod setup;
mod wire;
pub use wire::*;

/// Token counts every stream builder reports in its usage.
pub const INPUT_TOKENS: u64 = 12;
pub const OUTPUT_TOKENS: u64 = 7;
/// The model name the builders put in their replies.
pub const MODEL: &str = "fake-model";

#[derive(Debug, Clone)]
pub struct Recorded {
    pub method: String,
    /// With the query string.
    pub path: String,
    /// Lowercase names, in the order received.
    pub headers: Vec<(String, String)>,
    /// `Null` when the body is not JSON.
    pub body: Value,
    pub raw_body: String,
}

impl Recorded {
    pub fn header(&self, name: &str) -> Option<&str> {
        let name = name.to_ascii_lowercase();
        self.headers
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(_, v)| v.as_str())
    }
}

#[derive(Debug, Clone)]
pub enum Reply {
    Json {
        status: u16,
        body: Value,
    },
    /// Chunked transfer encoding; each chunk is written and flushed after its delay.
    Stream {
        status: u16,
        content_type: String,
        chunks: Vec<Chunk>,
        end: End,
        /// Chunk `index` is not sent before the gate opens (see [`Reply::hold_before`]).
        gate: Option<(usize, Gate)>,
    },
    /// Any status, headers and body (e.g. `Retry-After`, a non-JSON error page).
    Raw {
        status: u16,
        headers: Vec<(String, String)>,
        body: Vec<u8>,
    },
    /// Read the request, then send nothing at all (not even a status line) for this long.
    Hang(Duration),
}

#[derive(Debug, Clone)]
pub struct Chunk {
    pub delay: Duration,
    /// Empty bytes are only a delay (an empty chunk would end the body).
    pub bytes: Vec<u8>,
}

/// Holds a streamed reply at a chosen chunk until the test opens it, so a test can look at
/// a reply mid-stream without racing the clock.
#[derive(Debug, Clone)]
pub struct Gate(Arc<tokio::sync::watch::Sender<bool>>);

impl Default for Gate {
    fn default() -> Self {
        Gate(Arc::new(tokio::sync::watch::channel(false).0))
    }
}

impl Gate {
    pub fn open(&self) {
        self.0.send_replace(true);
    }

    async fn opened(&self) {
        let mut open = self.0.subscribe();
        let _ = open.wait_for(|open| *open).await;
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum End {
    Finish,
    /// Drop the socket mid-body: no terminating chunk.
    Disconnect,
    /// Keep the socket open sending nothing, then drop it.
    Stall(Duration),
}

impl Reply {
    pub fn json(status: u16, body: Value) -> Reply {
        Reply::Json { status, body }
    }

    /// Keeps the first `keep` chunks (for the builders: the first `keep` pieces) and ends
    /// with `end`.
    pub fn cut(mut self, keep: usize, end: End) -> Reply {
        if let Reply::Stream { chunks, end: e, .. } = &mut self {
            chunks.truncate(keep);
            *e = end;
        }
        self
    }

    /// Sends chunks before `index`, then waits for `gate` to open before sending the rest.
    pub fn hold_before(mut self, index: usize, gate: &Gate) -> Reply {
        if let Reply::Stream { gate: g, .. } = &mut self {
            *g = Some((index, gate.clone()));
        }
        self
    }

    /// Inserts raw bytes as chunk `index` (with no delay).
    pub fn insert(mut self, index: usize, bytes: &[u8]) -> Reply {
        if let Reply::Stream { chunks, .. } = &mut self {
            chunks.insert(
                index,
                Chunk {
                    delay: Duration::ZERO,
                    bytes: bytes.to_vec(),
                },
            );
        }
        self
    }
}

#[derive(Default)]
struct State {
    replies: Mutex<HashMap<(String, String), VecDeque<Reply>>>,
    requests: Mutex<Vec<Recorded>>,
    /// Connections the client closed while a streamed reply was still being sent.
    hangups: AtomicUsize,
}

#[derive(Clone)]
pub struct FakeProvider {
    addr: SocketAddr,
    state: Arc<State>,
}

impl FakeProvider {
    /// Binds 127.0.0.1 on a free port and serves on the current runtime until it shuts down.
    pub async fn start() -> FakeProvider {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let state = Arc::new(State::default());
        let serving = Arc::clone(&state);
        tokio::spawn(async move {
            while let Ok((socket, _)) = listener.accept().await {
                tokio::spawn(serve(socket, Arc::clone(&serving)));
            }
        });
        FakeProvider { addr, state }
    }

    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    pub fn push(&self, method: &str, path: &str, reply: Reply) {
        let key = (method.to_ascii_uppercase(), strip_query(path).to_string());
        self.state
            .replies
            .lock()
            .unwrap()
            .entry(key)
            .or_default()
            .push_back(reply);
    }

    pub fn requests(&self) -> Vec<Recorded> {
        self.state.requests.lock().unwrap().clone()
    }

    /// How many clients closed their connection while a streamed reply was in progress.
    pub fn hangups(&self) -> usize {
        self.state.hangups.load(Ordering::SeqCst)
    }

    /// Waits up to `within` for a client to close a connection mid-reply.
    pub async fn wait_for_hangup(&self, within: Duration) -> bool {
        let deadline = tokio::time::Instant::now() + within;
        while tokio::time::Instant::now() < deadline {
            if self.hangups() > 0 {
                return true;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        self.hangups() > 0
    }
}

/// A URL on which nothing listens: bound, then released.
pub async fn refused_url() -> String {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    drop(listener);
    format!("http://{addr}")
}

fn strip_query(path: &str) -> &str {
    path.split('?').next().unwrap_or(path)
}

async fn serve(mut socket: TcpStream, state: Arc<State>) {
    let Some(request) = read_request(&mut socket).await else {
        return;
    };
    let key = (
        request.method.clone(),
        strip_query(&request.path).to_string(),
    );
    state.requests.lock().unwrap().push(request);
    let scripted = state
        .replies
        .lock()
        .unwrap()
        .get_mut(&key)
        .and_then(VecDeque::pop_front);
    let reply = scripted.unwrap_or_else(|| {
        let message = format!("no scripted reply for {} {}", key.0, key.1);
        Reply::Json {
            status: 404,
            body: json!({ "error": message }),
        }
    });
    let _ = respond(socket, reply, &state).await;
}

/// Reads one request: request line, headers, and a body by Content-Length or chunked.
async fn read_request(socket: &mut TcpStream) -> Option<Recorded> {
    let mut buffer = Vec::new();
    let head_end = loop {
        if let Some(at) = find(&buffer, b"\r\n\r\n") {
            break at + 4;
        }
        let mut chunk = [0u8; 4096];
        let n = socket.read(&mut chunk).await.ok()?;
        if n == 0 {
            return None;
        }
        buffer.extend_from_slice(&chunk[..n]);
    };
    let head = String::from_utf8_lossy(&buffer[..head_end]).into_owned();
    let mut lines = head.split("\r\n");
    let mut request_line = lines.next()?.split_whitespace();
    let method = request_line.next()?.to_string();
    let path = request_line.next().unwrap_or("/").to_string();
    let headers: Vec<(String, String)> = lines
        .filter_map(|line| line.split_once(':'))
        .map(|(name, value)| (name.trim().to_ascii_lowercase(), value.trim().to_string()))
        .collect();
    let header = |name: &str| {
        headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.clone())
    };
    let mut body = buffer.split_off(head_end);
    if let Some(length) = header("content-length").and_then(|v| v.parse::<usize>().ok()) {
        while body.len() < length {
            let mut chunk = [0u8; 4096];
            let n = socket.read(&mut chunk).await.ok()?;
            if n == 0 {
                break;
            }
            body.extend_from_slice(&chunk[..n]);
        }
        body.truncate(length);
    } else if header("transfer-encoding").is_some_and(|v| v.eq_ignore_ascii_case("chunked")) {
        body = read_chunked(socket, body).await?;
    }
    let raw_body = String::from_utf8_lossy(&body).into_owned();
    let json = serde_json::from_slice(&body).unwrap_or(Value::Null);
    Some(Recorded {
        method,
        path,
        headers,
        body: json,
        raw_body,
    })
}

/// Decodes a chunked request body, reading more from the socket as needed.
async fn read_chunked(socket: &mut TcpStream, mut raw: Vec<u8>) -> Option<Vec<u8>> {
    let mut body = Vec::new();
    loop {
        let line_end = loop {
            if let Some(at) = find(&raw, b"\r\n") {
                break at;
            }
            read_more(socket, &mut raw).await?;
        };
        let size_text = String::from_utf8_lossy(&raw[..line_end]).into_owned();
        let size = usize::from_str_radix(size_text.split(';').next()?.trim(), 16).ok()?;
        while raw.len() < line_end + 2 + size + 2 {
            read_more(socket, &mut raw).await?;
        }
        body.extend_from_slice(&raw[line_end + 2..line_end + 2 + size]);
        raw.drain(..line_end + 2 + size + 2);
        if size == 0 {
            return Some(body);
        }
    }
}

async fn read_more(socket: &mut TcpStream, raw: &mut Vec<u8>) -> Option<()> {
    let mut chunk = [0u8; 4096];
    let n = socket.read(&mut chunk).await.ok()?;
    raw.extend_from_slice(&chunk[..n]);
    (n > 0).then_some(())
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

fn reason(status: u16) -> &'static str {
    match status {
        200 => "OK",
        400 => "Bad Request",
        401 => "Unauthorized",
        403 => "Forbidden",
        404 => "Not Found",
        429 => "Too Many Requests",
        500 => "Internal Server Error",
        502 => "Bad Gateway",
        503 => "Service Unavailable",
        529 => "Overloaded",
        _ => "Status",
    }
}

async fn respond(socket: TcpStream, reply: Reply, state: &State) -> std::io::Result<()> {
    let (mut reader, mut writer) = socket.into_split();
    match reply {
        Reply::Json { status, body } => {
            let body = serde_json::to_vec(&body)?;
            let headers = vec![("Content-Type".to_string(), "application/json".to_string())];
            write_whole(&mut writer, status, &headers, &body).await?;
        }
        Reply::Raw {
            status,
            headers,
            body,
        } => {
            write_whole(&mut writer, status, &headers, &body).await?;
        }
        Reply::Hang(duration) => {
            let _ = tokio::time::timeout(duration, client_gone(&mut reader)).await;
        }
        Reply::Stream {
            status,
            content_type,
            chunks,
            end,
            gate,
        } => {
            let head = format!(
                "HTTP/1.1 {status} {}\r\nContent-Type: {content_type}\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n",
                reason(status)
            );
            // Write the body while watching the socket: a client that hangs up mid-reply
            // shows up as end-of-file on the read side.
            let sending = async {
                writer.write_all(head.as_bytes()).await?;
                writer.flush().await?;
                for (index, chunk) in chunks.iter().enumerate() {
                    if let Some((at, gate)) = &gate
                        && *at == index
                    {
                        gate.opened().await;
                    }
                    tokio::time::sleep(chunk.delay).await;
                    if chunk.bytes.is_empty() {
                        continue;
                    }
                    writer
                        .write_all(format!("{:x}\r\n", chunk.bytes.len()).as_bytes())
                        .await?;
                    writer.write_all(&chunk.bytes).await?;
                    writer.write_all(b"\r\n").await?;
                    writer.flush().await?;
                }
                match end {
                    End::Finish => {
                        writer.write_all(b"0\r\n\r\n").await?;
                        writer.flush().await?;
                    }
                    End::Disconnect => {}
                    End::Stall(duration) => tokio::time::sleep(duration).await,
                }
                Ok::<(), std::io::Error>(())
            };
            tokio::select! {
                result = sending => result?,
                () = client_gone(&mut reader) => {
                    state.hangups.fetch_add(1, Ordering::SeqCst);
                    return Ok(());
                }
            }
        }
    }
    writer.shutdown().await
}

/// Resolves when the client closes its side (or the socket errors).
async fn client_gone(reader: &mut OwnedReadHalf) {
    let mut scratch = [0u8; 1024];
    loop {
        match reader.read(&mut scratch).await {
            Ok(0) | Err(_) => return,
            Ok(_) => {}
        }
    }
}

async fn write_whole(
    writer: &mut tokio::net::tcp::OwnedWriteHalf,
    status: u16,
    headers: &[(String, String)],
    body: &[u8],
) -> std::io::Result<()> {
    let mut head = format!("HTTP/1.1 {status} {}\r\n", reason(status));
    for (name, value) in headers {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    if !headers
        .iter()
        .any(|(n, _)| n.eq_ignore_ascii_case("content-length"))
    {
        head.push_str(&format!("Content-Length: {}\r\n", body.len()));
    }
    head.push_str("Connection: close\r\n\r\n");
    writer.write_all(head.as_bytes()).await?;
    writer.write_all(body).await?;
    writer.flush().await
}
