//! The environment of processes Tandem starts for a model: an allow-list of the person's
//! variables (what a build needs: `PATH`, the locale, toolchain settings), never a deny-list.
//! A credential under a name nobody thought of (`DATABASE_URL`, `MY_SERVICE_AUTH`, a proxy
//! URL with a password) is simply not passed; the person names more in `agent.sandbox_env`.

/// Variables passed by name.
const ALLOWED: &[&str] = &[
    "PATH",
    "LANG",
    "LANGUAGE",
    "TERM",
    "TZ",
    "NO_COLOR",
    "CLICOLOR",
    "CI",
    "DEBIAN_FRONTEND",
    // Rust
    "CARGO_HOME",
    "RUSTUP_HOME",
    "RUSTUP_TOOLCHAIN",
    "RUSTFLAGS",
    "RUSTDOCFLAGS",
    "CARGO_INCREMENTAL",
    "CARGO_BUILD_JOBS",
    "CARGO_BUILD_TARGET",
    "CARGO_TERM_COLOR",
    "CARGO_NET_OFFLINE",
    "RUST_BACKTRACE",
    "RUST_LOG",
    "RUST_MIN_STACK",
    // Go
    "GOPATH",
    "GOROOT",
    "GOMODCACHE",
    "GOCACHE",
    "GOFLAGS",
    "GO111MODULE",
    "GOTOOLCHAIN",
    "CGO_ENABLED",
    // JVM
    "JAVA_HOME",
    "MAVEN_OPTS",
    "GRADLE_USER_HOME",
    // Python
    "PYENV_ROOT",
    "PYENV_VERSION",
    "VIRTUAL_ENV",
    "CONDA_PREFIX",
    "CONDA_DEFAULT_ENV",
    "PYTHONPATH",
    "PYTHONHOME",
    "PYTHONDONTWRITEBYTECODE",
    "PYTHONUNBUFFERED",
    "PYTHONIOENCODING",
    // JavaScript
    "NVM_DIR",
    "NVM_BIN",
    "NODE_PATH",
    "NODE_ENV",
    "VOLTA_HOME",
    "BUN_INSTALL",
    "DENO_DIR",
    "PNPM_HOME",
    // Ruby, .NET, Julia, Haskell, OCaml
    "GEM_HOME",
    "GEM_PATH",
    "RBENV_ROOT",
    "RBENV_VERSION",
    "SDKMAN_DIR",
    "DOTNET_ROOT",
    "NUGET_PACKAGES",
    "JULIA_DEPOT_PATH",
    "OPAM_SWITCH_PREFIX",
    // C and C++
    "CC",
    "CXX",
    "AR",
    "LD",
    "CFLAGS",
    "CXXFLAGS",
    "CPPFLAGS",
    "LDFLAGS",
    "PKG_CONFIG_PATH",
    "LD_LIBRARY_PATH",
    "LIBRARY_PATH",
    "CPATH",
    "C_INCLUDE_PATH",
    "CPLUS_INCLUDE_PATH",
    "MAKEFLAGS",
];

/// Whether an environment variable's name says it holds a secret (`*_API_KEY`, `*_TOKEN`,
/// passwords, credentials, AWS keys, Tandem's own settings, the SSH agent). Such a variable
/// is never passed, even when the person names it; masked wherever shown.
pub fn is_secret_env_name(name: &str) -> bool {
    let name = name.to_ascii_uppercase();
    const SUFFIXES: &[&str] = &["_API_KEY", "APIKEY", "_KEY", "_TOKEN", "_SECRET"];
    const PARTS: &[&str] = &["PASSWORD", "PASSWD", "SECRET", "CREDENTIAL"];
    const AWS_PARTS: &[&str] = &["KEY", "TOKEN", "SESSION"];
    SUFFIXES.iter().any(|s| name.ends_with(s))
        || PARTS.iter().any(|p| name.contains(p))
        || (name.starts_with("AWS_") && AWS_PARTS.iter().any(|p| name.contains(p)))
        || (name.contains("AUTH") && !name.contains("AUTHOR"))
        || name.starts_with("TANDEM_")
        || name == "SSH_AUTH_SOCK"
}

/// Whether `name` is passed: on the built-in list (or a locale `LC_*`), or named by the
/// person, and not a secret by its name.
fn allowed(name: &str, extra: &[String]) -> bool {
    let listed = ALLOWED.contains(&name)
        || (name.starts_with("LC_") && name[3..].chars().all(|c| c.is_ascii_uppercase()))
        || extra.iter().any(|e| e == name);
    listed && !is_secret_env_name(name)
}

/// The allowed ones of `vars` ([`allowed`]): what every command Tandem runs for a model
/// starts from.
pub fn allowed_env(
    vars: impl IntoIterator<Item = (String, String)>,
    extra: &[String],
) -> Vec<(String, String)> {
    vars.into_iter()
        .filter(|(name, _)| allowed(name, extra))
        .collect()
}

/// This process's environment, allowed ([`allowed_env`]).
pub fn agent_env(extra: &[String]) -> Vec<(String, String)> {
    allowed_env(utf8_vars(), extra)
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
    fn only_allowed_names_pass_and_secrets_never_do() {
        assert!(!is_secret_env_name("GIT_AUTHOR_NAME"));
        let kept = "PATH LANG LC_ALL TERM CARGO_HOME RUSTFLAGS MY_TOOL_HOME";
        let dropped = "OPENAI_API_KEY GITHUB_TOKEN DATABASE_URL MY_SERVICE_AUTH HTTPS_PROXY \
            http_proxy AWS_ACCESS_KEY_ID TANDEM_MODEL SSH_AUTH_SOCK BASH_ENV ENV CDPATH \
            SHELLOPTS PS4 BASH_FUNC_ls%% IFS LD_PRELOAD HOME TMPDIR USER CARGO_REGISTRY_TOKEN \
            LC_ALL%% SECRET_AUTH";
        let extra = [
            "MY_TOOL_HOME".to_string(),
            "SECRET_AUTH".into(),
            "CARGO_REGISTRY_TOKEN".into(),
        ];
        let vars = kept.split(' ').chain(dropped.split_whitespace());
        let vars = vars.map(|name| (name.to_string(), "v".to_string()));
        let names: Vec<String> = allowed_env(vars, &extra)
            .into_iter()
            .map(|(n, _)| n)
            .collect();
        assert_eq!(names.join(" "), kept);
    }
}
