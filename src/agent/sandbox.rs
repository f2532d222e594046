//! The Linux write sandbox for agent shell commands, built on Landlock.
//!
//! Reads and execution stay allowed everywhere (a build has to read the toolchain, the
//! registry caches, `/etc`…); only the filesystem *write* rights are handled, and they are
//! granted below the writable directories and on a few harmless device files. The ruleset is
//! built in the parent, because building it allocates and opens files; the child, between
//! `fork` and `exec`, only makes two async-signal-safe system calls on the ready file
//! descriptor.
//!
//! When the kernel has no Landlock the command runs unsandboxed and the status says why; the
//! caller shows that warning. Other failures while building the rules fail closed.

use std::path::PathBuf;

use super::exec::SandboxStatus;

/// A sandbox could be built but a rule for one of its paths could not be added.
#[derive(Debug, thiserror::Error)]
#[cfg_attr(not(target_os = "linux"), allow(dead_code))] // only Linux builds rules
#[error("could not add the sandbox rule for {path}: {reason}")]
pub(crate) struct SandboxError {
    pub(crate) path: PathBuf,
    pub(crate) reason: String,
}

/// A sandbox ready to be installed on a command. It must stay alive until the command has
/// been spawned: the child uses its file descriptor.
#[derive(Debug)]
pub(crate) struct Prepared {
    status: SandboxStatus,
    #[cfg(target_os = "linux")]
    ruleset: Option<std::os::fd::OwnedFd>,
}

impl Prepared {
    pub(crate) fn status(&self) -> SandboxStatus {
        self.status.clone()
    }

    /// Makes the command restrict itself before it execs. A no-op when unavailable.
    pub(crate) fn install(&self, command: &mut tokio::process::Command) {
        #[cfg(target_os = "linux")]
        if let Some(fd) = &self.ruleset {
            linux::install(command, std::os::fd::AsRawFd::as_raw_fd(fd));
        }
        #[cfg(not(target_os = "linux"))]
        let _ = command;
    }
}

/// Builds the ruleset allowing writes only below `writable` (directories that do not exist
/// are skipped: nothing can be written there anyway).
pub(crate) fn prepare(writable: &[PathBuf]) -> Result<Prepared, SandboxError> {
    #[cfg(target_os = "linux")]
    {
        linux::prepare(writable)
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = writable;
        Ok(Prepared {
            status: SandboxStatus::Unavailable {
                reason: "the write sandbox uses Linux Landlock; this system is not Linux".into(),
            },
        })
    }
}

#[cfg(target_os = "linux")]
mod linux {
    use std::os::fd::{OwnedFd, RawFd};
    use std::path::{Path, PathBuf};

    use landlock::{
        ABI, AccessFs, BitFlags, CompatLevel, Compatible, PathBeneath, PathFd, Ruleset,
        RulesetAttr, RulesetCreated, RulesetCreatedAttr,
    };

    use super::{Prepared, SandboxError, SandboxStatus};

    /// Device files every shell expects to write to (`2>/dev/null`, `head -c1 /dev/zero`…).
    /// Writing to them changes no file, so allowing it costs the sandbox nothing.
    const WRITABLE_DEVICES: &[&str] = &[
        "/dev/null",
        "/dev/zero",
        "/dev/full",
        "/dev/tty",
        "/dev/random",
        "/dev/urandom",
        "/dev/ptmx",
    ];

    /// Directories writable besides the caller's: `/dev/shm` is a RAM-backed tmpfs that
    /// Python's `multiprocessing`, POSIX semaphores and browsers need; it holds no user files.
    const WRITABLE_SYSTEM_DIRS: &[&str] = &["/dev/shm"];

    /// The newest ABI whose filesystem write rights we have tested: write, make*, remove*,
    /// refer (V2), truncate (V3), device ioctl (V5). Older kernels get the subset they know
    /// (best effort). V9's `ResolveUnix` is left out on purpose: it restricts *connecting* to
    /// sockets, not writing files, and would break tools talking to local daemons.
    const TARGET_ABI: ABI = ABI::V5;

    /// `LANDLOCK_CREATE_RULESET_VERSION` from `<linux/landlock.h>` (not in `libc`).
    const CREATE_RULESET_VERSION: libc::c_uint = 1;

    #[allow(unsafe_code)]
    fn kernel_abi() -> Result<i32, String> {
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

    fn unavailable(reason: String) -> Prepared {
        Prepared {
            status: SandboxStatus::Unavailable { reason },
            ruleset: None,
        }
    }

    pub(super) fn prepare(writable: &[PathBuf]) -> Result<Prepared, SandboxError> {
        let abi = match kernel_abi() {
            Ok(abi) => abi,
            Err(reason) => return Ok(unavailable(reason)),
        };
        let write = AccessFs::from_write(TARGET_ABI);
        let created = Ruleset::default()
            .set_compatibility(CompatLevel::BestEffort)
            .handle_access(write)
            .and_then(|ruleset| ruleset.create());
        let mut ruleset = match created {
            Ok(ruleset) => ruleset,
            Err(err) => {
                return Ok(unavailable(format!(
                    "the Landlock ruleset could not be created: {err}"
                )));
            }
        };
        let device_rights = write & AccessFs::from_file(TARGET_ABI);
        let system_dirs = WRITABLE_SYSTEM_DIRS.iter().map(Path::new);
        for dir in writable.iter().map(PathBuf::as_path).chain(system_dirs) {
            ruleset = add_rule(ruleset, dir, write)?;
        }
        for device in WRITABLE_DEVICES.iter().map(Path::new) {
            ruleset = add_rule(ruleset, device, device_rights)?;
        }
        match Option::<OwnedFd>::from(ruleset) {
            Some(fd) => Ok(Prepared {
                status: SandboxStatus::Enforced { abi },
                ruleset: Some(fd),
            }),
            None => Ok(unavailable(format!(
                "the kernel reports Landlock ABI {abi} but no ruleset was created"
            ))),
        }
    }

    fn add_rule(
        ruleset: RulesetCreated,
        path: &Path,
        rights: BitFlags<AccessFs>,
    ) -> Result<RulesetCreated, SandboxError> {
        if !path.exists() {
            return Ok(ruleset);
        }
        let error = |reason: String| SandboxError {
            path: path.to_path_buf(),
            reason,
        };
        let fd = PathFd::new(path).map_err(|e| error(e.to_string()))?;
        ruleset
            .add_rule(PathBeneath::new(fd, rights))
            .map_err(|e| error(e.to_string()))
    }

    /// Registers the restriction to run in the child between `fork` and `exec`.
    #[allow(unsafe_code)]
    pub(super) fn install(command: &mut tokio::process::Command, ruleset_fd: RawFd) {
        // SAFETY: the closure runs in the forked child, where only async-signal-safe calls
        // are allowed: it allocates nothing, takes no lock and only makes two system calls on
        // plain integers. `io::Error::last_os_error` just reads errno into a value. The
        // ruleset fd stays open in the parent until `spawn` returns (the caller holds
        // `Prepared`); if it were closed, the syscall fails with EBADF and spawn fails closed.
        unsafe {
            command.pre_exec(move || {
                if libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
                if libc::syscall(libc::SYS_landlock_restrict_self, ruleset_fd, 0u32) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
    }
}
