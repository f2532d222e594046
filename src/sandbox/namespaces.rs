//! What the child does between `fork` and `exec`: enter new user and mount namespaces (and an
//! empty network namespace unless the call may use the network), bind-mount the project's
//! `.git` read-only, bring up the namespace's own loopback, then restrict itself with the
//! Landlock ruleset.
//!
//! Directories holding the system's and the session's pathname sockets are covered with an
//! empty tmpfs (see `MASKED`).
//!
//! Everything that allocates or formats happens in the parent ([`plan`]); the child only
//! makes system calls on prepared buffers, as async-signal safety requires after `fork`.

use std::ffi::CString;
use std::os::fd::{AsRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::process::CommandExt;
use std::path::Path;

use super::Confinement;

/// The namespace part of a child's setup.
#[derive(Debug, Clone)]
pub(super) struct Plan {
    flags: libc::c_int,
    uid_map: CString,
    gid_map: CString,
    /// Paths bind-mounted read-only, with the mount flags the remount must keep (a user
    /// namespace may not clear `nosuid`, `nodev`… of the mount it copies).
    read_only: Vec<(CString, libc::c_ulong)>,
    /// Directories covered with an empty private tmpfs: where pathname Unix sockets of the
    /// system and the session live (D-Bus, Docker, X11…), which Landlock before ABI 9 cannot
    /// keep a command from connecting to.
    masked: Vec<CString>,
    loopback: bool,
}

/// Directories masked when the call has no network (with the network, `/run` stays: DNS
/// often goes through `/run/systemd/resolve`).
const MASKED: &[&str] = &["/run", "/var/run", "/tmp/.X11-unix", "/tmp/.ICE-unix"];

/// The plan for `c`, when namespaces work here.
pub(super) fn plan(c: &Confinement, namespaces: bool) -> Option<Plan> {
    if !namespaces {
        return None;
    }
    let git = c.project.join(".git");
    let read_only = match std::fs::symlink_metadata(&git) {
        Ok(meta) if meta.is_dir() || meta.is_file() => {
            let path = CString::new(git.as_os_str().as_bytes()).ok()?;
            vec![(path, kept_flags(&git))]
        }
        _ => Vec::new(),
    };
    let mut plan = plan_with(read_only, !c.network);
    let masked = MASKED.iter().filter(|_| !c.network);
    let real_dir = |d: &&&str| std::fs::symlink_metadata(d).is_ok_and(|m| m.is_dir());
    plan.masked = masked
        .filter(real_dir)
        .filter_map(|d| CString::new(*d).ok())
        .collect();
    Some(plan)
}

fn plan_with(read_only: Vec<(CString, libc::c_ulong)>, isolate: bool) -> Plan {
    // SAFETY-free: getuid/getgid cannot fail.
    let (uid, gid) = ids();
    let mut flags = libc::CLONE_NEWUSER | libc::CLONE_NEWNS;
    if isolate {
        flags |= libc::CLONE_NEWNET;
    }
    let map = |id: u32| CString::new(format!("{id} {id} 1\n")).unwrap_or_default();
    Plan {
        flags,
        uid_map: map(uid),
        gid_map: map(gid),
        read_only,
        masked: Vec::new(),
        loopback: isolate,
    }
}

#[allow(unsafe_code)]
fn ids() -> (u32, u32) {
    // SAFETY: getuid(2) and getgid(2) take no arguments and always succeed.
    unsafe { (libc::getuid(), libc::getgid()) }
}

/// The flags of the mount `path` is on that a read-only bind remount must keep.
#[allow(unsafe_code)]
fn kept_flags(path: &Path) -> libc::c_ulong {
    let Ok(c_path) = CString::new(path.as_os_str().as_bytes()) else {
        return 0;
    };
    // SAFETY: statvfs(3) writes into the zeroed struct we own and reads the NUL-terminated
    // path; a failure leaves it zeroed, and we keep no flags.
    let mut stat: libc::statvfs = unsafe { std::mem::zeroed() };
    if unsafe { libc::statvfs(c_path.as_ptr(), &mut stat) } != 0 {
        return 0;
    }
    let pairs = [
        (libc::ST_NOSUID, libc::MS_NOSUID),
        (libc::ST_NODEV, libc::MS_NODEV),
        (libc::ST_NOEXEC, libc::MS_NOEXEC),
        (libc::ST_NOATIME, libc::MS_NOATIME),
        (libc::ST_NODIRATIME, libc::MS_NODIRATIME),
        (libc::ST_RELATIME, libc::MS_RELATIME),
    ];
    pairs
        .iter()
        .filter(|(st, _)| stat.f_flag & st != 0)
        .fold(0, |acc, (_, ms)| acc | ms)
}

/// Everything the child needs: the namespace plan and the Landlock ruleset's descriptor.
#[derive(Debug)]
pub(super) struct ChildSetup {
    plan: Option<Plan>,
    ruleset: OwnedFd,
}

impl ChildSetup {
    pub(super) fn new(plan: Option<Plan>, ruleset: OwnedFd) -> Self {
        ChildSetup { plan, ruleset }
    }

    /// Registers the setup to run in the child. The descriptor stays open in the parent
    /// until `spawn` returns (the caller holds `Prepared`); were it closed, the restriction
    /// fails with EBADF and so does the spawn.
    #[allow(unsafe_code)]
    pub(super) fn install(&self, command: &mut std::process::Command) {
        let plan = self.plan.clone();
        let fd = self.ruleset.as_raw_fd();
        // SAFETY: the closure runs in the forked child, where only async-signal-safe calls
        // are allowed: it allocates nothing (the plan's buffers were made in the parent and
        // moved in), takes no lock, and only makes system calls.
        unsafe {
            command.pre_exec(move || {
                if let Some(plan) = &plan {
                    enter(plan)?;
                }
                if libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
                if libc::syscall(libc::SYS_landlock_restrict_self, fd, 0u32) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
    }
}

/// Enters the namespaces of `plan`. Runs in the forked child: system calls only.
#[allow(unsafe_code)]
fn enter(plan: &Plan) -> std::io::Result<()> {
    let fail = || Err(std::io::Error::last_os_error());
    // SAFETY: each call gets NUL-terminated strings that live as long as `plan`, or null
    // where the kernel takes null; none of them touches memory we do not own.
    unsafe {
        if libc::unshare(plan.flags) != 0 {
            return fail();
        }
        // Mapping our own ids needs setgroups denied first (user_namespaces(7)).
        write_file(c"/proc/self/setgroups", b"deny")?;
        write_file(c"/proc/self/uid_map", plan.uid_map.as_bytes())?;
        write_file(c"/proc/self/gid_map", plan.gid_map.as_bytes())?;
        let none = std::ptr::null::<libc::c_char>();
        let private = libc::MS_REC | libc::MS_PRIVATE;
        if libc::mount(none, c"/".as_ptr(), none, private, std::ptr::null()) != 0 {
            return fail();
        }
        for (path, keep) in &plan.read_only {
            let p = path.as_ptr();
            let bind = libc::MS_BIND | libc::MS_REC;
            if libc::mount(p, p, none, bind, std::ptr::null()) != 0 {
                return fail();
            }
            let ro = libc::MS_BIND | libc::MS_REMOUNT | libc::MS_RDONLY | keep;
            if libc::mount(none, p, none, ro, std::ptr::null()) != 0 {
                return fail();
            }
        }
        for dir in &plan.masked {
            let flags = libc::MS_NOSUID | libc::MS_NODEV;
            let size = c"size=16m".as_ptr().cast::<libc::c_void>();
            if libc::mount(
                c"tmpfs".as_ptr(),
                dir.as_ptr(),
                c"tmpfs".as_ptr(),
                flags,
                size,
            ) != 0
            {
                return fail();
            }
        }
        if plan.loopback {
            // Best effort: local servers a project's tests start need `lo`; it reaches
            // nothing outside the namespace.
            loopback_up();
        }
    }
    Ok(())
}

#[allow(unsafe_code)]
unsafe fn write_file(path: &std::ffi::CStr, data: &[u8]) -> std::io::Result<()> {
    // SAFETY (caller): `path` is NUL-terminated; `data` is a live slice.
    unsafe {
        let fd = libc::open(path.as_ptr(), libc::O_WRONLY | libc::O_CLOEXEC);
        if fd < 0 {
            return Err(std::io::Error::last_os_error());
        }
        let written = libc::write(fd, data.as_ptr().cast(), data.len());
        let result = match usize::try_from(written) {
            Ok(n) if n == data.len() => Ok(()),
            _ => Err(std::io::Error::last_os_error()),
        };
        libc::close(fd);
        result
    }
}

#[allow(unsafe_code)]
unsafe fn loopback_up() {
    // SAFETY (caller): runs in the child; the ifreq lives on this stack frame.
    unsafe {
        let sock = libc::socket(libc::AF_INET, libc::SOCK_DGRAM | libc::SOCK_CLOEXEC, 0);
        if sock < 0 {
            return;
        }
        let mut req: libc::ifreq = std::mem::zeroed();
        req.ifr_name[0] = b'l' as libc::c_char;
        req.ifr_name[1] = b'o' as libc::c_char;
        req.ifr_ifru.ifru_flags = (libc::IFF_UP | libc::IFF_RUNNING) as libc::c_short;
        libc::ioctl(sock, libc::SIOCSIFFLAGS, &req);
        libc::close(sock);
    }
}

/// Whether this system lets us make the namespaces: a throwaway child tries the whole setup
/// on a temp dir with a `.git`, then exits.
pub(super) fn probe() -> bool {
    let Ok(dir) = tempfile::Builder::new()
        .prefix("tandem-ns-probe-")
        .tempdir()
    else {
        return false;
    };
    let git = dir.path().join(".git");
    if std::fs::create_dir(&git).is_err() {
        return false;
    }
    let Ok(path) = CString::new(git.as_os_str().as_bytes()) else {
        return false;
    };
    let plan = plan_with(vec![(path, kept_flags(&git))], true);
    let mut command = std::process::Command::new("/bin/sh");
    command
        .args(["-c", "exit 0"])
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null());
    install_plan_only(&mut command, plan);
    command.status().is_ok_and(|s| s.success())
}

#[allow(unsafe_code)]
fn install_plan_only(command: &mut std::process::Command, plan: Plan) {
    // SAFETY: as in `ChildSetup::install`: system calls only, on buffers made here.
    unsafe {
        command.pre_exec(move || enter(&plan));
    }
}
