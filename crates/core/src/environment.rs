//! The environment variables Tandem itself reads — provider keys (`OPENAI_API_KEY`…), where
//! Ollama listens (`OLLAMA_HOST`), Tandem's own settings (`TANDEM_DATA_DIR`,
//! `TANDEM_IDLE_TIMEOUT_SECS`, [`KEYCHAIN_ENV`]) — as one snapshot taken when the app opens
//! and handed down, instead of each reader asking the process. So the whole app reads the same
//! values, and a test hands it an [`Environment::isolated`] one: nothing from the machine it
//! runs on reaches the app. (What Tandem passes to the commands it runs for a model is
//! another matter: see `process::env`.)

use std::collections::BTreeMap;

/// Chooses where provider keys are stored: unset, the OS keychain (else the secrets file when
/// none answers); `off`, the secrets file in the data directory only. Tests set it `off`: no
/// test touches the machine's keychain.
pub const KEYCHAIN_ENV: &str = "TANDEM_KEYCHAIN";

/// A snapshot of environment variables (UTF-8 ones only). `Debug` shows names, never values
/// (they may be keys).
#[derive(Clone, Default, PartialEq, Eq)]
pub struct Environment {
    vars: BTreeMap<String, String>,
}

impl std::fmt::Debug for Environment {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_set().entries(self.vars.keys()).finish()
    }
}

impl Environment {
    /// This process's environment, now (variables that are not UTF-8 are left out).
    pub fn process() -> Environment {
        let vars = std::env::vars_os()
            .filter_map(|(name, value)| Some((name.into_string().ok()?, value.into_string().ok()?)))
            .collect();
        Environment { vars }
    }

    /// Nothing from the machine, and keys kept in the data directory's secrets file (never
    /// the OS keychain): what tests hand the app.
    pub fn isolated() -> Environment {
        Environment::default().with(KEYCHAIN_ENV, "off")
    }

    /// With `name` set to `value`.
    pub fn with(mut self, name: &str, value: &str) -> Environment {
        self.vars.insert(name.to_string(), value.to_string());
        self
    }

    /// The value of `name`; `None` when unset.
    pub fn get(&self, name: &str) -> Option<&str> {
        self.vars.get(name).map(String::as_str)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn isolated_has_only_the_keychain_choice_and_debug_hides_values() {
        let env = Environment::isolated().with("OPENAI_API_KEY", "sk-secret");
        assert_eq!(env.get(KEYCHAIN_ENV), Some("off"));
        assert_eq!(env.get("OPENAI_API_KEY"), Some("sk-secret"));
        assert_eq!(env.get("HOME"), None);
        let shown = format!("{env:?}");
        assert!(
            shown.contains("OPENAI_API_KEY") && !shown.contains("sk-secret"),
            "{shown}"
        );
    }
}
