//! The `tandem` binary end to end, as a script or another tool would drive it.

#![allow(clippy::unwrap_used)] // tests state their expectations with unwrap

#[path = "../common/mod.rs"]
mod common;
mod settings;
mod versions;
mod workspaces;

use std::path::Path;

use common::{Cli, git, repo_with};
use serde_json::Value;

impl Cli {
    fn fails(&self, args: &[&str]) -> String {
        let output = self.run(args);
        assert!(!output.status.success(), "{args:?} should fail");
        assert!(output.stdout.is_empty() || !args.contains(&"--json"));
        String::from_utf8(output.stderr).unwrap()
    }
}

fn write(path: &Path, text: &str) {
    std::fs::write(path, text).unwrap();
}

#[test]
fn help_lists_the_commands() {
    let output = common::tandem().arg("--help").output().unwrap();
    assert!(output.status.success());
    let text = String::from_utf8(output.stdout).unwrap();
    assert!(
        text.contains("propose") && text.contains("approve"),
        "{text}"
    );
}

impl Cli {
    /// Runs without `--json`, expects success, returns stdout.
    fn text(&self, args: &[&str]) -> String {
        let output = self.run(args);
        assert!(
            output.status.success(),
            "{args:?} failed: {}",
            String::from_utf8_lossy(&output.stderr)
        );
        String::from_utf8(output.stdout).unwrap()
    }

    /// Expects exit code 1 (a value the app refused) and returns stderr.
    fn refused(&self, args: &[&str]) -> String {
        self.exits(1, args)
    }

    /// Expects exit code 2 (a flag's value clap refused) and returns stderr.
    fn misused(&self, args: &[&str]) -> String {
        self.exits(2, args)
    }

    fn exits(&self, code: i32, args: &[&str]) -> String {
        let output = self.run(args);
        assert_eq!(output.status.code(), Some(code), "{args:?}");
        assert!(output.stdout.is_empty(), "{args:?} printed on failure");
        String::from_utf8(output.stderr).unwrap()
    }
}

/// The title `tandem chats` shows for `chat_id`.
fn proposed_title(cli: &Cli, project: &str, chat_id: i64) -> Value {
    let chats = cli.json(&["chats", "--project", project]);
    let chats = chats["chats"].as_array().unwrap();
    chats
        .iter()
        .find(|c| c["id"] == chat_id)
        .map(|c| c["title"].clone())
        .unwrap()
}

#[test]
fn a_reader_that_goes_away_ends_the_command_quietly() {
    let dir = tempfile::tempdir().unwrap();
    let cli = Cli {
        data: dir.path().join("data"),
    };
    // `tandem project list --json | head -0`: the read end is gone before anything is written.
    let (reader, writer) = std::io::pipe().unwrap();
    drop(reader);
    let output = cli
        .command(&["project", "list", "--json"])
        .stdout(writer)
        .stderr(std::process::Stdio::piped())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert_eq!(output.status.code(), Some(141), "{stderr}");
}
