//! Opening a file for reading only when it is a regular file. Tandem's own reads of project
//! files (the agent's tools, the context packed into the prompt, `@` mentions, the scratch copy and
//! the agent's workspace, the edit checker) go through [`open_regular`], because what a walk or a
//! `stat` saw as a file may be something else by the time it is opened, and because some
//! things are never safe to read:
//! - a named pipe (FIFO) blocks `open` until a writer comes, and a read until it writes:
//!   nothing ever does, so the call (and the turn waiting on it) hangs for ever;
//! - a device can stream without end (`/dev/zero`) or act on being opened (a terminal, a
//!   watchdog);
//! - a socket cannot be read like a file at all.
//!
//! On Unix the file is opened with `O_NONBLOCK` (a pipe's `open` returns at once), `O_NOFOLLOW`
//! (a symlink put in the file's place is refused, not followed: paths reach here with their
//! links already resolved by [`super::resolve`], or from a walk that does not follow them) and
//! `O_NOCTTY`, and the kind is then checked on the opened handle (`fstat`), so nothing can be
//! swapped in between the check and the read. A cheap `lstat` first spares opening a device or
//! a pipe in the ordinary case. `O_NONBLOCK` changes nothing for a regular file, so it stays
//! set. Elsewhere the `lstat` and a check of the opened handle are what there is.

use std::fs::{File, FileType, Metadata};
use std::io::{self, Read};
use std::path::Path;

/// What is at a path that is not a regular file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FileKind {
    Directory,
    Symlink,
    NamedPipe,
    Socket,
    CharDevice,
    BlockDevice,
    Other,
}

impl FileKind {
    /// `None` for a regular file.
    fn of(file_type: FileType) -> Option<FileKind> {
        if file_type.is_file() {
            return None;
        }
        if file_type.is_dir() {
            return Some(FileKind::Directory);
        }
        if file_type.is_symlink() {
            return Some(FileKind::Symlink);
        }
        #[cfg(unix)]
        {
            use std::os::unix::fs::FileTypeExt;
            if file_type.is_fifo() {
                return Some(FileKind::NamedPipe);
            }
            if file_type.is_socket() {
                return Some(FileKind::Socket);
            }
            if file_type.is_char_device() {
                return Some(FileKind::CharDevice);
            }
            if file_type.is_block_device() {
                return Some(FileKind::BlockDevice);
            }
        }
        Some(FileKind::Other)
    }

    /// "a named pipe", for messages.
    pub fn describe(self) -> &'static str {
        match self {
            FileKind::Directory => "a directory",
            FileKind::Symlink => "a symbolic link",
            FileKind::NamedPipe => "a named pipe",
            FileKind::Socket => "a socket",
            FileKind::CharDevice => "a character device",
            FileKind::BlockDevice => "a block device",
            FileKind::Other => "a special file",
        }
    }
}

impl std::fmt::Display for FileKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.describe())
    }
}

#[derive(Debug, thiserror::Error)]
pub enum OpenError {
    /// Something other than a regular file is there; nothing was read from it. Callers name
    /// the path themselves (`src/x is a named pipe, not a regular file; it was not read`).
    #[error("{0}, not a regular file; it was not read")]
    NotRegular(FileKind),
    #[error(transparent)]
    Io(#[from] io::Error),
}

impl From<OpenError> for io::Error {
    fn from(e: OpenError) -> io::Error {
        match e {
            OpenError::Io(e) => e,
            not_regular => io::Error::new(io::ErrorKind::InvalidInput, not_regular),
        }
    }
}

/// A regular file opened for reading, with what `fstat` said of the opened handle (its size
/// and mode are the file's actually read, not a path's at some earlier moment).
#[derive(Debug)]
pub struct RegularFile {
    pub file: File,
    pub meta: Metadata,
}

/// Opens `path` for reading if, and only if, it is a regular file; never waits on a pipe and
/// never follows a final symlink. See the module notes.
pub fn open_regular(path: &Path) -> Result<RegularFile, OpenError> {
    refuse_special(std::fs::symlink_metadata(path)?.file_type())?;
    let file = open_nonblocking(path)?;
    let meta = file.metadata()?;
    refuse_special(meta.file_type())?;
    Ok(RegularFile { file, meta })
}

/// The whole of the regular file at `path` (see [`open_regular`]), with its metadata.
pub fn read_regular(path: &Path) -> Result<(Vec<u8>, Metadata), OpenError> {
    let RegularFile { mut file, meta } = open_regular(path)?;
    let mut bytes = Vec::with_capacity(usize::try_from(meta.len()).unwrap_or(0));
    file.read_to_end(&mut bytes)?;
    Ok((bytes, meta))
}

/// The text of the project file `rel` under `root`: resolved inside the project (see
/// [`super::resolve`]), read only if it is a regular file (see [`read_regular`]), and UTF-8;
/// `None` when any of that fails.
pub fn read_project_text(root: &Path, rel: &str) -> Option<String> {
    let resolved = super::resolve(root, rel).ok()?;
    let (bytes, _) = read_regular(&resolved.abs).ok()?;
    String::from_utf8(bytes).ok()
}

fn refuse_special(file_type: FileType) -> Result<(), OpenError> {
    match FileKind::of(file_type) {
        None => Ok(()),
        Some(kind) => Err(OpenError::NotRegular(kind)),
    }
}

#[cfg(unix)]
fn open_nonblocking(path: &Path) -> Result<File, OpenError> {
    use std::os::unix::fs::OpenOptionsExt;
    let opened = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_NOFOLLOW | libc::O_NOCTTY)
        .open(path);
    match opened {
        Ok(file) => Ok(file),
        // O_NOFOLLOW met a symlink put there since the `lstat` (FreeBSD says EMLINK).
        Err(e) if matches!(e.raw_os_error(), Some(libc::ELOOP | libc::EMLINK)) => {
            Err(OpenError::NotRegular(FileKind::Symlink))
        }
        Err(e) => Err(OpenError::Io(e)),
    }
}

#[cfg(not(unix))]
fn open_nonblocking(path: &Path) -> Result<File, OpenError> {
    // No pipes to block on in the project here; the handle's own check follows.
    Ok(File::open(path)?)
}

/// Special files for tests, and a way to prove a call returns instead of hanging.
#[cfg(all(test, unix))]
pub(crate) mod test_support {
    use std::path::Path;
    use std::sync::mpsc;
    use std::time::Duration;

    /// How long a call that must not block may take (generous: the machine may be loaded).
    pub const PROMPTLY: Duration = Duration::from_secs(10);

    /// Makes a named pipe at `path`. Nothing ever writes to it.
    #[allow(unsafe_code)]
    pub fn fifo(path: &Path) {
        use std::os::unix::ffi::OsStrExt;
        let name = std::ffi::CString::new(path.as_os_str().as_bytes()).expect("a path without NUL");
        // SAFETY: `name` is a valid NUL-terminated path that outlives the call; mkfifo only
        // reads it.
        let made = unsafe { libc::mkfifo(name.as_ptr(), 0o644) };
        assert_eq!(
            made,
            0,
            "mkfifo {}: {}",
            path.display(),
            std::io::Error::last_os_error()
        );
    }

    /// Leaves a Unix socket file at `path` (the listener is dropped; the file stays).
    pub fn socket(path: &Path) {
        std::os::unix::net::UnixListener::bind(path).expect("a socket file");
    }

    /// Runs `call` on a thread of its own and returns its result, or panics when it has not
    /// returned within [`PROMPTLY`]: a read that hangs on a pipe fails the test instead of
    /// hanging it (the stuck thread is left behind).
    pub fn promptly<T: Send + 'static>(call: impl FnOnce() -> T + Send + 'static) -> T {
        let (tx, rx) = mpsc::channel();
        let thread = std::thread::spawn(move || {
            let _ = tx.send(call());
        });
        match rx.recv_timeout(PROMPTLY) {
            Ok(value) => value,
            Err(mpsc::RecvTimeoutError::Timeout) => {
                panic!("the call did not return within {PROMPTLY:?}: it blocked")
            }
            Err(mpsc::RecvTimeoutError::Disconnected) => match thread.join() {
                Err(panic) => std::panic::resume_unwind(panic),
                Ok(()) => unreachable!("the thread sends before it ends"),
            },
        }
    }
}

#[cfg(all(test, unix))]
mod tests {
    use super::test_support::{fifo, promptly, socket};
    use super::*;

    fn kind_at(path: &Path) -> Option<FileKind> {
        let path = path.to_path_buf();
        match promptly(move || open_regular(&path).map(|_| ())) {
            Ok(()) => None,
            Err(OpenError::NotRegular(kind)) => Some(kind),
            Err(OpenError::Io(e)) => panic!("{e}"),
        }
    }

    #[test]
    fn only_a_regular_file_is_opened_and_nothing_else_blocks_or_streams() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::write(root.join("file.rs"), "fn main() {}\n").unwrap();
        fifo(&root.join("pipe.rs"));
        socket(&root.join("sock.rs"));
        std::fs::create_dir(root.join("dir.rs")).unwrap();
        std::os::unix::fs::symlink(root.join("file.rs"), root.join("link.rs")).unwrap();
        std::os::unix::fs::symlink("/dev/zero", root.join("zero.rs")).unwrap();

        assert_eq!(kind_at(&root.join("file.rs")), None);
        assert_eq!(kind_at(&root.join("pipe.rs")), Some(FileKind::NamedPipe));
        assert_eq!(kind_at(&root.join("sock.rs")), Some(FileKind::Socket));
        assert_eq!(kind_at(&root.join("dir.rs")), Some(FileKind::Directory));
        // A final symlink is never followed, to a file or to a device.
        assert_eq!(kind_at(&root.join("link.rs")), Some(FileKind::Symlink));
        assert_eq!(kind_at(&root.join("zero.rs")), Some(FileKind::Symlink));
        assert_eq!(kind_at(Path::new("/dev/zero")), Some(FileKind::CharDevice));
        assert_eq!(kind_at(Path::new("/dev/null")), Some(FileKind::CharDevice));

        // What stands between a swap after the `lstat` and a read: the open itself neither
        // waits on a pipe nor follows a link, and the handle's own kind is checked.
        let pipe = root.join("pipe.rs");
        let opened = promptly(move || open_nonblocking(&pipe).map(|f| f.metadata().unwrap()));
        assert_eq!(
            FileKind::of(opened.unwrap().file_type()),
            Some(FileKind::NamedPipe)
        );
        let zero = open_nonblocking(&root.join("zero.rs")).unwrap_err();
        assert!(
            matches!(zero, OpenError::NotRegular(FileKind::Symlink)),
            "{zero:?}"
        );

        let (bytes, meta) = read_regular(&root.join("file.rs")).unwrap();
        assert_eq!((bytes.as_slice(), meta.len()), (&b"fn main() {}\n"[..], 13));
        let missing = read_regular(&root.join("nope")).unwrap_err();
        assert!(matches!(&missing, OpenError::Io(e) if e.kind() == io::ErrorKind::NotFound));
        let refused = OpenError::NotRegular(FileKind::NamedPipe).to_string();
        assert_eq!(refused, "a named pipe, not a regular file; it was not read");
    }
}
