//! The command confining itself just before `exec`: descriptors above stdio closed on exec,
//! every capability dropped, the Landlock rules added and enforced.

use std::io;

use super::{Child, Rules};
use crate::sandbox::sys::{check, check_long};

/// The command's own restrictions, then back to `std` to exec it. `in_container`: it was
/// forked by the init (and needs a session of its own again).
#[allow(unsafe_code)]
pub(super) fn confine_self(child: &Child, in_container: bool) -> io::Result<()> {
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
