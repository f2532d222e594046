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

mod confine;
pub(super) mod root;

use crate::sandbox::sys::{check, close_all_but, fork, mirror, reap_until, wait_for, write_file};
use confine::confine_self;
use root::{Op, build_root};

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
