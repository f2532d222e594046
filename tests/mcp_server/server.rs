//! A small MCP server over stdio for the integration tests in `tests/mcp/main.rs`.
//!
//! Built as the example `mcp_test_server` (an example, not a `[[bin]]`, so it never ships with
//! the app). Every tool exists to exercise one behaviour of `tandem_core::agent::mcp`: plain text
//! (`echo`, `add`), tool-level errors (`fail`), cancellation and timeouts (`slow`), the output
//! cap (`big`), non-text content (`picture`), the child's environment (`env`), what it
//! starts itself (`spawn_sleeper`, for the process-group kill) and what it can reach of the
//! files and network around it (`write_file` in its working directory, `read_file` anywhere,
//! `connect` to a local port: the attacks the agent's container must stop).
//!
//! Two variables script its start: `MCP_TEST_START_LOG` names a file it appends a line to each
//! time it starts (so a test counts starts); while the file `MCP_TEST_REFUSE_IF` names exists,
//! it refuses to start (a server that stays down).

use std::time::Duration;

use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::{CallToolResult, ContentBlock};
use rmcp::transport::stdio;
use rmcp::{ErrorData, ServiceExt, schemars, tool, tool_router};
use serde::Deserialize;

#[derive(Debug, Deserialize, schemars::JsonSchema)]
struct EchoArgs {
    /// The text to send back.
    text: String,
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
struct AddArgs {
    a: i64,
    b: i64,
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
struct SlowArgs {
    /// How long to sleep before answering, in milliseconds.
    ms: u64,
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
struct BigArgs {
    /// How many characters to return.
    n: usize,
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
struct EnvArgs {
    /// The environment variable to read.
    name: String,
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
struct WriteArgs {
    /// Where to write, relative to the server's working directory (or absolute).
    path: String,
    text: String,
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
struct ReadArgs {
    /// The file to read, relative to the server's working directory (or absolute).
    path: String,
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
struct ConnectArgs {
    /// A TCP port on 127.0.0.1.
    port: u16,
}

#[derive(Debug, Clone, Default)]
struct TestServer;

#[tool_router(server_handler)]
impl TestServer {
    #[tool(description = "Returns its text unchanged")]
    fn echo(&self, Parameters(EchoArgs { text }): Parameters<EchoArgs>) -> String {
        text
    }

    #[tool(description = "Adds two integers")]
    fn add(&self, Parameters(AddArgs { a, b }): Parameters<AddArgs>) -> String {
        a.saturating_add(b).to_string()
    }

    #[tool(description = "Always fails with a tool-level error")]
    fn fail(&self) -> CallToolResult {
        CallToolResult::error(vec![ContentBlock::text("this tool always fails")])
    }

    #[tool(description = "Fails with a JSON-RPC error (a protocol-level failure)")]
    fn reject(&self) -> Result<String, ErrorData> {
        Err(ErrorData::internal_error("the server broke", None))
    }

    #[tool(description = "Exits the server process at once, as a crash would")]
    fn crash(&self) -> String {
        eprintln!("mcp_test_server: crashing on purpose");
        std::process::exit(7)
    }

    #[tool(description = "Sleeps for ms milliseconds, then answers")]
    async fn slow(&self, Parameters(SlowArgs { ms }): Parameters<SlowArgs>) -> String {
        tokio::time::sleep(Duration::from_millis(ms)).await;
        format!("slept {ms} ms")
    }

    #[tool(description = "Returns n characters")]
    fn big(&self, Parameters(BigArgs { n }): Parameters<BigArgs>) -> String {
        "x".repeat(n)
    }

    #[tool(description = "Returns a caption and a tiny PNG")]
    fn picture(&self) -> CallToolResult {
        CallToolResult::success(vec![
            ContentBlock::text("a picture:"),
            ContentBlock::image("iVBORw0KGgo=", "image/png"),
        ])
    }

    #[tool(description = "Starts `sleep 300` as a child of the server; returns its pid")]
    fn spawn_sleeper(&self) -> Result<String, ErrorData> {
        let child = std::process::Command::new("sleep")
            .arg("300")
            .spawn()
            .map_err(|e| ErrorData::internal_error(e.to_string(), None))?;
        let pid = child.id();
        // Not waited for: it must outlive this call, as a real server's helper would.
        std::mem::forget(child);
        Ok(pid.to_string())
    }

    #[tool(description = "Writes text to a file; returns the absolute path it wrote")]
    fn write_file(
        &self,
        Parameters(WriteArgs { path, text }): Parameters<WriteArgs>,
    ) -> CallToolResult {
        let written = std::env::current_dir()
            .map(|cwd| cwd.join(&path))
            .and_then(|at| std::fs::write(&at, text).map(|()| at));
        match written {
            Ok(at) => CallToolResult::success(vec![ContentBlock::text(at.display().to_string())]),
            Err(e) => CallToolResult::error(vec![ContentBlock::text(format!("{path}: {e}"))]),
        }
    }

    #[tool(description = "Returns the text of a file")]
    fn read_file(&self, Parameters(ReadArgs { path }): Parameters<ReadArgs>) -> CallToolResult {
        match std::fs::read_to_string(&path) {
            Ok(text) => CallToolResult::success(vec![ContentBlock::text(text)]),
            Err(e) => CallToolResult::error(vec![ContentBlock::text(format!("{path}: {e}"))]),
        }
    }

    #[tool(description = "Connects to a TCP port on 127.0.0.1; says whether it could")]
    fn connect(&self, Parameters(ConnectArgs { port }): Parameters<ConnectArgs>) -> String {
        match std::net::TcpStream::connect(("127.0.0.1", port)) {
            Ok(_) => "connected".into(),
            Err(e) => format!("refused: {e}"),
        }
    }

    #[tool(description = "Reads an environment variable of the server process")]
    fn env(&self, Parameters(EnvArgs { name }): Parameters<EnvArgs>) -> String {
        std::env::var(&name).unwrap_or_else(|_| "<unset>".to_string())
    }
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    // Something on stderr, so the client's capture of it is exercised too.
    eprintln!("mcp_test_server: starting");
    if let Some(gate) = std::env::var_os("MCP_TEST_REFUSE_IF")
        && std::path::Path::new(&gate).exists()
    {
        eprintln!("mcp_test_server: refusing to start");
        std::process::exit(3);
    }
    if let Some(log) = std::env::var_os("MCP_TEST_START_LOG") {
        use std::io::Write;
        let mut file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(log)?;
        writeln!(file, "started {}", std::process::id())?;
    }
    let service = TestServer.serve(stdio()).await?;
    service.waiting().await?;
    // As a server that saves its state when it is told to stop.
    if let Some(path) = std::env::var_os("MCP_TEST_EXIT_WRITE") {
        std::fs::write(path, "written as it stopped\n")?;
    }
    Ok(())
}
