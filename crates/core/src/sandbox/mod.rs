//! The sandbox every command Tandem runs for a model goes through (`run_shell`, checks,
//! dependency installs, CLI agents). It is the boundary: what a command may read, write and
//! reach is enforced by the kernel, so a command the policy misjudged still cannot leak a
//! secret, touch the person's files or phone home. The policy's classifier only decides
//! what to *ask*.
//!
//! On Linux a [`Confinement`] becomes a **container** built for the command (see
//! [`container`]): user, mount, PID, IPC, UTS, cgroup (and, without network, network)
//! namespaces; a fresh root holding only the system read-only, a minimal `/etc` and `/dev`, a
//! fresh `/proc`, private `/tmp` and home, the toolchains, the project (its `.git`
//! read-only). Then the command takes a session of its own (no terminal), limits
//! ([`Limits`]), no capabilities, a Landlock ruleset repeating the mounts as a second wall,
//! and a seccomp filter ([`seccomp`]). When the command ends, its PID namespace ends and
//! every process it started with it.
//!
//! Where namespaces are missing the command is confined in place by Landlock, seccomp and
//! the limits. Whatever the kernel cannot enforce is listed in [`Protections::gaps`]; the
//! agent then asks for every command instead of auto-approving (never silently weaker).
//! Other systems have no sandbox yet: [`probe`] reports every protection missing.

use std::path::{Component, Path, PathBuf};
use std::sync::OnceLock;

mod limits;
mod protections;
mod toolchains;

#[cfg(target_os = "linux")]
mod container;
#[cfg(target_os = "linux")]
mod landlock;
#[cfg(target_os = "linux")]
mod linux;
#[cfg(target_os = "linux")]
mod seccomp;
#[cfg(target_os = "linux")]
mod sys;

pub mod overlay;

pub use limits::Limits;
pub use protections::{Network, Protections};
pub use toolchains::{
    HOME_HIDDEN, HOME_READABLE, INSTALL_CACHES, default_hidden, default_readable, install_caches,
};

/// Directories every program needs to read (and run from) when a command is confined in
/// place, without a container. `/dev` is not here: only the device files are opened.
pub const SYSTEM_READABLE: &[&str] = &[
    "/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc", "/opt", "/nix",
    "/proc", "/sys", "/snap",
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
    pub limits: Limits,
    /// Environment variables passed besides the built-in list (the person's
    /// `agent.sandbox_env`).
    pub env_names: Vec<String>,
    /// What the command sees at the project's path, when not the project itself: the
    /// agent's workspace (an overlay, or a copy).
    pub view: Option<ProjectView>,
    /// Confine in place (Landlock, seccomp, the limits) even where a container can be
    /// built: the reference the benchmarks measure the container against, and the way to
    /// test what systems without namespaces get.
    pub in_place: bool,
}

impl Confinement {
    /// The usual confinement: the project, a temp dir, the default toolchain directories, no
    /// network, the home directory's credentials hidden, the default limits.
    pub fn new(project: impl Into<PathBuf>, temp: impl Into<PathBuf>) -> Self {
        Settings::default().confinement(&project.into(), &temp.into(), false)
    }

    /// The variables Tandem sets for a confined command: `HOME` (the container's own),
    /// `TMPDIR`, the user's name, git told not to read the person's global configuration
    /// (absent in the sandbox, and it may hold credentials) with their name and email kept
    /// for commits, and a `CARGO_TARGET_DIR` only when it lies inside the project (one
    /// outside would be another project's build output).
    pub fn env(&self) -> Vec<(&'static str, String)> {
        let identity = identity();
        let mut vars = vec![
            ("TMPDIR", self.temp.display().to_string()),
            ("HOME", identity.home.display().to_string()),
            ("USER", identity.name.clone()),
            ("LOGNAME", identity.name.clone()),
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
        if !self.network {
            // Without the network an update check can only fail, after its own timeout
            // (npm's notifier checks on every run: the container's home is fresh each time).
            vars.extend([
                ("NPM_CONFIG_UPDATE_NOTIFIER", "false".to_string()),
                ("NO_UPDATE_NOTIFIER", "1".to_string()),
                ("PIP_DISABLE_PIP_VERSION_CHECK", "1".to_string()),
            ]);
        }
        let project = self.project.canonicalize().unwrap_or(self.project.clone());
        if let Some(target) = std::env::var_os("CARGO_TARGET_DIR").map(PathBuf::from)
            && (!target.is_absolute() || target.starts_with(&project))
        {
            vars.push(("CARGO_TARGET_DIR", target.display().to_string()));
        }
        vars
    }

    /// Makes `program` (a full path) runnable, by the path given and by the path its links
    /// lead to: what it is installed with becomes readable. That is its folder's parent when
    /// the parent is an installation (a Node package's folder, a virtualenv, a toolchain's
    /// version), else its folder, else only the program. Never a folder that holds the home
    /// directory or the project, nor one in the project (shown already, as the workspace),
    /// nor a hidden one or one inside a hidden one (`~/.config`), nor one of the home
    /// directory's own folders (`~/.local`, `~/go`, `~/Downloads` hold credentials, other
    /// programs' data and the person's files) unless it is a virtualenv (`pyvenv.cfg`).
    pub fn run_program(&mut self, program: &Path) {
        let project = self.project.canonicalize().unwrap_or(self.project.clone());
        let shown = program_folders(program, home_dir().as_deref(), &project, &self.hidden);
        self.readable.extend(shown);
    }
}

/// What [`Confinement::run_program`] shows for `program`, the home directory being `home`
/// and `hidden` what stays hidden.
fn program_folders(
    program: &Path,
    home: Option<&Path>,
    project: &Path,
    hidden: &[PathBuf],
) -> Vec<PathBuf> {
    let real = program
        .canonicalize()
        .unwrap_or_else(|_| program.to_path_buf());
    let may_show = |dir: &Path| {
        let of_home = home.is_some_and(|h| dir.parent() == Some(h));
        dir.parent().is_some()
            && !project.starts_with(dir)
            && !home.is_some_and(|home| home.starts_with(dir))
            && !hidden.iter().any(|h| dir.starts_with(h))
            && (!of_home || dir.join("pyvenv.cfg").is_file())
    };
    let mut shown = Vec::new();
    for path in [program, &real] {
        // Only as written plainly: `~/x/../.local/..` must not be judged as `~/x`.
        let plain =
            (path.components()).all(|c| matches!(c, Component::RootDir | Component::Normal(_)));
        if !plain || path.starts_with(project) || hidden.iter().any(|h| path.starts_with(h)) {
            continue;
        }
        let folder = path.parent().filter(|f| may_show(f));
        let installed = folder.and_then(Path::parent).filter(|dir| may_show(dir));
        shown.push(installed.or(folder).unwrap_or(path).to_path_buf());
    }
    shown.dedup();
    shown
}

/// What a container shows at the project's own path instead of the project.
#[derive(Debug, Clone)]
pub enum ProjectView {
    /// A copy-on-write view ([`overlay`]): the command joins its holder's namespaces. `root`
    /// is where Tandem reaches the view (to check the command's directory).
    Overlay {
        namespaces: std::sync::Arc<overlay::Namespaces>,
        root: PathBuf,
    },
    /// A copy of the project in this directory.
    Copy(PathBuf),
}

impl ProjectView {
    /// Where Tandem reaches what the command sees.
    pub fn root(&self) -> &Path {
        match self {
            ProjectView::Overlay { root, .. } | ProjectView::Copy(root) => root,
        }
    }
}

impl PartialEq for ProjectView {
    fn eq(&self, other: &Self) -> bool {
        match (self, other) {
            (
                ProjectView::Overlay { namespaces: a, .. },
                ProjectView::Overlay { namespaces: b, .. },
            ) => std::sync::Arc::ptr_eq(a, b),
            (ProjectView::Copy(a), ProjectView::Copy(b)) => a == b,
            _ => false,
        }
    }
}

impl Eq for ProjectView {}

/// Who commands run as, and their home directory inside the container.
#[derive(Debug, Clone)]
pub struct Identity {
    pub uid: u32,
    pub gid: u32,
    pub name: String,
    /// The person's home directory's path (an empty private directory in the container).
    pub home: PathBuf,
}

/// This process's user, read once.
pub fn identity() -> &'static Identity {
    static FOUND: OnceLock<Identity> = OnceLock::new();
    FOUND.get_or_init(|| {
        let (uid, gid) = ids();
        let name = ["USER", "LOGNAME"]
            .iter()
            .find_map(|v| std::env::var(v).ok())
            .filter(|n| !n.is_empty() && n.chars().all(|c| c.is_ascii_graphic() && c != ':'))
            .unwrap_or_else(|| if uid == 0 { "root" } else { "user" }.to_string());
        let home = home_dir()
            .map(|h| h.canonicalize().unwrap_or(h))
            .unwrap_or_else(|| PathBuf::from("/home").join(&name));
        Identity {
            uid,
            gid,
            name,
            home,
        }
    })
}

#[cfg(unix)]
#[allow(unsafe_code)]
fn ids() -> (u32, u32) {
    // SAFETY: getuid(2) and getgid(2) take no arguments and always succeed.
    unsafe { (libc::getuid(), libc::getgid()) }
}

#[cfg(not(unix))]
fn ids() -> (u32, u32) {
    (1000, 1000)
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

/// The person's sandbox settings: directories confined commands may also read, paths they
/// must never read (Tandem's data directory and secrets file), the limits, and variables
/// they may also see.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Settings {
    /// Extra readable directories (setting `agent.sandbox_readable`; `~/` is the home directory).
    pub readable: Vec<String>,
    pub hidden: Vec<PathBuf>,
    /// Setting `agent.limits`.
    pub limits: Limits,
    /// Setting `agent.sandbox_env`: names of variables passed besides the built-in list.
    pub env_names: Vec<String>,
}

impl Settings {
    /// The confinement of one command in `project` with the private `temp` dir: the
    /// project's secret-looking files git does not track are hidden (see
    /// [`crate::folder::loose_secrets`]).
    pub fn confinement(&self, project: &Path, temp: &Path, network: bool) -> Confinement {
        self.confinement_of(project, project, temp, network)
    }

    /// [`Self::confinement`] in `tree`, a copy of the project at `history` (a check's
    /// scratch copy, which has no `.git`): what the copy holds is hidden as the project's
    /// history has it, so a key the project commits stays for its tests.
    pub fn confinement_of(
        &self,
        tree: &Path,
        history: &Path,
        temp: &Path,
        network: bool,
    ) -> Confinement {
        let home = home_dir();
        let mut hidden = default_hidden(home.as_deref());
        hidden.extend(self.hidden.iter().cloned());
        // The project's own secrets that git does not track (a `.env`, a local key): no
        // command run for a model reads them, by a glob or a recursive search alike.
        hidden.extend(crate::folder::loose_secrets_of(tree, history));
        Confinement {
            project: tree.to_path_buf(),
            temp: temp.to_path_buf(),
            readable: default_readable(home.as_deref(), &self.readable),
            writable: Vec::new(),
            hidden,
            network,
            limits: self.limits.sane(),
            env_names: self.env_names.clone(),
            view: None,
            in_place: false,
        }
    }
}

/// The home directory (`$HOME`), if set and absolute.
pub fn home_dir() -> Option<PathBuf> {
    let home = PathBuf::from(std::env::var_os("HOME")?);
    home.is_absolute().then_some(home)
}

/// A sandbox could not be set up for one of its paths.
#[derive(Debug, thiserror::Error)]
#[error("could not set up the sandbox for {path}: {reason}")]
pub struct SandboxError {
    pub path: PathBuf,
    pub reason: String,
}

/// A sandbox ready to be installed on a command. It must stay alive until the command has
/// been spawned: the child uses its Landlock descriptor.
#[derive(Debug)]
pub struct Prepared {
    protections: Protections,
    /// Why there is no sandbox at all (no Landlock and no namespaces, not Linux).
    unavailable: Option<String>,
    #[cfg(target_os = "linux")]
    child: Option<linux::Installed>,
}

impl Prepared {
    pub fn protections(&self) -> &Protections {
        &self.protections
    }

    /// `Some(reason)` when the command will run with no sandbox at all.
    pub fn unavailable(&self) -> Option<&str> {
        self.unavailable.as_deref()
    }

    /// Makes the command confine itself before it execs. Without a sandbox it still gets a
    /// session of its own (no terminal) and the working directory.
    pub fn install(&self, command: &mut std::process::Command, cwd: &Path) {
        #[cfg(target_os = "linux")]
        match &self.child {
            Some(child) => child.install(command),
            None => unconfined(command, cwd),
        }
        #[cfg(not(target_os = "linux"))]
        unconfined(command, cwd);
    }
}

/// An unconfined command (approved under Trusted, or no sandbox here): its directory, and a
/// session of its own so that it has no terminal and Tandem kills its whole group.
pub fn unconfined(command: &mut std::process::Command, cwd: &Path) {
    command.current_dir(cwd);
    #[cfg(unix)]
    #[allow(unsafe_code)]
    // SAFETY: setsid(2) is async-signal-safe and only changes this child's session.
    unsafe {
        std::os::unix::process::CommandExt::pre_exec(command, || {
            if libc::setsid() < 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
}

/// Builds everything the child needs (the container's plan, the rules) in the parent, where
/// allocating and opening files is allowed. `cwd` must lie in the project, outside `.git`.
pub fn prepare(confinement: &Confinement, cwd: &Path) -> Result<Prepared, SandboxError> {
    let cwd = resolve_cwd(confinement, cwd)?;
    // Without a container a copy cannot be shown at the project's path: the command works
    // in the copy itself. An overlay exists only in its holder's namespaces.
    if let Some(view) = &confinement.view
        && !container_available(confinement)
    {
        let ProjectView::Copy(copy) = view else {
            return Err(SandboxError {
                path: confinement.project.clone(),
                reason: "the workspace's overlay needs the container, which this system cannot \
                         build"
                    .into(),
            });
        };
        let project = confinement
            .project
            .canonicalize()
            .unwrap_or(confinement.project.clone());
        let inside = copy.join(cwd.strip_prefix(&project).unwrap_or(Path::new("")));
        let in_copy = Confinement {
            project: copy.clone(),
            view: None,
            ..confinement.clone()
        };
        return prepare(&in_copy, &inside);
    }
    #[cfg(target_os = "linux")]
    {
        linux::prepare(confinement, &cwd)
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = cwd;
        Ok(Prepared {
            protections: Protections::none(),
            unavailable: Some(
                "Tandem's sandbox uses Linux namespaces and Landlock; this system is not Linux"
                    .into(),
            ),
        })
    }
}

/// Whether `c` will run in a container here.
fn container_available(c: &Confinement) -> bool {
    #[cfg(target_os = "linux")]
    {
        !c.in_place && linux::container_supported()
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = c;
        false
    }
}

/// The command's directory, resolved (links followed) against the project: refused outside
/// it or inside `.git`.
fn resolve_cwd(c: &Confinement, cwd: &Path) -> Result<PathBuf, SandboxError> {
    let refuse = |reason: &str| SandboxError {
        path: cwd.to_path_buf(),
        reason: reason.to_string(),
    };
    let project = c
        .project
        .canonicalize()
        .map_err(|e| refuse(&format!("the project cannot be opened: {e}")))?;
    if let Some(view) = &c.view {
        return resolve_in_view(&project, view.root(), cwd).map_err(|e| refuse(&e));
    }
    let joined = project.join(cwd);
    let real = joined
        .canonicalize()
        .map_err(|e| refuse(&format!("the directory cannot be entered: {e}")))?;
    if !real.starts_with(&project) {
        return Err(refuse("the directory lies outside the project"));
    }
    if real.starts_with(project.join(".git")) {
        return Err(refuse("commands cannot run inside .git"));
    }
    if !real.is_dir() {
        return Err(refuse("not a directory"));
    }
    Ok(real)
}

/// `cwd` (absolute below `project`, or relative to it) checked in a view of the project
/// reached at `view`, which must not be canonicalized: each part must be a directory there,
/// not a link, not `.git`. The directory as the command sees it (below `project`).
fn resolve_in_view(project: &Path, view: &Path, cwd: &Path) -> Result<PathBuf, String> {
    let rel = match cwd.strip_prefix(project) {
        Ok(rel) => rel.to_path_buf(),
        Err(_) if cwd.is_relative() => cwd.to_path_buf(),
        Err(_) => return Err("the directory lies outside the project".into()),
    };
    let mut at = PathBuf::new();
    for part in rel.components() {
        match part {
            std::path::Component::Normal(name) if name == ".git" => {
                return Err("commands cannot run inside .git".into());
            }
            std::path::Component::Normal(name) => at.push(name),
            std::path::Component::CurDir => continue,
            _ => return Err("the directory must be a plain path inside the project".into()),
        }
        match std::fs::symlink_metadata(view.join(&at)) {
            Ok(meta) if meta.is_dir() => {}
            Ok(meta) if meta.file_type().is_symlink() => {
                return Err("the directory is reached through a link".into());
            }
            Ok(_) => return Err("not a directory".into()),
            Err(e) => return Err(format!("the directory cannot be entered: {e}")),
        }
    }
    Ok(project.join(at))
}

/// Makes Tandem's own process non-dumpable: its `/proc/<pid>/environ` and memory (API keys)
/// are then closed to other processes of the same user, sandboxed or not. Called once at
/// start; a failure changes nothing else.
pub fn harden_this_process() {
    #[cfg(target_os = "linux")]
    linux::not_dumpable();
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
        match prepare(&confinement, dir.path()) {
            Ok(prepared) if prepared.unavailable.is_none() => prepared.protections,
            Ok(prepared) => Protections {
                notes: prepared.unavailable.into_iter().collect(),
                ..Protections::none()
            },
            _ => Protections::none(),
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_working_directory_must_lie_in_the_project_outside_git() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let project = dir.path().join("p");
        for sub in ["p/src", "p/.git/hooks", "outside"] {
            std::fs::create_dir_all(dir.path().join(sub)).unwrap_or_else(|e| panic!("{e}"));
        }
        #[cfg(unix)]
        for (link, to) in [("p/up", "../outside"), ("p/g", ".git/hooks")] {
            std::os::unix::fs::symlink(to, dir.path().join(link)).unwrap_or_else(|e| panic!("{e}"));
        }
        let c = Confinement::new(&project, dir.path());
        let real = project.canonicalize().unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(
            resolve_cwd(&c, Path::new("src")).ok(),
            Some(real.join("src"))
        );
        assert!(resolve_cwd(&c, &project).is_ok());
        for bad in ["up", "g", ".git", "../outside", "missing"] {
            assert!(resolve_cwd(&c, Path::new(bad)).is_err(), "{bad}");
        }
    }

    /// A program shows what it is installed with, never the home directory's own folders
    /// (`~/.local` holds `share/keyrings`, the Trash, other programs' data), the home
    /// directory, the project's folder or its neighbours.
    #[cfg(unix)]
    #[test]
    fn a_program_shows_its_installation_and_nothing_around_it() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let root = dir.path().canonicalize().unwrap_or_else(|e| panic!("{e}"));
        let home = root.join("home");
        let project = home.join("code/p");
        let hidden = default_hidden(Some(&home));
        let file = |rel: &str| {
            let path = root.join(rel);
            if let Some(parent) = path.parent() {
                std::fs::create_dir_all(parent).unwrap_or_else(|e| panic!("{e}"));
            }
            std::fs::write(&path, "#!/bin/sh\n").unwrap_or_else(|e| panic!("{e}"));
            path
        };
        let pipx = file("home/.local/share/pipx/venvs/srv/bin/srv");
        let link = root.join("home/.local/bin/srv");
        std::fs::create_dir_all(root.join("home/.local/bin")).unwrap_or_else(|e| panic!("{e}"));
        std::os::unix::fs::symlink(&pipx, &link).unwrap_or_else(|e| panic!("{e}"));
        file("home/.venv/pyvenv.cfg");
        file("home/code/p/README.md");
        let shown = |rel: &str| {
            let program = if rel.starts_with('/') {
                PathBuf::from(rel)
            } else {
                file(rel)
            };
            let folders = program_folders(&program, Some(&home), &project, &hidden);
            (folders.iter())
                .map(|f| f.strip_prefix(&root).unwrap_or(f).display().to_string())
                .collect::<Vec<_>>()
        };
        // Its own folder, not the home directory's `.local`, `go` or `.cargo`.
        assert_eq!(shown("home/.local/bin/uvx"), ["home/.local/bin"]);
        assert_eq!(shown("home/go/bin/gopls"), ["home/go/bin"]);
        assert_eq!(shown("home/.cargo/bin/tool"), ["home/.cargo/bin"]);
        // A link: its folder, and the installation it leads to.
        let via_link = program_folders(&link, Some(&home), &project, &hidden);
        assert_eq!(
            via_link,
            [
                root.join("home/.local/bin"),
                root.join("home/.local/share/pipx/venvs/srv")
            ]
        );
        // An installation of its own, in the home directory or anywhere else.
        assert_eq!(shown("home/.venv/bin/python"), ["home/.venv"]);
        assert_eq!(
            shown("home/.nvm/versions/node/v20/bin/npx"),
            ["home/.nvm/versions/node/v20"]
        );
        assert_eq!(shown("opt/pkg/bin/server"), ["opt/pkg"]);
        // In the home directory itself, in one of its own folders, or beside the project:
        // the program alone.
        assert_eq!(shown("home/server"), ["home/server"]);
        assert_eq!(shown("home/bin/tool"), ["home/bin/tool"]);
        assert_eq!(
            shown("home/Downloads/github-mcp-server"),
            ["home/Downloads/github-mcp-server"]
        );
        assert_eq!(shown("home/code/server"), ["home/code/server"]);
        // Hidden, or written with `..`: nothing (a program there does not run confined).
        assert!(shown("home/.config/srv").is_empty());
        assert!(shown("home/.aws/x/bin/srv").is_empty());
        let dotted = root.join("home/code/../.local/../server");
        file("home/server");
        assert_eq!(
            program_folders(&dotted, Some(&home), &project, &hidden),
            [root.join("home/server")]
        );
        // An npm prefix set to `~/.local` is no installation of one program.
        file("home/.local/lib/node_modules/x/package.json");
        assert_eq!(shown("home/.local/bin/npx"), ["home/.local/bin"]);
        // In the project: shown already (as the workspace).
        assert!(shown("home/code/p/bin/server").is_empty());
    }
}
