//! The environment of processes Tandem starts for a model: the person's, minus anything that
//! looks like a credential and the variables that make a shell run what was never judged.

/// Whether an environment variable's name says it holds a secret (`*_API_KEY`, `*_TOKEN`,
/// passwords, credentials, AWS keys, Tandem's own settings, the SSH agent): such variables
/// are never passed to the commands and servers the agent starts.
pub fn is_secret_env_name(name: &str) -> bool {
    let name = name.to_ascii_uppercase();
    const SUFFIXES: &[&str] = &["_API_KEY", "APIKEY", "_KEY", "_TOKEN", "_SECRET"];
    const PARTS: &[&str] = &["PASSWORD", "PASSWD", "SECRET", "CREDENTIAL"];
    const AWS_PARTS: &[&str] = &["KEY", "TOKEN", "SESSION"];
    SUFFIXES.iter().any(|s| name.ends_with(s))
        || PARTS.iter().any(|p| name.contains(p))
        || (name.starts_with("AWS_") && AWS_PARTS.iter().any(|p| name.contains(p)))
        || name.starts_with("TANDEM_")
        || name == "SSH_AUTH_SOCK"
}

/// Inherited variables that make a shell run or read what the policy never saw: startup
/// files of non-interactive shells, `cd`'s search path (the judged `cd x` would go elsewhere),
/// options and trace prompts that expand commands. Exported bash functions (`BASH_FUNC_…`)
/// would replace the programs the policy judged.
const SHELL_HIJACKS: &[&str] = &[
    "BASH_ENV",
    "ENV",
    "CDPATH",
    "SHELLOPTS",
    "BASHOPTS",
    "PS4",
    "PROMPT_COMMAND",
    "GLOBIGNORE",
    "IFS",
];

/// The environment for agent commands: the given variables minus the app's secrets and the
/// shell hijacks. The model chooses the commands, so anything that looks like a credential
/// stays out of reach (`env`, `printenv` or a malicious script would otherwise read it).
pub fn scrubbed_env(vars: impl IntoIterator<Item = (String, String)>) -> Vec<(String, String)> {
    let hijack = |name: &str| SHELL_HIJACKS.contains(&name) || name.starts_with("BASH_FUNC_");
    vars.into_iter()
        .filter(|(name, _)| !is_secret_env_name(name) && !hijack(name))
        .collect()
}

/// This process's environment, scrubbed ([`scrubbed_env`]): what every command Tandem runs for
/// a model starts from.
pub fn agent_env() -> Vec<(String, String)> {
    scrubbed_env(utf8_vars())
}

/// The process environment without non-UTF-8 variables (on which `std::env::vars` panics).
fn utf8_vars() -> impl Iterator<Item = (String, String)> {
    std::env::vars_os()
        .filter_map(|(name, value)| Some((name.into_string().ok()?, value.into_string().ok()?)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scrubbed_env_removes_secrets_and_keeps_the_rest() {
        let kept = "PATH HOME LANG TERM USER CARGO_HOME KEYMAP TMPDIR";
        let secrets = "OPENAI_API_KEY anthropic_api_key GITHUB_TOKEN NPM_TOKEN STRIPE_SECRET \
            DB_PASSWORD MYSQL_PASSWD CLIENT_SECRET_FILE GOOGLE_APPLICATION_CREDENTIALS \
            AWS_ACCESS_KEY_ID AWS_SECRET_ACCESS_KEY AWS_SESSION_TOKEN TANDEM_MODEL \
            SSH_AUTH_SOCK SIGNING_KEY BASH_ENV ENV CDPATH SHELLOPTS PS4 BASH_FUNC_ls%%";
        let vars = kept.split(' ').chain(secrets.split_whitespace());
        let vars = vars.map(|name| (name.to_string(), "v".to_string()));
        let names: Vec<String> = scrubbed_env(vars).into_iter().map(|(n, _)| n).collect();
        assert_eq!(names.join(" "), kept);
    }
}
