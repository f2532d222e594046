//! Building the container's root in the init: the steps ([`Op`]) prepared in the parent —
//! directories, bind mounts, tmpfs, symlinks, a fresh `/proc` — each applied with raw system
//! calls, and mount attributes set with `mount_setattr`.

use std::ffi::CString;
use std::io;

use super::World;
use crate::sandbox::sys::{check, check_long, errno, loopback_up, write_file};

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
    /// `ops` only when something is at `path` (ENOENT or ENOTDIR: nothing is). A host
    /// directory that may be shown, taken away after the layout was planned (a toolchain
    /// uninstalled, `/nix` removed), is then not shown rather than failing the command; a
    /// cover is not made where the folder it is in is gone.
    IfPresent {
        path: CString,
        ops: Vec<Op>,
    },
    /// A fresh `/proc` for the new PID namespace, with `sys`, `sysrq-trigger`, `irq` and
    /// `bus` made read-only; `pid_max` (the process limit) is written into it first.
    Proc {
        dst: CString,
        pid_max: Option<(CString, CString)>,
        covers: Vec<CString>,
    },
}

/// Builds the new root on a private tmpfs and pivots into it; the host's root is detached.
#[allow(unsafe_code)]
pub(super) fn build_root(world: &World) -> io::Result<()> {
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
            Op::IfPresent { path, ops } => {
                let absent = || {
                    let mut stat: libc::stat = std::mem::zeroed();
                    libc::lstat(path.as_ptr(), &mut stat) != 0
                        && matches!(errno(), libc::ENOENT | libc::ENOTDIR)
                };
                if absent() {
                    return Ok(());
                }
                for op in ops {
                    if let Err(e) = apply(op) {
                        // Taken away meanwhile: as if it had not been there.
                        let gone = matches!(e.raw_os_error(), Some(libc::ENOENT | libc::ENOTDIR));
                        return if gone && absent() { Ok(()) } else { Err(e) };
                    }
                }
            }
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
