//! The keeper of a project's change journal (Linux): one inotify watch per folder a context
//! walk may enter, every event numbered, and a Unix socket answering "what changed since T?".
//!
//! It leaves when nobody asked for [`IDLE`], when its socket is removed or taken over (its
//! data directory deleted, another keeper), or when the project folder goes; it says why
//! it cannot start (too many folders to watch) in a file beside the socket.

use std::collections::HashMap;
use std::ffi::OsStr;
use std::io::{self, BufRead, Read, Write};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use inotify::{EventMask, Inotify, WatchDescriptor, WatchMask};
use rustix::event::{PollFd, PollFlags, Timespec};

use super::{Answer, Token};

/// A keeper nobody asked for this long leaves.
const IDLE: Duration = Duration::from_secs(30 * 60);
/// How often it looks whether its socket and folder are still there.
const TICK: Timespec = Timespec {
    tv_sec: 1,
    tv_nsec: 0,
};
/// More changed paths than this since the oldest token: tokens are dropped (readers look at
/// everything once) rather than the memory grown.
const MAX_PATHS: usize = 200_000;
/// The longest question read from a reader.
const MAX_QUESTION: u64 = 8192;

/// The keeper's process: it first closes every descriptor it inherited past the standard
/// three (a pipe its starter's caller passed down would otherwise stay open for the keeper's
/// whole life, and whoever reads it would wait that long), then [`serve`]s.
pub fn keep_alone(root: &Path, socket: &Path) -> io::Result<()> {
    close_inherited();
    serve(root, socket)
}

#[allow(unsafe_code)]
fn close_inherited() {
    // SAFETY: close_range(2) closes descriptors of this process only, and the process has
    // opened none of its own yet (it is called first thing).
    let closed = unsafe { libc::syscall(libc::SYS_close_range, 3u32, u32::MAX, 0u32) };
    if closed == 0 {
        return;
    }
    // Kernels before 5.9: one at a time, as /proc lists them.
    let open: Vec<i32> = (std::fs::read_dir("/proc/self/fd")
        .into_iter()
        .flatten()
        .flatten())
    .filter_map(|entry| entry.file_name().to_str()?.parse().ok())
    .filter(|fd| *fd > 2)
    .collect();
    for fd in open {
        // SAFETY: as above; the listing's own descriptor is closed already (EBADF).
        unsafe {
            libc::close(fd);
        }
    }
}

/// Keeps the journal of the project at `root` (canonical) on `socket` until one of the
/// reasons to leave (see the module). Returns at once when another keeper holds the socket.
pub fn serve(root: &Path, socket: &Path) -> io::Result<()> {
    let Some(_lock) = crate::lockfile::try_take(&super::lock_path(socket))? else {
        return Ok(());
    };
    let mut keeper = match Keeper::new(root) {
        Ok(keeper) => keeper,
        Err(e) => {
            let why = format!("the change journal cannot watch {}: {e}\n", root.display());
            let _ = std::fs::write(super::refused_path(socket), why);
            return Err(e);
        }
    };
    let _ = std::fs::remove_file(socket);
    let listener = UnixListener::bind(socket)?;
    std::fs::set_permissions(socket, std::fs::Permissions::from_mode(0o600))?;
    listener.set_nonblocking(true)?;
    let bound = std::fs::symlink_metadata(socket)?.ino();
    let kept = keep(&mut keeper, &listener, socket, bound);
    // Still ours: no reader connects to a keeper that left.
    if std::fs::symlink_metadata(socket).is_ok_and(|m| m.ino() == bound) {
        let _ = std::fs::remove_file(socket);
    }
    kept
}

/// Watches and answers until a reason to leave (see the module).
fn keep(keeper: &mut Keeper, listener: &UnixListener, socket: &Path, bound: u64) -> io::Result<()> {
    let mut asked = Instant::now();
    loop {
        let (events, asking) = {
            let mut fds = [
                PollFd::new(&keeper.inotify, PollFlags::IN),
                PollFd::new(listener, PollFlags::IN),
            ];
            match rustix::event::poll(&mut fds, Some(&TICK)) {
                Ok(_) | Err(rustix::io::Errno::INTR) => {}
                Err(e) => return Err(e.into()),
            }
            (!fds[0].revents().is_empty(), !fds[1].revents().is_empty())
        };
        if events && !keeper.read_events()? {
            return Ok(());
        }
        if asking {
            while let Ok((stream, _)) = listener.accept() {
                asked = Instant::now();
                // Not for a root that is another folder now: the asker, answered nothing,
                // looks at everything and starts a keeper for the folder there.
                if !keeper.still_at_root() || !keeper.answer(stream)? {
                    return Ok(());
                }
            }
        }
        let ours = std::fs::symlink_metadata(socket).is_ok_and(|m| m.ino() == bound);
        if !ours || asked.elapsed() > IDLE || !keeper.still_at_root() {
            return Ok(());
        }
    }
}

pub(super) struct Keeper {
    root: PathBuf,
    /// The folder watched (device and inode): the root's path may come to name another
    /// (its parent moved away and a copy put in its place), whose changes no watch sees.
    root_is: (u64, u64),
    inotify: Inotify,
    /// Each watched folder, relative to the root (`""` for the root).
    folders: HashMap<WatchDescriptor, Vec<u8>>,
    /// Files with more than one link, each watched on its own with the paths naming it here:
    /// a write through a link outside the project reaches no folder's watch.
    linked: HashMap<WatchDescriptor, Vec<Vec<u8>>>,
    root_watch: Option<WatchDescriptor>,
    /// This keeper's number (see [`Token::keeper`]).
    id: u64,
    seq: u64,
    /// Tokens before this one lost events: their readers look at everything.
    floor: u64,
    /// Each changed path, with the number of its last change.
    changed: HashMap<Vec<u8>, u64>,
    /// Files (inodes) that gained a name since the last question (see
    /// [`Keeper::on_event`]).
    relinked: Vec<u64>,
    buffer: Vec<u8>,
}

impl Keeper {
    pub(super) fn new(root: &Path) -> io::Result<Keeper> {
        let id = {
            let nanos = (std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH))
                .map_or(0, |d| d.as_nanos() as u64);
            nanos ^ (u64::from(std::process::id()) << 32) ^ 0x5eed
        };
        let meta = std::fs::metadata(root)?;
        let mut keeper = Keeper {
            root: root.to_path_buf(),
            root_is: (meta.dev(), meta.ino()),
            inotify: Inotify::init()?,
            folders: HashMap::new(),
            linked: HashMap::new(),
            root_watch: None,
            id,
            seq: 1,
            floor: 1,
            changed: HashMap::new(),
            relinked: Vec::new(),
            buffer: vec![0; 64 * 1024],
        };
        keeper.watch_tree(b"")?;
        Ok(keeper)
    }

    /// Whether the root's path still names the folder watched.
    fn still_at_root(&self) -> bool {
        std::fs::metadata(&self.root)
            .is_ok_and(|m| m.is_dir() && (m.dev(), m.ino()) == self.root_is)
    }

    /// Drops every watch and every token, then watches the whole tree again: after events
    /// were lost, or a watched folder moved (its watches would name the old path).
    fn start_over(&mut self) -> io::Result<()> {
        self.inotify = Inotify::init()?;
        self.folders.clear();
        self.linked.clear();
        self.root_watch = None;
        self.changed.clear();
        self.seq += 1;
        self.floor = self.seq;
        self.watch_tree(b"")
    }

    /// Watches the folder `rel` and every folder under it that a walk may enter. A folder that
    /// vanished or cannot be read meanwhile is passed over (the walk passes it over too); too
    /// many folders for the system's limit is an error.
    fn watch_tree(&mut self, rel: &[u8]) -> io::Result<()> {
        let mask = WatchMask::MODIFY
            | WatchMask::ATTRIB
            | WatchMask::CREATE
            | WatchMask::DELETE
            | WatchMask::MOVED_FROM
            | WatchMask::MOVED_TO
            | WatchMask::DELETE_SELF
            | WatchMask::MOVE_SELF
            | WatchMask::DONT_FOLLOW
            | WatchMask::ONLYDIR
            | WatchMask::EXCL_UNLINK;
        let mut todo = vec![rel.to_vec()];
        while let Some(rel) = todo.pop() {
            let path = self.root.join(OsStr::from_bytes(&rel));
            let wd = match self.inotify.watches().add(&path, mask) {
                Ok(wd) => wd,
                Err(e) => match too_many(e) {
                    Some(e) => return Err(e),
                    None => continue,
                },
            };
            if rel.is_empty() {
                self.root_watch = Some(wd.clone());
            }
            self.folders.insert(wd, rel.clone());
            let Ok(entries) = std::fs::read_dir(&path) else {
                continue;
            };
            for entry in entries.flatten() {
                let is_dir = entry.file_type().is_ok_and(|t| t.is_dir());
                let name = entry.file_name();
                if is_dir && !never_walked(&name) {
                    todo.push(joined(&rel, name.as_bytes()));
                } else if !is_dir && entry.metadata().is_ok_and(|m| m.nlink() > 1) {
                    self.watch_linked(joined(&rel, name.as_bytes()))?;
                }
            }
        }
        Ok(())
    }

    /// Watches the file `rel` on its own when it has more than one link (see
    /// [`Keeper::linked`]).
    fn watch_linked(&mut self, rel: Vec<u8>) -> io::Result<()> {
        if self.linked_inode(&rel).is_none() {
            return Ok(());
        }
        let path = self.root.join(OsStr::from_bytes(&rel));
        let mask = WatchMask::MODIFY | WatchMask::ATTRIB | WatchMask::DONT_FOLLOW;
        match self.inotify.watches().add(&path, mask) {
            Ok(wd) => {
                let paths = self.linked.entry(wd).or_default();
                if !paths.contains(&rel) {
                    paths.push(rel);
                }
                Ok(())
            }
            Err(e) => too_many(e).map_or(Ok(()), Err),
        }
    }

    /// The inode of the file at `rel` when it has other names (more than one link).
    fn linked_inode(&self, rel: &[u8]) -> Option<u64> {
        let path = self.root.join(OsStr::from_bytes(rel));
        let meta = std::fs::symlink_metadata(path).ok()?;
        (meta.is_file() && meta.nlink() > 1).then(|| meta.ino())
    }

    /// The other names in the watched folders of the files that gained one (see
    /// [`Keeper::relinked`]): each is watched with the file, and counted as changed (a
    /// write through the new name may have come before). Entries are matched by the inode
    /// their folder lists, nothing is opened.
    fn find_other_names(&mut self) -> io::Result<()> {
        if self.relinked.is_empty() {
            return Ok(());
        }
        let inodes: std::collections::HashSet<u64> = self.relinked.drain(..).collect();
        let folders: Vec<Vec<u8>> = self.folders.values().cloned().collect();
        let mut found = Vec::new();
        for folder in folders {
            let Ok(entries) = std::fs::read_dir(self.root.join(OsStr::from_bytes(&folder))) else {
                continue;
            };
            for entry in entries.flatten() {
                if inodes.contains(&std::os::unix::fs::DirEntryExt::ino(&entry)) {
                    found.push(joined(&folder, entry.file_name().as_bytes()));
                }
            }
        }
        for rel in found {
            self.watch_linked(rel.clone())?;
            self.record(rel);
        }
        Ok(())
    }

    fn record(&mut self, path: Vec<u8>) {
        self.seq += 1;
        self.changed.insert(path, self.seq);
        if self.changed.len() > MAX_PATHS {
            self.changed.clear();
            self.floor = self.seq;
        }
    }

    /// Reads every queued event; `false` when the project folder is gone.
    pub(super) fn read_events(&mut self) -> io::Result<bool> {
        loop {
            let events: Vec<(WatchDescriptor, EventMask, Option<Vec<u8>>)> =
                match self.inotify.read_events(&mut self.buffer) {
                    Ok(events) => events
                        .map(|e| (e.wd, e.mask, e.name.map(|n| n.as_bytes().to_vec())))
                        .collect(),
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(true),
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                    Err(e) => return Err(e),
                };
            for (wd, mask, name) in events {
                if !self.on_event(wd, mask, name)? {
                    return Ok(false);
                }
            }
        }
    }

    /// Takes one event into the journal; `false` when the project folder is gone.
    fn on_event(
        &mut self,
        wd: WatchDescriptor,
        mask: EventMask,
        name: Option<Vec<u8>>,
    ) -> io::Result<bool> {
        if mask.contains(EventMask::Q_OVERFLOW) {
            self.start_over()?;
            return Ok(true);
        }
        if let Some(paths) = self.linked.get(&wd)
            && !mask.contains(EventMask::IGNORED)
        {
            for path in paths.clone() {
                self.record(path);
            }
            return Ok(true);
        }
        if mask.contains(EventMask::IGNORED) {
            self.linked.remove(&wd);
            self.folders.remove(&wd);
            return Ok(self.root_watch.as_ref() != Some(&wd));
        }
        let is_root = self.root_watch.as_ref() == Some(&wd);
        if is_root && mask.intersects(EventMask::DELETE_SELF | EventMask::MOVE_SELF) {
            return Ok(false);
        }
        let (Some(folder), Some(name)) = (self.folders.get(&wd), name) else {
            return Ok(true);
        };
        let path = joined(folder, &name);
        if !mask.contains(EventMask::ISDIR) {
            if mask.intersects(EventMask::CREATE | EventMask::MOVED_TO) {
                self.watch_linked(path.clone())?;
                // A new name of a file with others (`ln a b`): its other names in the
                // project are not known from it, and a write through it reaches none of
                // their folders' watches. The next question looks for them (one look,
                // however many links were made).
                if let Some(ino) = self.linked_inode(&path) {
                    self.relinked.push(ino);
                }
            }
            self.record(path);
            return Ok(true);
        }
        if never_walked(OsStr::from_bytes(&name)) {
            return Ok(true);
        }
        if mask.contains(EventMask::MOVED_FROM) {
            // Its watches (and those below it) now name a path that is not there.
            self.start_over()?;
        } else if mask.intersects(EventMask::CREATE | EventMask::MOVED_TO) {
            // What was made in it before its watch is covered by its path: a folder stands
            // for everything under it.
            self.watch_tree(&path)?;
            self.record(path);
        } else if mask.contains(EventMask::DELETE) {
            self.record(path);
        }
        Ok(true)
    }

    /// Answers one reader, after reading every event queued until now; `false` when the
    /// project folder is gone.
    fn answer(&mut self, stream: UnixStream) -> io::Result<bool> {
        let _ = stream.set_nonblocking(false);
        let _ = stream.set_read_timeout(Some(Duration::from_secs(1)));
        let _ = stream.set_write_timeout(Some(Duration::from_secs(5)));
        if !same_user(&stream) {
            return Ok(true);
        }
        let mut question = Vec::new();
        let mut reader = io::BufReader::new((&stream).take(MAX_QUESTION));
        if reader.read_until(b'\n', &mut question).is_err() {
            return Ok(true);
        }
        if !self.read_events()? {
            return Ok(false);
        }
        self.find_other_names()?;
        let answer = self.since(&question);
        let _ = (&stream).write_all(&wire(&answer));
        Ok(true)
    }

    /// The answer to a question (`since <token or -> <root>`).
    pub(super) fn since(&self, question: &[u8]) -> Answer {
        let token = Token {
            keeper: self.id,
            seq: self.seq,
        };
        let text = String::from_utf8_lossy(question);
        let mut parts = text.trim_end_matches('\n').splitn(3, ' ');
        let asked = match (parts.next(), parts.next(), parts.next()) {
            (Some("since"), Some(since), Some(root)) if Path::new(root) == self.root => {
                Token::parse(since)
            }
            _ => None,
        };
        match asked {
            Some(t) if t.keeper == self.id && t.seq >= self.floor && t.seq <= self.seq => {
                let paths = (self.changed.iter())
                    .filter(|(_, seq)| **seq > t.seq)
                    .map(|(path, _)| String::from_utf8_lossy(path).into_owned())
                    .collect();
                Answer::Changed { token, paths }
            }
            _ => Answer::Everything { token },
        }
    }
}

/// The bytes of an answer (see `parse_answer`).
fn wire(answer: &Answer) -> Vec<u8> {
    match answer {
        Answer::Everything { token } => format!("everything {}\n", token.to_text()).into_bytes(),
        Answer::Changed { token, paths } => {
            let mut out = format!("changed {} {}\n", token.to_text(), paths.len()).into_bytes();
            for path in paths {
                out.extend_from_slice(path.as_bytes());
                out.push(0);
            }
            out
        }
    }
}

/// The error to stop at when adding a watch failed for want of watches (the system's limit);
/// `None` for another failure (the path vanished or cannot be read: passed over).
fn too_many(e: io::Error) -> Option<io::Error> {
    (e.raw_os_error() == Some(libc::ENOSPC)).then(|| {
        io::Error::other(
            "more folders and linked files than the system lets one process watch \
             (fs.inotify.max_user_watches)",
        )
    })
}

/// Whether a folder of this name is never entered by a context walk, whatever the ignore
/// files say: there is nothing to watch in it.
fn never_walked(name: &OsStr) -> bool {
    match name.to_str() {
        Some(name) => crate::folder::context::never_walked_folder(name),
        None => name.as_bytes().starts_with(b"."),
    }
}

fn joined(folder: &[u8], name: &[u8]) -> Vec<u8> {
    match folder.is_empty() {
        true => name.to_vec(),
        false => [folder, b"/", name].concat(),
    }
}

/// Whether the reader at the other end runs as this process's user.
fn same_user(stream: &UnixStream) -> bool {
    rustix::net::sockopt::socket_peercred(stream)
        .is_ok_and(|cred| cred.uid == rustix::process::geteuid())
}
