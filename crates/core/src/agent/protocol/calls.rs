//! From JSON to directives: the value after each keyword, tool-call objects with the key
//! variants models use, and the tool-call forms models write instead of the `TOOL_CALL`
//! keyword.

use serde_json::{Map, Value};

use super::scan::{Found, Keyword, balanced_end, kind_of, parse_json, skip_separators};
use super::{Directive, ProtocolError};
use crate::llm::ToolCall;

/// Keys a model may use for the tool's name, and for its arguments, in a JSON tool call.
const NAME_KEYS: [&str; 3] = ["name", "tool", "tool_name"];
const ARG_KEYS: [&str; 5] = ["arguments", "args", "parameters", "input", "params"];
/// Bare `{…}` objects examined per reply: bounds the work on text full of stray braces.
const MAX_BARE_CANDIDATES: usize = 200;

/// A tool call from a JSON object, or `None` when the object names no tool. `bare` objects
/// (found loose in prose) must also carry an arguments key and must not look like a tool's
/// schema, so ordinary JSON in an explanation is not mistaken for a call. Otherwise a missing
/// arguments key means the other keys are the arguments (`{"name": "read_file", "path": …}`).
pub(super) fn call_from_object(
    map: &Map<String, Value>,
    what: &'static str,
    bare: bool,
) -> Option<Result<ToolCall, ProtocolError>> {
    // OpenAI's shape: {"type": "function", "function": {"name": …, "arguments": "…"}}.
    if let Some(Value::Object(inner)) = map.get("function") {
        return call_from_object(inner, what, bare);
    }
    let name = NAME_KEYS
        .iter()
        .chain(&["function"])
        .find_map(|k| map.get(*k)?.as_str())?
        .trim();
    let given = ARG_KEYS.iter().find_map(|k| map.get(*k));
    if bare && (name.is_empty() || given.is_none_or(is_schema)) {
        return None;
    }
    if name.is_empty() {
        return Some(Err(ProtocolError::WrongField {
            keyword: what,
            field: "name",
            expected: "the name of one of the tools",
        }));
    }
    let arguments = match given {
        None => Value::Object(
            map.iter()
                .filter(|(k, _)| !matches!(k.as_str(), "id" | "type" | "function"))
                .filter(|(k, _)| !NAME_KEYS.contains(&k.as_str()))
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect(),
        ),
        Some(value) => match arguments(name, value, what) {
            Ok(args) => args,
            Err(e) => return Some(Err(e)),
        },
    };
    let id = map.get("id").and_then(Value::as_str).map(str::to_string);
    let name = name.to_string();
    Some(Ok(ToolCall {
        id,
        name,
        arguments,
    }))
}

/// Arguments as given: an object, `null`, or an object encoded as a JSON string.
fn arguments(tool: &str, value: &Value, what: &'static str) -> Result<Value, ProtocolError> {
    let not_object = |found: &Value| ProtocolError::ArgumentsNotObject {
        tool: tool.to_string(),
        found: kind_of(found),
    };
    match value {
        Value::Object(_) => Ok(value.clone()),
        Value::Null => Ok(Value::Object(Map::new())),
        Value::String(s) if s.trim().is_empty() => Ok(Value::Object(Map::new())),
        Value::String(s) => match parse_json(s) {
            Ok(parsed @ Value::Object(_)) => Ok(parsed),
            Ok(other) => Err(not_object(&other)),
            Err(message) => Err(ProtocolError::BadJson {
                keyword: what,
                message: format!("the arguments string is not valid JSON: {message}"),
            }),
        },
        other => Err(not_object(other)),
    }
}

/// A tool's parameter schema echoed back from the prompt, not a call.
fn is_schema(args: &Value) -> bool {
    args.get("type").is_some() && args.get("properties").is_some()
}

fn in_claimed(claimed: &[(usize, usize)], pos: usize) -> bool {
    claimed.iter().any(|&(s, e)| s <= pos && pos < e)
}

/// The tool-call forms other than the `TOOL_CALL` keyword, outside the `claimed` ranges:
/// `<function=NAME>…</function>` (JSON or `<parameter=…>` body), `<tool_call>{…}`,
/// `<function_call>{…}`, `[TOOL_CALLS] […]`, and bare `{"name": …, "arguments": …}` objects.
pub(super) fn alternative_calls(text: &str, claimed: &[(usize, usize)]) -> Vec<Found> {
    let lower = text.to_ascii_lowercase();
    let mut claimed = claimed.to_vec();
    let mut found = function_tags(text, &lower, &claimed);
    claimed.extend(found.iter().map(|f| (f.start, f.end)));
    let tagged = tagged_json(text, &lower, &claimed);
    claimed.extend(tagged.iter().map(|f| (f.start, f.end)));
    found.extend(tagged);
    found.extend(bare_objects(text, &claimed));
    found.sort_by_key(|f| f.start);
    found
}

/// `<function=NAME>` bodies: a JSON object, or Qwen-Coder style `<parameter=KEY>value
/// </parameter>` pairs whose values stay strings (the tools accept numbers given as text).
fn function_tags(text: &str, lower: &str, claimed: &[(usize, usize)]) -> Vec<Found> {
    const WHAT: &str = "<function=…>";
    let mut found = Vec::new();
    let mut pos = 0;
    while let Some(start) = lower[pos..].find("<function=").map(|i| pos + i) {
        pos = start + 1;
        let name_start = start + "<function=".len();
        let Some(name_end) = lower[name_start..].find('>').map(|i| name_start + i) else {
            break;
        };
        let name = text[name_start..name_end].trim().trim_matches(['"', '\'']);
        // `<function=` in prose about the format, not a call.
        if in_claimed(claimed, start) || name.len() > 128 || name.contains(char::is_whitespace) {
            continue;
        }
        let body_start = name_end + 1;
        let (body_end, end) = match lower[body_start..].find("</function>") {
            Some(i) => (body_start + i, body_start + i + "</function>".len()),
            None => (text.len(), text.len()),
        };
        let body = text[body_start..body_end].trim();
        let result = function_body(name, body).map(|arguments| {
            Directive::ToolCall(ToolCall {
                id: None,
                name: name.to_string(),
                arguments,
            })
        });
        found.push(Found {
            start,
            end,
            what: WHAT,
            result,
        });
        pos = end.max(pos);
    }
    found
}

fn function_body(name: &str, body: &str) -> Result<Value, ProtocolError> {
    const WHAT: &str = "<function=…>";
    if name.is_empty() {
        return Err(ProtocolError::WrongField {
            keyword: WHAT,
            field: "name",
            expected: "the name of one of the tools, as in <function=read_file>",
        });
    }
    if body.is_empty() {
        return Ok(Value::Object(Map::new()));
    }
    let lower = body.to_ascii_lowercase();
    if body.starts_with('{') {
        let end = balanced_end(body, 0).ok_or(ProtocolError::UnclosedJson { keyword: WHAT })?;
        let value = parse_json(&body[..end]).map_err(|message| ProtocolError::BadJson {
            keyword: WHAT,
            message,
        })?;
        return arguments(name, &value, WHAT);
    }
    if !lower.contains("<parameter=") {
        return Err(ProtocolError::BadJson {
            keyword: WHAT,
            message: "the body must be a JSON object of arguments".into(),
        });
    }
    let mut args = Map::new();
    let mut pos = 0;
    while let Some(start) = lower[pos..].find("<parameter=").map(|i| pos + i) {
        let key_start = start + "<parameter=".len();
        let Some(key_end) = lower[key_start..].find('>').map(|i| key_start + i) else {
            break;
        };
        let value_start = key_end + 1;
        let value_end = [
            lower[value_start..].find("</parameter>"),
            lower[value_start..].find("<parameter="),
        ]
        .into_iter()
        .flatten()
        .min()
        .map_or(body.len(), |i| value_start + i);
        let raw = &body[value_start..value_end];
        let value = raw.strip_prefix('\n').unwrap_or(raw);
        let value = value.strip_suffix('\n').unwrap_or(value);
        let key = body[key_start..key_end].trim().trim_matches(['"', '\'']);
        args.insert(key.to_string(), Value::String(value.to_string()));
        pos = value_end;
    }
    Ok(Value::Object(args))
}

/// `<tool_call>`, `<function_call>`, `<functioncall>` and `[TOOL_CALLS]` followed by a JSON
/// call object or a list of them; the closing tag is optional.
fn tagged_json(text: &str, lower: &str, claimed: &[(usize, usize)]) -> Vec<Found> {
    const TAGS: [(&str, &str, &str); 4] = [
        ("<tool_call>", "</tool_call>", "<tool_call>"),
        ("<function_call>", "</function_call>", "<function_call>"),
        ("<functioncall>", "</functioncall>", "<function_call>"),
        ("[tool_calls]", "", "[TOOL_CALLS]"),
    ];
    let mut found = Vec::new();
    for (open, close, what) in TAGS {
        let mut pos = 0;
        while let Some(start) = lower[pos..].find(open).map(|i| pos + i) {
            pos = start + open.len();
            let json_start = skip_separators(lower, pos);
            if in_claimed(claimed, start) || !lower[json_start..].starts_with(['{', '[']) {
                continue;
            }
            let Some(json_end) = balanced_end(text, json_start) else {
                let result = Err(ProtocolError::UnclosedJson { keyword: what });
                let (start, end) = (start, text.len());
                found.push(Found {
                    start,
                    end,
                    what,
                    result,
                });
                break;
            };
            let after = skip_separators(lower, json_end);
            let end = match close {
                "" => json_end,
                close if lower[after..].starts_with(close) => after + close.len(),
                _ => json_end,
            };
            let results = match parse_json(&text[json_start..json_end]) {
                Err(message) => vec![Err(ProtocolError::BadJson {
                    keyword: what,
                    message,
                })],
                Ok(Value::Array(items)) => items.iter().map(|v| tagged_call(v, what)).collect(),
                Ok(value) => vec![tagged_call(&value, what)],
            };
            found.extend(results.into_iter().map(|result| Found {
                start,
                end,
                what,
                result,
            }));
            pos = end;
        }
    }
    found
}

fn tagged_call(value: &Value, what: &'static str) -> Result<Directive, ProtocolError> {
    let Value::Object(map) = value else {
        return Err(ProtocolError::NotAnObject {
            keyword: what,
            found: kind_of(value),
        });
    };
    call_from_object(map, what, false)
        .unwrap_or(Err(ProtocolError::MissingField {
            keyword: what,
            field: "name",
            expected: "the tool's name",
        }))
        .map(Directive::ToolCall)
}

/// Loose `{"name": …, "arguments": …}` objects. Objects that parse but are not calls are
/// skipped whole, so their inner objects are not examined either.
fn bare_objects(text: &str, claimed: &[(usize, usize)]) -> Vec<Found> {
    const WHAT: &str = "a JSON tool call";
    let (mut found, mut pos, mut candidates) = (Vec::new(), 0, 0);
    while let Some(start) = text[pos..].find('{').map(|i| pos + i) {
        pos = start + 1;
        let key_next = text[pos..].trim_start().starts_with('"');
        if in_claimed(claimed, start) || !key_next {
            continue;
        }
        candidates += 1;
        if candidates > MAX_BARE_CANDIDATES {
            break;
        }
        let Some(end) = balanced_end(text, start) else {
            continue;
        };
        let Ok(Value::Object(map)) = parse_json(&text[start..end]) else {
            continue;
        };
        pos = end;
        if let Some(result) = call_from_object(&map, WHAT, true) {
            let result = result.map(Directive::ToolCall);
            found.push(Found {
                start,
                end,
                what: WHAT,
                result,
            });
        }
    }
    found
}

/// The directive a keyword's JSON value spells out.
pub(super) fn interpret(keyword: Keyword, value: Value) -> Result<Directive, ProtocolError> {
    let what = keyword.name();
    if keyword == Keyword::Plan {
        return plan(value);
    }
    let Value::Object(map) = value else {
        let found = kind_of(&value);
        return Err(ProtocolError::NotAnObject {
            keyword: what,
            found,
        });
    };
    let wrong = |field, expected| ProtocolError::WrongField {
        keyword: what,
        field,
        expected,
    };
    let missing = |field, expected| ProtocolError::MissingField {
        keyword: what,
        field,
        expected,
    };
    match keyword {
        Keyword::ToolCall => call_from_object(&map, what, false)
            .unwrap_or(Err(missing("name", "the tool's name, a string")))
            .map(Directive::ToolCall),
        Keyword::StepDone => {
            const INDEX: &str = "the number of the finished plan step, counting from 1";
            let index = match map.get("index").or_else(|| map.get("step")) {
                None => return Err(missing("index", INDEX)),
                Some(Value::Number(n)) => n.as_u64(),
                Some(Value::String(s)) => s.trim().parse().ok(),
                Some(_) => None,
            };
            let index = index
                .filter(|&n| n >= 1)
                .and_then(|n| usize::try_from(n).ok())
                .ok_or(wrong("index", INDEX))?;
            let note = match map.get("note") {
                None | Some(Value::Null) => None,
                Some(Value::String(s)) => Some(s.trim()).filter(|s| !s.is_empty()),
                Some(_) => return Err(wrong("note", "a string")),
            };
            let note = note.map(str::to_string);
            Ok(Directive::StepDone { index, note })
        }
        // `Plan` was handled above; only `Final` gets here.
        Keyword::Final | Keyword::Plan => match map.get("message") {
            None => Err(missing("message", "the text to show the user")),
            Some(Value::String(s)) if !s.trim().is_empty() => Ok(Directive::Final {
                message: s.trim().to_string(),
            }),
            Some(_) => Err(wrong("message", "a non-empty string")),
        },
    }
}

/// `PLAN {"steps": […]}`, or just the list. A step given as an object with one text field
/// (`{"step": "…"}`) is read as that text.
fn plan(value: Value) -> Result<Directive, ProtocolError> {
    const WHAT: &str = "PLAN";
    const STEPS: &str = "a list of short step descriptions (strings)";
    let steps = match value {
        Value::Array(items) => items,
        Value::Object(mut map) => match map.remove("steps") {
            Some(Value::Array(items)) => items,
            Some(_) => return Err(wrong_steps(STEPS)),
            None => {
                return Err(ProtocolError::MissingField {
                    keyword: WHAT,
                    field: "steps",
                    expected: STEPS,
                });
            }
        },
        other => {
            let found = kind_of(&other);
            return Err(ProtocolError::NotAnObject {
                keyword: WHAT,
                found,
            });
        }
    };
    let text_of = |step: &Value| match step {
        Value::String(s) => Some(s.trim().to_string()),
        Value::Object(m) => ["step", "description", "text", "title", "task"]
            .iter()
            .find_map(|k| Some(m.get(*k)?.as_str()?.trim().to_string())),
        _ => None,
    };
    let steps = steps
        .iter()
        .map(|step| text_of(step).filter(|s| !s.is_empty()))
        .collect::<Option<Vec<String>>>()
        .ok_or(wrong_steps("a list of non-empty strings, one per step"))?;
    if steps.is_empty() {
        return Err(ProtocolError::EmptyPlan);
    }
    Ok(Directive::Plan { steps })
}

fn wrong_steps(expected: &'static str) -> ProtocolError {
    ProtocolError::WrongField {
        keyword: "PLAN",
        field: "steps",
        expected,
    }
}
