//! The change journal: which of a project's files changed since the code index last looked,
//! kept by a small process of its own (`tandem journal`, its *keeper*) that outlives the
//! command asking, so that a turn need not `stat` every file of a big project to find the few
//! that changed (as git's fsmonitor spares `git status`).
//!
//! The keeper (Linux, [`serve`]) watches every folder a context walk may enter (inotify; not
//! `.git`, the always excluded folders or hidden ones other than the project's configuration)
//! and numbers what it sees. A reader asks through a Unix socket beside the index: "what
//! changed since token T?", and is told the paths and a new token, or "look at everything"
//! when T is not one of this keeper's or events were lost (the kernel's queue overflowed, a
//! folder moved, too many paths changed). Before it answers, the keeper reads every event the
//! kernel has queued: inotify queues an event within the system call that made the change, so
//! a change finished before the question was asked is in the answer.
//!
//! Which files exist is not the journal's business: the index compares the walk's list of
//! paths with its own (see `index::refresh`). The journal says whose *content* may differ.
//!
//! Not seen, as by git's fsmonitor: writes through a shared memory mapping, and changes made
//! by another machine on a network file system. `TANDEM_JOURNAL=off` turns the journal off
//! (every turn then stats every file); where there is no keeper (other systems, a keeper that
//! cannot watch so many folders) every turn does so too.

#[cfg(target_os = "linux")]
mod keeper;
#[cfg(target_os = "linux")]
pub use keeper::{keep_alone, serve};

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{LazyLock, Mutex, OnceLock};
use std::time::{Duration, Instant, SystemTime};

/// How long a reader waits for the keeper's answer before looking at every file instead (it
/// answers within a millisecond or two; one stopped or swamped costs a turn this much).
#[cfg(unix)]
const ASK_WAIT: Duration = Duration::from_millis(250);
/// How long after a keeper said it cannot watch the project none is started again.
const REFUSED_FOR: Duration = Duration::from_secs(3600);
/// A socket's path must fit in `sockaddr_un` (108 bytes on Linux, with its terminating NUL).
const MAX_SOCKET_PATH: usize = 100;

/// A point in a keeper's numbering of what it saw: changes after it are the ones asked for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Token {
    /// Which keeper (a number drawn when it starts): another keeper's tokens mean nothing.
    pub keeper: u64,
    pub seq: u64,
}

impl Token {
    pub fn to_text(self) -> String {
        format!("{:x}:{}", self.keeper, self.seq)
    }

    pub fn parse(text: &str) -> Option<Token> {
        let (keeper, seq) = text.split_once(':')?;
        Some(Token {
            keeper: u64::from_str_radix(keeper, 16).ok()?,
            seq: seq.parse().ok()?,
        })
    }
}

/// A keeper's answer to "what changed since T?".
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Answer {
    /// Only these may have changed (`/`-separated paths relative to the root; a folder stands
    /// for everything under it); ask since `token` next time.
    Changed { token: Token, paths: Vec<String> },
    /// Anything may have changed: look at every file, then ask since `token`.
    Everything { token: Token },
}

impl Answer {
    pub fn token(&self) -> Token {
        match self {
            Answer::Changed { token, .. } | Answer::Everything { token } => *token,
        }
    }
}

/// The journal of one project, as a reader reaches it.
#[derive(Debug, Clone)]
pub struct Journal {
    root: PathBuf,
    socket: PathBuf,
}

impl Journal {
    /// The journal of the project at `root` (canonical), its socket at `socket`; `None` when
    /// the journal is turned off, the socket's path is too long to be one, the root cannot be
    /// named in a question (not UTF-8, or with a line break), or this system has no keeper.
    pub fn new(root: &Path, socket: PathBuf) -> Option<Journal> {
        let off = std::env::var_os("TANDEM_JOURNAL").is_some_and(|v| v == "off");
        let fits = socket.as_os_str().len() <= MAX_SOCKET_PATH;
        let named = root.to_str().is_some_and(|r| !r.contains('\n'));
        (cfg!(target_os = "linux") && !off && fits && named).then(|| Journal {
            root: root.to_path_buf(),
            socket,
        })
    }

    /// What changed since `since` (`None`: never asked), by the keeper's word; `None` when no
    /// keeper answered in time (none runs, or it is stuck): then look at every file.
    pub fn ask(&self, since: Option<Token>) -> Option<Answer> {
        #[cfg(unix)]
        {
            ask(&self.socket, &self.root, since)
        }
        #[cfg(not(unix))]
        {
            let _ = since;
            None
        }
    }

    /// Starts a keeper for this project in the background, unless none can be started (see
    /// [`keep_with`]), one said lately that it cannot watch this project, or this process
    /// started one moments ago. A keeper that finds another one running leaves at once.
    pub fn start_keeper(&self) {
        let Some(program) = KEEPER_PROGRAM.get() else {
            return;
        };
        let refused = refused_path(&self.socket);
        let recently_refused = (std::fs::metadata(&refused).and_then(|m| m.modified()))
            .is_ok_and(|at| SystemTime::now().duration_since(at).unwrap_or_default() < REFUSED_FOR);
        if recently_refused {
            return;
        }
        // Per project: a window with several projects starts each one's keeper.
        static STARTED: LazyLock<Mutex<HashMap<PathBuf, Instant>>> = LazyLock::new(Mutex::default);
        let mut started = STARTED.lock().unwrap_or_else(|p| p.into_inner());
        let lately = started.get(&self.socket);
        if lately.is_some_and(|at| at.elapsed() < Duration::from_secs(2)) {
            return;
        }
        started.insert(self.socket.clone(), Instant::now());
        let mut command = std::process::Command::new(program);
        command
            .arg("journal")
            .arg("--root")
            .arg(&self.root)
            .arg("--socket")
            .arg(&self.socket)
            .current_dir("/")
            // It needs nothing from the environment, and a process that outlives the
            // command should not carry the person's keys.
            .env_clear()
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null());
        #[cfg(unix)]
        std::os::unix::process::CommandExt::process_group(&mut command, 0);
        // Waited for on a thread of its own, so that a long-lived window leaves no zombie;
        // a command that ends first leaves the keeper to init.
        if let Ok(mut child) = command.spawn() {
            std::thread::spawn(move || child.wait());
        }
    }
}

/// The program that keeps journals: this one (`tandem`), named by its `main`. Without it (a
/// library, a test binary) no keeper is started, and journals are read only where one runs.
pub fn keep_with(program: PathBuf) {
    let _ = KEEPER_PROGRAM.set(program);
}

static KEEPER_PROGRAM: OnceLock<PathBuf> = OnceLock::new();

/// Where a keeper says why it cannot watch a project (and when: none is started for
/// [`REFUSED_FOR`]).
fn refused_path(socket: &Path) -> PathBuf {
    let mut name = socket.as_os_str().to_owned();
    name.push(".refused");
    PathBuf::from(name)
}

/// The lock a keeper holds for its life: one keeper per socket.
#[cfg(target_os = "linux")]
fn lock_path(socket: &Path) -> PathBuf {
    let mut name = socket.as_os_str().to_owned();
    name.push(".lock");
    PathBuf::from(name)
}

/// The question on the wire: `since <token or -> <root>\n`.
#[cfg(unix)]
fn question(root: &str, since: Option<Token>) -> String {
    let since = since.map_or_else(|| "-".to_string(), Token::to_text);
    format!("since {since} {root}\n")
}

/// The answer on the wire: `changed <token> <count>\n` then each path ended by a NUL, or
/// `everything <token>\n`. An answer cut short (fewer paths than counted) is no answer.
#[cfg(unix)]
fn parse_answer(bytes: &[u8]) -> Option<Answer> {
    let end = bytes.iter().position(|&b| b == b'\n')?;
    let head = std::str::from_utf8(&bytes[..end]).ok()?;
    let mut head = head.split(' ');
    let (kind, token, count) = (head.next()?, head.next()?, head.next());
    let token = Token::parse(token)?;
    let rest = &bytes[end + 1..];
    match (kind, count) {
        ("everything", None) if rest.is_empty() => Some(Answer::Everything { token }),
        ("changed", Some(count)) => {
            let count: usize = count.parse().ok()?;
            if rest.last().is_some_and(|&b| b != 0) {
                return None;
            }
            let paths: Vec<String> = (rest.split(|&b| b == 0))
                .filter(|p| !p.is_empty())
                .map(|p| String::from_utf8_lossy(p).into_owned())
                .collect();
            (paths.len() == count).then_some(Answer::Changed { token, paths })
        }
        _ => None,
    }
}

#[cfg(unix)]
fn ask(socket: &Path, root: &Path, since: Option<Token>) -> Option<Answer> {
    use std::io::{Read, Write};
    let root = root.to_str()?;
    let deadline = Instant::now() + ASK_WAIT;
    let mut stream = std::os::unix::net::UnixStream::connect(socket).ok()?;
    stream.set_write_timeout(Some(ASK_WAIT)).ok()?;
    stream.write_all(question(root, since).as_bytes()).ok()?;
    // The whole answer within the wait, however slowly it comes.
    let mut answer = Vec::new();
    let mut chunk = [0u8; 64 * 1024];
    loop {
        let left = deadline.checked_duration_since(Instant::now())?;
        stream
            .set_read_timeout(Some(left.max(Duration::from_millis(1))))
            .ok()?;
        match stream.read(&mut chunk) {
            Ok(0) => break,
            Ok(n) => answer.extend_from_slice(&chunk[..n]),
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(_) => return None,
        }
    }
    parse_answer(&answer)
}

#[cfg(test)]
mod tests;
