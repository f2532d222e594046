//! Fetching a web page as readable text, for the agent's `fetch_url` tool and for `@https://…`
//! mentions: http(s) only, a timeout, a cap on what is downloaded and on what is kept, HTML
//! turned into plain text (`html2text`), other text kept as it is, anything else refused.

use std::time::Duration;

use futures_util::StreamExt;

/// What is downloaded at most; a longer body is cut there (and said so).
pub const MAX_DOWNLOAD_BYTES: usize = 2 * 1024 * 1024;
/// What is kept of the text by default.
pub const DEFAULT_MAX_CHARS: usize = 20_000;
const TIMEOUT: Duration = Duration::from_secs(20);
/// Text width HTML is laid out to.
const WIDTH: usize = 100;

#[derive(Debug, thiserror::Error)]
pub enum FetchError {
    #[error("{0:?} is not an http(s) URL")]
    NotHttp(String),
    #[error("fetching {url} failed: {message}")]
    Request { url: String, message: String },
    #[error("{url} answered HTTP {status}")]
    Status { url: String, status: u16 },
    #[error("{url} is {content_type}, not text or HTML")]
    NotText { url: String, content_type: String },
}

/// A page as text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fetched {
    /// Where it ended up (after redirects).
    pub url: String,
    pub text: String,
    /// Cut at the download or the character cap.
    pub truncated: bool,
}

/// Fetches `url` and returns its text, at most `max_chars` characters.
pub async fn fetch_text(url: &str, max_chars: usize) -> Result<Fetched, FetchError> {
    let url = url.trim();
    let parsed = reqwest::Url::parse(url).map_err(|_| FetchError::NotHttp(url.to_string()))?;
    if !matches!(parsed.scheme(), "http" | "https") {
        return Err(FetchError::NotHttp(url.to_string()));
    }
    crate::llm::init_tls();
    let failed = |e: reqwest::Error| FetchError::Request {
        url: url.to_string(),
        message: e.without_url().to_string(),
    };
    let client = reqwest::Client::builder()
        .timeout(TIMEOUT)
        .redirect(reqwest::redirect::Policy::limited(5))
        .user_agent(concat!("tandem/", env!("CARGO_PKG_VERSION")))
        .build()
        .map_err(failed)?;
    let response = client.get(parsed).send().await.map_err(failed)?;
    let status = response.status();
    let final_url = response.url().to_string();
    if !status.is_success() {
        return Err(FetchError::Status {
            url: final_url,
            status: status.as_u16(),
        });
    }
    let content_type = response
        .headers()
        .get(reqwest::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_ascii_lowercase();
    let html = content_type.contains("html");
    let text_like = html
        || content_type.is_empty()
        || content_type.starts_with("text/")
        || content_type.contains("json")
        || content_type.contains("xml");
    if !text_like {
        return Err(FetchError::NotText {
            url: final_url,
            content_type,
        });
    }
    let mut body = Vec::new();
    let mut cut = false;
    let mut stream = response.bytes_stream();
    while let Some(chunk) = stream.next().await {
        let chunk = chunk.map_err(failed)?;
        let room = MAX_DOWNLOAD_BYTES - body.len();
        if chunk.len() > room {
            body.extend_from_slice(&chunk[..room]);
            cut = true;
            break;
        }
        body.extend_from_slice(&chunk);
    }
    let sniff = crate::folder::search::BINARY_SNIFF_BYTES;
    if !html && body.iter().take(sniff).any(|&b| b == 0) {
        return Err(FetchError::NotText {
            url: final_url,
            content_type,
        });
    }
    let text = match html {
        true => html2text::from_read(body.as_slice(), WIDTH)
            .unwrap_or_else(|_| String::from_utf8_lossy(&body).into_owned()),
        false => String::from_utf8_lossy(&body).into_owned(),
    };
    let (text, clipped) = clip(&text, max_chars);
    Ok(Fetched {
        url: final_url,
        text,
        truncated: cut || clipped,
    })
}

fn clip(text: &str, max_chars: usize) -> (String, bool) {
    match text.char_indices().nth(max_chars) {
        Some((at, _)) => (text[..at].to_string(), true),
        None => (text.to_string(), false),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn only_http_urls_are_fetched() {
        for bad in [
            "file:///etc/passwd",
            "ftp://x/y",
            "not a url",
            "javascript:alert(1)",
        ] {
            assert!(
                matches!(fetch_text(bad, 100).await, Err(FetchError::NotHttp(_))),
                "{bad}"
            );
        }
    }

    #[test]
    fn clipping_counts_characters() {
        assert_eq!(clip("héllo", 2), ("hé".to_string(), true));
        assert_eq!(clip("hi", 5), ("hi".to_string(), false));
    }
}
