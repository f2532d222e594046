//! A copy-on-write view of a project: an overlay (the project below, a layer directory
//! above) mounted **at the project's own path** in a mount namespace of its own, held by a
//! small process for as long as the view is in use. The host's tree never changes: every
//! write lands in the layer.
//!
//! - Tandem reads and writes the view through `/proc/<holder>/root/<project>` (the holder's
//!   root, its mounts included): what the agent's tools see is exactly what its commands
//!   see. Such a path must never be canonicalized (that would leave the view for the host's
//!   tree): [`Overlay::view`] is used as given.
//! - Commands join the holder's user and mount namespaces before building their container
//!   ([`Namespaces`]), so the project they see is the same overlay.
//!
//! The holder is `/bin/sh` reading its standard input, which Tandem holds: when the view is
//! dropped, or Tandem dies, the pipe closes and the holder exits, and the mount with it.

#[cfg(target_os = "linux")]
use std::io;
#[cfg(unix)]
use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use super::SandboxError;

/// The namespaces a command joins to see a view (its holder's). Only Linux mounts views: on
/// other systems there is never one to join.
#[derive(Debug)]
pub struct Namespaces {
    #[cfg(unix)]
    pub(super) user: OwnedFd,
    #[cfg(unix)]
    pub(super) mount: OwnedFd,
}

#[cfg(unix)]
impl Namespaces {
    /// The user and mount namespaces' descriptors.
    pub(crate) fn raw(&self) -> (std::os::fd::RawFd, std::os::fd::RawFd) {
        use std::os::fd::AsRawFd;
        (self.user.as_raw_fd(), self.mount.as_raw_fd())
    }
}

/// A mounted view, alive while this value is.
#[derive(Debug)]
pub struct Overlay {
    holder: std::process::Child,
    stdin: Option<std::process::ChildStdin>,
    view: PathBuf,
    project: PathBuf,
    namespaces: std::sync::Arc<Namespaces>,
}

impl Overlay {
    /// Where Tandem reads and writes the view (not to be canonicalized).
    pub fn view(&self) -> &Path {
        &self.view
    }

    /// The project's own path: where the view is mounted, for commands and the holder.
    pub fn project(&self) -> &Path {
        &self.project
    }

    /// The namespaces commands join to see the view.
    pub fn namespaces(&self) -> std::sync::Arc<Namespaces> {
        std::sync::Arc::clone(&self.namespaces)
    }

    /// Whether the holder still runs (the view is there).
    pub fn alive(&mut self) -> bool {
        self.holder.try_wait().is_ok_and(|s| s.is_none())
    }
}

impl Drop for Overlay {
    fn drop(&mut self) {
        drop(self.stdin.take());
        let _ = self.holder.kill();
        let _ = self.holder.wait();
    }
}

/// Characters the overlay's mount options cannot carry in a path.
fn bad_path(path: &Path) -> bool {
    path.to_string_lossy()
        .chars()
        .any(|c| matches!(c, ',' | ':' | '\\' | '\n') || c.is_control())
}

/// Mounts `upper` (with its `work` directory, both on one filesystem, neither inside the
/// project) over `project` (canonical) in a holder's namespaces.
pub fn mount(project: &Path, upper: &Path, work: &Path) -> Result<Overlay, SandboxError> {
    let refuse = |reason: String| SandboxError {
        path: project.to_path_buf(),
        reason,
    };
    #[cfg(target_os = "linux")]
    {
        if let Some(bad) = [project, upper, work].into_iter().find(|p| bad_path(p)) {
            return Err(refuse(format!(
                "{} has a character an overlay cannot mount (',', ':', '\\')",
                bad.display()
            )));
        }
        hold(project, upper, work)
            .map_err(|e| refuse(format!("the overlay could not be mounted: {e}")))
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = (upper, work, bad_path);
        Err(refuse("overlays need Linux".into()))
    }
}

/// Whether overlays can be mounted here (checked once, with a real one in a temp dir), or
/// why not.
pub fn supported() -> Result<(), String> {
    static FOUND: OnceLock<Result<(), String>> = OnceLock::new();
    FOUND
        .get_or_init(|| {
            let dir = tempfile::Builder::new()
                .prefix("tandem-overlay-probe-")
                .tempdir()
                .map_err(|e| e.to_string())?;
            let root = dir.path().canonicalize().map_err(|e| e.to_string())?;
            for sub in ["lower", "upper", "work"] {
                std::fs::create_dir(root.join(sub)).map_err(|e| e.to_string())?;
            }
            std::fs::write(root.join("lower/file"), "lower").map_err(|e| e.to_string())?;
            let overlay = mount(&root.join("lower"), &root.join("upper"), &root.join("work"))
                .map_err(|e| e.to_string())?;
            let seen = std::fs::read_to_string(overlay.view().join("file"));
            std::fs::write(overlay.view().join("file"), "upper").map_err(|e| e.to_string())?;
            let lower = std::fs::read_to_string(root.join("lower/file"));
            drop(overlay);
            match (seen.as_deref(), lower.as_deref()) {
                (Ok("lower"), Ok("lower")) => Ok(()),
                _ => Err("an overlay mounted but did not behave as one".into()),
            }
        })
        .clone()
}

/// Starts the holder: a new user and mount namespace, the overlay mounted over the project,
/// then `/bin/sh` waiting on the pipe Tandem holds.
#[cfg(target_os = "linux")]
#[allow(unsafe_code)]
fn hold(project: &Path, upper: &Path, work: &Path) -> io::Result<Overlay> {
    use std::ffi::CString;
    use std::os::unix::ffi::OsStrExt;
    use std::os::unix::process::CommandExt;

    let c = |bytes: Vec<u8>| CString::new(bytes).map_err(|_| io::ErrorKind::InvalidInput);
    let identity = super::identity();
    let map = |id: u32| c(format!("{id} {id} 1\n").into_bytes());
    let (uid_map, gid_map) = (map(identity.uid)?, map(identity.gid)?);
    let mut data = b"lowerdir=".to_vec();
    data.extend_from_slice(project.as_os_str().as_bytes());
    data.extend_from_slice(b",upperdir=");
    data.extend_from_slice(upper.as_os_str().as_bytes());
    data.extend_from_slice(b",workdir=");
    data.extend_from_slice(work.as_os_str().as_bytes());
    // Unprivileged overlays keep their whiteouts' marks in `user.` attributes.
    data.extend_from_slice(b",userxattr");
    let data = c(data)?;
    let target = c(project.as_os_str().as_bytes().to_vec())?;
    let mut command = std::process::Command::new("/bin/sh");
    command
        .args(["-c", "read _"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null());
    // SAFETY: the closure runs in the forked child: system calls only, on buffers made here.
    unsafe {
        command.pre_exec(move || {
            let check = |r: libc::c_int| match r {
                -1 => Err(io::Error::last_os_error()),
                _ => Ok(()),
            };
            check(libc::setsid())?;
            check(libc::unshare(libc::CLONE_NEWUSER | libc::CLONE_NEWNS))?;
            super::sys::write_file(c"/proc/self/setgroups", b"deny")?;
            super::sys::write_file(c"/proc/self/uid_map", uid_map.as_bytes())?;
            super::sys::write_file(c"/proc/self/gid_map", gid_map.as_bytes())?;
            let none = std::ptr::null::<libc::c_char>();
            let private = libc::MS_REC | libc::MS_PRIVATE;
            check(libc::mount(
                none,
                c"/".as_ptr(),
                none,
                private,
                std::ptr::null(),
            ))?;
            let overlay = c"overlay".as_ptr();
            check(libc::mount(
                overlay,
                target.as_ptr(),
                overlay,
                0,
                data.as_ptr().cast(),
            ))
        });
    }
    let mut holder = command.spawn()?;
    let stdin = holder.stdin.take();
    let pid = holder.id();
    let open = |ns: &str| -> io::Result<OwnedFd> {
        Ok(std::fs::File::open(format!("/proc/{pid}/ns/{ns}"))?.into())
    };
    let namespaces = match (open("user"), open("mnt")) {
        (Ok(user), Ok(mount)) => Namespaces { user, mount },
        (Err(e), _) | (_, Err(e)) => {
            let _ = holder.kill();
            let _ = holder.wait();
            return Err(e);
        }
    };
    let mut view = PathBuf::from(format!("/proc/{pid}/root"));
    view.push(project.strip_prefix("/").unwrap_or(project));
    Ok(Overlay {
        holder,
        stdin,
        view,
        project: project.to_path_buf(),
        namespaces: std::sync::Arc::new(namespaces),
    })
}
