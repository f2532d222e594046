//! Every global setting by name, for `tandem config get|set|unset|list`: one table of keys
//! with what each means, the values it takes and its default. Setting a key checks the value
//! against the table (and, for the structured ones, against the type the core reads), so a
//! typo is an error naming what is allowed, never a setting the core silently ignores.

use serde::Serialize;
use serde_json::{Value, json};

use super::{App, AppError, Result};
use crate::store::keys;

/// The values a key takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ValueKind {
    Bool,
    /// A whole number at least `min`.
    Number {
        min: u64,
    },
    /// One of these words.
    Choice(&'static [&'static str]),
    /// Any non-empty text (a name, a path).
    Text,
    /// A list of texts: comma-separated, or a JSON array.
    List,
    /// A JSON object of the shape the core reads.
    Json,
}

/// One global setting.
#[derive(Debug, Clone, Copy)]
pub struct ConfigKey {
    pub name: &'static str,
    pub about: &'static str,
    pub kind: ValueKind,
    /// `None`: nothing (the core decides, e.g. the first provider).
    pub default: Option<&'static str>,
}

pub const CONFIG_KEYS: &[ConfigKey] = &[
    ConfigKey {
        name: keys::DEFAULT_PROVIDER,
        about: "the provider a send uses when none is named",
        kind: ValueKind::Text,
        default: None,
    },
    ConfigKey {
        name: keys::DEFAULT_MODEL,
        about: "the model a send uses when none is named",
        kind: ValueKind::Text,
        default: None,
    },
    ConfigKey {
        name: keys::HISTORY_TURNS,
        about: "earlier turns a request carries whole (older ones are summarised)",
        kind: ValueKind::Number { min: 1 },
        default: Some("10"),
    },
    ConfigKey {
        name: keys::AUTO_APPROVE,
        about: "apply Build proposals without review (a project can override it)",
        kind: ValueKind::Bool,
        default: Some("false"),
    },
    ConfigKey {
        name: keys::GENERATE_TITLES,
        about: "ask the model for a chat title after the first reply",
        kind: ValueKind::Bool,
        default: Some("true"),
    },
    ConfigKey {
        name: keys::REPAIR_ROUNDS,
        about: "times failed edits or a failing check go back to the model (0: never)",
        kind: ValueKind::Number { min: 0 },
        default: Some("2"),
    },
    ConfigKey {
        name: keys::IDLE_TIMEOUT_SECS,
        about: "seconds a reply may stream nothing before it is given up",
        kind: ValueKind::Number { min: 1 },
        default: Some("120"),
    },
    ConfigKey {
        name: keys::TOOL_CALLING,
        about: "how Agent mode calls tools: auto (as the model's check-up found), native, text",
        kind: ValueKind::Choice(&["auto", "native", "text"]),
        default: Some("auto"),
    },
    ConfigKey {
        name: keys::MAX_STEPS,
        about: "the most tool steps in one agent turn",
        kind: ValueKind::Number { min: 1 },
        default: Some("25"),
    },
    ConfigKey {
        name: keys::SHELL_TIMEOUT_SECS,
        about: "seconds an agent's shell command may run",
        kind: ValueKind::Number { min: 1 },
        default: Some("120"),
    },
    ConfigKey {
        name: keys::SANDBOX_READABLE,
        about: "directories sandboxed commands may also read (comma-separated; ~/ allowed)",
        kind: ValueKind::List,
        default: Some("[]"),
    },
    ConfigKey {
        name: keys::AGENT_POLICY,
        about: "the approval policy: allow/ask/deny patterns and the auto-approve level (JSON)",
        kind: ValueKind::Json,
        default: None,
    },
    ConfigKey {
        name: keys::GATEWAY,
        about: "the approval gateway: enabled, port, auto-approval (JSON)",
        kind: ValueKind::Json,
        default: None,
    },
    ConfigKey {
        name: keys::CHECK_TIMEOUT_SECS,
        about: "seconds a project's check may run on a proposal",
        kind: ValueKind::Number { min: 1 },
        default: Some("300"),
    },
    ConfigKey {
        name: keys::SCRATCH_DIR,
        about: "where scratch copies for checks live (default: the user's cache directory)",
        kind: ValueKind::Text,
        default: None,
    },
];

/// A key with its value now.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ConfigValue {
    pub key: &'static str,
    /// What is saved (`None`: the default applies).
    pub value: Option<Value>,
    pub default: Option<Value>,
    pub about: &'static str,
}

impl ConfigValue {
    /// The value in force: the saved one, else the default.
    pub fn effective(&self) -> Option<&Value> {
        self.value.as_ref().or(self.default.as_ref())
    }
}

fn key(name: &str) -> Result<&'static ConfigKey> {
    let name = name.trim();
    if let Some(key) = CONFIG_KEYS.iter().find(|k| k.name == name) {
        return Ok(key);
    }
    let word = name.rsplit('.').next().unwrap_or(name);
    let close: Vec<&str> = CONFIG_KEYS
        .iter()
        .map(|k| k.name)
        .filter(|k| {
            !word.is_empty()
                && (k.contains(word) || word.contains(k.rsplit('.').next().unwrap_or(k)))
        })
        .collect();
    let known = match close.is_empty() {
        true => CONFIG_KEYS
            .iter()
            .map(|k| k.name)
            .collect::<Vec<_>>()
            .join(", "),
        false => close.join(", "),
    };
    let hint = if close.is_empty() {
        "the keys are"
    } else {
        "did you mean"
    };
    Err(AppError::Invalid(format!(
        "no setting named {name:?}; {hint}: {known}"
    )))
}

/// `raw` as the JSON value `key` stores, or an error naming what it takes.
fn parse(key: &ConfigKey, raw: &str) -> Result<Value> {
    let raw = raw.trim();
    let invalid = |takes: String| AppError::Invalid(format!("{} must be {takes}", key.name));
    let value = match key.kind {
        ValueKind::Bool => match raw.to_ascii_lowercase().as_str() {
            "true" | "yes" | "on" | "1" => json!(true),
            "false" | "no" | "off" | "0" => json!(false),
            _ => return Err(invalid("true or false".into())),
        },
        ValueKind::Number { min } => match raw.parse::<u64>() {
            Ok(n) if n >= min => json!(n),
            _ => return Err(invalid(format!("a whole number of at least {min}"))),
        },
        ValueKind::Choice(words) => match words.iter().find(|w| **w == raw) {
            Some(word) => json!(word),
            None => return Err(invalid(format!("one of {}", words.join(", ")))),
        },
        ValueKind::Text if raw.is_empty() => {
            return Err(invalid("some text (use `unset` for the default)".into()));
        }
        ValueKind::Text => json!(raw),
        ValueKind::List => match serde_json::from_str::<Vec<String>>(raw) {
            Ok(list) => json!(list),
            Err(_) if raw.starts_with('[') => {
                return Err(invalid(
                    "a JSON array of strings or a comma-separated list".into(),
                ));
            }
            Err(_) => json!(
                raw.split(',')
                    .map(str::trim)
                    .filter(|s| !s.is_empty())
                    .collect::<Vec<_>>()
            ),
        },
        ValueKind::Json => {
            let value: Value =
                serde_json::from_str(raw).map_err(|e| invalid(format!("JSON ({e})")))?;
            check_shape(key.name, &value)?;
            value
        }
    };
    Ok(value)
}

/// The structured settings must read back as the types the core uses.
fn check_shape(name: &str, value: &Value) -> Result<()> {
    let bad = |e: serde_json::Error| AppError::Invalid(format!("{name}: {e}"));
    match name {
        keys::AGENT_POLICY => {
            serde_json::from_value::<crate::agent::policy::PolicySettings>(value.clone())
                .map_err(bad)?;
        }
        keys::GATEWAY => {
            serde_json::from_value::<super::gateway::GatewaySettings>(value.clone())
                .map_err(bad)?;
        }
        _ => {}
    }
    Ok(())
}

impl App {
    /// Every global setting with its value and default.
    pub fn config_list(&self) -> Result<Vec<ConfigValue>> {
        CONFIG_KEYS.iter().map(|k| self.config_value(k)).collect()
    }

    pub fn config_get(&self, name: &str) -> Result<ConfigValue> {
        self.config_value(key(name)?)
    }

    /// Checks `raw` against the key's values and saves it.
    pub fn config_set(&self, name: &str, raw: &str) -> Result<ConfigValue> {
        let key = key(name)?;
        let value = parse(key, raw)?;
        self.store().set_setting(key.name, &value)?;
        self.config_value(key)
    }

    /// Removes the saved value: the default applies again.
    pub fn config_unset(&self, name: &str) -> Result<ConfigValue> {
        let key = key(name)?;
        self.store().delete_setting(key.name)?;
        self.config_value(key)
    }

    fn config_value(&self, key: &'static ConfigKey) -> Result<ConfigValue> {
        Ok(ConfigValue {
            key: key.name,
            value: self.store().setting::<Value>(key.name)?,
            default: key.default.and_then(|d| parse(key, d).ok()),
            about: key.about,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_key_has_a_default_its_own_kind_accepts() {
        for key in CONFIG_KEYS {
            if let Some(default) = key.default {
                assert!(parse(key, default).is_ok(), "{}", key.name);
            }
        }
        let mut names: Vec<_> = CONFIG_KEYS.iter().map(|k| k.name).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), CONFIG_KEYS.len(), "a key is listed twice");
    }

    #[test]
    fn values_are_checked_against_the_key() {
        let tool = key("agent.tool_calling").unwrap();
        assert_eq!(parse(tool, " native ").unwrap(), json!("native"));
        let err = parse(tool, "maybe").unwrap_err().to_string();
        assert_eq!(err, "agent.tool_calling must be one of auto, native, text");
        let rounds = key("chat.repair_rounds").unwrap();
        assert_eq!(parse(rounds, "0").unwrap(), json!(0));
        assert!(parse(key("agent.max_steps").unwrap(), "0").is_err());
        assert_eq!(
            parse(key("chat.auto_approve").unwrap(), "yes").unwrap(),
            json!(true)
        );
        let dirs = key("agent.sandbox_readable").unwrap();
        assert_eq!(parse(dirs, "~/a, /b").unwrap(), json!(["~/a", "/b"]));
        assert_eq!(parse(dirs, r#"["x"]"#).unwrap(), json!(["x"]));
        let policy = key("agent.policy").unwrap();
        assert!(parse(policy, "{not json").is_err());
        assert!(parse(policy, r#"{"allow": 3}"#).is_err());
        assert!(parse(policy, "{}").is_ok());
    }

    #[test]
    fn an_unknown_key_names_the_close_ones() {
        let err = key("agent.tool_call").unwrap_err().to_string();
        assert!(err.contains("did you mean: agent.tool_calling"), "{err}");
        let err = key("nonsense.zzz").unwrap_err().to_string();
        assert!(err.contains("the keys are: chat.default_provider"), "{err}");
    }
}
