//! Every global setting by name, for `tandem config get|set|unset|list`: one table of keys
//! with what each means, the values it takes and its default. Setting a key checks the value
//! against the table (and, for the structured ones, against the type the core reads), so a
//! typo is an error naming what is allowed, never a setting the core silently ignores.

use std::path::Path;

use serde::Serialize;
use serde_json::{Map, Value, json};

use super::{App, AppError, AppEvent, Result, gateway::GatewaySettings};
use crate::agent::policy::PolicySettings;
use crate::chat::ChatError;
use crate::store::keys;

/// The values a key takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ValueKind {
    /// `true` or `false` (`yes`/`no`, `on`/`off`, `1`/`0` too).
    Bool,
    /// A whole number at least `min`.
    Number { min: u64 },
    /// One of these words.
    Choice(&'static [&'static str]),
    /// Any non-empty text (a name).
    Text,
    /// An absolute path (the core does not expand `~` there).
    Path,
    /// Absolute paths or `~/…`: comma-separated, or a JSON array.
    Paths,
    /// Names of environment variables: comma-separated, or a JSON array.
    Names,
    /// A JSON object of the shape the core reads; fields it does not know are refused.
    Json,
}

impl ValueKind {
    /// What the values look like, for `config list` and errors.
    pub fn describe(self) -> String {
        match self {
            ValueKind::Bool => "true or false".into(),
            ValueKind::Number { min } => format!("a whole number of at least {min}"),
            ValueKind::Choice(words) => format!("one of {}", words.join(", ")),
            ValueKind::Text => "some text".into(),
            ValueKind::Path => "an absolute path".into(),
            ValueKind::Paths => "absolute or ~/ paths, comma-separated or a JSON array".into(),
            ValueKind::Names => "variable names, comma-separated or a JSON array".into(),
            ValueKind::Json => "a JSON object".into(),
        }
    }
}

/// One global setting.
#[derive(Debug, Clone, Copy)]
pub struct ConfigKey {
    pub name: &'static str,
    pub about: &'static str,
    pub kind: ValueKind,
    /// The value the core uses when none is saved (`None`: nothing, the core decides, e.g.
    /// the first provider). A function so that it comes from the core's own constants.
    pub default: fn() -> Option<Value>,
}

/// Every global setting, in the order `config list` shows them. `providers.seeded` is left
/// out: it is bookkeeping, not a setting.
pub const CONFIG_KEYS: &[ConfigKey] = &[
    ConfigKey {
        name: keys::DEFAULT_PROVIDER,
        about: "the provider a send uses when none is named (else the first one)",
        kind: ValueKind::Text,
        default: || None,
    },
    ConfigKey {
        name: keys::DEFAULT_MODEL,
        about: "the model a send uses when none is named (else the provider's own default)",
        kind: ValueKind::Text,
        default: || None,
    },
    ConfigKey {
        name: keys::HISTORY_TURNS,
        about: "earlier turns a request carries whole (older ones are summarised)",
        kind: ValueKind::Number { min: 1 },
        // `chat::turn`'s DEFAULT_HISTORY_TURNS (private there).
        default: || Some(json!(10)),
    },
    ConfigKey {
        name: keys::AUTO_APPROVE,
        about: "apply Build proposals without review (a project can override it)",
        kind: ValueKind::Bool,
        default: || Some(json!(false)),
    },
    ConfigKey {
        name: keys::GENERATE_TITLES,
        about: "ask the model for a chat title after the first reply",
        kind: ValueKind::Bool,
        default: || Some(json!(true)),
    },
    ConfigKey {
        name: keys::REPAIR_ROUNDS,
        about: "times failed edits or a failing check go back to the model (0: never)",
        kind: ValueKind::Number { min: 0 },
        default: || Some(json!(crate::chat::repair::DEFAULT_REPAIR_ROUNDS)),
    },
    ConfigKey {
        name: keys::IDLE_TIMEOUT_SECS,
        about: "seconds a reply may stream nothing before it is given up \
                (TANDEM_IDLE_TIMEOUT_SECS overrides it)",
        kind: ValueKind::Number { min: 1 },
        default: || Some(json!(crate::llm::DEFAULT_IDLE_TIMEOUT.as_secs())),
    },
    ConfigKey {
        name: keys::TOOL_CALLING,
        about: "how Agent mode calls tools: auto (as the model's check-up found), native, text",
        kind: ValueKind::Choice(&["auto", "native", "text"]),
        default: || Some(json!("auto")),
    },
    ConfigKey {
        name: keys::MAX_STEPS,
        about: "the most tool steps in one agent turn",
        kind: ValueKind::Number { min: 1 },
        default: || Some(json!(crate::agent::runner::DEFAULT_MAX_STEPS)),
    },
    ConfigKey {
        name: keys::SHELL_TIMEOUT_SECS,
        about: "seconds an agent's shell command may run",
        kind: ValueKind::Number { min: 1 },
        default: || Some(json!(crate::process::DEFAULT_TIMEOUT.as_secs())),
    },
    ConfigKey {
        name: keys::SANDBOX_READABLE,
        about: "directories sandboxed commands may also read",
        kind: ValueKind::Paths,
        default: || Some(json!([])),
    },
    ConfigKey {
        name: keys::SANDBOX_ENV,
        about: "environment variables sandboxed commands also see (besides PATH, the locale \
                and toolchain settings); names that look like secrets are never passed",
        kind: ValueKind::Names,
        default: || Some(json!([])),
    },
    ConfigKey {
        name: keys::AGENT_LIMITS,
        about: "limits of sandboxed commands: processes, memory_mb (per process), \
                file_size_mb, cpu_secs (per process), tmp_mb (each private temp directory)",
        kind: ValueKind::Json,
        default: || serde_json::to_value(crate::sandbox::Limits::default()).ok(),
    },
    ConfigKey {
        name: keys::AGENT_POLICY,
        about: "the approval policy: deny/ask/allow patterns, auto_approve_up_to low|medium|high",
        kind: ValueKind::Json,
        default: || serde_json::to_value(PolicySettings::default()).ok(),
    },
    ConfigKey {
        name: keys::GATEWAY,
        about: "the approval gateway: enabled, port, auto (its token is kept with the API keys)",
        kind: ValueKind::Json,
        default: || serde_json::to_value(GatewaySettings::default()).ok(),
    },
    ConfigKey {
        name: keys::CHECK_TIMEOUT_SECS,
        about: "seconds a project's check may run on a proposal",
        kind: ValueKind::Number { min: 1 },
        default: || Some(json!(crate::checks::DEFAULT_CHECK_TIMEOUT.as_secs())),
    },
    ConfigKey {
        name: keys::SCRATCH_DIR,
        about: "where scratch copies for checks live (else the user's cache directory)",
        kind: ValueKind::Path,
        default: || None,
    },
    ConfigKey {
        name: keys::USAGE_PRICES,
        about: "prices per million tokens by model or provider/model, for the cost of usage: \
                {\"MODEL\": {\"input_per_mtok\": 3, \"output_per_mtok\": 15}}",
        kind: ValueKind::Json,
        default: || Some(json!({})),
    },
];

/// A key with its value now. As JSON: `{"key", "value", "default", "about"}`.
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

/// The key named `name` (case and surrounding blanks ignored), or an error naming the close
/// ones (else all of them).
fn key(name: &str) -> Result<&'static ConfigKey> {
    let wanted = name.trim().to_ascii_lowercase();
    if let Some(key) = CONFIG_KEYS.iter().find(|k| k.name == wanted) {
        return Ok(key);
    }
    let last = |k: &str| k.rsplit('.').next().unwrap_or_default().to_string();
    let word = last(&wanted);
    let close: Vec<&str> = CONFIG_KEYS
        .iter()
        .map(|k| k.name)
        .filter(|k| {
            let own = last(k);
            (word.len() >= 3 && (own.contains(&word) || word.contains(&own)))
                || edits(&wanted, k) <= 3
                || (!word.is_empty() && edits(&word, &own) <= 2)
        })
        .collect();
    let (hint, names) = match close.is_empty() {
        true => ("the keys are", CONFIG_KEYS.iter().map(|k| k.name).collect()),
        false => ("did you mean", close),
    };
    Err(AppError::Invalid(format!(
        "no setting named {:?}; {hint}: {}",
        name.trim(),
        names.join(", ")
    )))
}

/// The edit distance between `a` and `b` (insertions, deletions, substitutions).
fn edits(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut diagonal = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let substituted = diagonal + usize::from(ca != *cb);
            diagonal = row[j + 1];
            row[j + 1] = substituted.min(row[j] + 1).min(diagonal + 1);
        }
    }
    row[b.len()]
}

/// `raw` as the JSON value `key` stores, or an error naming what it takes.
fn parse(key: &ConfigKey, raw: &str) -> Result<Value> {
    let raw = raw.trim();
    let invalid = || AppError::Invalid(format!("{} must be {}", key.name, key.kind.describe()));
    let value = match key.kind {
        ValueKind::Bool => match raw.to_ascii_lowercase().as_str() {
            "true" | "yes" | "on" | "1" => json!(true),
            "false" | "no" | "off" | "0" => json!(false),
            _ => return Err(invalid()),
        },
        ValueKind::Number { min } => match raw.parse::<u64>() {
            Ok(n) if n >= min => json!(n),
            _ => return Err(invalid()),
        },
        ValueKind::Choice(words) => match words.iter().find(|w| **w == raw) {
            Some(word) => json!(word),
            None => return Err(invalid()),
        },
        ValueKind::Text | ValueKind::Path if raw.is_empty() => {
            return Err(AppError::Invalid(format!(
                "{} must not be empty (unset it for the default)",
                key.name
            )));
        }
        ValueKind::Path if !Path::new(raw).is_absolute() => return Err(invalid()),
        ValueKind::Text | ValueKind::Path => json!(raw),
        ValueKind::Paths => {
            let list: Vec<String> = match raw.starts_with('[') {
                true => serde_json::from_str(raw).map_err(|_| invalid())?,
                false => raw.split(',').map(str::to_string).collect(),
            };
            let list: Vec<&str> = list
                .iter()
                .map(|p| p.trim())
                .filter(|p| !p.is_empty())
                .collect();
            if let Some(bad) = list
                .iter()
                .find(|p| !p.starts_with("~/") && !Path::new(p).is_absolute())
            {
                return Err(AppError::Invalid(format!(
                    "{}: {bad:?} is neither absolute nor under ~/",
                    key.name
                )));
            }
            json!(list)
        }
        ValueKind::Names => {
            let list: Vec<String> = match raw.starts_with('[') {
                true => serde_json::from_str(raw).map_err(|_| invalid())?,
                false => raw.split(',').map(str::to_string).collect(),
            };
            let list: Vec<&str> = list
                .iter()
                .map(|n| n.trim())
                .filter(|n| !n.is_empty())
                .collect();
            let list: Vec<String> = list.into_iter().map(str::to_string).collect();
            check_env_names(key.name, &list)?;
            json!(list)
        }
        ValueKind::Json => {
            let value: Value = serde_json::from_str(raw).map_err(|e| {
                AppError::Invalid(format!("{} must be a JSON object ({e})", key.name))
            })?;
            typed(key.name, value)?
        }
    };
    Ok(value)
}

/// Refuses what is not a variable's name, and names that look like secrets (such variables
/// are never passed to commands a model runs, so listing one would only mislead).
pub(super) fn check_env_names(setting: &str, names: &[String]) -> Result<()> {
    let is_name = |n: &str| {
        !n.is_empty()
            && n.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
            && !n.starts_with(|c: char| c.is_ascii_digit())
    };
    if let Some(bad) = names.iter().find(|n| !is_name(n)) {
        return Err(AppError::Invalid(format!(
            "{setting}: {bad:?} is not a variable name"
        )));
    }
    if let Some(secret) = names.iter().find(|n| crate::process::is_secret_env_name(n)) {
        return Err(AppError::Invalid(format!(
            "{setting}: {secret} looks like a secret by its name; such variables are never \
             passed to commands a model runs"
        )));
    }
    Ok(())
}

/// A structured setting read as the type the core uses and written back whole (the fields
/// not given at their defaults); a field the type does not have is refused, since serde
/// would drop it without a word.
fn typed(name: &str, given: Value) -> Result<Value> {
    // Before serde, which would also take a struct as a sequence of its fields.
    if !given.is_object() {
        return Err(AppError::Invalid(format!("{name} must be a JSON object")));
    }
    let read_back = match name {
        keys::AGENT_POLICY => read_back::<PolicySettings>(name, &given)?,
        keys::USAGE_PRICES => read_back::<crate::store::Prices>(name, &given)?,
        keys::AGENT_LIMITS => read_back::<crate::sandbox::Limits>(name, &given)?,
        keys::GATEWAY => {
            if given.get("token").is_some() {
                return Err(AppError::Invalid(format!(
                    "{name}: the gateway token is kept with the API keys, not in the settings; \
                     one is made when the gateway is enabled"
                )));
            }
            read_back::<GatewaySettings>(name, &given)?
        }
        _ => given.clone(),
    };
    if let Some((field, known)) = unknown_field(&given, &read_back) {
        return Err(AppError::Invalid(format!(
            "{name}: no field {field:?}; the fields are {}",
            known.join(", ")
        )));
    }
    Ok(read_back)
}

fn read_back<T: serde::de::DeserializeOwned + Serialize>(
    name: &str,
    given: &Value,
) -> Result<Value> {
    let bad = |e: serde_json::Error| AppError::Invalid(format!("{name}: {e}"));
    let value: T = serde_json::from_value(given.clone()).map_err(bad)?;
    serde_json::to_value(value).map_err(bad)
}

/// The first field of `given` that `known` lacks (looking into nested objects), with the
/// fields `known` has there.
fn unknown_field(given: &Value, known: &Value) -> Option<(String, Vec<String>)> {
    let (Some(given), Some(known)) = (given.as_object(), known.as_object()) else {
        return None;
    };
    let fields = |known: &Map<String, Value>| known.keys().cloned().collect::<Vec<_>>();
    for (field, value) in given {
        let Some(inner) = known.get(field) else {
            return Some((field.clone(), fields(known)));
        };
        if let Some((deeper, inner_fields)) = unknown_field(value, inner) {
            return Some((format!("{field}.{deeper}"), inner_fields));
        }
    }
    None
}

impl App {
    /// Every global setting with its value and default.
    pub fn config_list(&self) -> Result<Vec<ConfigValue>> {
        CONFIG_KEYS.iter().map(|k| self.config_value(k)).collect()
    }

    pub fn config_get(&self, name: &str) -> Result<ConfigValue> {
        self.config_value(key(name)?)
    }

    /// Checks `raw` against the key's values and saves it. A default provider must exist;
    /// the gateway's settings are saved as [`save_gateway`](Self::save_gateway) does (a token
    /// made when it is enabled without one).
    pub fn config_set(&self, name: &str, raw: &str) -> Result<ConfigValue> {
        let key = key(name)?;
        let value = parse(key, raw)?;
        match key.name {
            keys::DEFAULT_PROVIDER => {
                let provider = value.as_str().unwrap_or_default();
                if self.store().provider_by_name(provider)?.is_none() {
                    return Err(ChatError::UnknownProvider(provider.to_string()).into());
                }
                self.store().set_setting(key.name, &value)?;
            }
            keys::GATEWAY => {
                let mut gateway: GatewaySettings = serde_json::from_value(value)
                    .map_err(|e| AppError::Invalid(format!("{}: {e}", key.name)))?;
                gateway.token = self.gateway_settings()?.token;
                self.save_gateway(&gateway, false)?;
            }
            _ => self.store().set_setting(key.name, &value)?,
        }
        self.changed(AppEvent::AgentSettingsChanged);
        self.config_value(key)
    }

    /// Removes the saved value: the default applies again.
    pub fn config_unset(&self, name: &str) -> Result<ConfigValue> {
        let key = key(name)?;
        self.store().delete_setting(key.name)?;
        self.changed(AppEvent::AgentSettingsChanged);
        self.config_value(key)
    }

    fn config_value(&self, key: &'static ConfigKey) -> Result<ConfigValue> {
        Ok(ConfigValue {
            key: key.name,
            value: self.store().setting::<Value>(key.name)?,
            default: (key.default)(),
            about: key.about,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_key_is_listed_once_with_a_default_its_own_kind_accepts() {
        for key in CONFIG_KEYS {
            if let Some(default) = (key.default)() {
                let raw = match &default {
                    Value::String(text) => text.clone(),
                    other => other.to_string(),
                };
                assert_eq!(parse(key, &raw).ok(), Some(default), "{}", key.name);
            }
        }
        let mut names: Vec<_> = CONFIG_KEYS.iter().map(|k| k.name).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), CONFIG_KEYS.len(), "a key is listed twice");
    }

    #[test]
    fn the_defaults_are_the_cores() {
        let default = |name: &str| (key(name).unwrap().default)();
        assert_eq!(default("agent.max_steps"), Some(json!(25)));
        assert_eq!(default("agent.shell_timeout_secs"), Some(json!(120)));
        assert_eq!(default("chat.repair_rounds"), Some(json!(2)));
        assert_eq!(default("checks.timeout_secs"), Some(json!(300)));
        assert_eq!(default("chat.default_provider"), None);
        let policy = default("agent.policy").unwrap();
        assert_eq!(policy["auto_approve_up_to"], "low");
        let gateway = default("gateway.settings").unwrap();
        assert_eq!(gateway["port"], super::super::DEFAULT_GATEWAY_PORT);
        assert!(gateway.get("token").is_none());
    }

    #[test]
    fn values_are_checked_against_the_key() {
        let tool = key("agent.tool_calling").unwrap();
        assert_eq!(parse(tool, " native ").unwrap(), json!("native"));
        let err = parse(tool, "maybe").unwrap_err().to_string();
        assert_eq!(err, "agent.tool_calling must be one of auto, native, text");
        let rounds = key("chat.repair_rounds").unwrap();
        assert_eq!(parse(rounds, "0").unwrap(), json!(0));
        let steps = key("agent.max_steps").unwrap();
        for bad in ["0", "-1", "1.5", "ten", ""] {
            let err = parse(steps, bad).unwrap_err().to_string();
            assert_eq!(err, "agent.max_steps must be a whole number of at least 1");
        }
        let auto = key("chat.auto_approve").unwrap();
        assert_eq!(parse(auto, "yes").unwrap(), json!(true));
        assert_eq!(
            parse(auto, "maybe").unwrap_err().to_string(),
            "chat.auto_approve must be true or false"
        );
        assert!(parse(key("chat.default_model").unwrap(), "  ").is_err());
    }

    #[test]
    fn paths_must_be_absolute_or_under_home() {
        let dirs = key("agent.sandbox_readable").unwrap();
        assert_eq!(parse(dirs, "~/a, /b,").unwrap(), json!(["~/a", "/b"]));
        assert_eq!(parse(dirs, r#"["/x, y"]"#).unwrap(), json!(["/x, y"]));
        assert_eq!(parse(dirs, "").unwrap(), json!([]));
        let err = parse(dirs, "/ok, relative/dir").unwrap_err().to_string();
        assert_eq!(
            err,
            r#"agent.sandbox_readable: "relative/dir" is neither absolute nor under ~/"#
        );
        assert!(parse(dirs, r#"["/a", 3]"#).is_err());
        let scratch = key("checks.scratch_dir").unwrap();
        assert_eq!(parse(scratch, "/tmp/s").unwrap(), json!("/tmp/s"));
        assert_eq!(
            parse(scratch, "tmp").unwrap_err().to_string(),
            "checks.scratch_dir must be an absolute path"
        );
    }

    #[test]
    fn structured_values_are_read_as_the_core_reads_them() {
        let policy = key("agent.policy").unwrap();
        assert!(parse(policy, "{not json").is_err());
        assert!(parse(policy, r#"{"allow": 3}"#).is_err());
        assert!(parse(policy, "[]").is_err());
        // Written back whole, the missing fields at their defaults.
        let set = parse(policy, r#"{"allow": ["cargo test*"]}"#).unwrap();
        assert_eq!(set["allow"], json!(["cargo test*"]));
        assert_eq!(set["auto_approve_up_to"], "low");
        let err = parse(policy, r#"{"alow": ["ls"]}"#)
            .unwrap_err()
            .to_string();
        assert!(
            err.starts_with(r#"agent.policy: no field "alow"; the fields are "#),
            "{err}"
        );
        assert!(err.contains("allow"), "{err}");
        let gateway = key("gateway.settings").unwrap();
        let err = parse(gateway, r#"{"auto": {"evaluation_up_to": "low"}}"#)
            .unwrap_err()
            .to_string();
        assert!(err.contains(r#"no field "auto.evaluation_up_to""#), "{err}");
        let err = parse(gateway, r#"{"token": "x"}"#).unwrap_err().to_string();
        assert!(err.contains("kept with the API keys"), "{err}");
        assert_eq!(
            parse(gateway, r#"{"port": 9000}"#).unwrap()["port"],
            json!(9000)
        );
    }

    #[test]
    fn an_unknown_key_names_the_close_ones() {
        assert_eq!(
            key(" Agent.Tool_Calling ").unwrap().name,
            "agent.tool_calling"
        );
        let err = key("agent.tool_call").unwrap_err().to_string();
        assert_eq!(
            err,
            r#"no setting named "agent.tool_call"; did you mean: agent.tool_calling"#
        );
        let err = key("chat.autoaprove").unwrap_err().to_string();
        assert!(err.ends_with("did you mean: chat.auto_approve"), "{err}");
        let err = key("nonsense.zzz").unwrap_err().to_string();
        assert!(
            err.contains("the keys are: chat.default_provider, chat.default_model"),
            "{err}"
        );
    }

    #[test]
    fn edit_distance() {
        assert_eq!(edits("", "abc"), 3);
        assert_eq!(edits("kitten", "sitting"), 3);
        assert_eq!(edits("same", "same"), 0);
    }
}
