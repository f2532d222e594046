//! A fake MCP server over HTTP that speaks the real wire formats, by hand, on a raw socket:
//! streamable HTTP (`POST /mcp`, JSON-RPC in, `application/json` out, 202 for notifications,
//! 405 for the optional GET stream) and the legacy HTTP+SSE transport (`GET /sse` opens a
//! `text/event-stream` whose first event is `endpoint`; messages POSTed there are answered
//! with 202 and the answer comes back on the stream as a `message` event). It records every
//! request's headers, so tests can see what reached it.

#![allow(dead_code, clippy::unwrap_used)]

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::mpsc;

/// One request as the server saw it (header names lowercased).
#[derive(Debug, Clone)]
pub struct Seen {
    pub method: String,
    pub path: String,
    pub headers: BTreeMap<String, String>,
}

#[derive(Clone, Default)]
struct Shared {
    seen: Arc<Mutex<Vec<Seen>>>,
    /// The open SSE stream's sender (legacy transport), one session at a time.
    stream: Arc<Mutex<Option<mpsc::UnboundedSender<String>>>>,
}

pub struct FakeHttp {
    pub port: u16,
    shared: Shared,
    task: tokio::task::JoinHandle<()>,
}

impl FakeHttp {
    pub async fn start() -> FakeHttp {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let shared = Shared::default();
        let accept = shared.clone();
        let task = tokio::spawn(async move {
            while let Ok((socket, _)) = listener.accept().await {
                tokio::spawn(serve(socket, accept.clone()));
            }
        });
        FakeHttp { port, shared, task }
    }

    pub fn url(&self, path: &str) -> String {
        format!("http://127.0.0.1:{}{path}", self.port)
    }

    pub fn seen(&self) -> Vec<Seen> {
        self.shared.seen.lock().unwrap().clone()
    }
}

impl Drop for FakeHttp {
    fn drop(&mut self) {
        self.task.abort();
    }
}

async fn serve(socket: TcpStream, shared: Shared) {
    let (read, mut write) = socket.into_split();
    let mut read = BufReader::new(read);
    loop {
        // Request line and headers.
        let mut line = String::new();
        if read.read_line(&mut line).await.unwrap_or(0) == 0 {
            return;
        }
        let mut parts = line.split_whitespace();
        let method = parts.next().unwrap_or_default().to_string();
        let path = parts.next().unwrap_or_default().to_string();
        let mut headers = BTreeMap::new();
        loop {
            let mut header = String::new();
            if read.read_line(&mut header).await.unwrap_or(0) == 0 {
                return;
            }
            let header = header.trim_end();
            if header.is_empty() {
                break;
            }
            if let Some((name, value)) = header.split_once(':') {
                headers.insert(name.trim().to_ascii_lowercase(), value.trim().to_string());
            }
        }
        let length: usize = headers
            .get("content-length")
            .and_then(|l| l.parse().ok())
            .unwrap_or(0);
        let mut body = vec![0; length];
        if read.read_exact(&mut body).await.is_err() {
            return;
        }
        let seen = Seen {
            method: method.clone(),
            path: path.clone(),
            headers: headers.clone(),
        };
        shared.seen.lock().unwrap().push(seen);

        match (method.as_str(), path.split('?').next().unwrap_or_default()) {
            ("POST", "/mcp") => {
                let message: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
                match answer(&message, &headers) {
                    Some(reply) => {
                        let reply = reply.to_string();
                        respond(&mut write, "200 OK", "application/json", &reply).await;
                    }
                    None => respond(&mut write, "202 Accepted", "text/plain", "").await,
                }
            }
            ("GET", "/sse") => {
                let (tx, mut rx) = mpsc::unbounded_channel::<String>();
                *shared.stream.lock().unwrap() = Some(tx);
                let head = "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n\
                            cache-control: no-cache\r\nconnection: keep-alive\r\n\r\n";
                if write.write_all(head.as_bytes()).await.is_err() {
                    return;
                }
                let endpoint = "event: endpoint\ndata: /messages?sessionId=s1\n\n";
                if write.write_all(endpoint.as_bytes()).await.is_err() {
                    return;
                }
                let _ = write.flush().await;
                while let Some(message) = rx.recv().await {
                    let event = format!("event: message\ndata: {message}\n\n");
                    if write.write_all(event.as_bytes()).await.is_err() {
                        return;
                    }
                    let _ = write.flush().await;
                }
                return;
            }
            ("POST", "/messages") => {
                let message: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
                let stream = shared.stream.lock().unwrap().clone();
                match stream {
                    Some(stream) => {
                        if let Some(reply) = answer(&message, &headers) {
                            let _ = stream.send(reply.to_string());
                        }
                        respond(&mut write, "202 Accepted", "text/plain", "Accepted").await;
                    }
                    None => respond(&mut write, "404 Not Found", "text/plain", "no session").await,
                }
            }
            // The optional server-to-client stream of streamable HTTP, and session deletes.
            ("GET" | "DELETE", "/mcp") => {
                respond(&mut write, "405 Method Not Allowed", "text/plain", "").await;
            }
            _ => respond(&mut write, "404 Not Found", "text/plain", "").await,
        }
    }
}

async fn respond(
    write: &mut tokio::net::tcp::OwnedWriteHalf,
    status: &str,
    kind: &str,
    body: &str,
) {
    let response = format!(
        "HTTP/1.1 {status}\r\ncontent-type: {kind}\r\ncontent-length: {}\r\n\r\n{body}",
        body.len()
    );
    let _ = write.write_all(response.as_bytes()).await;
    let _ = write.flush().await;
}

/// The JSON-RPC answer to a request (none for a notification or a response).
fn answer(message: &Value, headers: &BTreeMap<String, String>) -> Option<Value> {
    let id = message.get("id")?.clone();
    let method = message.get("method")?.as_str().unwrap_or_default();
    let result = match method {
        "initialize" => json!({
            "protocolVersion": message["params"]["protocolVersion"],
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "fake-http", "version": "1.0.0"},
        }),
        "tools/list" => json!({"tools": [
            {
                "name": "whoami",
                "description": "Returns the Authorization header of the request",
                "inputSchema": {"type": "object", "properties": {}},
            },
            {
                "name": "big",
                "description": "Returns n characters",
                "inputSchema": {"type": "object", "properties": {"n": {"type": "integer"}}},
            },
        ]}),
        "tools/call" => {
            let text = match message["params"]["name"].as_str() {
                Some("whoami") => headers
                    .get("authorization")
                    .cloned()
                    .unwrap_or_else(|| "<none>".into()),
                Some("big") => "y".repeat(message["params"]["arguments"]["n"].as_u64()? as usize),
                _ => {
                    return Some(json!({"jsonrpc": "2.0", "id": id,
                        "error": {"code": -32602, "message": "unknown tool"}}));
                }
            };
            json!({"content": [{"type": "text", "text": text}], "isError": false})
        }
        "ping" => json!({}),
        _ => {
            return Some(json!({"jsonrpc": "2.0", "id": id,
                "error": {"code": -32601, "message": "method not found"}}));
        }
    };
    Some(json!({"jsonrpc": "2.0", "id": id, "result": result}))
}
