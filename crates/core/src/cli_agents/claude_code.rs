//! Claude Code: `claude -p --output-format stream-json --verbose` prints one JSON object per
//! line: `system` (init, with the session id), `assistant` messages (text, thinking and
//! `tool_use` blocks), `user` messages carrying `tool_result`s, and a last `result` with the
//! final text and usage.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use serde_json::Value;

use super::{Access, Action, AgentEvent, CliAgent, DEFAULT_MODEL, PlanItem, RunSpec};
use crate::llm::Usage;

pub struct ClaudeCode;

impl CliAgent for ClaudeCode {
    fn name(&self) -> &'static str {
        "Claude Code"
    }

    fn args(&self, spec: &RunSpec) -> Vec<OsString> {
        let mut args: Vec<OsString> = ["-p", "--output-format", "stream-json", "--verbose"]
            .map(OsString::from)
            .to_vec();
        if spec.model != DEFAULT_MODEL && !spec.model.is_empty() {
            args.push("--model".into());
            args.push((&spec.model).into());
        }
        match spec.access {
            // Plan mode: it reads and answers, it edits nothing.
            Access::ReadOnly => args.extend(["--permission-mode", "plan"].map(OsString::from)),
            // Edits in its directory are accepted; commands are not pre-approved (refused).
            Access::Workspace => {
                args.extend(["--permission-mode", "acceptEdits"].map(OsString::from));
            }
            Access::Bypass => args.push("--dangerously-skip-permissions".into()),
        }
        args
    }

    fn parse(&self, line: &Value) -> Vec<AgentEvent> {
        let str_of = |v: &Value, key: &str| v.get(key).and_then(Value::as_str).map(str::to_string);
        match line.get("type").and_then(Value::as_str).unwrap_or("") {
            "system" => str_of(line, "session_id")
                .filter(|_| str_of(line, "subtype").as_deref() == Some("init"))
                .map(AgentEvent::Session)
                .into_iter()
                .collect(),
            "assistant" => blocks(line).filter_map(assistant_block).collect(),
            "user" => blocks(line).filter_map(tool_result).collect(),
            "result" => {
                let mut events = Vec::new();
                if let Some(usage) = line.get("usage") {
                    let count = |key: &str| usage.get(key).and_then(Value::as_u64).unwrap_or(0);
                    events.push(AgentEvent::Usage(Usage {
                        input_tokens: count("input_tokens")
                            + count("cache_read_input_tokens")
                            + count("cache_creation_input_tokens"),
                        output_tokens: count("output_tokens"),
                    }));
                }
                let subtype = str_of(line, "subtype").unwrap_or_default();
                let is_error = line.get("is_error").and_then(Value::as_bool) == Some(true)
                    || subtype.starts_with("error");
                let result = str_of(line, "result");
                events.push(match (is_error, result) {
                    (false, Some(text)) => AgentEvent::Result(text),
                    (false, None) => AgentEvent::Result(String::new()),
                    (true, Some(text)) if !text.is_empty() => AgentEvent::Failed(text),
                    (true, _) => AgentEvent::Failed(format!("the run ended with {subtype}")),
                });
                events
            }
            _ => Vec::new(),
        }
    }

    fn login_status_args(&self) -> &'static [&'static str] {
        &[]
    }

    fn login_args(&self) -> &'static [&'static str] {
        &[]
    }

    fn state_paths(&self, home: &Path) -> Vec<PathBuf> {
        match std::env::var_os("CLAUDE_CONFIG_DIR").map(PathBuf::from) {
            Some(dir) if dir.is_absolute() => vec![dir],
            _ => vec![home.join(".claude"), home.join(".claude.json")],
        }
    }

    fn login_hint(&self) -> &'static str {
        "log in by running `claude` once in a terminal and typing /login, or store an \
         Anthropic API key for it with `tandem provider set-key NAME`"
    }

    fn install_hint(&self) -> &'static str {
        "install it with `npm install -g @anthropic-ai/claude-code`, run `claude` once in a \
         terminal to log in, or set the provider's program to its full path"
    }

    fn models(&self, _home: Option<&Path>) -> Vec<String> {
        // Its own aliases for the current models.
        [DEFAULT_MODEL, "sonnet", "opus", "haiku"]
            .map(str::to_string)
            .to_vec()
    }
}

/// The content blocks of a line's `message`.
fn blocks(line: &Value) -> impl Iterator<Item = &Value> {
    line.get("message")
        .and_then(|m| m.get("content"))
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
}

fn assistant_block(block: &Value) -> Option<AgentEvent> {
    let str_of = |key: &str| block.get(key).and_then(Value::as_str).unwrap_or("");
    match str_of("type") {
        "text" => Some(AgentEvent::Text(str_of("text").to_string())),
        "thinking" => Some(AgentEvent::Reasoning(str_of("thinking").to_string())),
        "tool_use" => {
            let input = block.get("input").cloned().unwrap_or(Value::Null);
            Some(match str_of("name") {
                "TodoWrite" => AgentEvent::Plan(todos(&input)),
                "Bash" => action(
                    str_of("id"),
                    "run_shell",
                    serde_json::json!({ "command": input.get("command").cloned().unwrap_or_default() }),
                ),
                name => action(str_of("id"), name, input),
            })
        }
        _ => None,
    }
}

fn action(id: &str, tool: &str, arguments: Value) -> AgentEvent {
    AgentEvent::Action(Action {
        id: id.to_string(),
        tool: tool.to_string(),
        arguments,
        output: None,
        exit_code: None,
        running: true,
        failed: false,
    })
}

/// A tool's result: completes the action of the same id (its tool and arguments are the
/// started one's).
fn tool_result(block: &Value) -> Option<AgentEvent> {
    if block.get("type").and_then(Value::as_str) != Some("tool_result") {
        return None;
    }
    let output = match block.get("content") {
        Some(Value::String(text)) => text.clone(),
        Some(Value::Array(parts)) => parts
            .iter()
            .filter_map(|p| p.get("text").and_then(Value::as_str))
            .collect::<Vec<_>>()
            .join("\n"),
        _ => String::new(),
    };
    Some(AgentEvent::Action(Action {
        id: block
            .get("tool_use_id")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string(),
        tool: String::new(),
        arguments: Value::Null,
        output: Some(output),
        exit_code: None,
        running: false,
        failed: block.get("is_error").and_then(Value::as_bool) == Some(true),
    }))
}

fn todos(input: &Value) -> Vec<PlanItem> {
    let items = input.get("todos").and_then(Value::as_array);
    items
        .into_iter()
        .flatten()
        .map(|t| PlanItem {
            text: t
                .get("content")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string(),
            done: t.get("status").and_then(Value::as_str) == Some("completed"),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(line: &str) -> Vec<AgentEvent> {
        ClaudeCode.parse(&serde_json::from_str(line).unwrap())
    }

    #[test]
    fn stream_json_becomes_tandems_events() {
        assert_eq!(
            parse(r#"{"type":"system","subtype":"init","session_id":"s-1","model":"x"}"#),
            [AgentEvent::Session("s-1".into())]
        );
        let reply = parse(
            r#"{"type":"assistant","message":{"content":[{"type":"thinking","thinking":"hm"},{"type":"text","text":"Looking."},{"type":"tool_use","id":"tu_1","name":"Bash","input":{"command":"ls","description":"list"}}]}}"#,
        );
        assert_eq!(reply.len(), 3);
        assert_eq!(reply[0], AgentEvent::Reasoning("hm".into()));
        assert_eq!(reply[1], AgentEvent::Text("Looking.".into()));
        let AgentEvent::Action(call) = &reply[2] else {
            panic!("{reply:?}")
        };
        assert_eq!(
            (call.id.as_str(), call.tool.as_str()),
            ("tu_1", "run_shell")
        );
        assert_eq!(call.arguments, serde_json::json!({"command": "ls"}));
        let result = parse(
            r#"{"type":"user","message":{"content":[{"type":"tool_result","tool_use_id":"tu_1","content":[{"type":"text","text":"a.rs"}],"is_error":true}]}}"#,
        );
        let [AgentEvent::Action(done)] = result.as_slice() else {
            panic!("{result:?}")
        };
        assert!(!done.running && done.failed && done.id == "tu_1");
        assert_eq!(done.output.as_deref(), Some("a.rs"));
        let plan = parse(
            r#"{"type":"assistant","message":{"content":[{"type":"tool_use","id":"t2","name":"TodoWrite","input":{"todos":[{"content":"Fix","status":"completed"},{"content":"Test","status":"pending"}]}}]}}"#,
        );
        assert!(
            matches!(&plan[..], [AgentEvent::Plan(items)] if items.len() == 2 && items[0].done && !items[1].done)
        );
        let end = parse(
            r#"{"type":"result","subtype":"success","is_error":false,"result":"Done.","usage":{"input_tokens":10,"cache_read_input_tokens":90,"output_tokens":5}}"#,
        );
        assert_eq!(
            end,
            [
                AgentEvent::Usage(Usage {
                    input_tokens: 100,
                    output_tokens: 5
                }),
                AgentEvent::Result("Done.".into())
            ]
        );
        let failed = parse(r#"{"type":"result","subtype":"error_max_turns","is_error":true}"#);
        assert_eq!(
            failed,
            [AgentEvent::Failed(
                "the run ended with error_max_turns".into()
            )]
        );
    }

    #[test]
    fn trust_becomes_its_permission_mode() {
        let spec = |access| RunSpec {
            view: None,
            program: "claude".into(),
            workdir: PathBuf::from("/w"),
            model: "sonnet".into(),
            access,
            last_message_file: None,
        };
        let joined = |access| {
            ClaudeCode
                .args(&spec(access))
                .iter()
                .map(|a| a.to_string_lossy().into_owned())
                .collect::<Vec<_>>()
                .join(" ")
        };
        assert_eq!(
            joined(Access::ReadOnly),
            "-p --output-format stream-json --verbose --model sonnet --permission-mode plan"
        );
        assert!(joined(Access::Workspace).ends_with("--permission-mode acceptEdits"));
        assert!(joined(Access::Bypass).ends_with("--dangerously-skip-permissions"));
    }
}
