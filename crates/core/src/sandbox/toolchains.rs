//! Which of the person's own directories a confined command sees: the toolchains and package
//! caches that builds read, each by its own path, never a whole `~/.cache`, `~/.local` or
//! `~/.config` (tokens live there: the Hugging Face token sits in `~/.cache/huggingface`, a
//! registry token in `~/.cargo/credentials.toml` or `~/.npmrc`, a Maven password in
//! `~/.m2/settings.xml`).

use std::path::{Path, PathBuf};

/// Toolchains and caches below the home directory that builds read (read-only). The person
/// adds more with the `agent.sandbox_readable` setting.
pub const HOME_READABLE: &[&str] = &[
    // Rust: the binaries, the registry and git caches (offline builds), the toolchains.
    ".cargo/bin",
    ".cargo/registry",
    ".cargo/git",
    ".cargo/env",
    ".rustup",
    // JavaScript
    ".npm/_cacache",
    ".nvm",
    ".volta",
    ".bun/bin",
    ".bun/install/cache",
    ".deno",
    ".yarn/berry/cache",
    ".pnpm-store",
    ".local/share/pnpm",
    ".cache/yarn",
    ".cache/pnpm",
    ".cache/node-gyp",
    ".cache/typescript",
    // Python
    ".pyenv",
    ".local/bin",
    ".local/lib",
    ".local/share/uv",
    ".local/share/virtualenvs",
    ".local/pipx",
    ".local/share/pipx",
    ".cache/pip",
    ".cache/uv",
    ".cache/pypoetry",
    ".conda/pkgs",
    ".conda/envs",
    "miniconda3",
    "anaconda3",
    // Go
    "go/bin",
    "go/pkg/mod",
    ".cache/go-build",
    // JVM
    ".m2/repository",
    ".gradle/caches",
    ".gradle/wrapper",
    ".sdkman/candidates",
    ".cache/coursier",
    // Others
    ".rbenv",
    ".gem",
    ".elan",
    ".ghcup",
    ".cabal/packages",
    ".cabal/bin",
    ".stack/programs",
    ".opam",
    ".julia",
    ".dotnet",
    ".nuget/packages",
    ".cache/zig",
    ".cache/bazel",
    ".cache/ms-playwright",
];

/// Package caches below the home directory an approved install may write (read-write, for
/// installs only): the package manager downloads into them.
pub const INSTALL_CACHES: &[&str] = &[
    ".npm/_cacache",
    ".cache/pip",
    ".cache/uv",
    ".cache/yarn",
    ".cache/pnpm",
    ".cargo/registry",
    ".cargo/git",
    ".local/share/pnpm",
    ".pnpm-store",
    ".bun/install/cache",
    ".yarn/berry/cache",
    "go/pkg/mod",
];

/// Never visible, even below a directory that is (a project kept in the home directory,
/// a readable directory the person added): credentials and the person's configuration.
pub const HOME_HIDDEN: &[&str] = &[
    ".ssh",
    ".aws",
    ".gnupg",
    ".config",
    ".netrc",
    ".docker",
    ".kube",
    ".password-store",
    ".local/share/keyrings",
    ".cargo/credentials",
    ".cargo/credentials.toml",
    // Written by the tools themselves inside toolchain directories that are mounted whole:
    // RubyGems' API key (`gem signin`), uv's credential store (`uv auth login`).
    ".gem/credentials",
    ".local/share/uv/credentials",
    ".npmrc",
    ".pypirc",
    ".git-credentials",
    ".azure",
    ".gcloud",
    ".cache/huggingface",
    ".m2/settings.xml",
    ".gradle/gradle.properties",
    ".bash_history",
    ".zsh_history",
    ".python_history",
    ".node_repl_history",
    ".psql_history",
    ".mysql_history",
];

/// Variables naming toolchain homes outside the usual places: each is mounted read-only by
/// its own path. Whole directories, as their tools keep only the toolchain there (a
/// `CARGO_HOME` is narrowed like `~/.cargo`).
const TOOLCHAIN_VARS: &[&str] = &[
    "RUSTUP_HOME",
    "GOMODCACHE",
    "GOROOT",
    "PYENV_ROOT",
    "NVM_DIR",
    "VOLTA_HOME",
    "BUN_INSTALL",
    "DENO_DIR",
    "JAVA_HOME",
    "SDKMAN_DIR",
    "VIRTUAL_ENV",
    "CONDA_PREFIX",
];

/// The toolchain directories: [`HOME_READABLE`] below `home`, `CARGO_HOME`'s caches, the
/// toolchain variables' directories, the directories of `PATH` below the home directory,
/// and `extra` (the person's additions; `~/` is the home directory). Paths that do not exist
/// are kept: they are skipped when mounted.
pub fn default_readable(home: Option<&Path>, extra: &[String]) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = home
        .map(|h| HOME_READABLE.iter().map(|d| h.join(d)).collect())
        .unwrap_or_default();
    if let Some(cargo) = absolute_var("CARGO_HOME") {
        out.extend(["bin", "registry", "git", "env"].map(|d| cargo.join(d)));
    }
    out.extend(TOOLCHAIN_VARS.iter().filter_map(|v| absolute_var(v)));
    if let Some(gopath) = absolute_var("GOPATH") {
        out.extend(["bin", "pkg/mod"].map(|d| gopath.join(d)));
    }
    // Tools the person put on their PATH below their home (`~/bin`, `~/.deno/bin`…), never
    // the home directory itself.
    if let (Some(home), Some(path)) = (home, std::env::var_os("PATH")) {
        out.extend(
            std::env::split_paths(&path)
                .filter(|dir| dir.is_absolute() && dir.starts_with(home) && dir != home),
        );
    }
    for raw in extra.iter().map(|e| e.trim()).filter(|e| !e.is_empty()) {
        match (raw.strip_prefix("~/"), home) {
            (Some(rest), Some(home)) => out.push(home.join(rest)),
            (None, _) if Path::new(raw).is_absolute() => out.push(PathBuf::from(raw)),
            _ => {}
        }
    }
    out
}

/// The caches an approved install may write: [`INSTALL_CACHES`] below `home`, and
/// `CARGO_HOME`'s when it is elsewhere.
pub fn install_caches(home: Option<&Path>) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = home
        .map(|h| INSTALL_CACHES.iter().map(|d| h.join(d)).collect())
        .unwrap_or_default();
    if let Some(cargo) = absolute_var("CARGO_HOME") {
        out.extend(["registry", "git"].map(|d| cargo.join(d)));
    }
    out
}

/// [`HOME_HIDDEN`] below `home`.
pub fn default_hidden(home: Option<&Path>) -> Vec<PathBuf> {
    home.map(|h| HOME_HIDDEN.iter().map(|d| h.join(d)).collect())
        .unwrap_or_default()
}

fn absolute_var(name: &str) -> Option<PathBuf> {
    let value = PathBuf::from(std::env::var_os(name)?);
    value.is_absolute().then_some(value)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn extra_readable_paths_expand_the_home_and_skip_relative_ones() {
        let home = Path::new("/home/p");
        let extra = [
            "~/.sdk".to_string(),
            "/srv/tools".into(),
            "rel".into(),
            " ".into(),
        ];
        let got = default_readable(Some(home), &extra);
        assert!(got.contains(&home.join(".sdk")) && got.contains(&PathBuf::from("/srv/tools")));
        assert!(!got.iter().any(|p| p.ends_with("rel")));
        assert!(got.contains(&home.join(".cargo/registry")));
        // Never a whole configuration or cache directory, nor the home itself.
        for whole in [".cache", ".local", ".config", ".cargo", ""] {
            assert!(!got.contains(&home.join(whole)), "{whole}");
        }
        assert!(default_hidden(Some(home)).contains(&home.join(".ssh")));
        assert!(default_hidden(Some(home)).contains(&home.join(".cache/huggingface")));
    }
}
