//! The gateway's token: checking it during the handshake, and making a new one.

use std::io::Read as _;

use tokio_tungstenite::tungstenite::handshake::server::{ErrorResponse, Request};
use tokio_tungstenite::tungstenite::http::{HeaderValue, StatusCode, header};

use super::{GatewayError, Result};

/// `None` when the handshake carries the token, as a bearer header or a `token` query
/// parameter (compared verbatim, not percent-decoded); else the 401 answer.
pub(super) fn refusal(request: &Request, token: &str) -> Option<ErrorResponse> {
    let header = request.headers().get(header::AUTHORIZATION);
    let header = header.and_then(|value| value.to_str().ok()?.trim().split_once(' '));
    let bearer = header.filter(|(scheme, _)| scheme.eq_ignore_ascii_case("bearer"));
    let pairs = request.uri().query().unwrap_or("").split('&');
    let query = pairs.filter_map(|pair| pair.strip_prefix("token="));
    let mut given = query.chain(bearer.map(|(_, token)| token.trim()));
    if given.any(|given| same(given.as_bytes(), token.as_bytes())) {
        return None;
    }
    let mut response = ErrorResponse::new(Some("a valid gateway token is required".into()));
    *response.status_mut() = StatusCode::UNAUTHORIZED;
    let (name, value) = (header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
    response.headers_mut().insert(name, value);
    Some(response)
}

/// Compares without stopping at the first difference, so timing says nothing about the token.
fn same(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// 32 random bytes from the kernel, as 64 hex digits.
pub fn generate_token() -> Result<String> {
    let mut bytes = [0u8; 32];
    std::fs::File::open("/dev/urandom")
        .and_then(|mut urandom| urandom.read_exact(&mut bytes))
        .map_err(GatewayError::NoRandomness)?;
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}
