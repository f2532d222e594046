//! The sandbox every command Tandem runs for a model goes through (`run_shell`, dependency
//! installs). It is the boundary: what a command may read, write and reach is enforced by the
//! kernel, so a command the policy misjudged still cannot leak a secret, touch the person's
//! files or phone home. The policy's classifier only decides what to *ask*.
//!
//! On Linux a [`Confinement`] becomes, in the child between `fork` and `exec`:
//! - a user + mount namespace in which the project's `.git` is bind-mounted read-only (a
//!   planted hook or `core.fsmonitor` would otherwise run unsandboxed the next time the
//!   person uses git), and, unless the call may use the network, an empty network namespace
//!   (no route anywhere: TCP, UDP, raw sockets and abstract Unix sockets all stay inside);
//! - a Landlock ruleset: reads only below the system directories, the project, the call's temp
//!   dir and the toolchain directories of [`default_readable`]; writes only below the project
//!   and the temp dir; signals and abstract sockets scoped to the sandbox; TCP denied when the
//!   network namespace could not be made.
//!
//! Whatever the kernel cannot enforce is listed in [`Protections::gaps`]; the agent then asks
//! for every command instead of auto-approving (never silently weaker). Other systems have no
//! sandbox yet: [`probe`] reports every protection missing.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use serde::Serialize;

#[cfg(target_os = "linux")]
mod landlock;
#[cfg(target_os = "linux")]
mod namespaces;

/// Directories every program needs to read (and run from). `/dev` is not here: only the device
/// files of [`landlock`]'s list are opened, never the disks.
pub const SYSTEM_READABLE: &[&str] = &[
    "/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc", "/opt", "/nix",
    "/proc", "/sys", "/snap",
];

/// Toolchains and caches below the home directory that builds read (read-only in the
/// sandbox). The person extends the list in the agent settings.
pub const HOME_READABLE: &[&str] = &[
    ".cargo",
    ".rustup",
    ".npm",
    ".cache",
    ".local",
    ".pyenv",
    ".nvm",
    "go",
    ".m2",
    ".gradle",
    ".bun",
    ".deno",
    ".yarn",
    ".pnpm-store",
    ".rbenv",
    ".sdkman",
    ".elan",
    ".ghcup",
    ".cabal",
    ".stack",
    ".opam",
    ".volta",
    ".julia",
    ".dotnet",
    ".nuget",
];

/// Below readable directories, these stay unreadable (split out of the grant): credentials
/// and the person's configuration.
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
    ".npmrc",
    ".pypirc",
    ".git-credentials",
    ".azure",
    ".gcloud",
];

/// Environment variables naming toolchain homes outside the usual places.
const TOOLCHAIN_VARS: &[&str] = &[
    "CARGO_HOME",
    "RUSTUP_HOME",
    "GOPATH",
    "GOMODCACHE",
    "PYENV_ROOT",
    "NVM_DIR",
    "VOLTA_HOME",
    "BUN_INSTALL",
    "DENO_DIR",
];

/// What one confined command may touch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Confinement {
    /// Readable and writable, except its `.git`, which is read-only.
    pub project: PathBuf,
    /// The call's private temp dir: readable, writable, and `TMPDIR`.
    pub temp: PathBuf,
    /// Read-only besides the system directories (toolchains, caches).
    pub readable: Vec<PathBuf>,
    /// Writable besides the project and the temp dir (package caches, for installs only).
    pub writable: Vec<PathBuf>,
    /// Never readable, even below a readable or writable directory (credentials, Tandem's
    /// own data directory and secrets).
    pub hidden: Vec<PathBuf>,
    /// Whether the command may use the network (only calls the person approved).
    pub network: bool,
}

impl Confinement {
    /// The usual confinement: the project, a temp dir, the default toolchain directories, no
    /// network, the home directory's credentials hidden.
    pub fn new(project: impl Into<PathBuf>, temp: impl Into<PathBuf>) -> Self {
        let home = home_dir();
        Confinement {
            project: project.into(),
            temp: temp.into(),
            readable: default_readable(home.as_deref(), &[]),
            writable: Vec::new(),
            hidden: default_hidden(home.as_deref()),
            network: false,
        }
    }
}

impl Confinement {
    /// Variables a confined command needs: `TMPDIR`, and git told not to read the person's
    /// global configuration (unreadable in the sandbox, and git stops on an unreadable one;
    /// it may hold credentials), with their name and email kept for commits.
    pub fn env(&self) -> Vec<(&'static str, String)> {
        let mut vars = vec![
            ("TMPDIR", self.temp.display().to_string()),
            ("GIT_CONFIG_GLOBAL", "/dev/null".to_string()),
        ];
        let (name, email) = git_identity();
        for (keys, value) in [
            (["GIT_AUTHOR_NAME", "GIT_COMMITTER_NAME"], name),
            (["GIT_AUTHOR_EMAIL", "GIT_COMMITTER_EMAIL"], email),
        ] {
            if let Some(value) = value {
                vars.extend(keys.iter().map(|k| (*k, value.clone())));
            }
        }
        vars
    }
}

/// The person's git `user.name` and `user.email`, read once (outside the sandbox).
fn git_identity() -> &'static (Option<String>, Option<String>) {
    static FOUND: OnceLock<(Option<String>, Option<String>)> = OnceLock::new();
    FOUND.get_or_init(|| {
        let Ok(config) = git2::Config::open_default() else {
            return (None, None);
        };
        let get = |key: &str| config.get_string(key).ok().filter(|v| !v.is_empty());
        (get("user.name"), get("user.email"))
    })
}

/// The person's sandbox settings: directories confined commands may also read, and paths they
/// must never read (Tandem's data directory and secrets file).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Settings {
    /// Extra readable directories (setting `agent.sandbox_readable`; `~/` is the home directory).
    pub readable: Vec<String>,
    pub hidden: Vec<PathBuf>,
}

impl Settings {
    /// The confinement of one command in `project` with the private `temp` dir.
    pub fn confinement(&self, project: &Path, temp: &Path, network: bool) -> Confinement {
        let home = home_dir();
        let mut hidden = default_hidden(home.as_deref());
        hidden.extend(self.hidden.iter().cloned());
        Confinement {
            project: project.to_path_buf(),
            temp: temp.to_path_buf(),
            readable: default_readable(home.as_deref(), &self.readable),
            writable: Vec::new(),
            hidden,
            network,
        }
    }
}

/// The home directory (`$HOME`), if set and absolute.
pub fn home_dir() -> Option<PathBuf> {
    let home = PathBuf::from(std::env::var_os("HOME")?);
    home.is_absolute().then_some(home)
}

/// The toolchain directories: [`HOME_READABLE`] below `home`, the toolchain variables'
/// directories, and `extra` (the person's additions; `~/` is the home directory).
pub fn default_readable(home: Option<&Path>, extra: &[String]) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = home
        .map(|h| HOME_READABLE.iter().map(|d| h.join(d)).collect())
        .unwrap_or_default();
    let vars = TOOLCHAIN_VARS.iter().filter_map(std::env::var_os);
    out.extend(vars.map(PathBuf::from).filter(|p| p.is_absolute()));
    for raw in extra.iter().map(|e| e.trim()).filter(|e| !e.is_empty()) {
        match (raw.strip_prefix("~/"), home) {
            (Some(rest), Some(home)) => out.push(home.join(rest)),
            (None, _) if Path::new(raw).is_absolute() => out.push(PathBuf::from(raw)),
            _ => {}
        }
    }
    out
}

/// [`HOME_HIDDEN`] below `home`.
pub fn default_hidden(home: Option<&Path>) -> Vec<PathBuf> {
    home.map(|h| HOME_HIDDEN.iter().map(|d| h.join(d)).collect())
        .unwrap_or_default()
}

/// How the network was kept from a command.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Network {
    /// An empty network namespace: no TCP, UDP, raw or abstract-socket traffic leaves it.
    Isolated,
    /// Landlock denies TCP connect and bind; UDP and raw sockets are not restricted.
    TcpDenied,
    /// The person approved network use for this call.
    Allowed,
    /// Nothing restricts it.
    Unrestricted,
}

/// The protections one command ran under (or that [`probe`] found this system can give).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Protections {
    /// The kernel's Landlock ABI; `None` without Landlock.
    pub landlock_abi: Option<i32>,
    /// Reads limited to the system, the project, the temp dir and the toolchains.
    pub reads: bool,
    /// Writes limited to the project and the temp dir.
    pub writes: bool,
    /// The project's `.git` cannot be written.
    pub git_read_only: bool,
    pub network: Network,
    /// Signals to processes outside the sandbox (Tandem itself) are denied.
    pub signals: bool,
    /// Abstract Unix sockets outside the sandbox (D-Bus, X11…) cannot be reached.
    pub abstract_sockets: bool,
    /// Things that work differently here (e.g. files cannot be created at the project root
    /// when `.git` is protected without a mount namespace).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
}

impl Protections {
    pub fn none() -> Self {
        Protections {
            landlock_abi: None,
            reads: false,
            writes: false,
            git_read_only: false,
            network: Network::Unrestricted,
            signals: false,
            abstract_sockets: false,
            notes: Vec::new(),
        }
    }

    /// What a command confined here is *not* protected from, in words for the person. Empty
    /// when the sandbox is complete. `Network::Allowed` is not a gap: the person chose it.
    pub fn gaps(&self) -> Vec<&'static str> {
        let checks = [
            (self.reads, "reads outside the project"),
            (self.writes, "writes outside the project"),
            (self.git_read_only, "writes to .git"),
            (
                matches!(self.network, Network::Isolated | Network::Allowed),
                "network access",
            ),
            (self.signals, "signals to other processes"),
            (self.abstract_sockets, "abstract Unix sockets"),
        ];
        checks
            .iter()
            .filter(|(ok, _)| !ok)
            .map(|(_, w)| *w)
            .collect()
    }

    /// One line for the model, the step card and the log.
    pub fn summary(&self) -> String {
        let gaps = self.gaps();
        let network = match self.network {
            Network::Isolated => "no network",
            Network::TcpDenied => "TCP denied",
            Network::Allowed => "network allowed (approved)",
            Network::Unrestricted => "network not restricted",
        };
        let mut text = format!(
            "Sandbox: reads limited to the project, its temp dir, system and toolchain \
             directories; writes only in the project (.git read-only) and the temp dir; {network}"
        );
        if !gaps.is_empty() {
            text.push_str(&format!("; NOT enforced here: {}", gaps.join(", ")));
        }
        text.push('.');
        for note in &self.notes {
            text.push_str(&format!(" {note}."));
        }
        text
    }
}

/// A sandbox could be built but a rule for one of its paths could not be added.
#[derive(Debug, thiserror::Error)]
#[cfg_attr(not(target_os = "linux"), allow(dead_code))] // only Linux builds rules
#[error("could not set up the sandbox for {path}: {reason}")]
pub struct SandboxError {
    pub path: PathBuf,
    pub reason: String,
}

/// A sandbox ready to be installed on a command. It must stay alive until the command has
/// been spawned: the child uses its file descriptor and buffers.
#[derive(Debug)]
pub struct Prepared {
    protections: Protections,
    /// Why there is no sandbox at all (no Landlock, not Linux).
    unavailable: Option<String>,
    #[cfg(target_os = "linux")]
    child: Option<namespaces::ChildSetup>,
}

impl Prepared {
    pub fn protections(&self) -> &Protections {
        &self.protections
    }

    /// `Some(reason)` when the command will run with no sandbox at all.
    pub fn unavailable(&self) -> Option<&str> {
        self.unavailable.as_deref()
    }

    /// Makes the command confine itself before it execs. A no-op when unavailable.
    pub fn install(&self, command: &mut std::process::Command) {
        #[cfg(target_os = "linux")]
        if let Some(child) = &self.child {
            child.install(command);
        }
        #[cfg(not(target_os = "linux"))]
        let _ = command;
    }
}

/// Builds everything the child needs (rules, namespace plan) in the parent, where allocating
/// and opening files is allowed.
pub fn prepare(confinement: &Confinement) -> Result<Prepared, SandboxError> {
    #[cfg(target_os = "linux")]
    {
        let namespaces = probe_namespaces();
        let (ruleset, mut protections) = match landlock::build(confinement, namespaces)? {
            Ok(built) => built,
            Err(reason) => {
                return Ok(Prepared {
                    protections: Protections::none(),
                    unavailable: Some(reason),
                    child: None,
                });
            }
        };
        let plan = namespaces::plan(confinement, namespaces);
        if plan.is_some() {
            protections.git_read_only = true;
            if !confinement.network {
                protections.network = Network::Isolated;
                protections.abstract_sockets = true;
            }
        }
        Ok(Prepared {
            protections,
            unavailable: None,
            child: Some(namespaces::ChildSetup::new(plan, ruleset)),
        })
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = confinement;
        Ok(Prepared {
            protections: Protections::none(),
            unavailable: Some(
                "Tandem's sandbox uses Linux Landlock; this system is not Linux".into(),
            ),
        })
    }
}

/// Makes Tandem's own process non-dumpable: its `/proc/<pid>/environ` and memory (API keys)
/// are then closed to other processes of the same user, sandboxed or not. Called once at
/// start; a failure changes nothing else.
pub fn harden_this_process() {
    #[cfg(target_os = "linux")]
    linux_not_dumpable();
}

#[cfg(target_os = "linux")]
#[allow(unsafe_code)]
fn linux_not_dumpable() {
    // SAFETY: prctl(PR_SET_DUMPABLE, 0) only changes a flag of this process.
    unsafe {
        libc::prctl(libc::PR_SET_DUMPABLE, 0, 0, 0, 0);
    }
}

/// Whether user, mount and network namespaces can be made here (checked once, by a child).
#[cfg(target_os = "linux")]
fn probe_namespaces() -> bool {
    static CAN: OnceLock<bool> = OnceLock::new();
    *CAN.get_or_init(namespaces::probe)
}

/// What a confined command with no network gets on this system: the agent asks for every
/// command when [`Protections::gaps`] is not empty. Checked once.
pub fn probe() -> &'static Protections {
    static FOUND: OnceLock<Protections> = OnceLock::new();
    FOUND.get_or_init(|| {
        let Ok(dir) = tempfile::Builder::new().prefix("tandem-probe-").tempdir() else {
            return Protections::none();
        };
        let confinement = Confinement {
            readable: Vec::new(),
            hidden: Vec::new(),
            ..Confinement::new(dir.path(), dir.path())
        };
        match prepare(&confinement) {
            Ok(prepared) if prepared.unavailable.is_none() => prepared.protections,
            _ => Protections::none(),
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gaps_name_what_is_missing() {
        assert_eq!(Protections::none().gaps().len(), 6);
        let full = Protections {
            landlock_abi: Some(7),
            reads: true,
            writes: true,
            git_read_only: true,
            network: Network::Isolated,
            signals: true,
            abstract_sockets: true,
            notes: Vec::new(),
        };
        assert!(full.gaps().is_empty());
        let tcp_only = Protections {
            network: Network::TcpDenied,
            ..full.clone()
        };
        assert_eq!(tcp_only.gaps(), ["network access"]);
        assert!(
            tcp_only
                .summary()
                .contains("NOT enforced here: network access")
        );
    }

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
        assert!(got.contains(&home.join(".cargo")));
        assert!(default_hidden(Some(home)).contains(&home.join(".ssh")));
    }
}
