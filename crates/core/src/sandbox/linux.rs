//! The Linux side of [`super::prepare`]: what this kernel can give (checked once, by building
//! a real container for a shell that exits), and the child's plan for one command.

use std::ffi::CString;
use std::os::fd::{AsRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

use super::container::child::{self, Child, Rules};
use super::container::{self, Call};
use super::{Confinement, Limits, Network, Prepared, Protections, SandboxError, landlock};

/// The child's plan, installed on a command; holds the Landlock ruleset open until the
/// spawn returns.
#[derive(Debug)]
pub(super) struct Installed {
    child: Arc<Child>,
    _ruleset: Option<OwnedFd>,
}

impl Installed {
    #[allow(unsafe_code)]
    pub(super) fn install(&self, command: &mut std::process::Command) {
        let child = Arc::clone(&self.child);
        // SAFETY: the closure runs in the forked child, where only async-signal-safe calls
        // are allowed: `child::run` allocates nothing (the plan's buffers were made here and
        // are shared read-only), takes no lock, and only makes system calls.
        unsafe {
            command.pre_exec(move || child::run(&child));
        }
    }
}

/// What this system gives confined commands, found once.
struct Support {
    /// A container can be built (`Ok(true)`: with a process limit), or why not.
    container: Result<bool, String>,
    /// The seccomp filters, or why there are none.
    filters: Result<Vec<seccompiler::BpfProgram>, String>,
}

fn support() -> &'static Support {
    static FOUND: OnceLock<Support> = OnceLock::new();
    FOUND.get_or_init(|| {
        let filters = super::seccomp::filters();
        let container = probe_container(filters.as_ref().ok());
        Support { container, filters }
    })
}

/// Whether containers can be built here.
pub(super) fn container_supported() -> bool {
    support().container.is_ok()
}

/// Builds a container for `/bin/sh -c 'exit 0'`, first with the PID namespace's process cap
/// (Linux ≥ 6.14), then without; why it fails when it does.
fn probe_container(filters: Option<&Vec<seccompiler::BpfProgram>>) -> Result<bool, String> {
    let dir = tempfile::Builder::new()
        .prefix("tandem-container-probe-")
        .tempdir()
        .map_err(|e| format!("no temp dir for the probe: {e}"))?;
    let mut last = String::new();
    for pid_max in [true, false] {
        let c = Confinement {
            readable: Vec::new(),
            hidden: Vec::new(),
            ..Confinement::new(dir.path(), dir.path())
        };
        let limits = c.limits;
        let call = Call {
            confinement: &c,
            stage: container::stage(super::identity()).map_err(|e| e.to_string())?,
            identity: super::identity(),
            pid_max: pid_max.then(|| limits.pid_max()),
            limits,
        };
        let layout = container::layout(&call).map_err(|e| e.to_string())?;
        let cwd = c_string(dir.path()).ok_or("the probe's directory has a NUL byte")?;
        let child = Child {
            world: Some(layout.world),
            cwd,
            parent: parent_pid(),
            rlimits: Vec::new(),
            rules: None,
            filters: filters.cloned().unwrap_or_default(),
        };
        let installed = Installed {
            child: Arc::new(child),
            _ruleset: None,
        };
        let mut command = std::process::Command::new("/bin/sh");
        command
            .args(["-c", "exit 0"])
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null());
        installed.install(&mut command);
        match command.status() {
            Ok(status) if status.success() => return Ok(pid_max),
            Ok(status) => last = format!("a test command in it ended with {status}"),
            Err(e) => last = e.to_string(),
        }
    }
    Err(format!(
        "a container could not be built ({last}){}",
        userns_hint()
    ))
}

/// Why user namespaces may be refused here, when the system says so.
fn userns_hint() -> String {
    let read = |p: &str| {
        std::fs::read_to_string(p)
            .map(|t| t.trim().to_string())
            .ok()
    };
    if read("/proc/sys/kernel/apparmor_restrict_unprivileged_userns").as_deref() == Some("1") {
        return "; AppArmor restricts unprivileged user namespaces \
                (kernel.apparmor_restrict_unprivileged_userns=1)"
            .into();
    }
    if read("/proc/sys/user/max_user_namespaces").as_deref() == Some("0") {
        return "; user namespaces are disabled (user.max_user_namespaces=0)".into();
    }
    if read("/proc/sys/kernel/unprivileged_userns_clone").as_deref() == Some("0") {
        return "; unprivileged user namespaces are disabled \
                (kernel.unprivileged_userns_clone=0)"
            .into();
    }
    String::new()
}

fn c_string(path: &Path) -> Option<CString> {
    CString::new(path.as_os_str().as_bytes()).ok()
}

#[allow(unsafe_code)]
fn parent_pid() -> libc::pid_t {
    // SAFETY: getpid(2) takes no arguments and always succeeds.
    unsafe { libc::getpid() }
}

/// The plan for one command confined as `c`, in the directory `cwd` (resolved, inside the
/// project).
pub(super) fn prepare(c: &Confinement, cwd: &Path) -> Result<Prepared, SandboxError> {
    let support = support();
    let identity = super::identity();
    let limits = c.limits.sane();
    let contained = match c.in_place {
        true => None,
        false => support.container.as_ref().ok().copied(),
    };
    let mut notes = Vec::new();
    let landlock = landlock::ruleset(!c.network && contained.is_none());
    let (ruleset, rights, abi) = match landlock {
        Ok((fd, rights, abi)) => (Some(fd), Some(rights), Some(abi)),
        Err(reason) => {
            notes.push(format!("No Landlock here: {reason}"));
            (None, None, None)
        }
    };
    if contained.is_none() && ruleset.is_none() {
        let why = support
            .container
            .as_ref()
            .err()
            .cloned()
            .unwrap_or_default();
        return Ok(Prepared {
            protections: Protections::none(),
            unavailable: Some(format!("{}; {why}", notes.join("; "))),
            child: None,
        });
    }
    let canonical = |p: &PathBuf| p.canonicalize().ok();
    let hidden: Vec<PathBuf> = c.hidden.iter().filter_map(canonical).collect();
    let (world, grants) = match contained {
        Some(process_cap) => {
            let call = Call {
                confinement: c,
                stage: container::stage(identity)?,
                identity,
                pid_max: process_cap.then(|| limits.pid_max()),
                limits,
            };
            let layout = container::layout(&call)?;
            let grants = rights
                .map(|r| landlock::container_rules(&layout.grants, &hidden, r))
                .unwrap_or_default();
            (Some(layout.world), grants)
        }
        None => {
            match &support.container {
                Err(why) => notes.push(format!("No container here: {why}")),
                Ok(_) => notes.push("Confined in place, as asked".into()),
            }
            let (grants, more) = rights
                .map(|r| landlock::host_rules(c, &hidden, r))
                .unwrap_or_default();
            notes.extend(more);
            (None, grants)
        }
    };
    let rules = match (&ruleset, rights) {
        (Some(fd), Some(rights)) => Some(Rules {
            fd: fd.as_raw_fd(),
            grants: grants
                .iter()
                .filter_map(|(p, bits)| Some((c_string(p)?, *bits)))
                .collect(),
            file_rights: rights.file,
        }),
        _ => None,
    };
    let seccomp = support.filters.as_ref().ok();
    if let Err(why) = &support.filters {
        notes.push(why.clone());
    }
    let cwd_c = c_string(cwd).ok_or_else(|| SandboxError {
        path: cwd.to_path_buf(),
        reason: "the path has a NUL byte".into(),
    })?;
    let nproc = contained.is_some() && identity.uid != 0;
    let child = Child {
        world,
        cwd: cwd_c,
        parent: parent_pid(),
        rlimits: rlimits(&limits, nproc),
        rules,
        filters: seccomp.cloned().unwrap_or_default(),
    };
    let abi_at_least = |n: i32| abi.is_some_and(|a| a >= n);
    let in_container = contained.is_some();
    let network = match (c.network, in_container, abi_at_least(4)) {
        (true, _, _) => Network::Allowed,
        (false, true, _) => Network::Isolated,
        (false, false, true) => Network::TcpDenied,
        (false, false, false) => Network::Unrestricted,
    };
    let protections = Protections {
        landlock_abi: abi,
        container: in_container,
        reads: true,
        writes: true,
        git_read_only: true,
        network,
        // In a PID namespace nothing outside has a number to be signalled by.
        signals: in_container || abi_at_least(6),
        // A network namespace has its own abstract sockets; with the host's network, only
        // Landlock's scope keeps them apart.
        abstract_sockets: (in_container && !c.network) || abi_at_least(6),
        no_terminal: seccomp.is_some(),
        processes_end: in_container,
        limits,
        processes_limited: contained == Some(true) || nproc,
        notes,
    };
    Ok(Prepared {
        protections,
        unavailable: None,
        child: Some(Installed {
            child: Arc::new(child),
            _ruleset: ruleset,
        }),
    })
}

/// The resource limits of `limits`, never above what this process may raise them to.
fn rlimits(limits: &Limits, nproc: bool) -> Vec<(libc::__rlimit_resource_t, libc::rlim_t)> {
    const MIB: u64 = 1024 * 1024;
    let mut wanted = vec![
        (libc::RLIMIT_DATA, limits.memory_mb.saturating_mul(MIB)),
        (libc::RLIMIT_FSIZE, limits.file_size_mb.saturating_mul(MIB)),
        (libc::RLIMIT_CPU, limits.cpu_secs),
        (libc::RLIMIT_CORE, 0),
    ];
    if nproc {
        wanted.push((libc::RLIMIT_NPROC, u64::from(limits.processes)));
    }
    wanted
        .into_iter()
        .map(|(resource, value)| (resource, value.min(hard_limit(resource))))
        .collect()
}

#[allow(unsafe_code)]
fn hard_limit(resource: libc::__rlimit_resource_t) -> libc::rlim_t {
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit(2) writes into the struct we own.
    match unsafe { libc::getrlimit(resource, &mut limit) } {
        0 => limit.rlim_max,
        _ => libc::RLIM_INFINITY,
    }
}

#[allow(unsafe_code)]
pub(super) fn not_dumpable() {
    // SAFETY: prctl(PR_SET_DUMPABLE, 0) only changes a flag of this process.
    unsafe {
        libc::prctl(libc::PR_SET_DUMPABLE, 0, 0, 0, 0);
    }
}
