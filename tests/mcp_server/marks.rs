//! Finding the processes of one test's MCP server, wherever they run: the test sets `MARK` in
//! the server's environment, every process it starts inherits it, and `/proc` shows it from
//! outside the server's container too (whose process numbers mean nothing out here).
#![allow(dead_code, clippy::unwrap_used)]

use std::time::{Duration, Instant};

/// A mark no other test's server carries.
pub fn mark() -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos();
    format!("mcp-{}-{nanos}", std::process::id())
}

/// The command lines of the live processes (zombies are dead) whose environment holds
/// `MARK=<mark>`.
pub fn marked(mark: &str) -> Vec<String> {
    let wanted = format!("MARK={mark}");
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        if !entry
            .file_name()
            .to_string_lossy()
            .bytes()
            .all(|b| b.is_ascii_digit())
        {
            continue;
        }
        let stat = std::fs::read_to_string(entry.path().join("stat")).unwrap_or_default();
        let dead = stat
            .rsplit_once(") ")
            .is_some_and(|(_, tail)| tail.starts_with(['Z', 'X']));
        if let Ok(environ) = std::fs::read(entry.path().join("environ"))
            && !dead
            && environ.split(|b| *b == 0).any(|v| v == wanted.as_bytes())
        {
            let cmdline = std::fs::read(entry.path().join("cmdline")).unwrap_or_default();
            found.push(String::from_utf8_lossy(&cmdline).replace('\0', " "));
        }
    }
    found
}

/// Waits up to `limit` for the marked processes to be gone (a killed process takes a moment
/// to be reaped); those still there.
pub fn survivors(mark: &str, limit: Duration) -> Vec<String> {
    let deadline = Instant::now() + limit;
    loop {
        let left = marked(mark);
        if left.is_empty() || Instant::now() > deadline {
            return left;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}
