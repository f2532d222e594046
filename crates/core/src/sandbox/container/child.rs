//! What the forked child does before the command runs. Everything here runs between `fork`
//! and `exec` of a multi-threaded program, so it only makes system calls on buffers prepared
//! in the parent: no allocation, no locks, no formatting.
//!
//! With a container, three processes:
//! - the **outer** process (the one Tandem spawned, in Tandem's PID namespace) takes a
//!   session of its own, makes the namespaces, forks the container's init and waits for it,
//!   then exits as the command did. Tandem times out, cancels and kills through it: killing
//!   its process group kills the init, and the kernel then kills everything in the PID
//!   namespace, whatever session or group it moved to;
//! - the **init** (PID 1 of the new namespace) builds the root, forks the command, reaps
//!   every orphan, and when the command ends exits, which ends the namespace;
//! - the **command** takes a session of its own (no controlling terminal), enters its
//!   working directory, takes the limits, drops every capability, restricts itself with
//!   Landlock and seccomp, and returns to `std`, which execs it.
//!
//! A failure in any of them before `exec` is returned as an error, which `std` reports to
//! the parent through its own pipe: the spawn fails, nothing runs.

use std::ffi::CString;
use std::io;

/// One step of building the container's root: sources are the host's paths, targets are
/// below [`World::root`], where the new root is mounted.
#[derive(Debug, Clone)]
pub(crate) enum Op {
    Mkdir {
        path: CString,
        mode: libc::mode_t,
    },
    /// A mount point: an empty directory or file, made only if nothing is there yet (a
    /// path inside an earlier bind exists already, possibly read-only).
    MountPoint {
        path: CString,
        dir: bool,
    },
    /// `optional`: a convenience link (a toolchain reached through a symlink); failing to
    /// make it is not an error.
    Symlink {
        target: CString,
        link: CString,
        optional: bool,
    },
    Bind {
        src: CString,
        dst: CString,
        recursive: bool,
        /// `MOUNT_ATTR_*` set on the new mount (and, when recursive, every mount below it).
        attrs: u64,
    },
    Tmpfs {
        dst: CString,
        /// `mode=…,size=…`
        data: CString,
        flags: libc::c_ulong,
    },
    /// `attrs` set on the mount at `path` and every mount below it.
    Seal {
        path: CString,
        attrs: u64,
    },
    /// A fresh `/proc` for the new PID namespace, with `sys`, `sysrq-trigger`, `irq` and
    /// `bus` made read-only; `pid_max` (the process limit) is written into it first.
    Proc {
        dst: CString,
        pid_max: Option<(CString, CString)>,
        covers: Vec<CString>,
    },
}

/// The namespaces and the root of one command.
#[derive(Debug, Clone)]
pub(crate) struct World {
    /// Namespaces joined first (a view's holder's): their user namespace maps the user, so
    /// no new one is made.
    pub join: Option<std::sync::Arc<crate::sandbox::overlay::Namespaces>>,
    /// The host's empty directory the new root (a tmpfs) is mounted on, in the new mount
    /// namespace; and where the host's root goes for the moment of the switch.
    pub root: CString,
    pub old: CString,
    pub flags: libc::c_int,
    pub uid_map: CString,
    pub gid_map: CString,
    pub ops: Vec<Op>,
    pub loopback: bool,
}

/// The Landlock restriction the command applies to itself: a ruleset made in the parent
/// (its descriptor, open until the spawn returns) and the rules added here, by path, as the
/// command sees the paths.
#[derive(Debug, Clone)]
pub(crate) struct Rules {
    pub fd: libc::c_int,
    /// Paths and the access rights granted beneath them (directory rights; masked with
    /// `file_rights` when the path is a file).
    pub grants: Vec<(CString, u64)>,
    pub file_rights: u64,
}

/// Everything the child needs, made in the parent.
#[derive(Debug, Clone)]
pub(crate) struct Child {
    /// `None`: no namespaces here; the command is confined in place (Landlock, seccomp,
    /// limits, a session of its own).
    pub world: Option<World>,
    pub cwd: CString,
    /// Tandem's pid: the outer process stops if Tandem is gone before it could notice.
    pub parent: libc::pid_t,
    pub rlimits: Vec<(libc::__rlimit_resource_t, libc::rlim_t)>,
    pub rules: Option<Rules>,
    /// seccomp programs, installed in order.
    pub filters: Vec<seccompiler::BpfProgram>,
}

fn check(result: libc::c_int) -> io::Result<()> {
    match result {
        -1 => Err(io::Error::last_os_error()),
        _ => Ok(()),
    }
}

fn check_long(result: libc::c_long) -> io::Result<()> {
    match result {
        -1 => Err(io::Error::last_os_error()),
        _ => Ok(()),
    }
}

/// Runs in the child `std` forked. Returns `Ok` only in the process that must exec the
/// command.
#[allow(unsafe_code)]
pub(crate) fn run(child: &Child) -> io::Result<()> {
    // SAFETY: setsid(2) takes no arguments. A new session: no controlling terminal, and a
    // process group of its own that Tandem kills as a whole.
    check(unsafe { libc::setsid() })?;
    match &child.world {
        None => confine_self(child, false),
        Some(world) => outer(child, world),
    }
}

/// The outer process: makes the namespaces, forks the init and mirrors how the command
/// ended. Never returns `Ok` (it must not exec).
#[allow(unsafe_code)]
fn outer(child: &Child, world: &World) -> io::Result<()> {
    // Writing our own `uid_map` and `setgroups` needs this process's `/proc` files to be
    // ours, which they are only while it is dumpable: a user who is not root (Tandem makes
    // itself non-dumpable at start) could not build a container otherwise. Dumpable only
    // for these writes, before anything runs in the namespaces.
    // SAFETY: prctl(PR_SET_DUMPABLE) changes a flag of this process.
    unsafe {
        libc::prctl(libc::PR_SET_DUMPABLE, 1, 0, 0, 0);
    }
    let entered = enter(world);
    // The init is a copy of Tandem (its memory holds keys): closed to inspection even by a
    // process of the same user, whatever Tandem itself was set to.
    // SAFETY: as above.
    unsafe {
        libc::prctl(libc::PR_SET_DUMPABLE, 0, 0, 0, 0);
    }
    entered?;
    let mut status = [0; 2];
    let mut alive = [0; 2];
    // SAFETY: pipe2(2) fills the two-element arrays we own.
    unsafe {
        check(libc::pipe2(status.as_mut_ptr(), libc::O_CLOEXEC))?;
        check(libc::pipe2(alive.as_mut_ptr(), libc::O_CLOEXEC))?;
    }
    match fork()? {
        0 => {
            // SAFETY: closing our copies of the ends the other side uses.
            unsafe {
                libc::close(status[0]);
                libc::close(alive[1]);
            }
            init(child, world, status[1], alive[0])
        }
        init_pid => {
            // SAFETY: closing descriptors we own; the init holds its own copies.
            unsafe {
                libc::close(status[1]);
                libc::close(alive[0]);
            }
            close_all_but(&[status[0], alive[1]]);
            // Tandem gone (killed) before we could notice: stop, taking the init with us.
            // SAFETY: prctl and getppid change and read only this process's state.
            unsafe {
                libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL, 0, 0, 0);
                if libc::getppid() != child.parent {
                    libc::kill(init_pid, libc::SIGKILL);
                    libc::_exit(126);
                }
            }
            let code = wait_for(init_pid);
            let mut raw = [0u8; 4];
            // SAFETY: reads into the 4-byte buffer we own.
            let got = unsafe { libc::read(status[0], raw.as_mut_ptr().cast(), 4) };
            let command_status = match got {
                4 => i32::from_ne_bytes(raw),
                // The init ended before the command (it failed to set up, and `std` has
                // reported why): exit as it did.
                _ => code,
            };
            mirror(command_status)
        }
    }
}

/// PID 1 of the container: builds the root, forks the command, reaps until it ends.
#[allow(unsafe_code)]
fn init(child: &Child, world: &World, status: libc::c_int, alive: libc::c_int) -> io::Result<()> {
    // SAFETY: prctl changes this process's own death signal; the read is on our pipe end
    // (non-blocking: EAGAIN means the outer process is alive, 0 means it is gone).
    unsafe {
        libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL, 0, 0, 0);
        let flags = libc::fcntl(alive, libc::F_GETFL);
        libc::fcntl(alive, libc::F_SETFL, flags | libc::O_NONBLOCK);
        let mut byte = 0u8;
        if libc::read(alive, (&raw mut byte).cast(), 1) == 0 {
            libc::_exit(126);
        }
    }
    build_root(world)?;
    match fork()? {
        0 => {
            // SAFETY: closing the init's pipe ends in the command.
            unsafe {
                libc::close(status);
                libc::close(alive);
            }
            confine_self(child, true)
        }
        command => {
            close_all_but(&[status]);
            let code = reap_until(command);
            // SAFETY: writes 4 bytes from a local to our pipe end, then exits without
            // running anything of the parent's.
            unsafe {
                let bytes = code.to_ne_bytes();
                libc::write(status, bytes.as_ptr().cast(), 4);
                libc::_exit(0)
            }
        }
    }
}

/// Unshares the namespaces and maps the one user and group into the new user namespace.
#[allow(unsafe_code)]
fn enter(world: &World) -> io::Result<()> {
    // SAFETY: setns(2) takes descriptors the parent opened (kept open by the plan);
    // unshare(2) takes flags; the files are written from NUL-terminated literals and the
    // parent's buffers.
    unsafe {
        if let Some(join) = &world.join {
            let (user, mount) = join.raw();
            check(libc::setns(user, libc::CLONE_NEWUSER))?;
            check(libc::setns(mount, libc::CLONE_NEWNS))?;
            return check(libc::unshare(world.flags));
        }
        check(libc::unshare(world.flags))?;
        // Mapping our own ids needs setgroups denied first (user_namespaces(7)).
        write_file(c"/proc/self/setgroups", b"deny")?;
        write_file(c"/proc/self/uid_map", world.uid_map.as_bytes())?;
        write_file(c"/proc/self/gid_map", world.gid_map.as_bytes())?;
    }
    Ok(())
}

/// Builds the new root on a private tmpfs and pivots into it; the host's root is detached.
#[allow(unsafe_code)]
fn build_root(world: &World) -> io::Result<()> {
    let none = std::ptr::null::<libc::c_char>();
    // SAFETY: every path is NUL-terminated (literals or the parent's CStrings); null is
    // passed only where mount(2) and pivot_root(2) take it.
    unsafe {
        check(libc::mount(
            none,
            c"/".as_ptr(),
            none,
            libc::MS_REC | libc::MS_PRIVATE,
            std::ptr::null(),
        ))?;
        let tmpfs = c"tmpfs".as_ptr();
        let small = c"mode=0755,size=16m".as_ptr().cast();
        let nosuid = libc::MS_NOSUID | libc::MS_NODEV;
        check(libc::mount(
            tmpfs,
            world.root.as_ptr(),
            tmpfs,
            nosuid,
            small,
        ))?;
        for op in &world.ops {
            apply(op)?;
        }
        check(libc::mkdir(world.old.as_ptr(), 0o700))?;
        check(libc::chdir(world.root.as_ptr()))?;
        check_long(libc::syscall(
            libc::SYS_pivot_root,
            c".".as_ptr(),
            c".old".as_ptr(),
        ))?;
        check(libc::chdir(c"/".as_ptr()))?;
        check(libc::umount2(c"/.old".as_ptr(), libc::MNT_DETACH))?;
        check(libc::rmdir(c"/.old".as_ptr()))?;
        set_attrs(c"/", false, libc::MOUNT_ATTR_RDONLY)?;
        libc::sethostname(c"tandem".as_ptr(), 6);
        if world.loopback {
            // Local servers a project's tests start need `lo`; it reaches nothing outside.
            loopback_up();
        }
    }
    Ok(())
}

#[allow(unsafe_code)]
fn apply(op: &Op) -> io::Result<()> {
    let none = std::ptr::null::<libc::c_char>();
    // SAFETY: as in `build_root`: the parent's NUL-terminated buffers, nulls where allowed.
    unsafe {
        match op {
            Op::Mkdir { path, mode } => {
                if libc::mkdir(path.as_ptr(), *mode) != 0 && errno() != libc::EEXIST {
                    return Err(io::Error::last_os_error());
                }
            }
            Op::MountPoint { path, dir } => {
                let mut stat: libc::stat = std::mem::zeroed();
                if libc::lstat(path.as_ptr(), &mut stat) != 0 {
                    if *dir {
                        check(libc::mkdir(path.as_ptr(), 0o755))?;
                    } else {
                        let flags =
                            libc::O_WRONLY | libc::O_CREAT | libc::O_CLOEXEC | libc::O_NOFOLLOW;
                        let fd = libc::open(path.as_ptr(), flags, 0o644 as libc::c_uint);
                        if fd < 0 {
                            return Err(io::Error::last_os_error());
                        }
                        libc::close(fd);
                    }
                }
            }
            Op::Symlink {
                target,
                link,
                optional,
            } => {
                if libc::symlink(target.as_ptr(), link.as_ptr()) != 0 && !optional {
                    return Err(io::Error::last_os_error());
                }
            }
            Op::Bind {
                src,
                dst,
                recursive,
                attrs,
            } => {
                let mut flags = libc::MS_BIND;
                if *recursive {
                    flags |= libc::MS_REC;
                }
                check(libc::mount(
                    src.as_ptr(),
                    dst.as_ptr(),
                    none,
                    flags,
                    std::ptr::null(),
                ))?;
                set_attrs(dst, *recursive, *attrs)?;
            }
            Op::Seal { path, attrs } => set_attrs(path, true, *attrs)?,
            Op::Tmpfs { dst, data, flags } => {
                let tmpfs = c"tmpfs".as_ptr();
                check(libc::mount(
                    tmpfs,
                    dst.as_ptr(),
                    tmpfs,
                    *flags,
                    data.as_ptr().cast(),
                ))?;
            }
            Op::Proc {
                dst,
                pid_max,
                covers,
            } => {
                let proc = c"proc".as_ptr();
                let flags = libc::MS_NOSUID | libc::MS_NODEV | libc::MS_NOEXEC;
                check(libc::mount(
                    proc,
                    dst.as_ptr(),
                    proc,
                    flags,
                    std::ptr::null(),
                ))?;
                if let Some((path, value)) = pid_max {
                    write_file(path, value.as_bytes())?;
                }
                for cover in covers {
                    let bind = libc::MS_BIND | libc::MS_REC;
                    if libc::mount(cover.as_ptr(), cover.as_ptr(), none, bind, std::ptr::null())
                        == 0
                    {
                        set_attrs(cover, true, libc::MOUNT_ATTR_RDONLY)?;
                    }
                }
            }
        }
    }
    Ok(())
}

/// `struct mount_attr` of `<linux/mount.h>`.
#[repr(C)]
struct MountAttr {
    attr_set: u64,
    attr_clr: u64,
    propagation: u64,
    userns_fd: u64,
}

/// Sets `attrs` (`MOUNT_ATTR_*`) on the mount at `path` (and below it when `recursive`).
/// Only ever adds restrictions, which a user namespace may always do.
#[allow(unsafe_code)]
fn set_attrs(path: &std::ffi::CStr, recursive: bool, attrs: u64) -> io::Result<()> {
    if attrs == 0 {
        return Ok(());
    }
    let attr = MountAttr {
        attr_set: attrs,
        attr_clr: 0,
        propagation: 0,
        userns_fd: 0,
    };
    let flags = if recursive { libc::AT_RECURSIVE } else { 0 };
    // SAFETY: mount_setattr(2) reads the struct we own, of the size we pass, and the path.
    check_long(unsafe {
        libc::syscall(
            libc::SYS_mount_setattr,
            libc::AT_FDCWD,
            path.as_ptr(),
            flags as libc::c_uint,
            &attr as *const MountAttr,
            std::mem::size_of::<MountAttr>(),
        )
    })
}

/// The command's own restrictions, then back to `std` to exec it. `in_container`: it was
/// forked by the init (and needs a session of its own again).
#[allow(unsafe_code)]
fn confine_self(child: &Child, in_container: bool) -> io::Result<()> {
    // SAFETY: each call takes plain values or the parent's NUL-terminated buffers.
    unsafe {
        if in_container {
            check(libc::setsid())?;
        }
        close_on_exec_above_stdio();
        check(libc::chdir(child.cwd.as_ptr()))?;
        for (resource, value) in &child.rlimits {
            let limit = libc::rlimit {
                rlim_cur: *value,
                rlim_max: *value,
            };
            check(libc::setrlimit(*resource, &limit))?;
        }
        drop_capabilities();
        check(libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0))?;
        if let Some(rules) = &child.rules {
            restrict(rules)?;
        }
        for filter in &child.filters {
            // seccompiler's `sock_filter` is `#[repr(C)]` with the kernel's layout, as libc's.
            let program = libc::sock_fprog {
                len: u16::try_from(filter.len()).unwrap_or(u16::MAX),
                filter: filter.as_ptr().cast::<libc::sock_filter>().cast_mut(),
            };
            check_long(libc::syscall(
                libc::SYS_seccomp,
                libc::SECCOMP_SET_MODE_FILTER,
                0,
                &program as *const libc::sock_fprog,
            ))?;
        }
    }
    Ok(())
}

/// Every descriptor but stdin, stdout and stderr closes when the command execs: Tandem's
/// own are close-on-exec already, but one it inherited without the flag (from a terminal,
/// an IDE, a launcher: a socket to a session bus or an agent) would be a channel out of
/// the container. Marked rather than closed: `std` reports a failed exec through its own
/// descriptor until then.
#[allow(unsafe_code)]
fn close_on_exec_above_stdio() {
    const CLOSE_RANGE_CLOEXEC: libc::c_uint = 1 << 2;
    // SAFETY: close_range(2) and fcntl(2) change only this process's descriptor flags.
    unsafe {
        let marked = libc::syscall(
            libc::SYS_close_range,
            3 as libc::c_uint,
            libc::c_uint::MAX,
            CLOSE_RANGE_CLOEXEC,
        );
        if marked != 0 {
            // Before Linux 5.11: each descriptor up to the limit.
            let mut limit = libc::rlimit {
                rlim_cur: 0,
                rlim_max: 0,
            };
            libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit);
            let top = libc::c_int::try_from(limit.rlim_cur.min(1 << 20)).unwrap_or(1 << 20);
            for fd in 3..top {
                let flags = libc::fcntl(fd, libc::F_GETFD);
                if flags >= 0 {
                    libc::fcntl(fd, libc::F_SETFD, flags | libc::FD_CLOEXEC);
                }
            }
        }
    }
}

/// Every capability dropped: the bounding set (so none comes back at exec, even as root in
/// the namespace), the ambient set, and the current ones. Failures are left: a process that
/// may not drop its bounding set had no capabilities to begin with.
#[allow(unsafe_code)]
fn drop_capabilities() {
    #[repr(C)]
    struct Header {
        version: u32,
        pid: libc::c_int,
    }
    #[repr(C)]
    #[derive(Clone, Copy)]
    struct Data {
        effective: u32,
        permitted: u32,
        inheritable: u32,
    }
    // SAFETY: prctl takes plain values; capset(2) reads the header and the two data words
    // we own (`_LINUX_CAPABILITY_VERSION_3`).
    unsafe {
        libc::prctl(
            libc::PR_CAP_AMBIENT,
            libc::PR_CAP_AMBIENT_CLEAR_ALL,
            0,
            0,
            0,
        );
        for cap in 0..64 {
            if libc::prctl(libc::PR_CAPBSET_READ, cap, 0, 0, 0) < 0 {
                break;
            }
            libc::prctl(libc::PR_CAPBSET_DROP, cap, 0, 0, 0);
        }
        let header = Header {
            version: 0x2008_0522,
            pid: 0,
        };
        let data = [Data {
            effective: 0,
            permitted: 0,
            inheritable: 0,
        }; 2];
        libc::syscall(libc::SYS_capset, &header as *const Header, data.as_ptr());
    }
}

/// `struct landlock_path_beneath_attr` of `<linux/landlock.h>` (packed).
#[repr(C, packed)]
struct PathBeneath {
    allowed_access: u64,
    parent_fd: i32,
}

/// Adds the rules by path (skipping paths that do not exist) and restricts this process.
#[allow(unsafe_code)]
fn restrict(rules: &Rules) -> io::Result<()> {
    const RULE_PATH_BENEATH: libc::c_int = 1;
    for (path, rights) in &rules.grants {
        // SAFETY: open(2) on a NUL-terminated path; fstat(2) into a zeroed struct we own;
        // landlock_add_rule(2) reads the packed attribute we own.
        unsafe {
            let fd = libc::open(path.as_ptr(), libc::O_PATH | libc::O_CLOEXEC);
            if fd < 0 {
                continue;
            }
            let mut stat: libc::stat = std::mem::zeroed();
            let is_dir =
                libc::fstat(fd, &mut stat) == 0 && stat.st_mode & libc::S_IFMT == libc::S_IFDIR;
            let access = if is_dir {
                *rights
            } else {
                *rights & rules.file_rights
            };
            let attr = PathBeneath {
                allowed_access: access,
                parent_fd: fd,
            };
            let added = libc::syscall(
                libc::SYS_landlock_add_rule,
                rules.fd,
                RULE_PATH_BENEATH,
                &attr as *const PathBeneath,
                0u32,
            );
            libc::close(fd);
            check_long(added)?;
        }
    }
    // SAFETY: landlock_restrict_self(2) takes the ruleset descriptor and no flags.
    check_long(unsafe { libc::syscall(libc::SYS_landlock_restrict_self, rules.fd, 0u32) })
}

#[allow(unsafe_code)]
fn fork() -> io::Result<libc::pid_t> {
    // SAFETY: clone(2) with only SIGCHLD is a plain fork without the C library's fork
    // handlers (which may take locks another thread of the parent held).
    let pid = unsafe { libc::syscall(libc::SYS_clone, libc::SIGCHLD, 0, 0, 0, 0) };
    match pid {
        -1 => Err(io::Error::last_os_error()),
        pid => Ok(libc::pid_t::try_from(pid).unwrap_or(-1)),
    }
}

/// Waits for `pid`; its wait status.
#[allow(unsafe_code)]
fn wait_for(pid: libc::pid_t) -> libc::c_int {
    let mut status = 0;
    loop {
        // SAFETY: waitpid(2) writes the status into our local.
        let got = unsafe { libc::waitpid(pid, &mut status, 0) };
        if got == pid {
            return status;
        }
        if got < 0 && errno() != libc::EINTR {
            return 127 << 8;
        }
    }
}

/// As PID 1: reaps every child (orphans are re-parented here) until `command` ends.
#[allow(unsafe_code)]
fn reap_until(command: libc::pid_t) -> libc::c_int {
    let mut status = 0;
    loop {
        // SAFETY: waitpid(2) writes the status into our local.
        let got = unsafe { libc::waitpid(-1, &mut status, 0) };
        if got == command {
            return status;
        }
        if got < 0 && errno() != libc::EINTR {
            return 127 << 8;
        }
    }
}

/// Ends this process as the wait status `status` says: the same exit code, or the same
/// signal (without a core dump).
#[allow(unsafe_code)]
fn mirror(status: libc::c_int) -> ! {
    // SAFETY: plain system calls on this process; `_exit` never returns.
    unsafe {
        if libc::WIFSIGNALED(status) {
            let signal = libc::WTERMSIG(status);
            let none = libc::rlimit {
                rlim_cur: 0,
                rlim_max: 0,
            };
            libc::setrlimit(libc::RLIMIT_CORE, &none);
            libc::signal(signal, libc::SIG_DFL);
            let mut set: libc::sigset_t = std::mem::zeroed();
            libc::sigemptyset(&mut set);
            libc::sigaddset(&mut set, signal);
            libc::sigprocmask(libc::SIG_UNBLOCK, &set, std::ptr::null_mut());
            libc::kill(libc::getpid(), signal);
            libc::_exit(128 + signal);
        }
        libc::_exit(libc::WEXITSTATUS(status))
    }
}

/// Closes every descriptor but `keep` (at most four).
#[allow(unsafe_code)]
fn close_all_but(keep: &[libc::c_int]) {
    let mut sorted = [-1; 4];
    for (slot, fd) in sorted.iter_mut().zip(keep) {
        *slot = *fd;
    }
    sorted.sort_unstable();
    let mut from: libc::c_uint = 0;
    for fd in sorted
        .iter()
        .filter_map(|fd| libc::c_uint::try_from(*fd).ok())
    {
        if fd > from {
            // SAFETY: close_range(2) closes descriptors of this process only.
            unsafe {
                libc::syscall(libc::SYS_close_range, from, fd - 1, 0);
            }
        }
        from = fd + 1;
    }
    // SAFETY: as above, the rest of the table.
    unsafe {
        libc::syscall(libc::SYS_close_range, from, libc::c_uint::MAX, 0);
    }
}

fn errno() -> libc::c_int {
    io::Error::last_os_error().raw_os_error().unwrap_or(0)
}

#[allow(unsafe_code)]
pub(crate) unsafe fn write_file(path: &std::ffi::CStr, data: &[u8]) -> io::Result<()> {
    // SAFETY (caller): `path` is NUL-terminated; `data` is a live slice.
    unsafe {
        let fd = libc::open(path.as_ptr(), libc::O_WRONLY | libc::O_CLOEXEC);
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        let written = libc::write(fd, data.as_ptr().cast(), data.len());
        let result = match usize::try_from(written) {
            Ok(n) if n == data.len() => Ok(()),
            _ => Err(io::Error::last_os_error()),
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
