//! The `mcp_servers` table: the MCP servers whose tools agent mode may call.
//!
//! A server's name becomes the prefix of its tools' names (`name/tool` for the policy and the
//! UI, `name__tool` on the wire to the model), so it is validated here, before it can reach a
//! provider API that only accepts `[A-Za-z0-9_-]{1,64}` tool names.
//!
//! A stdio server's `env` is stored in plain text, like the rest of the database. To hand a
//! secret to a server without storing it, set the value to `${NAME}`: it is filled in from the
//! app's environment when the server starts (see [`stdio_server_env`]).
//!
//! An HTTP server's `headers` (an `Authorization: Bearer …` token, usually) are stored the same
//! way. They are secrets: they serialize masked ([`mask_header_value`]) and front-ends show
//! them masked; only the transport that sends them reads them in full. To keep a token out of
//! the database, write `${NAME}` inside the value (`Bearer ${GITHUB_TOKEN}`): it is filled in
//! from the app's environment at each connection ([`expand_header_values`]).

use std::collections::BTreeMap;
use std::ffi::{OsStr, OsString};

use rusqlite::{OptionalExtension, Row, params};
use serde::Serialize;

use super::{Result, Store, StoreError, not_found, now_ms};

/// The longest server name: it leaves room for the tool's own name in a 64-character wire name.
pub const MCP_SERVER_NAME_MAX: usize = 32;

/// How to reach an MCP server.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "transport", rename_all = "lowercase")]
pub enum McpTransport {
    /// A child process speaking JSON-RPC on stdin/stdout.
    Stdio {
        command: String,
        args: Vec<String>,
        /// Added to the (filtered) environment of the child; see the module docs.
        env: BTreeMap<String, String>,
    },
    /// A streamable-HTTP endpoint.
    Http {
        url: String,
        /// Sent with every request; serialized masked.
        #[serde(serialize_with = "masked")]
        headers: BTreeMap<String, String>,
    },
    /// The legacy HTTP+SSE transport (MCP 2024-11-05): `url` is the event stream, whose first
    /// `endpoint` event names where to POST.
    Sse {
        url: String,
        /// Sent with every request; serialized masked.
        #[serde(serialize_with = "masked")]
        headers: BTreeMap<String, String>,
    },
}

impl McpTransport {
    /// The stored name of the transport.
    pub fn kind(&self) -> &'static str {
        match self {
            McpTransport::Stdio { .. } => "stdio",
            McpTransport::Http { .. } => "http",
            McpTransport::Sse { .. } => "sse",
        }
    }

    /// The headers of an HTTP or SSE server, with their values masked, as `Name: value`.
    pub fn masked_headers(&self) -> Vec<String> {
        match self {
            McpTransport::Stdio { .. } => Vec::new(),
            McpTransport::Http { headers, .. } | McpTransport::Sse { headers, .. } => headers
                .iter()
                .map(|(name, value)| format!("{name}: {}", mask_header_value(value)))
                .collect(),
        }
    }
}

fn masked<S: serde::Serializer>(
    headers: &BTreeMap<String, String>,
    serializer: S,
) -> std::result::Result<S::Ok, S::Error> {
    serializer.collect_map(
        headers
            .iter()
            .map(|(name, value)| (name, mask_header_value(value))),
    )
}

/// A header value as it may be shown: an auth scheme (`Bearer`) is kept, the secret is not,
/// beyond its last 4 characters when it is long enough for that to give nothing away.
pub fn mask_header_value(value: &str) -> String {
    let (scheme, secret) = match value.split_once(' ') {
        Some((scheme, secret))
            if !scheme.is_empty() && scheme.bytes().all(|b| b.is_ascii_alphabetic()) =>
        {
            (format!("{scheme} "), secret)
        }
        _ => (String::new(), value),
    };
    let count = secret.chars().count();
    let tail: String = match count {
        16.. => secret.chars().skip(count - 4).collect(),
        _ => String::new(),
    };
    format!("{scheme}••••{tail}")
}

/// Parses `Name: value` (as typed on the command line or in Settings) into a header.
pub fn parse_mcp_header(line: &str) -> Result<(String, String), McpServerError> {
    let invalid = |reason| McpServerError::InvalidHeader {
        header: line
            .split(':')
            .next()
            .unwrap_or_default()
            .trim()
            .to_string(),
        reason,
    };
    let (name, value) = line
        .split_once(':')
        .ok_or_else(|| invalid("write it as \"Name: value\""))?;
    let (name, value) = (name.trim().to_string(), value.trim().to_string());
    validate_header(&name, &value).map_err(invalid)?;
    Ok((name, value))
}

/// RFC 9110: a header name is a token; a value has no control characters (no CR/LF that
/// could smuggle another header). Headers the transport sets itself are refused.
fn validate_header(name: &str, value: &str) -> Result<(), &'static str> {
    const TOKEN_PUNCT: &[u8] = b"!#$%&'*+-.^_`|~";
    if name.is_empty()
        || !name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || TOKEN_PUNCT.contains(&b))
    {
        return Err("the name may only hold letters, digits and !#$%&'*+-.^_`|~");
    }
    const RESERVED: &[&str] = &[
        "accept",
        "content-type",
        "content-length",
        "host",
        "connection",
        "transfer-encoding",
        "mcp-session-id",
        "mcp-protocol-version",
        "last-event-id",
    ];
    if RESERVED.contains(&name.to_ascii_lowercase().as_str()) {
        return Err("the transport sets this header itself");
    }
    if value.is_empty() {
        return Err("the value is empty");
    }
    if value.chars().any(|c| c.is_control() && c != '\t') {
        return Err("the value may not hold control characters or line breaks");
    }
    Ok(())
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct McpServerRecord {
    pub id: i64,
    pub name: String,
    #[serde(flatten)]
    pub transport: McpTransport,
    pub enabled: bool,
    pub created_at: i64,
}

/// Why a server could not be added. Separate from [`StoreError`] because these are the
/// user's mistakes, worth a precise message, not database failures.
#[derive(Debug, thiserror::Error)]
pub enum McpServerError {
    #[error("invalid MCP server name {name:?}: {reason}")]
    InvalidName { name: String, reason: &'static str },
    #[error("invalid MCP server {name:?}: {reason}")]
    InvalidTransport { name: String, reason: &'static str },
    #[error("invalid MCP header {header:?}: {reason}")]
    InvalidHeader {
        header: String,
        reason: &'static str,
    },
    #[error("an MCP server named {0:?} already exists")]
    DuplicateName(String),
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// Checks a server name: non-empty, at most [`MCP_SERVER_NAME_MAX`] characters of
/// `[A-Za-z0-9_-]`, so `name__tool` stays a valid wire name and `name/tool` splits unambiguously.
pub fn validate_mcp_server_name(name: &str) -> Result<(), McpServerError> {
    let invalid = |reason| {
        Err(McpServerError::InvalidName {
            name: name.to_string(),
            reason,
        })
    };
    if name.is_empty() {
        return invalid("it is empty");
    }
    if name.len() > MCP_SERVER_NAME_MAX {
        return invalid("it is longer than 32 characters");
    }
    if !name
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
    {
        return invalid("only letters, digits, '_' and '-' are allowed");
    }
    // `__` separates server and tool in wire names: with neither inside nor at the end of the
    // server name, no two (server, tool) pairs share one (`a` + `b__c` vs `a__b` + `c`).
    if name.contains("__") || name.ends_with('_') {
        return invalid("it may not contain '__' or end with '_'");
    }
    Ok(())
}

fn validate_transport(name: &str, transport: &McpTransport) -> Result<(), McpServerError> {
    let reason = match transport {
        McpTransport::Stdio { command, .. } if command.trim().is_empty() => "the command is empty",
        McpTransport::Http { url, .. } | McpTransport::Sse { url, .. }
            if !(url.starts_with("http://") || url.starts_with("https://")) =>
        {
            "the URL must start with http:// or https://"
        }
        McpTransport::Http { headers, .. } | McpTransport::Sse { headers, .. } => {
            for (header, value) in headers {
                validate_header(header, value).map_err(|reason| McpServerError::InvalidHeader {
                    header: header.clone(),
                    reason,
                })?;
            }
            return Ok(());
        }
        _ => return Ok(()),
    };
    Err(McpServerError::InvalidTransport {
        name: name.to_string(),
        reason,
    })
}

/// What a stdio server's record adds to the environment it runs with (the allow-list every
/// command run for a model gets: MCP servers are third-party programs and get none of the
/// app's secrets): each variable of the record's `env`, where a value of exactly `${NAME}`
/// forwards the app's `NAME` from `parent`, or unsets the variable (`None`) when the app has
/// none.
pub fn stdio_server_env(
    record: &BTreeMap<String, String>,
    parent: impl IntoIterator<Item = (OsString, OsString)>,
) -> BTreeMap<OsString, Option<OsString>> {
    let parent: BTreeMap<OsString, OsString> = parent.into_iter().collect();
    let value = |value: &String| {
        let forwarded = value.strip_prefix("${").and_then(|v| v.strip_suffix('}'));
        match forwarded {
            Some(from) => parent.get(OsStr::new(from)).cloned(),
            None => Some(value.into()),
        }
    };
    (record.iter())
        .map(|(name, v)| (OsString::from(name), value(v)))
        .collect()
}

/// The headers with each `${NAME}` inside a value replaced by that variable of `lookup` (the
/// app's environment). `Err(NAME)` names the first variable that is not set: sending the
/// header without it would only fail later, less clearly.
pub fn expand_header_values(
    headers: &BTreeMap<String, String>,
    lookup: impl Fn(&str) -> Option<String>,
) -> std::result::Result<BTreeMap<String, String>, String> {
    let mut out = BTreeMap::new();
    for (name, value) in headers {
        let mut expanded = String::with_capacity(value.len());
        let mut rest = value.as_str();
        while let Some(start) = rest.find("${") {
            let Some(len) = rest[start + 2..].find('}') else {
                break;
            };
            let variable = &rest[start + 2..start + 2 + len];
            expanded.push_str(&rest[..start]);
            expanded.push_str(&lookup(variable).ok_or_else(|| variable.to_string())?);
            rest = &rest[start + 3 + len..];
        }
        expanded.push_str(rest);
        out.insert(name.clone(), expanded);
    }
    Ok(out)
}

const COLUMNS: &str = "id, name, transport, command, args, env, url, headers, enabled, created_at";

/// The row, with `args` and `env` still JSON text (parsed by [`finish`], which can report a
/// `StoreError::Json`; a row mapper can only return `rusqlite::Error`).
struct RawRow {
    id: i64,
    name: String,
    transport: String,
    command: Option<String>,
    args: String,
    env: String,
    url: Option<String>,
    headers: String,
    enabled: bool,
    created_at: i64,
}

fn from_row(row: &Row<'_>) -> rusqlite::Result<RawRow> {
    Ok(RawRow {
        id: row.get(0)?,
        name: row.get(1)?,
        transport: row.get(2)?,
        command: row.get(3)?,
        args: row.get(4)?,
        env: row.get(5)?,
        url: row.get(6)?,
        headers: row.get(7)?,
        enabled: row.get(8)?,
        created_at: row.get(9)?,
    })
}

fn json_error(what: &'static str) -> impl FnOnce(serde_json::Error) -> StoreError {
    move |source| StoreError::Json { what, source }
}

fn finish(raw: RawRow) -> Result<McpServerRecord> {
    // The table's CHECK constraints guarantee the columns each transport needs.
    let transport = match (raw.transport.as_str(), raw.command, raw.url) {
        ("stdio", Some(command), _) => McpTransport::Stdio {
            command,
            args: serde_json::from_str(&raw.args).map_err(json_error("MCP server args"))?,
            env: serde_json::from_str(&raw.env).map_err(json_error("MCP server env"))?,
        },
        ("http", _, Some(url)) => McpTransport::Http {
            url,
            headers: serde_json::from_str(&raw.headers)
                .map_err(json_error("MCP server headers"))?,
        },
        ("sse", _, Some(url)) => McpTransport::Sse {
            url,
            headers: serde_json::from_str(&raw.headers)
                .map_err(json_error("MCP server headers"))?,
        },
        _ => {
            return Err(StoreError::Sqlite(
                rusqlite::Error::FromSqlConversionFailure(
                    2,
                    rusqlite::types::Type::Text,
                    format!("MCP server {} has an unusable transport", raw.id).into(),
                ),
            ));
        }
    };
    Ok(McpServerRecord {
        id: raw.id,
        name: raw.name,
        transport,
        enabled: raw.enabled,
        created_at: raw.created_at,
    })
}

fn is_unique_violation(error: &rusqlite::Error) -> bool {
    matches!(error, rusqlite::Error::SqliteFailure(e, _)
        if e.extended_code == rusqlite::ffi::SQLITE_CONSTRAINT_UNIQUE)
}

impl Store {
    /// Adds an enabled server after validating its name and transport.
    pub fn add_mcp_server(
        &self,
        name: &str,
        transport: McpTransport,
    ) -> Result<McpServerRecord, McpServerError> {
        validate_mcp_server_name(name)?;
        validate_transport(name, &transport)?;
        let (command, args, env, url, headers) = match &transport {
            McpTransport::Stdio { command, args, env } => (
                Some(command.as_str()),
                serde_json::to_string(args).map_err(json_error("MCP server args"))?,
                serde_json::to_string(env).map_err(json_error("MCP server env"))?,
                None,
                "{}".into(),
            ),
            McpTransport::Http { url, headers } | McpTransport::Sse { url, headers } => (
                None,
                "[]".into(),
                "{}".into(),
                Some(url.as_str()),
                serde_json::to_string(headers).map_err(json_error("MCP server headers"))?,
            ),
        };
        let (kind, created_at) = (transport.kind(), now_ms());
        let inserted = self.conn().query_row(
            "INSERT INTO mcp_servers
                 (name, transport, command, args, env, url, headers, enabled, created_at)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, 1, ?8) RETURNING id",
            params![name, kind, command, args, env, url, headers, created_at],
            |row| row.get(0),
        );
        let id = match inserted {
            Ok(id) => id,
            Err(e) if is_unique_violation(&e) => {
                return Err(McpServerError::DuplicateName(name.to_string()));
            }
            Err(e) => return Err(StoreError::from(e).into()),
        };
        Ok(McpServerRecord {
            id,
            name: name.to_string(),
            transport,
            enabled: true,
            created_at,
        })
    }

    pub fn mcp_server(&self, id: i64) -> Result<McpServerRecord> {
        let row = self
            .conn()
            .query_row(
                &format!("SELECT {COLUMNS} FROM mcp_servers WHERE id = ?1"),
                [id],
                from_row,
            )
            .optional()?;
        finish(row.ok_or_else(|| not_found("MCP server", id))?)
    }

    pub fn mcp_server_by_name(&self, name: &str) -> Result<Option<McpServerRecord>> {
        let row = self
            .conn()
            .query_row(
                &format!("SELECT {COLUMNS} FROM mcp_servers WHERE name = ?1"),
                [name],
                from_row,
            )
            .optional()?;
        row.map(finish).transpose()
    }

    /// All servers, enabled or not, oldest first.
    pub fn mcp_servers(&self) -> Result<Vec<McpServerRecord>> {
        let conn = self.conn();
        let mut stmt = conn.prepare(&format!("SELECT {COLUMNS} FROM mcp_servers ORDER BY id"))?;
        let rows = stmt.query_map([], from_row)?;
        rows.map(|row| finish(row?)).collect()
    }

    /// A disabled server stays configured but is not started for agent turns.
    pub fn set_mcp_server_enabled(&self, id: i64, enabled: bool) -> Result<()> {
        self.change_row(
            "MCP server",
            id,
            "UPDATE mcp_servers SET enabled = ?2 WHERE id = ?1",
            params![id, enabled],
        )
    }

    pub fn remove_mcp_server(&self, id: i64) -> Result<()> {
        self.change_row(
            "MCP server",
            id,
            "DELETE FROM mcp_servers WHERE id = ?1",
            [id],
        )
    }
}

#[cfg(test)]
mod tests;
