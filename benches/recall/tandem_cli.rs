//! The real `tandem` binary (this build's, release for `cargo bench`; another build's with
//! `TANDEM_RECALL_BIN=/path/to/tandem`) as whole processes, on a
//! throwaway data directory and sealed from this machine's settings: no provider keys, no
//! `TANDEM_*`, `OLLAMA_HOST` or `XDG_*` variables, the keychain off.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::ollama;

/// What one `tandem context --json` reported.
pub struct Sent {
    /// Files sent whole (`breakdown.included` entries with `"as": "whole"`).
    pub whole: Vec<String>,
    /// Every file Tandem considered: included (whole or otherwise) and listed by path only.
    pub eligible: Vec<String>,
    /// The tokens Tandem had for file content: the window less the reply's reserve, the
    /// system prompt, the prompt, the history, and what the codebase's section took besides
    /// the files' content (file headings and the list of paths not sent).
    pub content_budget: usize,
    pub took: Duration,
}

pub struct Tandem {
    binary: PathBuf,
    data: PathBuf,
    project: String,
}

/// Names the model of a window: `recall-32768` has 32,768 tokens.
fn model(window: u32) -> String {
    format!("recall-{window}")
}

impl Tandem {
    /// Tandem on a new data directory in `scratch`, with `project` added and a provider
    /// whose models' windows are in their names.
    pub fn new(scratch: &Path, project: &Path) -> Tandem {
        let tandem = Tandem {
            binary: std::env::var_os("TANDEM_RECALL_BIN").map_or_else(
                || PathBuf::from(env!("CARGO_BIN_EXE_tandem")),
                PathBuf::from,
            ),
            data: scratch.join("data"),
            project: project.to_str().expect("a UTF-8 project path").to_string(),
        };
        let window = |body: &str| {
            let digits = body.split("recall-").nth(1).unwrap_or_default();
            let digits: String = digits.chars().take_while(char::is_ascii_digit).collect();
            digits.parse().unwrap_or(8192)
        };
        let url = format!("http://127.0.0.1:{}", ollama::serve(window));
        tandem.run(&["project", "add", &tandem.project]);
        let default = model(32_768);
        tandem.run(&[
            "provider",
            "add",
            "--name",
            "recall",
            "--kind",
            "ollama",
            "--base-url",
            &url,
            "--default-model",
            &default,
        ]);
        tandem
    }

    /// `tandem context` for `prompt` with a model of `window` tokens.
    pub fn context(&self, prompt: &str, window: u32) -> Sent {
        let model = model(window);
        let args = [
            "--json",
            "context",
            "--project",
            &self.project,
            "--prompt",
            prompt,
            "--provider",
            "recall",
            "--model",
            &model,
        ];
        let start = Instant::now();
        let out = self.run(&args);
        let took = start.elapsed();
        let json: serde_json::Value = serde_json::from_str(&out).expect("one JSON object");
        let b = &json["breakdown"];
        assert_eq!(b["window"], window, "the window asked for: {b}");
        let included = b["included"]
            .as_array()
            .expect("breakdown.included: this build lists the files it sends");
        let path = |v: &serde_json::Value| v.as_str().expect("a path").to_string();
        let n = |key: &str| b[key].as_u64().expect("a count") as usize;
        let content: usize = included
            .iter()
            .map(|f| f["tokens"].as_u64().unwrap_or(0))
            .sum::<u64>() as usize;
        let besides = n("codebase").saturating_sub(content);
        let room = n("window").saturating_sub(n("reply_reserve") + n("system") + n("prompt"));
        Sent {
            whole: (included.iter())
                .filter(|f| f["as"] == "whole")
                .map(|f| path(&f["path"]))
                .collect(),
            eligible: (included.iter().map(|f| &f["path"]))
                .chain(b["files_listed"].as_array().expect("files_listed"))
                .map(path)
                .collect(),
            content_budget: room.saturating_sub(n("history") + besides),
            took,
        }
    }

    fn run(&self, args: &[&str]) -> String {
        let mut command = Command::new(&self.binary);
        for (name, _) in std::env::vars_os() {
            let sealed = name.to_str().is_some_and(|name| {
                name.ends_with("_API_KEY")
                    || name.starts_with("TANDEM_")
                    || name == "OLLAMA_HOST"
                    || name.starts_with("XDG_")
            });
            if sealed {
                command.env_remove(&name);
            }
        }
        let output = command
            .env(tandem_core::environment::KEYCHAIN_ENV, "off")
            .arg("--data-dir")
            .arg(&self.data)
            .args(args)
            .stdin(Stdio::null())
            .output()
            .expect("tandem starts");
        assert!(
            output.status.success(),
            "tandem {args:?}: {}",
            String::from_utf8_lossy(&output.stderr)
        );
        String::from_utf8_lossy(&output.stdout).into_owned()
    }
}
