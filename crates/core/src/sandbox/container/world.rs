//! From a layout's mounts, links and files to the child's plan ([`World`]): every mount
//! point's parents made first, each mount as the [`Op`] that makes it.

use std::collections::BTreeSet;
use std::ffi::CString;
use std::path::{Component, Path, PathBuf};

use super::child::World;
use super::child::root::Op;
use super::{Call, Kind, Mount, PROC_COVERS, c_path, depth};
use crate::sandbox::SandboxError;

/// Turns the mounts, links and directories into the child's steps: parents first, each
/// mount point made where nothing is yet.
pub(super) fn world(
    call: &Call,
    mut mounts: Vec<Mount>,
    links: Vec<(PathBuf, PathBuf, bool)>,
    dirs: &[PathBuf],
) -> Result<World, SandboxError> {
    let new = call.stage.root.to_string_lossy().into_owned();
    let new = new.as_str();
    let c = call.confinement;
    // One mount per target: a writable one wins over a read-only one of the same path.
    mounts.sort_by_key(|m| (depth(&m.target), !matches!(m.kind, Kind::ReadWrite { .. })));
    let mut seen = BTreeSet::new();
    mounts.retain(|m| seen.insert(m.target.clone()));
    let mut ops = Vec::new();
    let mut made: BTreeSet<PathBuf> = BTreeSet::new();
    // Links at the top (`/bin` → `usr/bin`) before anything is made below their names.
    for (link, target, optional) in links.iter().filter(|(l, _, _)| depth(l) == 1) {
        ops.push(symlink(new, link, target, *optional)?);
    }
    // Devices last: everything mounted before them is sealed `nosuid,nodev` in one call
    // (a device node on a `nodev` mount cannot be opened), so the other mounts need no call
    // of their own for it.
    let (devices, others): (Vec<&Mount>, Vec<&Mount>) = mounts
        .iter()
        .partition(|m| matches!(m.kind, Kind::Device { .. }));
    for (i, mount) in others.iter().chain(&devices).enumerate() {
        if i == others.len() {
            ops.push(Op::Seal {
                path: c_path(new, Path::new(""))?,
                attrs: libc::MOUNT_ATTR_NOSUID | libc::MOUNT_ATTR_NODEV,
            });
        }
        let target = c_path(new, &mount.target)?;
        if let (Kind::Cover { dir }, Some(parent)) = (&mount.kind, mount.target.parent()) {
            // Inside a mount showing the host (see `layout`). Made whether or not what it
            // hides is there now (taken away, it may come back while the command runs), so
            // where it is no longer there in a read-only mount the command does not start.
            // Only where its folder is gone too is there nothing to cover: a mount shows the
            // folder it was made on, not one made again at its path.
            let point = Op::MountPoint {
                path: target.clone(),
                dir: *dir,
            };
            let cover = mount_op(&mount.kind, target, new, call)?;
            ops.push(Op::IfPresent {
                path: c_path(new, parent)?,
                ops: vec![point, cover],
            });
            continue;
        }
        // An optional mount's steps are skipped together: what they make is not counted as
        // made for the mounts after it.
        let mut own = Vec::new();
        let mut optional_made;
        let made = match mount.optional {
            true => {
                optional_made = made.clone();
                &mut optional_made
            }
            false => &mut made,
        };
        if let Some(parent) = mount.target.parent() {
            mkdirs(new, parent, made, &mut own)?;
        }
        let dir = match &mount.kind {
            Kind::ReadOnly { src, .. } | Kind::ReadWrite { src } => src.is_dir(),
            Kind::Device { .. } => false,
            Kind::Cover { dir } => *dir,
            Kind::Tmpfs { .. } | Kind::Proc => true,
        };
        own.push(Op::MountPoint {
            path: target.clone(),
            dir,
        });
        if dir {
            made.insert(mount.target.clone());
        }
        own.push(mount_op(&mount.kind, target, new, call)?);
        match (&mount.kind, mount.optional) {
            (Kind::ReadOnly { src, .. } | Kind::ReadWrite { src }, true) => {
                ops.push(Op::IfPresent {
                    path: c_path("", src)?,
                    ops: own,
                });
            }
            _ => ops.extend(own),
        }
    }
    // Directories the container makes for itself, once what they are in is mounted.
    for dir in dirs {
        mkdirs(new, dir, &mut made, &mut ops)?;
    }
    for (link, target, optional) in links.iter().filter(|(l, _, _)| depth(l) > 1) {
        if let Some(parent) = link.parent() {
            mkdirs(new, parent, &mut made, &mut ops)?;
        }
        ops.push(symlink(new, link, target, *optional)?);
    }
    let mut flags = libc::CLONE_NEWNS
        | libc::CLONE_NEWPID
        | libc::CLONE_NEWIPC
        | libc::CLONE_NEWUTS
        | libc::CLONE_NEWCGROUP;
    if !c.network {
        flags |= libc::CLONE_NEWNET;
    }
    // A view's namespaces are joined (its user namespace maps the user already).
    let join = match &c.view {
        Some(crate::sandbox::ProjectView::Overlay { namespaces, .. }) => {
            Some(std::sync::Arc::clone(namespaces))
        }
        _ => {
            flags |= libc::CLONE_NEWUSER;
            None
        }
    };
    let map = |id: u32| CString::new(format!("{id} {id} 1\n")).unwrap_or_default();
    Ok(World {
        join,
        root: c_path(new, Path::new(""))?,
        old: c_path(new, Path::new("/.old"))?,
        flags,
        uid_map: map(call.identity.uid),
        gid_map: map(call.identity.gid),
        ops,
        loopback: !c.network,
    })
}

/// Makes `path` and its parents in the new root (below `new`), those not made yet.
fn mkdirs(
    new: &str,
    path: &Path,
    made: &mut BTreeSet<PathBuf>,
    ops: &mut Vec<Op>,
) -> Result<(), SandboxError> {
    let mut at = PathBuf::from("/");
    for part in path
        .components()
        .filter(|c| matches!(c, Component::Normal(_)))
    {
        at.push(part);
        if made.insert(at.clone()) {
            ops.push(Op::Mkdir {
                path: c_path(new, &at)?,
                mode: 0o755,
            });
        }
    }
    Ok(())
}

fn symlink(new: &str, link: &Path, target: &Path, optional: bool) -> Result<Op, SandboxError> {
    Ok(Op::Symlink {
        target: c_path("", target)?,
        link: c_path(new, link)?,
        optional,
    })
}

fn mount_op(kind: &Kind, dst: CString, new: &str, call: &Call) -> Result<Op, SandboxError> {
    let ro = libc::MOUNT_ATTR_RDONLY | libc::MOUNT_ATTR_NOSUID | libc::MOUNT_ATTR_NODEV;
    let tmpfs_flags = libc::MS_NOSUID | libc::MS_NODEV;
    let data = |text: String| {
        CString::new(text).map_err(|_| SandboxError {
            path: PathBuf::from("tmpfs"),
            reason: "bad tmpfs options".into(),
        })
    };
    Ok(match kind {
        Kind::ReadOnly { src, recursive } => Op::Bind {
            src: c_path("", src)?,
            dst,
            recursive: *recursive,
            attrs: ro,
        },
        // `nosuid,nodev` come from the seal (and `no_new_privs` ignores set-user-ID bits).
        Kind::ReadWrite { src } => Op::Bind {
            src: c_path("", src)?,
            dst,
            recursive: true,
            attrs: 0,
        },
        // Read-only: the nodes are the host's own, and their owner (Tandem run as root)
        // could otherwise change their mode or times; reading and writing a device is not
        // a change to its filesystem and still works.
        Kind::Device { src } => Op::Bind {
            src: c_path("", src)?,
            dst,
            recursive: false,
            attrs: libc::MOUNT_ATTR_RDONLY | libc::MOUNT_ATTR_NOSUID | libc::MOUNT_ATTR_NOEXEC,
        },
        Kind::Tmpfs { mode, size_mb } => Op::Tmpfs {
            dst,
            data: data(format!("mode={mode:o},size={size_mb}m"))?,
            flags: tmpfs_flags,
        },
        Kind::Cover { dir: true } => Op::Tmpfs {
            dst,
            data: data("mode=0,size=4k".into())?,
            flags: tmpfs_flags | libc::MS_RDONLY,
        },
        Kind::Cover { dir: false } => Op::Bind {
            src: c_path("", Path::new("/dev/null"))?,
            dst,
            recursive: false,
            attrs: ro | libc::MOUNT_ATTR_NOEXEC,
        },
        Kind::Proc => {
            let proc = Path::new("/proc");
            let pid_max = match call.pid_max {
                Some(max) => Some((
                    c_path(new, &proc.join("sys/kernel/pid_max"))?,
                    data(max.to_string())?,
                )),
                None => None,
            };
            let covers = PROC_COVERS
                .iter()
                .map(|name| c_path(new, &proc.join(name)))
                .collect::<Result<_, _>>()?;
            Op::Proc {
                dst,
                pid_max,
                covers,
            }
        }
    })
}
