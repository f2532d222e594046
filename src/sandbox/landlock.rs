//! The Landlock ruleset of a confined command: which paths it may read, run and write, TCP
//! when no network namespace keeps it in, and the signal and abstract-socket scopes.
//!
//! Landlock only allows: every filesystem right is handled, and the ruleset grants reads
//! below the system directories, the toolchains, the project and the temp dir, and writes
//! below the project and the temp dir. A grant cannot have holes, so hidden paths (credentials,
//! Tandem's data) are split out of a grant by granting the siblings instead (`split_around`).
//! The ruleset is built in the parent; the child only calls `landlock_restrict_self` on it.

use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};

use landlock::{
    ABI, Access, AccessFs, AccessNet, BitFlags, CompatLevel, Compatible, PathBeneath, PathFd,
    Ruleset, RulesetAttr, RulesetCreated, RulesetCreatedAttr, Scope,
};

use super::{Confinement, Network, Protections, SYSTEM_READABLE, SandboxError};

/// Device files every shell expects to use (`2>/dev/null`, `head -c1 /dev/urandom`…).
/// Reading or writing them touches no file, so allowing it costs the sandbox nothing.
const DEVICES: &[&str] = &[
    "/dev/null",
    "/dev/zero",
    "/dev/full",
    "/dev/tty",
    "/dev/random",
    "/dev/urandom",
    "/dev/ptmx",
];

/// Directories usable besides the caller's: `/dev/shm` is a RAM-backed tmpfs that Python's
/// `multiprocessing` and POSIX semaphores need; `/dev/pts` holds terminals.
const DEVICE_DIRS: &[&str] = &["/dev/shm", "/dev/pts"];

/// The newest ABI whose filesystem rights we handle: read, execute, write, make*, remove*,
/// refer (V2), truncate (V3), device ioctl (V5). Older kernels get the subset they know. V9's
/// `ResolveUnix` is left out: pathname sockets are reached through the filesystem's own
/// permissions (see SECURITY.md).
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

/// The ruleset for `c` and the protections it gives, or (inner `Err`) why Landlock is
/// unavailable. `namespaces`: the child will also get user, mount and network namespaces
/// (so `.git` is protected by a read-only bind mount and the network by an empty namespace).
pub(super) fn build(
    c: &Confinement,
    namespaces: bool,
) -> Result<Result<(OwnedFd, Protections), String>, SandboxError> {
    let abi = match kernel_abi() {
        Ok(abi) => abi,
        Err(reason) => return Ok(Err(reason)),
    };
    let read = AccessFs::from_read(FS_ABI);
    let all = AccessFs::from_all(FS_ABI);
    let deny_tcp = !c.network && !namespaces;
    let created = Ruleset::default()
        .set_compatibility(CompatLevel::BestEffort)
        .handle_access(all)
        .and_then(|r| match deny_tcp {
            true => r.handle_access(AccessNet::from_all(ABI::V4)),
            false => Ok(r),
        })
        .and_then(|r| r.scope(Scope::AbstractUnixSocket | Scope::Signal))
        .and_then(Ruleset::create);
    let mut ruleset = match created {
        Ok(ruleset) => ruleset,
        Err(err) => {
            return Ok(Err(format!(
                "the Landlock ruleset could not be created: {err}"
            )));
        }
    };
    let mut notes = Vec::new();
    let canonical = |p: &Path| p.canonicalize().unwrap_or_else(|_| p.to_path_buf());
    let hidden: Vec<PathBuf> = c.hidden.iter().map(|h| canonical(h)).collect();
    let project = canonical(&c.project);
    let mut readable: Vec<PathBuf> = SYSTEM_READABLE.iter().map(PathBuf::from).collect();
    readable.extend(c.readable.iter().map(|p| canonical(p)));
    if c.network {
        // DNS: /etc/resolv.conf is often a link into /run.
        let resolv = canonical(Path::new("/etc/resolv.conf"));
        readable.extend(resolv.parent().map(Path::to_path_buf));
    }
    for dir in &readable {
        for grant in split_around(dir, &hidden) {
            ruleset = add_rule(ruleset, &grant, read)?;
        }
    }
    let mut writable = vec![canonical(&c.temp)];
    writable.extend(c.writable.iter().map(|p| canonical(p)));
    writable.extend(DEVICE_DIRS.iter().map(PathBuf::from));
    for dir in &writable {
        for grant in split_around(dir, &hidden) {
            ruleset = add_rule(ruleset, &grant, all)?;
        }
    }
    // The project: all rights, except that without a mount namespace `.git` is carved out of
    // the write grant (readable through the read grant below). The price: nothing can be
    // created or deleted directly in the project root.
    let git = project.join(".git");
    let mut write_holes = hidden.clone();
    if !namespaces && git.exists() {
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
    for grant in split_around(&project, &below(&hidden)) {
        ruleset = add_rule(ruleset, &grant, read)?;
    }
    for grant in split_around(&project, &below(&write_holes)) {
        ruleset = add_rule(ruleset, &grant, all)?;
    }
    for device in DEVICES.iter().map(Path::new) {
        ruleset = add_rule(ruleset, device, all)?;
    }
    let Some(fd) = Option::<OwnedFd>::from(ruleset) else {
        return Ok(Err(format!(
            "the kernel reports Landlock ABI {abi} but no ruleset was created"
        )));
    };
    let network = match (c.network, abi >= 4) {
        (true, _) => Network::Allowed,
        (false, true) => Network::TcpDenied,
        (false, false) => Network::Unrestricted,
    };
    let protections = Protections {
        landlock_abi: Some(abi),
        reads: true,
        writes: true,
        git_read_only: !namespaces,
        network,
        signals: abi >= 6,
        abstract_sockets: abi >= 6,
        notes,
    };
    Ok(Ok((fd, protections)))
}

/// Grants `rights` below `path` (only the rights a file can have, when it is a file). Paths
/// that do not exist are skipped: nothing can be done there anyway.
fn add_rule(
    ruleset: RulesetCreated,
    path: &Path,
    rights: BitFlags<AccessFs>,
) -> Result<RulesetCreated, SandboxError> {
    let Ok(meta) = std::fs::metadata(path) else {
        return Ok(ruleset);
    };
    let rights = match meta.is_dir() {
        true => rights,
        false => rights & AccessFs::from_file(FS_ABI),
    };
    let error = |reason: String| SandboxError {
        path: path.to_path_buf(),
        reason,
    };
    let fd = PathFd::new(path).map_err(|e| error(e.to_string()))?;
    ruleset
        .add_rule(PathBeneath::new(fd, rights))
        .map_err(|e| error(e.to_string()))
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
