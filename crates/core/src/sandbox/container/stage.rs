//! What every container of this process shares, made once on the host: the empty directory
//! its root is mounted on, and its `/etc` prepared as a directory (the host's small files
//! copied, links as the host has them, `passwd`, `group`, `hosts` written fresh, a mount
//! point for each of the host's directories shown). One mount of that directory costs a
//! container far less than a mount or a write per file.
//!
//! It lives in a private directory (`tandem-container-<uid>-<pid>`, mode 0700) below the
//! runtime directory (else the temp directory); those of processes that are gone are removed
//! when the next one starts. The host's `/etc` is read once per process: a change there
//! (a new certificate) reaches commands after Tandem restarts. The resolver configuration,
//! which changes with the network, is shown fresh to calls that may use the network.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use super::etc::{self, Entry};
use crate::sandbox::{Identity, SandboxError};

/// The shared part of every container of this process.
#[derive(Debug)]
pub(crate) struct Stage {
    /// The empty directory each container's root (a tmpfs) is mounted on, in the container's
    /// own mount namespace: the host's stays empty.
    pub root: PathBuf,
    /// The prepared `/etc`.
    pub etc: PathBuf,
    /// The host's directories shown below `/etc`, by name.
    pub etc_dirs: Vec<(String, PathBuf)>,
}

/// The stage of this process, made on first use.
pub(crate) fn stage(identity: &Identity) -> Result<&'static Stage, SandboxError> {
    static MADE: OnceLock<Result<Stage, String>> = OnceLock::new();
    MADE.get_or_init(|| make(identity).map_err(|e| e.to_string()))
        .as_ref()
        .map_err(|reason| SandboxError {
            path: base_dir(),
            reason: reason.clone(),
        })
}

fn base_dir() -> PathBuf {
    std::env::var_os("XDG_RUNTIME_DIR")
        .map(PathBuf::from)
        .filter(|d| d.is_absolute() && d.is_dir())
        .unwrap_or_else(std::env::temp_dir)
}

fn make(identity: &Identity) -> std::io::Result<Stage> {
    let base = base_dir();
    let prefix = format!("tandem-container-{}-", identity.uid);
    remove_stale(&base, &prefix);
    let dir = base.join(format!("{prefix}{}", std::process::id()));
    if dir.exists() {
        std::fs::remove_dir_all(&dir)?;
    }
    std::fs::create_dir(&dir)?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o700))?;
    }
    let root = dir.join("root");
    let etc_dir = dir.join("etc");
    std::fs::create_dir(&root)?;
    std::fs::create_dir(&etc_dir)?;
    let mut etc_dirs = Vec::new();
    for (name, entry) in etc::entries(Path::new("/etc"), identity) {
        let path = etc_dir.join(&name);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent)?;
        }
        match entry {
            Entry::Host(host) => {
                std::fs::create_dir_all(&path)?;
                etc_dirs.push((name, host));
            }
            Entry::Link(target) => std::os::unix::fs::symlink(target, &path)?,
            Entry::Copy(bytes) => std::fs::write(&path, bytes)?,
            Entry::Text(text) => std::fs::write(&path, text)?,
        }
    }
    // Mount points for the resolver's files, which calls with the network see fresh.
    for name in ["resolv.conf"] {
        if !etc_dir.join(name).exists() {
            std::fs::write(etc_dir.join(name), "")?;
        }
    }
    Ok(Stage {
        root,
        etc: etc_dir,
        etc_dirs,
    })
}

/// Removes the stages of processes that are gone.
fn remove_stale(base: &Path, prefix: &str) {
    let Ok(entries) = std::fs::read_dir(base) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        let Some(pid) = name.strip_prefix(prefix) else {
            continue;
        };
        let gone = pid
            .parse::<u32>()
            .is_ok_and(|pid| !Path::new(&format!("/proc/{pid}")).exists());
        if gone {
            let _ = std::fs::remove_dir_all(entry.path());
        }
    }
}
