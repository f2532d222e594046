//! The legacy HTTP+SSE transport of MCP (protocol version 2024-11-05), which rmcp 3 no longer
//! ships: the client GETs an event stream; its first `endpoint` event names the URL to POST
//! JSON-RPC messages to; the server's messages (answers included) come back on the stream as
//! `message` events. Many servers still only speak this.
//!
//! [`SseClientTransport`] is an rmcp [`Transport`], so the rest of the client (handshake,
//! requests, cancellation) is rmcp's own.

use std::collections::BTreeMap;
use std::pin::Pin;

use eventsource_stream::{Event, EventStreamError, Eventsource};
use futures_util::{Stream, StreamExt};
use reqwest::header::{ACCEPT, HeaderMap, HeaderName, HeaderValue};
use reqwest::{StatusCode, Url};
use rmcp::RoleClient;
use rmcp::service::{RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::Transport;

type Events = Pin<Box<dyn Stream<Item = Result<Event, EventStreamError<reqwest::Error>>> + Send>>;

#[derive(Debug, thiserror::Error)]
pub enum SseError {
    #[error("{url} is not a valid URL: {reason}")]
    Url { url: String, reason: String },
    #[error("header {0:?} cannot be sent: check its name and value")]
    Header(String),
    #[error("cannot reach {url}: {source}")]
    Connect { url: String, source: reqwest::Error },
    #[error(
        "{url} answered {status}{}",
        hint(*.status)
    )]
    Status { url: String, status: StatusCode },
    #[error(
        "{url} is not an MCP event stream (content type {content_type:?}); \
         for the newer streamable HTTP transport add the server as `http`"
    )]
    NotEventStream { url: String, content_type: String },
    #[error("the event stream ended before naming its endpoint (no `endpoint` event)")]
    NoEndpoint,
    #[error(
        "the endpoint {endpoint} is on another origin than {url}: refused, as the headers would go there"
    )]
    OtherOrigin { url: String, endpoint: String },
    #[error("posting a message to {url} failed: {source}")]
    Post { url: String, source: reqwest::Error },
}

fn hint(status: StatusCode) -> &'static str {
    match status.as_u16() {
        401 | 403 => ": check the server's headers (a token?) with `tandem mcp list`",
        404 | 405 => ": check the URL (the event stream, often ending in /sse)",
        _ => "",
    }
}

/// A connected legacy SSE session.
pub struct SseClientTransport {
    client: reqwest::Client,
    endpoint: Url,
    events: Events,
}

impl SseClientTransport {
    /// Opens the event stream at `url` (sending `headers` there and with every POST) and waits
    /// for its `endpoint` event. The caller bounds how long this may take.
    pub async fn connect(url: &str, headers: &BTreeMap<String, String>) -> Result<Self, SseError> {
        crate::llm::init_tls();
        let base = Url::parse(url).map_err(|e| SseError::Url {
            url: url.to_string(),
            reason: e.to_string(),
        })?;
        let mut default_headers = HeaderMap::new();
        for (name, value) in headers {
            let header = || SseError::Header(name.clone());
            let name = HeaderName::from_bytes(name.as_bytes()).map_err(|_| header())?;
            let mut value = HeaderValue::from_str(value).map_err(|_| header())?;
            value.set_sensitive(true);
            default_headers.insert(name, value);
        }
        let client = reqwest::Client::builder()
            .default_headers(default_headers)
            .build()
            .map_err(|source| SseError::Connect {
                url: url.to_string(),
                source,
            })?;
        let response = client
            .get(base.clone())
            .header(ACCEPT, "text/event-stream")
            .send()
            .await
            .map_err(|source| SseError::Connect {
                url: url.to_string(),
                source,
            })?;
        let status = response.status();
        if !status.is_success() {
            return Err(SseError::Status {
                url: url.to_string(),
                status,
            });
        }
        let content_type = response
            .headers()
            .get(reqwest::header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default()
            .to_string();
        if !content_type.starts_with("text/event-stream") {
            return Err(SseError::NotEventStream {
                url: url.to_string(),
                content_type,
            });
        }
        let mut events: Events = Box::pin(response.bytes_stream().eventsource());
        let endpoint = loop {
            match events.next().await {
                Some(Ok(event)) if event.event == "endpoint" => break event.data,
                Some(Ok(_)) => continue,
                Some(Err(_)) | None => return Err(SseError::NoEndpoint),
            }
        };
        let endpoint = base.join(endpoint.trim()).map_err(|e| SseError::Url {
            url: endpoint.clone(),
            reason: e.to_string(),
        })?;
        if endpoint.origin() != base.origin() {
            return Err(SseError::OtherOrigin {
                url: url.to_string(),
                endpoint: endpoint.to_string(),
            });
        }
        Ok(SseClientTransport {
            client,
            endpoint,
            events,
        })
    }
}

impl Transport<RoleClient> for SseClientTransport {
    type Error = SseError;

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleClient>,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        let (client, endpoint) = (self.client.clone(), self.endpoint.clone());
        async move {
            let post = |source| SseError::Post {
                url: endpoint.to_string(),
                source,
            };
            let response = client
                .post(endpoint.clone())
                .json(&item)
                .send()
                .await
                .map_err(post)?;
            // The answer comes on the stream; the POST only says it was accepted (202).
            response.error_for_status().map_err(post)?;
            Ok(())
        }
    }

    async fn receive(&mut self) -> Option<RxJsonRpcMessage<RoleClient>> {
        loop {
            let event = self.events.next().await?.ok()?;
            // `message` is the only kind the transport defines for JSON-RPC; an unnamed event
            // is a message too. Anything unreadable is skipped, not fatal.
            if (event.event.is_empty() || event.event == "message")
                && let Ok(message) = serde_json::from_str(&event.data)
            {
                return Some(message);
            }
        }
    }

    async fn close(&mut self) -> Result<(), Self::Error> {
        // Ends the GET: the server sees the session close.
        self.events = Box::pin(futures_util::stream::empty());
        Ok(())
    }
}
