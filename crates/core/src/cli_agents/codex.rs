//! The Codex CLI: `codex exec --json` prints one JSON event per line (`thread.started`,
//! `item.started` / `item.updated` / `item.completed` with a typed `item`, `turn.completed`
//! with usage, `turn.failed`, `error`); the last message also goes to the file named by
//! `--output-last-message`.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use serde_json::Value;

use super::{Access, Action, AgentEvent, CliAgent, DEFAULT_MODEL, PlanItem, RunSpec};
use crate::llm::Usage;

pub struct Codex;

impl CliAgent for Codex {
    fn name(&self) -> &'static str {
        "Codex"
    }

    fn args(&self, spec: &RunSpec) -> Vec<OsString> {
        let mut args: Vec<OsString> = ["exec", "--json", "--skip-git-repo-check"]
            .map(OsString::from)
            .to_vec();
        if let Some(file) = &spec.last_message_file {
            args.push("--output-last-message".into());
            args.push(file.into());
        }
        if spec.model != DEFAULT_MODEL && !spec.model.is_empty() {
            args.push("--model".into());
            args.push((&spec.model).into());
        }
        match spec.access {
            Access::ReadOnly => args.extend(["--sandbox", "read-only"].map(OsString::from)),
            Access::Workspace => {
                args.extend(["--sandbox", "workspace-write"].map(OsString::from));
            }
            Access::Bypass => args.push("--dangerously-bypass-approvals-and-sandbox".into()),
        }
        args.push("--cd".into());
        args.push(spec.workdir.as_os_str().to_owned());
        // The prompt comes on stdin.
        args.push("-".into());
        args
    }

    fn parse(&self, line: &Value) -> Vec<AgentEvent> {
        let text = |v: &Value, key: &str| v.get(key).and_then(Value::as_str).map(str::to_string);
        match line.get("type").and_then(Value::as_str).unwrap_or("") {
            "thread.started" => text(line, "thread_id")
                .map(AgentEvent::Session)
                .into_iter()
                .collect(),
            "turn.completed" => {
                let usage = line.get("usage").unwrap_or(&Value::Null);
                let count = |key: &str| usage.get(key).and_then(Value::as_u64).unwrap_or(0);
                vec![AgentEvent::Usage(Usage {
                    input_tokens: count("input_tokens"),
                    output_tokens: count("output_tokens"),
                })]
            }
            "turn.failed" => {
                let message = line
                    .get("error")
                    .and_then(|e| text(e, "message"))
                    .unwrap_or_else(|| "the turn failed".into());
                vec![AgentEvent::Failed(message)]
            }
            // Top-level errors are what Codex retries (a dropped stream, no network); a run
            // that does not recover ends with `turn.failed` or a failed exit.
            "error" => vec![AgentEvent::Notice(
                text(line, "message").unwrap_or_else(|| "an error without a message".into()),
            )],
            kind @ ("item.started" | "item.updated" | "item.completed") => match line.get("item") {
                Some(item) => parse_item(item, kind == "item.completed"),
                None => Vec::new(),
            },
            _ => Vec::new(),
        }
    }

    fn login_status_args(&self) -> &'static [&'static str] {
        &["login", "status"]
    }

    fn login_args(&self) -> &'static [&'static str] {
        &["login", "--device-auth"]
    }

    fn state_paths(&self, home: &Path) -> Vec<PathBuf> {
        match std::env::var_os("CODEX_HOME").map(PathBuf::from) {
            Some(dir) if dir.is_absolute() => vec![dir],
            _ => vec![home.join(".codex")],
        }
    }

    fn login_hint(&self) -> &'static str {
        "log in with `tandem provider login NAME` (or Log in in Settings), or store an OpenAI \
         API key for it with `tandem provider set-key NAME`"
    }

    fn install_hint(&self) -> &'static str {
        "install it with `npm install -g @openai/codex` (or `brew install codex`), or set the \
         provider's program to its full path"
    }

    fn models(&self, home: Option<&Path>) -> Vec<String> {
        let mut models = vec![DEFAULT_MODEL.to_string()];
        // The model its own configuration names, if any.
        let config = home.map(|h| self.state_paths(h)[0].join("config.toml"));
        if let Some(text) = config.and_then(|c| std::fs::read_to_string(c).ok())
            && let Some(model) = configured_model(&text)
        {
            models.push(model);
        }
        models
    }
}

/// The top-level `model = "…"` of a Codex `config.toml` (before any `[table]`).
fn configured_model(config: &str) -> Option<String> {
    for line in config.lines().map(str::trim) {
        if line.starts_with('[') {
            break;
        }
        if let Some(value) = line
            .strip_prefix("model")
            .map(str::trim_start)
            .and_then(|rest| rest.strip_prefix('='))
        {
            let value = value.trim().trim_matches('"').trim();
            return (!value.is_empty()).then(|| value.to_string());
        }
    }
    None
}

/// One item of a thread: agent messages and reasoning when complete, the plan whenever it
/// changes, actions when they start and when they end.
fn parse_item(item: &Value, completed: bool) -> Vec<AgentEvent> {
    let str_of = |key: &str| item.get(key).and_then(Value::as_str).unwrap_or("");
    let id = str_of("id").to_string();
    let status = str_of("status");
    let failed = matches!(status, "failed" | "declined");
    let running = !completed && !failed;
    let action = |tool: &str, arguments: Value, output: Option<String>| {
        AgentEvent::Action(Action {
            id: id.clone(),
            tool: tool.to_string(),
            arguments,
            output,
            exit_code: item.get("exit_code").and_then(Value::as_i64),
            running,
            failed,
        })
    };
    match str_of("type") {
        "agent_message" if completed => vec![AgentEvent::Text(str_of("text").to_string())],
        "reasoning" if completed => vec![AgentEvent::Reasoning(str_of("text").to_string())],
        "todo_list" => {
            let items = item.get("items").and_then(Value::as_array);
            let plan = items
                .into_iter()
                .flatten()
                .map(|i| PlanItem {
                    text: i
                        .get("text")
                        .and_then(Value::as_str)
                        .unwrap_or("")
                        .to_string(),
                    done: i.get("completed").and_then(Value::as_bool).unwrap_or(false),
                })
                .collect();
            vec![AgentEvent::Plan(plan)]
        }
        "command_execution" => {
            let output = (!running).then(|| str_of("aggregated_output").to_string());
            let failed_run = item
                .get("exit_code")
                .and_then(Value::as_i64)
                .is_some_and(|c| c != 0);
            let mut event = action(
                "run_shell",
                serde_json::json!({ "command": str_of("command") }),
                output,
            );
            if let AgentEvent::Action(a) = &mut event {
                a.failed |= failed_run;
            }
            vec![event]
        }
        "file_change" => {
            let changes = item.get("changes").cloned().unwrap_or(Value::Null);
            vec![action(
                "file_change",
                serde_json::json!({ "changes": changes }),
                (!running).then(|| status.to_string()),
            )]
        }
        "mcp_tool_call" => {
            let tool = format!("mcp:{}/{}", str_of("server"), str_of("tool"));
            let output = (!running).then(|| {
                item.get("error")
                    .and_then(|e| e.get("message"))
                    .or_else(|| item.get("result"))
                    .map(|v| match v.as_str() {
                        Some(s) => s.to_string(),
                        None => v.to_string(),
                    })
                    .unwrap_or_default()
            });
            let arguments = item.get("arguments").cloned().unwrap_or(Value::Null);
            vec![action(&tool, arguments, output)]
        }
        "web_search" => vec![action(
            "web_search",
            serde_json::json!({ "query": str_of("query") }),
            (!running).then(String::new),
        )],
        // A problem it reports and works around ("Falling back from WebSockets…"), not an
        // action it took.
        "error" if !running => vec![AgentEvent::Notice(str_of("message").to_string())],
        _ => Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(line: &str) -> Vec<AgentEvent> {
        Codex.parse(&serde_json::from_str(line).unwrap())
    }

    #[test]
    fn events_become_tandems() {
        assert_eq!(
            parse(r#"{"type":"thread.started","thread_id":"t-1"}"#),
            [AgentEvent::Session("t-1".into())]
        );
        assert_eq!(
            parse(
                r#"{"type":"item.completed","item":{"id":"item_0","type":"reasoning","text":"**Looking**"}}"#
            ),
            [AgentEvent::Reasoning("**Looking**".into())]
        );
        let started = parse(
            r#"{"type":"item.started","item":{"id":"item_1","type":"command_execution","command":"bash -lc ls","aggregated_output":"","exit_code":null,"status":"in_progress"}}"#,
        );
        let [AgentEvent::Action(a)] = started.as_slice() else {
            panic!("{started:?}")
        };
        assert!(a.running && a.tool == "run_shell" && a.output.is_none());
        let done = parse(
            r#"{"type":"item.completed","item":{"id":"item_1","type":"command_execution","command":"bash -lc 'cargo test'","aggregated_output":"1 failed\n","exit_code":101,"status":"failed"}}"#,
        );
        let [AgentEvent::Action(a)] = done.as_slice() else {
            panic!("{done:?}")
        };
        assert!(!a.running && a.failed);
        assert_eq!(a.exit_code, Some(101));
        assert_eq!(a.arguments["command"], "bash -lc 'cargo test'");
        assert_eq!(a.output.as_deref(), Some("1 failed\n"));
        assert_eq!(
            parse(
                r#"{"type":"item.updated","item":{"id":"item_2","type":"todo_list","items":[{"text":"a","completed":true},{"text":"b","completed":false}]}}"#
            ),
            [AgentEvent::Plan(vec![
                PlanItem {
                    text: "a".into(),
                    done: true
                },
                PlanItem {
                    text: "b".into(),
                    done: false
                }
            ])]
        );
        assert_eq!(
            parse(
                r#"{"type":"turn.completed","usage":{"input_tokens":1200,"cached_input_tokens":200,"output_tokens":345}}"#
            ),
            [AgentEvent::Usage(Usage {
                input_tokens: 1200,
                output_tokens: 345
            })]
        );
        assert_eq!(
            parse(r#"{"type":"turn.failed","error":{"message":"quota exceeded"}}"#),
            [AgentEvent::Failed("quota exceeded".into())]
        );
        assert_eq!(
            parse(
                r#"{"type":"item.completed","item":{"id":"item_0","type":"error","message":"Falling back to HTTPS"}}"#
            ),
            [AgentEvent::Notice("Falling back to HTTPS".into())]
        );
        // What a real Codex without network prints while it retries: not the end of the run.
        assert_eq!(
            parse(
                r#"{"type":"error","message":"Reconnecting... 2/5 (stream disconnected before completion)"}"#
            ),
            [AgentEvent::Notice(
                "Reconnecting... 2/5 (stream disconnected before completion)".into()
            )]
        );
        // Messages count once, when complete; unknown lines and items are nothing.
        assert!(
            parse(r#"{"type":"item.started","item":{"id":"i","type":"agent_message","text":""}}"#)
                .is_empty()
        );
        assert!(parse(r#"{"type":"turn.started"}"#).is_empty());
        assert!(parse(r#"{"type":"item.completed","item":{"type":"hologram"}}"#).is_empty());
    }

    #[test]
    fn trust_becomes_its_sandbox_flag_and_the_prompt_comes_on_stdin() {
        let spec = |access, model: &str| RunSpec {
            view: None,
            program: "codex".into(),
            workdir: PathBuf::from("/w"),
            model: model.into(),
            access,
            last_message_file: Some(PathBuf::from("/t/last.txt")),
        };
        let args = |spec: &RunSpec| -> Vec<String> {
            Codex
                .args(spec)
                .into_iter()
                .map(|a| a.to_string_lossy().into_owned())
                .collect()
        };
        let read_only = args(&spec(Access::ReadOnly, DEFAULT_MODEL)).join(" ");
        assert_eq!(
            read_only,
            "exec --json --skip-git-repo-check --output-last-message /t/last.txt --sandbox \
             read-only --cd /w -"
        );
        let write = args(&spec(Access::Workspace, "gpt-5-codex")).join(" ");
        assert!(write.contains("--model gpt-5-codex --sandbox workspace-write"));
        let bypass = args(&spec(Access::Bypass, DEFAULT_MODEL));
        assert!(bypass.contains(&"--dangerously-bypass-approvals-and-sandbox".to_string()));
        assert!(!bypass.contains(&"--sandbox".to_string()));
    }

    #[test]
    fn the_configured_model_is_read_from_config_toml() {
        assert_eq!(
            configured_model("# c\nmodel = \"gpt-5-codex\"\n[profiles.x]\nmodel = \"o3\"\n"),
            Some("gpt-5-codex".into())
        );
        assert_eq!(configured_model("[x]\nmodel = \"o3\"\n"), None);
        assert_eq!(configured_model("model_provider = \"y\"\n"), None);
    }
}
