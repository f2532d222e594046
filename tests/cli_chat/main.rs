//! `tandem chat` and friends from the command line, against the fake provider server.

#![allow(clippy::unwrap_used)] // tests state their expectations with unwrap

mod agent;
mod cli_agents;
#[path = "../common/mod.rs"]
mod common;
mod context;
mod editor;
#[path = "../fake_provider/mod.rs"]
mod fake_provider;
mod journal;
mod prompt;
mod seal;
mod turns;

use std::process::Stdio;
use std::time::Duration;

use fake_provider::{FakeProvider, ollama_stream};
use serde_json::Value;
use tokio::io::AsyncReadExt;
use tokio::process::Command;

struct Cli {
    data: std::path::PathBuf,
}

impl Cli {
    fn command(&self, args: &[&str]) -> Command {
        let mut command = Command::from(common::tandem());
        command
            .arg("--data-dir")
            .arg(&self.data)
            .args(args)
            .stdin(Stdio::null());
        command
    }

    async fn json(&self, args: &[&str]) -> Value {
        let mut all = vec!["--json"];
        all.extend_from_slice(args);
        let output = self.command(&all).output().await.unwrap();
        assert!(
            output.status.success(),
            "{args:?}: {}",
            String::from_utf8_lossy(&output.stderr)
        );
        let stdout = String::from_utf8(output.stdout).unwrap();
        assert_eq!(stdout.trim().lines().count(), 1, "{stdout}");
        serde_json::from_str(&stdout).unwrap()
    }

    /// Runs `args` with `input` on its standard input (a key, as a person pipes it).
    async fn with_stdin(&self, args: &[&str], input: &str) -> std::process::Output {
        let mut child = self
            .command(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        {
            use tokio::io::AsyncWriteExt;
            let mut stdin = child.stdin.take().unwrap();
            stdin.write_all(input.as_bytes()).await.unwrap();
        }
        child.wait_with_output().await.unwrap()
    }
}

async fn setup() -> (tempfile::TempDir, std::path::PathBuf, Cli, FakeProvider) {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("project");
    common::repo_with(&root, &[("src/lib.rs", "pub fn one() -> u32 { 1 }\n")]);
    let cli = Cli {
        data: dir.path().join("data"),
    };
    let server = FakeProvider::start().await;
    register(&cli, &root, &server).await;
    (dir, root, cli, server)
}

/// Adds the project at `root` and the fake provider `server` to `cli`'s data directory.
async fn register(cli: &Cli, root: &std::path::Path, server: &FakeProvider) {
    cli.json(&["project", "add", root.to_str().unwrap()]).await;
    let provider = common::fake_provider_args(&server.url());
    let provider: Vec<&str> = provider.iter().map(String::as_str).collect();
    cli.json(&provider).await;
}

/// The file `name` as the chats' workspaces hold it (the layer of an overlay keeps what
/// commands wrote), found below the data directory.
fn in_workspace(data: &std::path::Path, name: &str) -> std::path::PathBuf {
    let mut dirs = vec![data.join("workspaces")];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).unwrap().flatten() {
            let path = entry.path();
            if path.file_name().is_some_and(|n| n == name) && path.is_file() {
                return path;
            }
            if path.is_dir() {
                dirs.push(path);
            }
        }
    }
    panic!("no {name} in any workspace below {}", data.display());
}

/// A pseudo-terminal: (the end the test types into, the end the CLI reads as its terminal).
#[cfg(unix)]
#[allow(unsafe_code)]
fn pty() -> (std::fs::File, std::os::fd::OwnedFd) {
    use std::os::fd::FromRawFd;
    let (mut master, mut slave) = (-1, -1);
    // SAFETY: openpty(3) writes the two descriptors it opens into the two ints; the name,
    // termios and window-size arguments may be null (defaults, no name wanted).
    let made = unsafe {
        libc::openpty(
            &mut master,
            &mut slave,
            std::ptr::null_mut(),
            std::ptr::null(),
            std::ptr::null(),
        )
    };
    assert_eq!(made, 0, "openpty: {}", std::io::Error::last_os_error());
    // SAFETY: both descriptors were just opened by openpty and are owned by nothing else.
    unsafe {
        (
            std::fs::File::from_raw_fd(master),
            std::os::fd::OwnedFd::from_raw_fd(slave),
        )
    }
}

/// Reads `child`'s output until `text` shows (within `wait`), then interrupts it as Ctrl+C
/// does and waits for it: it must exit 0, a cancelled chat is not a failure. Its output stays
/// open until it has exited.
async fn interrupt_once_printed(child: &mut tokio::process::Child, text: &str, wait: Duration) {
    use tokio::io::AsyncReadExt;
    let mut stdout = child.stdout.take().unwrap();
    let mut seen = Vec::new();
    tokio::time::timeout(wait, async {
        let mut buf = [0u8; 256];
        while !String::from_utf8_lossy(&seen).contains(text) {
            let n = stdout.read(&mut buf).await.unwrap();
            assert!(n > 0, "stdout closed early");
            seen.extend_from_slice(&buf[..n]);
        }
    })
    .await
    .unwrap();
    let pid = child.id().unwrap().to_string();
    let status = tokio::process::Command::new("kill")
        .args(["-INT", &pid])
        .status()
        .await
        .unwrap();
    assert!(status.success());
    let exit = tokio::time::timeout(Duration::from_secs(20), child.wait())
        .await
        .unwrap()
        .unwrap();
    assert!(exit.success(), "a cancelled chat is not a failure");
}
