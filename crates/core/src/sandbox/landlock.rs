//! The Landlock half of a confined command's walls: which paths it may read, run and write,
//! TCP when no network namespace keeps it in, and the signal and abstract-socket scopes.
//!
//! Landlock only allows: every filesystem right is handled, and only what is granted is
//! allowed. In a container the grants repeat its mounts (a second wall behind them); confined
//! in place, they are the wall: reads below the system directories, the toolchains, the
//! project and the temp dir, writes below the project and the temp dir. A grant cannot have
//! holes, so hidden paths (credentials, Tandem's data) are split out of a grant by granting
//! the siblings instead (`split_around`). The ruleset is made in the parent; the child adds
//! the rules by path, as it sees the paths, and restricts itself.

use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};

use landlock::{
    ABI, Access as _, AccessFs, AccessNet, CompatLevel, Compatible, Ruleset, RulesetAttr, Scope,
};

use super::container::{Access, DEVICES};
use super::{Confinement, SYSTEM_READABLE};

/// The newest ABI whose filesystem rights we handle: read, execute, write, make*, remove*,
/// refer (V2), truncate (V3), device ioctl (V5). Older kernels get the subset they know. V9's
/// `ResolveUnix` is left out: in a container only the project's own sockets exist.
const FS_ABI: ABI = ABI::V5;

/// `LANDLOCK_CREATE_RULESET_VERSION` from `<linux/landlock.h>` (not in `libc`).
const CREATE_RULESET_VERSION: libc::c_uint = 1;

/// The kernel's Landlock ABI, or why there is none.
#[allow(unsafe_code)]
pub(super) fn kernel_abi() -> Result<i32, String> {
    // SAFETY: with the VERSION flag, landlock_create_ruleset(2) takes a null attribute
    // pointer and a zero size, reads no memory and only returns the ABI version.
    let version = unsafe {
        libc::syscall(
            libc::SYS_landlock_create_ruleset,
            std::ptr::null::<libc::c_void>(),
            0usize,
            CREATE_RULESET_VERSION,
        )
    };
    if version > 0 {
        return i32::try_from(version).map_err(|_| format!("odd Landlock ABI {version}"));
    }
    let error = std::io::Error::last_os_error();
    Err(match error.raw_os_error() {
        Some(libc::EOPNOTSUPP) => "Landlock is built into this kernel but disabled at boot \
                                   (it must be listed in the `lsm=` kernel parameter)"
            .to_string(),
        Some(libc::ENOSYS) => "this kernel has no Landlock (Linux 5.13 or newer built \
                               with CONFIG_SECURITY_LANDLOCK is needed)"
            .to_string(),
        _ => format!("the Landlock version check failed: {error}"),
    })
}

/// The access rights of this kernel's Landlock, as the bits the kernel takes.
#[derive(Debug, Clone, Copy)]
pub(super) struct Rights {
    pub read: u64,
    pub all: u64,
    /// Listing a directory.
    pub list: u64,
    /// The rights a rule on a file (not a directory) may grant.
    pub file: u64,
}

/// A ruleset that handles every filesystem right (so only what is granted is allowed),
/// TCP when `deny_tcp`, and the signal and abstract-socket scopes, with the rights and the
/// kernel's ABI; or why Landlock is unavailable.
pub(super) fn ruleset(deny_tcp: bool) -> Result<(OwnedFd, Rights, i32), String> {
    let abi = kernel_abi()?;
    let effective = ABI::from(abi.min(FS_ABI as i32));
    let rights = Rights {
        read: AccessFs::from_read(effective).bits(),
        all: AccessFs::from_all(effective).bits(),
        file: AccessFs::from_file(effective).bits(),
        list: AccessFs::ReadDir as u64,
    };
    let created = Ruleset::default()
        .set_compatibility(CompatLevel::BestEffort)
        .handle_access(AccessFs::from_all(FS_ABI))
        .and_then(|r| match deny_tcp {
            true => r.handle_access(AccessNet::from_all(ABI::V4)),
            false => Ok(r),
        })
        .and_then(|r| r.scope(Scope::AbstractUnixSocket | Scope::Signal))
        .and_then(Ruleset::create)
        .map_err(|e| format!("the Landlock ruleset could not be created: {e}"))?;
    let fd = Option::<OwnedFd>::from(created).ok_or_else(|| {
        format!("the kernel reports Landlock ABI {abi} but no ruleset was created")
    })?;
    Ok((fd, rights, abi))
}

/// The rules of a container's grants: each path with its rights, split around the hidden
/// paths below it (except private ones, which hold nothing of the host's below them).
pub(super) fn container_rules(
    grants: &[(PathBuf, Access)],
    hidden: &[PathBuf],
    rights: Rights,
) -> Vec<(PathBuf, u64)> {
    let mut out = Vec::new();
    for (path, access) in grants {
        let bits = match access {
            Access::Read | Access::PrivateRead => rights.read,
            Access::List => rights.list,
            Access::ReadWrite | Access::PrivateReadWrite | Access::Workspace => rights.all,
        };
        match access {
            Access::Read => {
                out.extend(split_around(path, hidden).into_iter().map(|p| (p, bits)));
            }
            // The project (and the temp dir) were chosen: a hidden directory above one (a
            // project kept in `~/.config`) does not hide it; hidden paths inside it stay
            // hidden. No other grant lies above it any more to mask this (the home
            // directory's and `/tmp`'s are split around it, see `container::private`).
            Access::ReadWrite => {
                let below: Vec<PathBuf> = (hidden.iter())
                    .filter(|h| !path.starts_with(h))
                    .cloned()
                    .collect();
                out.extend(split_around(path, &below).into_iter().map(|p| (p, bits)));
            }
            // Private ones hold nothing of the host's below them (the layout splits them
            // around the host's directories that hold a hidden path); a workspace is
            // granted whole (see `container::private`).
            _ => out.push((path.clone(), bits)),
        }
    }
    out
}

/// The rules of a command confined in place (no container): reads below the system
/// directories, the toolchains, the project and the temp dir; writes below the project, the
/// temp dir and `/dev/shm`; hidden paths split out. Without a mount namespace `.git` is
/// carved out of the project's write grant (the note says what that costs).
pub(super) fn host_rules(
    c: &Confinement,
    hidden: &[PathBuf],
    rights: Rights,
) -> (Vec<(PathBuf, u64)>, Vec<String>) {
    let mut out = Vec::new();
    let mut notes = Vec::new();
    let canonical = |p: &Path| p.canonicalize().unwrap_or_else(|_| p.to_path_buf());
    let project = canonical(&c.project);
    let mut readable: Vec<PathBuf> = SYSTEM_READABLE.iter().map(PathBuf::from).collect();
    readable.extend(c.readable.iter().map(|p| canonical(p)));
    if c.network {
        // DNS: /etc/resolv.conf is often a link into /run.
        let resolv = canonical(Path::new("/etc/resolv.conf"));
        readable.extend(resolv.parent().map(Path::to_path_buf));
    }
    for dir in &readable {
        out.extend(
            split_around(dir, hidden)
                .into_iter()
                .map(|p| (p, rights.read)),
        );
    }
    // `/dev/shm`: Python's `multiprocessing` and POSIX semaphores need it.
    let mut writable = vec![canonical(&c.temp), PathBuf::from("/dev/shm")];
    writable.extend(c.writable.iter().map(|p| canonical(p)));
    for dir in &writable {
        out.extend(
            split_around(dir, hidden)
                .into_iter()
                .map(|p| (p, rights.all)),
        );
    }
    let git = project.join(".git");
    let mut write_holes = hidden.to_vec();
    if git.exists() {
        write_holes.push(git);
        notes.push(
            "Without a mount namespace here, files cannot be created, renamed or deleted \
             directly in the project root (only in its folders)"
                .to_string(),
        );
    }
    // The person chose the project: a hidden directory above it (a project kept in
    // `~/.config`) does not hide it; hidden paths inside it stay hidden.
    let below = |holes: &[PathBuf]| -> Vec<PathBuf> {
        holes
            .iter()
            .filter(|h| !project.starts_with(h))
            .cloned()
            .collect()
    };
    for grant in split_around(&project, &below(hidden)) {
        out.push((grant, rights.read));
    }
    for grant in split_around(&project, &below(&write_holes)) {
        out.push((grant, rights.all));
    }
    for device in DEVICES {
        out.push((Path::new("/dev").join(device), rights.all));
    }
    (out, notes)
}

/// The grants for `dir` with every `hidden` path below it left out: `dir` itself when nothing
/// hidden is below it, else its entries (recursively around the hidden ones). Symbolic links
/// among the entries are left out: a rule on a link would grant its target.
fn split_around(dir: &Path, hidden: &[PathBuf]) -> Vec<PathBuf> {
    if hidden.iter().any(|h| dir.starts_with(h)) {
        return Vec::new();
    }
    if !hidden.iter().any(|h| h.starts_with(dir)) {
        return vec![dir.to_path_buf()];
    }
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for entry in entries.flatten() {
        let is_link = entry.file_type().is_ok_and(|t| t.is_symlink());
        if !is_link {
            out.extend(split_around(&entry.path(), hidden));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn split_around_leaves_out_hidden_paths_and_links() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let root = dir.path();
        for sub in ["a/secret", "a/open", "b"] {
            std::fs::create_dir_all(root.join(sub)).unwrap_or_else(|e| panic!("{e}"));
        }
        std::fs::write(root.join("a/file"), "x").unwrap_or_else(|e| panic!("{e}"));
        #[cfg(unix)]
        std::os::unix::fs::symlink(root.join("a/secret"), root.join("a/link"))
            .unwrap_or_else(|e| panic!("{e}"));
        let hidden = vec![root.join("a/secret")];
        let mut got = split_around(root, &hidden);
        got.sort();
        let want = ["a/file", "a/open", "b"].map(|p| root.join(p)).to_vec();
        assert_eq!(got, want);
        assert_eq!(split_around(&root.join("b"), &hidden), vec![root.join("b")]);
        assert!(split_around(&root.join("a/secret/x"), &hidden).is_empty());
    }
}
