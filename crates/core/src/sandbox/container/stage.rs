//! What every container of this process shares, made once on the host: the empty directory
//! its root is mounted on, and its `/etc` prepared as a directory (the host's small files
//! copied, links as the host has them, `passwd`, `group`, `hosts` written fresh, a mount
//! point for each of the host's directories shown). One mount of that directory costs a
//! container far less than a mount or a write per file.
//!
//! It lives in a private directory (`tandem-container-<uid>-<pid>`, mode 0700) below the
//! runtime directory (else the temp directory), holding the lock on its `owner.lock` for as
//! long as the process lives. Those whose lock nobody holds (their process is gone, however
//! it went) are removed when the next one starts: a lock says so across PID namespaces,
//! where another process's `/proc` would not show the owner. The host's `/etc` is read when
//! the stage is made (once per process, unless the stage must be made again): a change there
//! (a new certificate) reaches commands after Tandem restarts. The resolver configuration,
//! which changes with the network, is shown fresh to calls that may use the network.

use std::path::{Path, PathBuf};
use std::sync::{Mutex, PoisonError};

use super::etc::{self, Entry};
use crate::lockfile::{self, FileLock};
use crate::sandbox::{Identity, SandboxError};

/// The file in a stage whose lock its process holds.
const OWNER_LOCK: &str = "owner.lock";

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
    /// Held while this process lives: the stage is in use.
    _owner: FileLock,
}

/// The stage of this process: made on first use, and again when it is no longer whole (a
/// cleaner of old temporary files took part of it) or could not be made last time.
pub(crate) fn stage(identity: &Identity) -> Result<&'static Stage, SandboxError> {
    static MADE: Mutex<Option<&'static Stage>> = Mutex::new(None);
    current(&MADE, identity)
}

/// The stage kept in `made` while it is whole, else a new one, kept there. The stage it
/// replaces is left allocated: containers starting may still hold it (a few paths and an
/// open file, only when a stage was taken away).
fn current(
    made: &Mutex<Option<&'static Stage>>,
    identity: &Identity,
) -> Result<&'static Stage, SandboxError> {
    let mut made = made.lock().unwrap_or_else(PoisonError::into_inner);
    if let Some(stage) = *made
        && stage.whole()
    {
        return Ok(stage);
    }
    let stage = make(identity).map_err(|e| SandboxError {
        path: base_dir(),
        reason: e.to_string(),
    })?;
    let stage: &'static Stage = Box::leak(Box::new(stage));
    *made = Some(stage);
    Ok(stage)
}

impl Stage {
    /// Whether every directory a container mounts from the stage is still there.
    fn whole(&self) -> bool {
        self.root.is_dir()
            && self.etc.join("resolv.conf").is_file()
            && (self.etc_dirs.iter()).all(|(name, _)| self.etc.join(name).is_dir())
    }
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
    let (dir, owner) = claim(&base, &prefix)?;
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
        _owner: owner,
    })
}

/// A new stage directory of this process, its lock held. It is made under a name
/// [`remove_stale`] passes over (`.tandem-stage-…`), locked, and only then given its own: a
/// process starting at the same moment must not take a stage being made, its lock file there
/// but not yet locked, for one whose process is gone (it removed the directory under its
/// maker). Its own name is the process id, then with a suffix: a stage of that id still in use
/// belongs to a process in another PID namespace.
fn claim(base: &Path, prefix: &str) -> std::io::Result<(PathBuf, FileLock)> {
    // Mode 0700, as a temporary directory is made.
    let making = tempfile::Builder::new().prefix(MAKING).tempdir_in(base)?;
    let owner = lockfile::try_take(&making.path().join(OWNER_LOCK))?
        .ok_or_else(|| std::io::Error::other("the lock of a stage just made is held"))?;
    let mut dir = base.join(format!("{prefix}{}", std::process::id()));
    for n in 1..=16 {
        if dir.exists() {
            // Left by a process of this id in another PID namespace, now gone, or by a thread
            // of this one that made a stage again. Should it not all go (another taking it at
            // once), the next name is tried.
            remove_if_left(&dir);
        }
        // Fails on a directory that has files: a stage in use keeps its lock file there.
        if std::fs::rename(making.path(), &dir).is_ok() {
            // Ours now: nothing to remove when `making` goes.
            let _ = making.keep();
            return Ok((dir, owner));
        }
        dir = base.join(format!("{prefix}{}.{n}", std::process::id()));
    }
    Err(std::io::Error::other("no stage of this process is free"))
}

/// Removes the stage `dir` if no process holds its lock, holding it while the stage goes:
/// checked first and removed after, the name might meanwhile be another's new stage (a
/// rename takes a name whose directory is empty). A stage holds its lock file until its
/// lock is released, so none can take the name before the removal has emptied it, and the
/// removal's last step, by name, then fails on the new stage's files.
fn remove_if_left(dir: &Path) {
    if let Ok(Some(_gone)) = lockfile::try_take(&dir.join(OWNER_LOCK)) {
        let _ = std::fs::remove_dir_all(dir);
    }
}

/// How the name of a stage being made begins.
const MAKING: &str = ".tandem-stage-";
/// A stage being made for longer than this was left by a process that died making it.
const MAKING_LEFT: std::time::Duration = std::time::Duration::from_secs(600);

/// Removes the stages of processes that are gone: those whose `owner.lock` nobody holds. A
/// stage without one (made before stages had locks) is removed only when no process of its
/// id is in this `/proc`; one still being made ([`claim`]) only when it was left long ago.
fn remove_stale(base: &Path, prefix: &str) {
    let Ok(entries) = std::fs::read_dir(base) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        if name.starts_with(MAKING) {
            let left = (entry.metadata().and_then(|m| m.modified()))
                .is_ok_and(|made| made.elapsed().is_ok_and(|age| age > MAKING_LEFT));
            if left {
                let _ = std::fs::remove_dir_all(entry.path());
            }
            continue;
        }
        let Some(id) = name.strip_prefix(prefix) else {
            continue;
        };
        if entry.path().join(OWNER_LOCK).exists() {
            remove_if_left(&entry.path());
            continue;
        }
        let pid = id.split('.').next().unwrap_or_default();
        let gone = pid
            .parse::<u32>()
            .is_ok_and(|pid| !Path::new(&format!("/proc/{pid}")).exists());
        if gone {
            let _ = std::fs::remove_dir_all(entry.path());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A stage at `base` named for `id`, its lock held by the returned file when `held`.
    fn fake_stage(base: &Path, id: &str, held: bool) -> (PathBuf, Option<FileLock>) {
        let dir = base.join(format!("tandem-container-7-{id}"));
        std::fs::create_dir_all(dir.join("root")).unwrap_or_else(|e| panic!("{e}"));
        let lock = lockfile::try_take(&dir.join(OWNER_LOCK)).unwrap_or_else(|e| panic!("{e}"));
        (dir, lock.filter(|_| held))
    }

    #[test]
    fn a_stage_taken_away_is_made_again() {
        let kept = Mutex::new(None);
        let identity = crate::sandbox::identity();
        let first = current(&kept, identity).unwrap_or_else(|e| panic!("{e}"));
        assert!(first.whole());
        // Asked again, the same stage.
        let again = current(&kept, identity).unwrap_or_else(|e| panic!("{e}"));
        assert!(std::ptr::eq(first, again));
        // A cleaner of old temporary files takes its root: the next container gets a stage
        // made anew, whole, in another directory (the old one's lock is still ours).
        std::fs::remove_dir(&first.root).unwrap_or_else(|e| panic!("{e}"));
        let renewed = current(&kept, identity).unwrap_or_else(|e| panic!("{e}"));
        assert!(!std::ptr::eq(first, renewed));
        assert!(renewed.whole());
        assert_ne!(renewed.root, first.root);
        for stage in [first, renewed] {
            if let Some(dir) = stage.root.parent() {
                let _ = std::fs::remove_dir_all(dir);
            }
        }
    }

    #[test]
    fn stages_made_at_the_same_moment_are_each_whole() {
        // Each maker first clears the stages whose lock nobody holds: one being made by
        // another, its lock file there but not yet locked, once looked like those.
        let identity = crate::sandbox::identity();
        let made: Vec<Vec<(bool, PathBuf)>> = std::thread::scope(|scope| {
            let makers: Vec<_> = (0..8)
                .map(|_| {
                    scope.spawn(|| {
                        (0..25)
                            .map(|_| match make(identity) {
                                Ok(stage) => (stage.whole(), stage.root.clone()),
                                Err(e) => panic!("a stage was not made: {e}"),
                            })
                            .collect()
                    })
                })
                .collect();
            (makers.into_iter())
                .map(|m| m.join().unwrap_or_else(|_| panic!("a maker panicked")))
                .collect()
        });
        for (whole, root) in made.iter().flatten() {
            assert!(whole, "{} was not whole when made", root.display());
        }
    }

    #[test]
    fn a_name_claimed_at_the_same_moment_is_each_makers_own() {
        // The threads of one process claim the same names (the process's id): a stage let go
        // is taken back by the next claim, while another may be renaming its own to it.
        let base = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        std::thread::scope(|scope| {
            for _ in 0..8 {
                scope.spawn(|| {
                    for _ in 0..400 {
                        let (dir, lock) = claim(base.path(), "tandem-container-7-")
                            .unwrap_or_else(|e| panic!("not claimed: {e}"));
                        std::thread::yield_now();
                        assert!(
                            dir.join(OWNER_LOCK).is_file(),
                            "{} was removed under its maker",
                            dir.display()
                        );
                        drop(lock);
                    }
                });
            }
        });
    }

    #[test]
    fn only_stages_whose_lock_nobody_holds_are_removed() {
        let base = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        // No process has these ids here: one is in use in another PID namespace (its lock
        // held), the other's process is gone.
        let (in_use, _holder) = fake_stage(base.path(), "4000000001", true);
        let (gone, _) = fake_stage(base.path(), "4000000002", false);
        // Before locks: by `/proc` only (this process lives, 4000000003 does not).
        let alive = base
            .path()
            .join(format!("tandem-container-7-{}", std::process::id()));
        let dead = base.path().join("tandem-container-7-4000000003");
        for dir in [&alive, &dead] {
            std::fs::create_dir_all(dir).unwrap_or_else(|e| panic!("{e}"));
        }
        let other_user = base.path().join("tandem-container-8-4000000004");
        std::fs::create_dir_all(&other_user).unwrap_or_else(|e| panic!("{e}"));
        remove_stale(base.path(), "tandem-container-7-");
        assert!(in_use.join("root").exists());
        assert!(!gone.exists());
        assert!(alive.exists());
        assert!(!dead.exists());
        assert!(other_user.exists());
    }
}
