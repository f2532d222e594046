//! The container a confined command runs in: a root built for it, not the host filtered.
//!
//! The root is a fresh tmpfs (read-only once built) holding only:
//! - the system directories, read-only (`/usr`, `/opt`, `/nix`…; `/bin`, `/lib`… as the
//!   host has them, links or directories), and `/sys` read-only;
//! - a minimal `/etc` (see [`etc`]);
//! - a minimal `/dev` (`null`, `zero`, `full`, `random`, `urandom`, a private `shm`; no
//!   terminal), a fresh `/proc` of the new PID namespace (other processes do not exist there;
//!   its `sys` read-only), a private `/tmp`;
//! - the home directory as an empty private tmpfs, with the toolchains and caches of
//!   [`super::toolchains`] mounted read-only at their own paths;
//! - the project, read-write at its own path, its `.git` read-only; the call's temp dir;
//!   the writable directories of the call (an install's package caches).
//!
//! Hidden paths inside anything mounted (a project kept in the home directory holds `.ssh`)
//! are covered with empty read-only mounts. What is not mounted cannot be reached by any
//! path, symlink or socket: there is no home directory, no `/run`, no host `/tmp`.

pub(crate) mod child;
mod etc;
mod private;
mod stage;
mod world;

pub(crate) use stage::stage;

use std::ffi::CString;
use std::os::unix::ffi::OsStrExt;
use std::path::{Component, Path, PathBuf};

use self::child::World;
use self::stage::Stage;
use self::world::world;
use super::{Confinement, Identity, Limits, SandboxError};

/// The system directories shown read-only (each as the host has it: a directory, or a link
/// such as `/bin` → `usr/bin`).
const SYSTEM: &[&str] = &[
    "/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/opt", "/nix", "/snap",
];

/// Below the system directories, what stays hidden: daemons' sockets a command could ask
/// to act outside the container (the Nix daemon builds fixed-output derivations with the
/// network; a read-only mount does not stop `connect`).
const SYSTEM_HIDDEN: &[&str] = &["/nix/var/nix/daemon-socket"];

/// Device files a command may use: reading or writing them touches nothing else.
pub(super) const DEVICES: &[&str] = &["null", "zero", "full", "random", "urandom"];

/// `/proc` entries that write to the kernel: read-only in the container.
const PROC_COVERS: &[&str] = &["sys", "sysrq-trigger", "irq", "bus"];

/// How a command may use a path of its container (for the Landlock rules that repeat the
/// mounts as a second wall).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Access {
    Read,
    ReadWrite,
    /// Listing directories only (the container's root: `ls /`).
    List,
    /// Private to the container (a tmpfs, or the `/etc` and `/dev` made for it), granted
    /// as it is. The writable tmpfs roots are granted whole only where no host directory
    /// holding a hidden path is mounted below them (see [`private`]); `/etc` is read-only
    /// and its host directories' private keys (`ssl/private`) are hidden by their covers.
    PrivateRead,
    PrivateReadWrite,
    /// The agent's workspace at the project's path (an overlay or a copy): read-write, and
    /// granted whole (see [`private::Plan::roots`] for why).
    Workspace,
}

/// The container of one command: the plan the child carries out, and the Landlock grants
/// by path inside it.
#[derive(Debug)]
pub(super) struct Layout {
    pub world: World,
    pub grants: Vec<(PathBuf, Access)>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Kind {
    /// The host's path, read-only (`recursive`: with what is mounted below it).
    ReadOnly {
        src: PathBuf,
        recursive: bool,
    },
    ReadWrite {
        src: PathBuf,
    },
    Device {
        src: PathBuf,
    },
    Tmpfs {
        mode: u32,
        size_mb: u64,
    },
    /// An empty, read-only cover over a hidden directory or file.
    Cover {
        dir: bool,
    },
    Proc,
}

#[derive(Debug)]
struct Mount {
    target: PathBuf,
    kind: Kind,
    /// A host directory shown if it is there when the container is built (see
    /// [`child::root::Op::IfPresent`]): the host may take it away after the layout is
    /// planned. The project, `/etc` and what the container makes itself are not.
    optional: bool,
}

/// A path's depth (its number of normal components): parents are mounted before children.
fn depth(path: &Path) -> usize {
    path.components()
        .filter(|c| matches!(c, Component::Normal(_)))
        .count()
}

fn c_path(prefix: &str, path: &Path) -> Result<CString, SandboxError> {
    let mut bytes = prefix.as_bytes().to_vec();
    bytes.extend_from_slice(path.as_os_str().as_bytes());
    CString::new(bytes).map_err(|_| SandboxError {
        path: path.to_path_buf(),
        reason: "the path has a NUL byte".into(),
    })
}

fn canonical(path: &Path) -> Option<PathBuf> {
    // Most toolchain directories do not exist on a given machine: one `stat` says so.
    std::fs::metadata(path).ok()?;
    path.canonicalize().ok()
}

/// What the builder needs to know of the call besides its confinement.
pub(super) struct Call<'a> {
    pub confinement: &'a Confinement,
    pub stage: &'a Stage,
    pub identity: &'a Identity,
    /// The process limit as the PID namespace's `pid_max` (`None`: this kernel cannot).
    pub pid_max: Option<u32>,
    pub limits: Limits,
}

/// The layout of `call`'s container.
pub(super) fn layout(call: &Call) -> Result<Layout, SandboxError> {
    let c = call.confinement;
    let mut mounts: Vec<Mount> = Vec::new();
    let mut links: Vec<(PathBuf, PathBuf, bool)> = Vec::new();
    let mut grants: Vec<(PathBuf, Access)> = Vec::new();
    let tmp_size = call.limits.tmp_mb;

    for dir in SYSTEM.iter().map(Path::new) {
        match std::fs::symlink_metadata(dir) {
            Ok(m) if m.file_type().is_symlink() => {
                if let Ok(target) = std::fs::read_link(dir) {
                    links.push((dir.to_path_buf(), target, false));
                }
            }
            Ok(m) if m.is_dir() => {
                let src = dir.to_path_buf();
                mounts.push(read_only(&src, true));
                grants.push((src, Access::Read));
            }
            _ => {}
        }
    }
    // Recursive: a user namespace may not bind a mount without what is mounted below it.
    mounts.push(read_only(Path::new("/sys"), true));
    grants.push(("/sys".into(), Access::Read));

    // /etc: the stage's, with the host's directories shown in it; calls with the network
    // see the host's resolver configuration, fresh.
    let etc_dir = Path::new("/etc");
    mounts.push(Mount {
        target: etc_dir.to_path_buf(),
        kind: Kind::ReadOnly {
            src: call.stage.etc.clone(),
            recursive: true,
        },
        optional: false,
    });
    for (name, host) in &call.stage.etc_dirs {
        mounts.push(Mount {
            target: etc_dir.join(name),
            kind: Kind::ReadOnly {
                src: host.clone(),
                recursive: true,
            },
            optional: true,
        });
    }
    if c.network {
        for name in ["resolv.conf", "hosts"] {
            if let Some(real) = canonical(&etc_dir.join(name)).filter(|p| p.is_file()) {
                mounts.push(Mount {
                    target: etc_dir.join(name),
                    kind: Kind::ReadOnly {
                        src: real,
                        recursive: false,
                    },
                    optional: true,
                });
            }
        }
    }
    // `/etc` holds only what was chosen for it (its private keys are covered).
    grants.push((etc_dir.to_path_buf(), Access::PrivateRead));
    grants.push(("/".into(), Access::List));
    grants.push(("/dev".into(), Access::PrivateRead));

    // /dev, /proc, /tmp
    for name in DEVICES {
        let path = Path::new("/dev").join(name);
        mounts.push(Mount {
            target: path.clone(),
            kind: Kind::Device { src: path.clone() },
            optional: false,
        });
        grants.push((path, Access::ReadWrite));
    }
    for (name, to) in [
        ("fd", "/proc/self/fd"),
        ("stdin", "/proc/self/fd/0"),
        ("stdout", "/proc/self/fd/1"),
        ("stderr", "/proc/self/fd/2"),
    ] {
        links.push((Path::new("/dev").join(name), to.into(), false));
    }
    let private = |target: &str, mode: u32| Mount {
        target: target.into(),
        kind: Kind::Tmpfs {
            mode,
            size_mb: tmp_size,
        },
        optional: false,
    };
    mounts.push(private("/dev/shm", 0o1777));
    mounts.push(private("/tmp", 0o1777));
    links.push(("/var/tmp".into(), "/tmp".into(), false));
    mounts.push(Mount {
        target: "/proc".into(),
        kind: Kind::Proc,
        optional: false,
    });
    grants.push(("/proc".into(), Access::Read));

    // The home directory: empty and private; the toolchains inside it by their own paths.
    let home = call.identity.home.clone();
    mounts.push(Mount {
        target: home.clone(),
        kind: Kind::Tmpfs {
            mode: 0o700,
            size_mb: tmp_size,
        },
        optional: false,
    });

    let project = canonical(&c.project).ok_or_else(|| SandboxError {
        path: c.project.clone(),
        reason: "the project directory does not exist".into(),
    })?;
    let mut bound: Vec<PathBuf> = Vec::new();
    let mut bind = |path: &Path, write: bool, mounts: &mut Vec<Mount>, links: &mut Vec<_>| {
        let Some(real) = canonical(path) else {
            return;
        };
        if real == Path::new("/") || (real == home && !write) {
            return;
        }
        if real != path {
            // Reached through a link (`~/.cargo` → `/data/cargo`): the same link inside.
            links.push((path.to_path_buf(), real.clone(), true));
        }
        let kind = match write {
            true => Kind::ReadWrite { src: real.clone() },
            false => Kind::ReadOnly {
                src: real.clone(),
                recursive: true,
            },
        };
        mounts.push(Mount {
            target: real.clone(),
            kind,
            // The project must be there; the toolchains, caches and temp dir may not be.
            optional: real != project,
        });
        bound.push(real);
    };
    for path in &c.readable {
        bind(path, false, &mut mounts, &mut links);
    }
    for path in &c.writable {
        bind(path, true, &mut mounts, &mut links);
    }
    let mut covers = Vec::new();
    match &c.view {
        // The project's path shows the copy.
        Some(super::ProjectView::Copy(copy)) => {
            if let Some(copy) = canonical(copy) {
                // The copy's own secrets, wherever an earlier command moved them (the
                // project's are covered below).
                for secret in crate::folder::loose_secrets_of(&copy, &project) {
                    let (Ok(meta), Ok(inside)) = (
                        std::fs::symlink_metadata(&secret),
                        secret.strip_prefix(&copy),
                    ) else {
                        continue;
                    };
                    if !meta.file_type().is_symlink() {
                        covers.push(Mount {
                            target: project.join(inside),
                            kind: Kind::Cover { dir: meta.is_dir() },
                            optional: false,
                        });
                    }
                }
                mounts.push(Mount {
                    target: project.clone(),
                    kind: Kind::ReadWrite { src: copy },
                    optional: false,
                });
                grants.push((project.clone(), Access::Workspace));
            }
        }
        // In the joined namespaces the project's path is the overlay already.
        _ => bind(&project, true, &mut mounts, &mut links),
    }
    if let Some(temp) = canonical(&c.temp) {
        bind(&temp, true, &mut mounts, &mut links);
    }
    for dir in git_dirs(&project)? {
        mounts.push(read_only(&dir, true));
        grants.push((dir, Access::Read));
    }
    let readable_grants: Vec<PathBuf> = bound.clone();
    for path in readable_grants {
        let write = mounts
            .iter()
            .any(|m| m.target == path && matches!(m.kind, Kind::ReadWrite { .. }));
        let access = match (write, &c.view) {
            (true, Some(_)) if path == project => Access::Workspace,
            (true, _) => Access::ReadWrite,
            (false, _) => Access::Read,
        };
        grants.push((path, access));
    }

    // Hidden paths inside anything shown are covered.
    let mut hidden: Vec<PathBuf> = c.hidden.iter().filter_map(|h| canonical(h)).collect();
    hidden.extend(etc::HIDDEN.iter().map(|h| etc_dir.join(h)));
    hidden.extend(SYSTEM_HIDDEN.iter().map(PathBuf::from));
    let shown: Vec<PathBuf> = mounts
        .iter()
        .filter(|m| matches!(m.kind, Kind::ReadOnly { .. } | Kind::ReadWrite { .. }))
        .map(|m| m.target.clone())
        .collect();
    // The private roots: not granted whole above a hidden path (see [`private`]).
    let link_paths: Vec<PathBuf> = links.iter().map(|(l, _, _)| l.clone()).collect();
    let plan = private::Plan {
        home: &home,
        project: &project,
        workspace: c.view.is_some(),
        targets: mounts.iter().map(|m| m.target.clone()).collect(),
        links: &link_paths,
        shown: &shown,
    };
    let (private_grants, dirs) = plan.roots(&hidden);
    grants.extend(
        private_grants
            .into_iter()
            .map(|p| (p, Access::PrivateReadWrite)),
    );
    for path in hidden {
        let inside = shown.iter().any(|s| path.starts_with(s) && path != *s);
        let covers_project = project.starts_with(&path);
        let Ok(meta) = std::fs::symlink_metadata(&path) else {
            continue;
        };
        if inside && !covers_project && !meta.file_type().is_symlink() {
            mounts.push(Mount {
                target: path,
                kind: Kind::Cover { dir: meta.is_dir() },
                optional: false,
            });
        }
    }
    mounts.extend(covers);
    let world = world(call, mounts, links, &dirs)?;
    Ok(Layout { world, grants })
}

fn read_only(src: &Path, recursive: bool) -> Mount {
    Mount {
        target: src.to_path_buf(),
        kind: Kind::ReadOnly {
            src: src.to_path_buf(),
            recursive,
        },
        optional: true,
    }
}

/// The project's git directories, shown read-only: its `.git`, and for a linked worktree
/// or a submodule (`.git` is a file saying `gitdir: …`) the directories git keeps for it —
/// only when git itself made them so (see [`linked_git_dirs`]). A project with no `.git`
/// yet lets a command write one (a check's scratch copy never has one): what such a file
/// names must not be mounted for the next call. A `.git` that is a symbolic link is refused:
/// the host and the new root (before the switch) resolve a link differently, and whatever
/// it names would be shown.
fn git_dirs(project: &Path) -> Result<Vec<PathBuf>, SandboxError> {
    let git = project.join(".git");
    let Ok(meta) = std::fs::symlink_metadata(&git) else {
        return Ok(Vec::new());
    };
    if meta.file_type().is_symlink() {
        return Err(SandboxError {
            path: git,
            reason: "the project's .git is a symbolic link; commands run only where .git is \
                     a directory or git's own `gitdir:` file"
                .into(),
        });
    }
    let mut out = vec![git.clone()];
    if meta.is_file() {
        out.extend(linked_git_dirs(project, &git));
    }
    out.retain(|d| !d.starts_with(project) || d == &git);
    out.sort();
    out.dedup();
    Ok(out)
}

/// The directories a `.git` file names, when git made them for this project: outside the
/// project, and naming it back — a linked worktree's directory records the path of this
/// `.git` (its `gitdir` file) and lies in the `worktrees` of the common directory it names;
/// a submodule's directory has this project as its `core.worktree`. Nothing otherwise.
fn linked_git_dirs(project: &Path, git: &Path) -> Vec<PathBuf> {
    let text = std::fs::read_to_string(git).unwrap_or_default();
    let Some(dir) = text.trim().strip_prefix("gitdir:").map(str::trim) else {
        return Vec::new();
    };
    let Some(dir) = canonical(&project.join(dir)) else {
        return Vec::new();
    };
    if dir.starts_with(project) || !dir.is_dir() {
        return Vec::new();
    }
    let read = |name: &str| std::fs::read_to_string(dir.join(name)).ok();
    match read("commondir") {
        Some(common) => {
            let back = read("gitdir").and_then(|b| canonical(&dir.join(b.trim())));
            let Some(common) = canonical(&dir.join(common.trim())) else {
                return Vec::new();
            };
            let in_common = dir.parent() == Some(common.join("worktrees").as_path());
            match back.as_deref() == Some(git) && in_common {
                true => vec![dir, common],
                false => Vec::new(),
            }
        }
        None => {
            let worktree = git2::Config::open(&dir.join("config"))
                .and_then(|c| c.get_path("core.worktree"))
                .ok()
                .and_then(|w| canonical(&dir.join(w)));
            match worktree.as_deref() == Some(project) {
                true => vec![dir],
                false => Vec::new(),
            }
        }
    }
}

#[cfg(test)]
mod tests;
