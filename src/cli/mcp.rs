//! `tandem mcp add|list|enable|disable|remove`: the MCP servers whose tools agent mode offers.
//! Header values are secrets: they are only ever printed masked.

use std::collections::BTreeMap;

use anyhow::{Result, bail};
use clap::{Subcommand, ValueEnum};
use serde_json::json;
use tandem_core::app::{McpServerRecord, McpTransport, parse_mcp_header};

use super::ctx::Ctx;

#[derive(Clone, Copy, ValueEnum)]
pub enum Transport {
    /// A command speaking MCP on stdin/stdout.
    Stdio,
    /// Streamable HTTP (the current MCP transport).
    Http,
    /// The legacy HTTP+SSE transport (an event stream, often at /sse).
    Sse,
}

#[derive(Subcommand)]
pub enum McpCommand {
    /// Add a server: `--command` for stdio, `--url` for HTTP (or `--transport sse`).
    Add {
        /// Letters, digits, '-' and '_' (its tools are named NAME/tool).
        name: String,
        /// Default: stdio with --command, http with --url.
        #[arg(long, value_enum)]
        transport: Option<Transport>,
        /// The program of a stdio server.
        #[arg(long)]
        command: Option<String>,
        /// One argument of the command (repeat).
        #[arg(long = "arg", value_name = "ARG", allow_hyphen_values = true)]
        args: Vec<String>,
        /// NAME=value for a stdio server's environment (repeat); `${NAME}` passes the app's.
        #[arg(long = "env", value_name = "NAME=VALUE")]
        env: Vec<String>,
        /// The URL of an HTTP or SSE server.
        #[arg(long)]
        url: Option<String>,
        /// "Name: value" sent with every request to an HTTP or SSE server (repeat), such as
        /// "Authorization: Bearer TOKEN". Stored with the server; shown masked. Write
        /// "Bearer ${TOKEN_VAR}" to keep the token out of the database: it is read from the
        /// environment at each connection.
        #[arg(long = "header", value_name = "NAME: VALUE")]
        headers: Vec<String>,
    },
    /// List the servers (header values masked).
    List,
    /// Offer a server's tools again.
    Enable { name: String },
    /// Keep a server configured but stop offering (and running) it.
    Disable { name: String },
    /// Remove a server (and stop it).
    Remove { name: String },
}

fn describe(server: &McpServerRecord) -> String {
    let state = if server.enabled { "" } else { " (disabled)" };
    let what = match &server.transport {
        McpTransport::Stdio { command, args, env } => {
            let env: String = env.keys().map(|k| format!(" {k}=…")).collect();
            format!("stdio {command} {}{env}", args.join(" "))
        }
        McpTransport::Http { url, .. } => format!("http  {url}"),
        McpTransport::Sse { url, .. } => format!("sse   {url}"),
    };
    let mut text = format!("{:<20} {}{state}\n", server.name, what.trim_end());
    for header in server.transport.masked_headers() {
        text.push_str(&format!("{:<20}   {header}\n", ""));
    }
    text
}

fn find(ctx: &Ctx, name: &str) -> Result<McpServerRecord> {
    let servers = ctx.app.mcp_servers()?;
    match servers.into_iter().find(|s| s.name == name) {
        Some(server) => Ok(server),
        None => bail!("no MCP server named {name:?}; `tandem mcp list` shows them"),
    }
}

pub fn run(ctx: &Ctx, command: McpCommand) -> Result<()> {
    let app = &ctx.app;
    match command {
        McpCommand::Add {
            name,
            transport,
            command,
            args,
            env,
            url,
            headers,
        } => {
            let transport = match (transport, command, url) {
                (Some(Transport::Stdio) | None, Some(command), None) => {
                    if !headers.is_empty() {
                        bail!("--header is for HTTP and SSE servers; a stdio server takes --env");
                    }
                    let mut vars = BTreeMap::new();
                    for pair in env {
                        let Some((key, value)) = pair.split_once('=') else {
                            bail!("--env takes NAME=value, not {pair:?}");
                        };
                        vars.insert(key.trim().to_string(), value.to_string());
                    }
                    McpTransport::Stdio {
                        command,
                        args,
                        env: vars,
                    }
                }
                (kind @ (Some(Transport::Http | Transport::Sse) | None), None, Some(url)) => {
                    if !args.is_empty() || !env.is_empty() {
                        bail!("--arg and --env are for stdio servers");
                    }
                    let mut parsed = BTreeMap::new();
                    for line in &headers {
                        let (header, value) = parse_mcp_header(line)?;
                        parsed.insert(header, value);
                    }
                    match kind {
                        Some(Transport::Sse) => McpTransport::Sse {
                            url,
                            headers: parsed,
                        },
                        _ => McpTransport::Http {
                            url,
                            headers: parsed,
                        },
                    }
                }
                _ => bail!(
                    "give --command (a stdio server) or --url (an HTTP server; \
                     --transport sse for the legacy SSE transport), not both"
                ),
            };
            app.add_mcp_server(&name, transport)?;
            let added = find(ctx, &name)?;
            ctx.out(
                json!({"mcp_server": added}),
                format!("added MCP server\n{}", describe(&added)),
            );
        }
        McpCommand::List => {
            let servers = app.mcp_servers()?;
            let text: String = servers.iter().map(describe).collect();
            let text = match text.is_empty() {
                true => "no MCP servers (add one with `tandem mcp add NAME --command CMD` or \
                         `--url URL`)\n"
                    .to_string(),
                false => text,
            };
            ctx.out(json!({"mcp_servers": servers}), text);
        }
        McpCommand::Enable { name } => set_enabled(ctx, &name, true)?,
        McpCommand::Disable { name } => set_enabled(ctx, &name, false)?,
        McpCommand::Remove { name } => {
            let server = find(ctx, &name)?;
            app.remove_mcp_server(server.id)?;
            ctx.out(
                json!({"removed": name}),
                format!("removed MCP server {name}\n"),
            );
        }
    }
    Ok(())
}

fn set_enabled(ctx: &Ctx, name: &str, enabled: bool) -> Result<()> {
    let server = find(ctx, name)?;
    ctx.app.set_mcp_server_enabled(server.id, enabled)?;
    let word = if enabled { "enabled" } else { "disabled" };
    ctx.out(
        json!({"mcp_server": name, "enabled": enabled}),
        format!("{word} MCP server {name}\n"),
    );
    Ok(())
}
