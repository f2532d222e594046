//! HTTP plumbing shared by the providers: one client per provider, sending with retries and
//! idle timeouts on every wait (what a failure means is `failures.rs`).

use std::sync::OnceLock;
use std::time::Duration;

use eventsource_stream::Event;
use futures_util::stream::{self, StreamExt};
use reqwest::{Client, RequestBuilder, Response};
use serde_json::Value;

use super::failures::{error_message, idle_timeout, is_refused, root_cause, status_error};
use super::framing::{Frames, ndjson_lines, snippet, sse_events};
use super::{LlmError, ProviderConfig, ProviderKind};

/// Attempts for one request when the server answers 429 or 5xx before any body byte.
const MAX_ATTEMPTS: u32 = 3;
const FIRST_BACKOFF: Duration = Duration::from_millis(250);
/// A server asking for a longer pause than this is better reported than waited for.
const MAX_RETRY_AFTER: Duration = Duration::from_secs(10);
/// Error bodies are only read for their message; a huge one is cut here.
const MAX_ERROR_BODY: usize = 64 * 1024;
/// Model lists and model details are small; this only stops a runaway reply.
const MAX_JSON_BODY: usize = 16 * 1024 * 1024;

/// Which key of each provider (by name) worked last, for this process.
fn keys_in_use() -> std::sync::MutexGuard<'static, std::collections::HashMap<String, usize>> {
    static IN_USE: std::sync::OnceLock<std::sync::Mutex<std::collections::HashMap<String, usize>>> =
        std::sync::OnceLock::new();
    IN_USE
        .get_or_init(Default::default)
        .lock()
        .unwrap_or_else(|p| p.into_inner())
}

/// The index of the key provider `name` uses now (0 until one was rate limited).
pub fn key_in_use(name: &str) -> usize {
    keys_in_use().get(name).copied().unwrap_or(0)
}

fn set_key_in_use(name: &str, index: usize) {
    keys_in_use().insert(name.to_string(), index);
}

/// The client and configuration of one provider.
pub(crate) struct Http {
    pub(crate) config: ProviderConfig,
    /// Built on the first request: building loads the system's root certificates, which a
    /// command that never asks the server (`tandem context` with a known model) should not
    /// wait for. Building only fails on a broken TLS setup; that is reported on that request.
    client: OnceLock<Result<Client, String>>,
}

impl Http {
    pub(crate) fn new(mut config: ProviderConfig) -> Self {
        super::init_tls();
        config.base_url = config.kind.normalize_base_url(&config.base_url);
        Http {
            config,
            client: OnceLock::new(),
        }
    }

    fn client(&self) -> &Result<Client, String> {
        self.client.get_or_init(|| {
            let config = &self.config;
            let connect = nonzero_or(config.connect_timeout, super::DEFAULT_CONNECT_TIMEOUT);
            // No overall timeout: a long reply may stream for minutes; the idle timeout
            // guards it.
            let mut builder = Client::builder()
                .connect_timeout(connect)
                .user_agent(concat!("tandem/", env!("CARGO_PKG_VERSION")));
            // A local server (Ollama, LM Studio…) must not be sent through an HTTP(S)_PROXY
            // set for the internet; reqwest does not exempt loopback by itself.
            if is_loopback(&config.base_url) {
                builder = builder.no_proxy();
            }
            builder.build().map_err(|e| root_cause(&e))
        })
    }

    pub(crate) fn name(&self) -> &str {
        &self.config.name
    }

    pub(crate) fn kind(&self) -> ProviderKind {
        self.config.kind
    }

    pub(crate) fn idle(&self) -> Duration {
        nonzero_or(self.config.idle_timeout, super::DEFAULT_IDLE_TIMEOUT)
    }

    /// `path` (starting with `/`) appended to the configured base URL.
    pub(crate) fn url(&self, path: &str) -> String {
        format!("{}{}", self.config.base_url.trim_end_matches('/'), path)
    }

    /// The configured keys, trimmed, empty ones left out.
    fn keys(&self) -> Vec<&str> {
        let keys = self.config.api_keys.iter().map(|k| k.trim());
        keys.filter(|k| !k.is_empty()).collect()
    }

    /// The key in use: the last one that was not rate limited (the first at start).
    pub(crate) fn key(&self) -> Option<&str> {
        let keys = self.keys();
        (!keys.is_empty()).then(|| keys[key_in_use(&self.config.name) % keys.len()])
    }

    /// Sends a request built by `make` with the key in use; while the server answers that
    /// the key is rate limited or out of quota, with the next key, until one works (see
    /// [`Http::send`] for the rest). Every kind rotates this way; which key worked last is
    /// remembered per provider for the process. Without keys: `no_key(env)` when
    /// `required_env` names the variable, else sent without one (local servers).
    pub(crate) async fn send_keyed<F>(
        &self,
        make: F,
        model: Option<&str>,
        required_env: Option<&str>,
    ) -> Result<Response, LlmError>
    where
        F: Fn(&Client, Option<&str>) -> RequestBuilder,
    {
        let keys = self.keys();
        let count = keys.len();
        if count == 0 {
            return match required_env {
                Some(env) => Err(self.no_key(env)),
                None => self.send(|c| make(c, None), model, true).await,
            };
        }
        let start = key_in_use(&self.config.name) % count;
        let mut last_message = String::new();
        for step in 0..count {
            let index = (start + step) % count;
            let key = keys[index];
            match self.send(|c| make(c, Some(key)), model, count == 1).await {
                Ok(response) => {
                    set_key_in_use(&self.config.name, index);
                    return Ok(response);
                }
                Err(LlmError::RateLimited { message, .. }) if count > 1 => last_message = message,
                Err(err) => return Err(err),
            }
        }
        Err(LlmError::RateLimited {
            provider: self.name().to_string(),
            status: 429,
            message: format!("all {count} API keys are rate limited; last: {last_message}"),
        })
    }

    /// POSTs `body` as JSON to `url` with the key in use as a bearer token, or none when no
    /// key is configured (local servers); rotates keys as [`Http::send_keyed`] does.
    pub(crate) async fn post_bearer(
        &self,
        url: &str,
        body: &serde_json::Value,
        model: Option<&str>,
    ) -> Result<Response, LlmError> {
        let make = |c: &Client, key: Option<&str>| bearer(c.post(url).json(body), key);
        self.send_keyed(make, model, None).await
    }

    pub(crate) fn no_key(&self, default_env: &str) -> LlmError {
        LlmError::NoApiKey {
            provider: self.name().to_string(),
            env: self
                .config
                .api_key_env
                .clone()
                .unwrap_or_else(|| default_env.to_string()),
        }
    }

    pub(crate) fn protocol(&self, message: impl Into<String>) -> LlmError {
        LlmError::Protocol {
            provider: self.name().to_string(),
            message: message.into(),
        }
    }

    /// The `array` field of a JSON reply, or a Protocol error naming it.
    pub(crate) fn array<'a>(
        &self,
        json: &'a Value,
        field: &str,
    ) -> Result<&'a Vec<Value>, LlmError> {
        json[field].as_array().ok_or_else(|| {
            self.protocol(format!(
                "a reply without a `{field}` list: {}",
                snippet(&json.to_string())
            ))
        })
    }

    /// Sends a request built by `make` until it gets a success status. 429 (when
    /// `retry_429`) and 5xx are retried with backoff: nothing of the reply has been read
    /// then, so a retry cannot duplicate text. Other statuses become typed errors.
    pub(crate) async fn send<F>(
        &self,
        make: F,
        model: Option<&str>,
        retry_429: bool,
    ) -> Result<Response, LlmError>
    where
        F: Fn(&Client) -> RequestBuilder,
    {
        let client = self
            .client()
            .as_ref()
            .map_err(|message| LlmError::Connect {
                url: self.config.base_url.clone(),
                message: message.clone(),
            })?;
        let mut attempt = 1;
        loop {
            // Waiting for the status line counts as idle time too: a server that accepts
            // the connection and then says nothing must not hang the turn.
            let response = match tokio::time::timeout(self.idle(), make(client).send()).await {
                Err(_) => return Err(self.idle_error()),
                Ok(Err(err)) => return Err(self.request_error(&err)),
                Ok(Ok(response)) => response,
            };
            let status = response.status().as_u16();
            if response.status().is_success() {
                return Ok(response);
            }
            let retryable = status >= 500 || (status == 429 && retry_429);
            if retryable && attempt < MAX_ATTEMPTS {
                let wait = retry_after(&response).unwrap_or_else(|| backoff(attempt));
                drop(response);
                tokio::time::sleep(wait).await;
                attempt += 1;
                continue;
            }
            let body = self
                .read_body(response, MAX_ERROR_BODY)
                .await
                .unwrap_or_default();
            return Err(status_error(self.kind(), self.name(), status, &body, model));
        }
    }

    /// Sends (with retries) and parses the whole reply as JSON.
    pub(crate) async fn json<F>(&self, make: F, model: Option<&str>) -> Result<Value, LlmError>
    where
        F: Fn(&Client) -> RequestBuilder,
    {
        let response = self.send(make, model, true).await?;
        self.read_json(response).await
    }

    /// Reads a successful reply whole and parses it as JSON.
    pub(crate) async fn read_json(&self, response: Response) -> Result<Value, LlmError> {
        let body = self.read_body(response, MAX_JSON_BODY).await?;
        serde_json::from_str(&body).map_err(|e| {
            self.protocol(format!(
                "a reply that is not JSON ({e}): {}",
                snippet(&body)
            ))
        })
    }

    /// Reads a whole body up to about `limit` bytes, each chunk under the idle timeout.
    async fn read_body(&self, mut response: Response, limit: usize) -> Result<String, LlmError> {
        let mut body = Vec::new();
        loop {
            match tokio::time::timeout(self.idle(), response.chunk()).await {
                Err(_) => return Err(self.idle_error()),
                Ok(Err(err)) => return Err(self.disconnected(&err)),
                Ok(Ok(None)) => break,
                Ok(Ok(Some(chunk))) => body.extend_from_slice(&chunk),
            }
            if body.len() > limit {
                break;
            }
        }
        Ok(String::from_utf8_lossy(&body).into_owned())
    }

    /// The reply body as chunks, each awaited under the idle timeout; ends after an error.
    pub(crate) fn body(&self, response: Response) -> Frames<Vec<u8>> {
        let idle = self.idle();
        let name = self.name().to_string();
        let chunks = response.bytes_stream().boxed();
        stream::unfold(Some(chunks), move |state| {
            let name = name.clone();
            async move {
                let mut chunks = state?;
                match tokio::time::timeout(idle, chunks.next()).await {
                    Err(_) => Some((Err(idle_timeout(&name, idle)), None)),
                    Ok(None) => None,
                    Ok(Some(Ok(bytes))) => Some((Ok(Vec::from(bytes)), Some(chunks))),
                    Ok(Some(Err(err))) => {
                        let error = LlmError::Disconnected {
                            provider: name,
                            message: root_cause(&err),
                        };
                        Some((Err(error), None))
                    }
                }
            }
        })
        .boxed()
    }

    /// The reply's NDJSON lines.
    pub(crate) fn ndjson(&self, response: Response) -> Frames<String> {
        ndjson_lines(self.body(response), self.name().to_string())
    }

    /// The reply's SSE events. A JSON or HTML body in place of an event stream (a proxy's
    /// error page, a server that ignored `stream: true`) is reported for what it says
    /// instead of as a stream that ended without a word.
    pub(crate) async fn event_stream(&self, response: Response) -> Result<Frames<Event>, LlmError> {
        let content_type = response
            .headers()
            .get(reqwest::header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
            .to_ascii_lowercase();
        if content_type.contains("json") || content_type.contains("html") {
            let body = self.read_body(response, MAX_ERROR_BODY).await?;
            return Err(LlmError::Protocol {
                provider: self.name().to_string(),
                message: format!(
                    "{content_type} instead of an event stream: {}",
                    error_message(&body)
                ),
            });
        }
        Ok(sse_events(self.body(response), self.name().to_string()))
    }

    fn idle_error(&self) -> LlmError {
        idle_timeout(self.name(), self.idle())
    }

    fn disconnected(&self, err: &reqwest::Error) -> LlmError {
        LlmError::Disconnected {
            provider: self.name().to_string(),
            message: root_cause(err),
        }
    }

    /// An error before any status arrived: refused connection, DNS, TLS, or a reset.
    fn request_error(&self, err: &reqwest::Error) -> LlmError {
        let url = self.config.base_url.clone();
        if err.is_connect() || err.is_timeout() {
            if self.kind() == ProviderKind::Ollama && is_refused(err) {
                return LlmError::OllamaNotRunning { url };
            }
            let message = if err.is_timeout() {
                "timed out while connecting".to_string()
            } else {
                root_cause(err)
            };
            return LlmError::Connect { url, message };
        }
        self.disconnected(err)
    }
}

/// `request` with `key` as its bearer token, when there is one.
pub(crate) fn bearer(request: RequestBuilder, key: Option<&str>) -> RequestBuilder {
    match key {
        Some(key) => request.bearer_auth(key),
        None => request,
    }
}

fn is_loopback(base_url: &str) -> bool {
    let Ok(url) = reqwest::Url::parse(base_url) else {
        return false;
    };
    match url.host_str() {
        Some(host) if host.eq_ignore_ascii_case("localhost") => true,
        Some(host) => host
            .trim_start_matches('[')
            .trim_end_matches(']')
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback()),
        None => false,
    }
}

fn nonzero_or(value: Duration, default: Duration) -> Duration {
    if value.is_zero() { default } else { value }
}

fn backoff(attempt: u32) -> Duration {
    FIRST_BACKOFF * 2u32.saturating_pow(attempt.saturating_sub(1))
}

fn retry_after(response: &Response) -> Option<Duration> {
    let value = response.headers().get("retry-after")?.to_str().ok()?;
    parse_retry_after(value)
}

/// `Retry-After` in seconds (the HTTP-date form is rare from APIs and falls back to backoff).
fn parse_retry_after(value: &str) -> Option<Duration> {
    let secs: f64 = value.trim().parse().ok()?;
    if !secs.is_finite() || secs < 0.0 {
        return None;
    }
    Some(Duration::from_secs_f64(
        secs.min(MAX_RETRY_AFTER.as_secs_f64()),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn retry_after_is_capped_and_backoff_doubles() {
        assert_eq!(parse_retry_after("2"), Some(Duration::from_secs(2)));
        assert_eq!(parse_retry_after("3600"), Some(MAX_RETRY_AFTER));
        assert_eq!(parse_retry_after("Wed, 21 Oct 2015 07:28:00 GMT"), None);
        assert_eq!(backoff(1), Duration::from_millis(250));
        assert_eq!(backoff(2), Duration::from_millis(500));
        assert_eq!(backoff(3), Duration::from_secs(1));
    }

    #[test]
    fn only_local_servers_bypass_the_proxy() {
        assert!(is_loopback("http://localhost:11434"));
        assert!(is_loopback("http://127.0.0.1:1234/v1"));
        assert!(is_loopback("http://[::1]:8080"));
        assert!(!is_loopback("https://api.openai.com/v1"));
        assert!(!is_loopback("http://192.168.1.20:11434"));
    }
}
