//! What a failed request means, as an error a person can act on: the server's own words, a
//! status mapped to its cause (a rejected key, a rate limit, a model not pulled, a request
//! longer than the window with the server's count), a refused connection, an idle stream.

use std::time::Duration;

use serde_json::Value;

use super::framing::snippet;
use super::{LlmError, ProviderKind};

pub(super) fn idle_timeout(provider: &str, idle: Duration) -> LlmError {
    // Rounded up so that a sub-second test timeout does not read as "0 s".
    let secs = u64::try_from(idle.as_millis().div_ceil(1000)).unwrap_or(u64::MAX);
    LlmError::IdleTimeout {
        provider: provider.to_string(),
        secs,
    }
}

pub(super) fn is_refused(err: &(dyn std::error::Error + 'static)) -> bool {
    let mut current = Some(err);
    while let Some(e) = current {
        if let Some(io) = e.downcast_ref::<std::io::Error>()
            && io.kind() == std::io::ErrorKind::ConnectionRefused
        {
            return true;
        }
        current = e.source();
    }
    false
}

/// The innermost cause: reqwest's outer messages ("error sending request for url …") say
/// less than the OS error underneath ("Connection refused").
pub(crate) fn root_cause(err: &(dyn std::error::Error + 'static)) -> String {
    let mut current = err;
    while let Some(next) = current.source() {
        current = next;
    }
    current.to_string()
}

/// The server's own words: `error` as a string, `error.message`, or `message`; else the
/// body itself.
pub(crate) fn error_message(body: &str) -> String {
    if let Ok(json) = serde_json::from_str::<Value>(body) {
        let found = match &json["error"] {
            Value::String(s) => Some(s.clone()),
            Value::Object(o) => o.get("message").and_then(Value::as_str).map(str::to_string),
            _ => None,
        }
        .or_else(|| json["message"].as_str().map(str::to_string));
        if let Some(message) = found {
            return message;
        }
    }
    let text = snippet(body);
    if text.is_empty() {
        "no details given".to_string()
    } else {
        text
    }
}

/// Whether a server's error message says the request is longer than the model's window, as
/// OpenAI (and the servers copying it), llama.cpp, Anthropic and Gemini word it.
fn too_long(lower: &str) -> bool {
    [
        "context_length_exceeded",
        "maximum context length",
        "exceeds the available context",
        "exceed_context_size",
        "prompt is too long",
        "input token count",
    ]
    .iter()
    .any(|words| lower.contains(words))
}

/// The prompt tokens a too-long error says the server counted (messages only, where it tells
/// them from the reply's), from its message or, for llama.cpp, the body's `n_prompt_tokens`.
fn prompt_count(message: &str, body: &str) -> Option<u64> {
    static PATTERNS: std::sync::LazyLock<Vec<regex::Regex>> = std::sync::LazyLock::new(|| {
        [
            // OpenAI: "you requested 10036 tokens (10031 in the messages, 5 in the completion)"
            r"(\d+) in the messages",
            // Anthropic: "prompt is too long: 210000 tokens > 200000 maximum"
            r"prompt is too long: (\d+) tokens",
            // Gemini: "The input token count (1200000) exceeds the maximum ..."
            r"input token count \((\d+)\)",
            // llama.cpp: `"n_prompt_tokens": 7430` beside its message
            r#""n_prompt_tokens"\s*:\s*(\d+)"#,
        ]
        .iter()
        .filter_map(|p| regex::Regex::new(p).ok())
        .collect()
    });
    [message, body].iter().find_map(|text| {
        PATTERNS
            .iter()
            .find_map(|re| re.captures(text)?.get(1)?.as_str().parse().ok())
    })
}

/// Maps an HTTP error status (and its body) to the error a person can act on.
pub(crate) fn status_error(
    kind: ProviderKind,
    provider: &str,
    status: u16,
    body: &str,
    model: Option<&str>,
) -> LlmError {
    let message = error_message(body);
    let lower = message.to_lowercase();
    let provider = provider.to_string();
    // Gemini reports quota exhaustion as RESOURCE_EXHAUSTED (sometimes not as 429) and a bad
    // key as 400 API_KEY_INVALID; Anthropic's 529 means overloaded: all "wait or switch".
    if status == 401 || status == 403 || body.contains("API_KEY_INVALID") {
        return LlmError::KeyRejected { provider, status };
    }
    if status == 429 || status == 529 || body.contains("RESOURCE_EXHAUSTED") {
        return LlmError::RateLimited {
            provider,
            status,
            message,
        };
    }
    if status == 404
        && let Some(model) = model
        && (lower.contains("model") || message.contains(model))
    {
        if kind == ProviderKind::Ollama {
            return LlmError::ModelNotPulled {
                model: model.to_string(),
            };
        }
        return LlmError::UnknownModel {
            provider,
            model: model.to_string(),
            message,
        };
    }
    if (400..500).contains(&status) && too_long(&lower) {
        return LlmError::TooLong {
            provider,
            counted: prompt_count(&message, body),
            message,
        };
    }
    if status == 400 && (lower.contains("does not support") || lower.contains("not supported")) {
        return LlmError::Unsupported(message);
    }
    LlmError::Http {
        provider,
        status,
        message,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_request_longer_than_the_window_is_told_apart_with_the_servers_count() {
        let openai = r#"{"error":{"message":"This model's maximum context length is 8192 tokens. However, you requested 10036 tokens (10031 in the messages, 5 in the completion). Please reduce the length of the messages or completion.","type":"invalid_request_error","param":"messages","code":"context_length_exceeded"}}"#;
        let llama = r#"{"error":{"code":400,"message":"the request exceeds the available context size, try increasing it","type":"exceed_context_size_error","n_prompt_tokens":7430,"n_ctx":8192}}"#;
        let anthropic = r#"{"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long: 210000 tokens > 200000 maximum"}}"#;
        let gemini = r#"{"error":{"code":400,"message":"The input token count (1200000) exceeds the maximum number of tokens allowed (1048576).","status":"INVALID_ARGUMENT"}}"#;
        let cases = [
            (ProviderKind::Openai, openai, Some(10_031)),
            (ProviderKind::Openai, llama, Some(7430)),
            (ProviderKind::Anthropic, anthropic, Some(210_000)),
            (ProviderKind::Gemini, gemini, Some(1_200_000)),
        ];
        for (kind, body, count) in cases {
            match status_error(kind, "p", 400, body, Some("m")) {
                LlmError::TooLong { counted, .. } => assert_eq!(counted, count, "{body}"),
                other => panic!("{body}: {other:?}"),
            }
        }
        // Said without a count: still too long, the count unknown.
        let bare = r#"{"error":{"message":"maximum context length exceeded"}}"#;
        assert!(matches!(
            status_error(ProviderKind::Openai, "p", 400, bare, None),
            LlmError::TooLong { counted: None, .. }
        ));
        // Another 400 is not.
        let other = r#"{"error":{"message":"temperature must be at most 2"}}"#;
        assert!(matches!(
            status_error(ProviderKind::Openai, "p", 400, other, None),
            LlmError::Http { .. }
        ));
    }

    #[test]
    fn statuses_map_to_actionable_errors() {
        let ollama = ProviderKind::Ollama;
        let openai = ProviderKind::Openai;
        let e = status_error(
            ollama,
            "Ollama",
            404,
            r#"{"error":"model 'x' not found"}"#,
            Some("x"),
        );
        assert_eq!(e, LlmError::ModelNotPulled { model: "x".into() });
        let body = r#"{"error":{"message":"The model `x` does not exist"}}"#;
        assert!(matches!(
            status_error(openai, "OpenAI", 404, body, Some("x")),
            LlmError::UnknownModel { .. }
        ));
        assert!(matches!(
            status_error(openai, "OpenAI", 404, "404 page not found", Some("x")),
            LlmError::Http { status: 404, .. }
        ));
        assert!(matches!(
            status_error(openai, "OpenAI", 401, "{}", None),
            LlmError::KeyRejected { status: 401, .. }
        ));
        let body = r#"{"error":"registry.ollama.ai/library/gemma:2b does not support tools"}"#;
        assert_eq!(
            status_error(ollama, "Ollama", 400, body, Some("gemma:2b")),
            LlmError::Unsupported(
                "registry.ollama.ai/library/gemma:2b does not support tools".into()
            )
        );
        let body =
            r#"{"error":{"code":429,"message":"Quota exceeded","status":"RESOURCE_EXHAUSTED"}}"#;
        assert!(matches!(
            status_error(ProviderKind::Gemini, "Gemini", 429, body, None),
            LlmError::RateLimited { message, .. } if message == "Quota exceeded"
        ));
        let e = status_error(openai, "OpenAI", 502, "<html>bad gateway</html>", None);
        assert!(
            matches!(e, LlmError::Http { status: 502, message, .. } if message.contains("bad gateway"))
        );
    }
}
