//! The agent's container, proven against the kernel. Each test first asks the kernel itself
//! what it supports (the Landlock ABI by system call; namespaces with util-linux's
//! `unshare`), not the code under test, and then requires every protection that support
//! implies. Each attack comes with a positive control: the same act succeeds outside the
//! container (so the test fails if the attack stops working for another reason). Secrets
//! are decoys in a fake home directory; the network is a listener the test owns.

mod corpus;
mod network;
mod processes;
mod terminal;
mod work;
mod world;

use std::io::{ErrorKind, Read};
use std::net::{TcpListener, UdpSocket};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use tandem_core::process::{Sandbox, SandboxStatus, ShellOutcome, ShellRequest};
use tandem_core::sandbox::{Confinement, Limits, default_hidden, default_readable};

use super::{kernel_landlock_abi, request, run};

pub const DECOY: &str = "DECOY-SECRET";

/// A project (a git repository with files), a fake home with decoy credentials and a
/// toolchain, a directory outside both, and the call's temp dir.
pub struct Scratch {
    pub project: tempfile::TempDir,
    home: PathBuf,
    /// Removes the fake home when it is the scratch's own (not one given by `at_home`).
    _home: Option<tempfile::TempDir>,
    pub outside: tempfile::TempDir,
    pub tmp: tempfile::TempDir,
    pub limits: Limits,
}

impl Scratch {
    pub fn new() -> Scratch {
        let home = tempfile::tempdir().unwrap();
        Scratch::with_home(home.path().to_path_buf(), Some(home))
    }

    /// A scratch whose fake home is `home` (made here, removed by whoever chose it): the
    /// `HOME` of a test process of its own, so the container hides it as the person's.
    pub fn at_home(home: &Path) -> Scratch {
        Scratch::with_home(home.to_path_buf(), None)
    }

    fn with_home(home: PathBuf, owned: Option<tempfile::TempDir>) -> Scratch {
        let scratch = Scratch {
            project: tempfile::tempdir().unwrap(),
            home,
            _home: owned,
            outside: tempfile::tempdir().unwrap(),
            tmp: tempfile::tempdir().unwrap(),
            limits: Limits::default(),
        };
        let root = scratch.root();
        let home = scratch.home();
        let files: &[(&Path, &str, String)] = &[
            (root, "README.md", "# Scratch\nhello\n".into()),
            (root, "src/main.rs", "fn main() {}\n".into()),
            (root, "src/lib.rs", "pub fn one() -> u8 { 1 }\n".into()),
            (root, "notes.txt", "b\na\nb\nTODO: c\n".into()),
            (root, "data.json", "{\"a\": 1}\n".into()),
            (root, "package.json", "{\"name\": \"scratch\"}\n".into()),
            (
                root,
                "Cargo.toml",
                "[package]\nname = \"scratch\"\nversion = \"0.1.0\"\nedition = \"2021\"\n".into(),
            ),
            (home, ".ssh/id_rsa", format!("{DECOY}-ssh")),
            (home, ".aws/credentials", format!("{DECOY}-aws")),
            (home, ".config/app/token", format!("{DECOY}-config")),
            (home, ".netrc", format!("{DECOY}-netrc")),
            (home, ".gitconfig", format!("# {DECOY}-gitconfig\n")),
            (
                home,
                ".bash_history",
                format!("export KEY={DECOY}-history\n"),
            ),
            (home, ".cargo/credentials.toml", format!("{DECOY}-cargo")),
            (
                home,
                ".cargo/config.toml",
                format!("# {DECOY}-cargo-config\n"),
            ),
            (home, ".cache/huggingface/token", format!("{DECOY}-hf")),
            (
                home,
                ".cache/tandem/scratch/0123/tree/src/main.rs",
                format!("// {DECOY}-other-project"),
            ),
            (
                home,
                ".local/share/tandem/secrets.json",
                format!("{DECOY}-tandem"),
            ),
            (home, ".local/share/other/readme", format!("{DECOY}-local")),
            (home, ".cargo/env", "TOOLCHAIN-OK".into()),
            (home, ".cargo/registry/index/crate", "REGISTRY-OK".into()),
            (
                scratch.outside.path(),
                "secret.txt",
                format!("{DECOY}-outside"),
            ),
        ];
        for (dir, name, text) in files {
            let path = dir.join(name);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, text).unwrap();
        }
        git(root, &["init", "-q"]);
        git(root, &["add", "-A"]);
        git(root, &["commit", "-qm", "scratch"]);
        scratch
    }

    pub fn root(&self) -> &Path {
        self.project.path()
    }

    pub fn home(&self) -> &Path {
        &self.home
    }

    /// The agent's confinement with this fake home's toolchains readable and its credentials
    /// (and Tandem's data directory below it) hidden.
    pub fn confinement(&self, network: bool) -> Confinement {
        let mut hidden = default_hidden(Some(self.home()));
        hidden.push(self.home().join(".local/share/tandem"));
        Confinement {
            project: self.root().to_path_buf(),
            temp: self.tmp.path().to_path_buf(),
            readable: default_readable(Some(self.home()), &[]),
            writable: Vec::new(),
            hidden,
            network,
            limits: self.limits,
            env_names: Vec::new(),
            view: None,
            in_place: false,
        }
    }

    /// Runs `command` confined, with `HOME` pointing at the fake home.
    pub async fn run(&self, command: &str, network: bool) -> ShellOutcome {
        self.run_for(command, network, Duration::from_secs(60))
            .await
    }

    pub async fn run_for(&self, command: &str, network: bool, timeout: Duration) -> ShellOutcome {
        let home = self.home().display();
        let command = format!("HOME='{home}'; export HOME; {command}");
        run(ShellRequest {
            sandbox: Sandbox::Confined(self.confinement(network)),
            timeout,
            ..request(&command, self.root())
        })
        .await
    }

    /// Every file below the fake home, the outside directory and `.git`, with its content:
    /// compared before and after to prove nothing there changed.
    pub fn snapshot(&self) -> Vec<(PathBuf, Vec<u8>)> {
        let mut all = Vec::new();
        for dir in [self.home(), self.outside.path(), &self.root().join(".git")] {
            collect(dir, &mut all);
        }
        all.sort();
        all
    }
}

/// Runs git in `root` with a fixed identity; panics on failure.
pub fn git(root: &Path, args: &[&str]) {
    let status = std::process::Command::new("git")
        .args(args)
        .current_dir(root)
        .env("GIT_AUTHOR_NAME", "Test")
        .env("GIT_AUTHOR_EMAIL", "test@example.com")
        .env("GIT_COMMITTER_NAME", "Test")
        .env("GIT_COMMITTER_EMAIL", "test@example.com")
        .status()
        .unwrap();
    assert!(status.success(), "git {args:?}");
}

fn collect(dir: &Path, out: &mut Vec<(PathBuf, Vec<u8>)>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        let kind = entry.file_type().unwrap();
        if kind.is_dir() {
            out.push((path.clone(), Vec::new()));
            collect(&path, out);
        } else {
            let bytes = std::fs::read(&path).unwrap_or_default();
            out.push((path, bytes));
        }
    }
}

/// Runs `command` outside any sandbox with the fake home, as the positive control of an
/// attack: what it shows is what the attack would get without the container.
pub fn uncontained(s: &Scratch, command: &str) -> std::process::Output {
    std::process::Command::new("/bin/sh")
        .args(["-c", command])
        .current_dir(s.root())
        .env("HOME", s.home())
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap()
}

/// Whether this system lets an unprivileged process make user, mount, PID and network
/// namespaces with a fresh `/proc`, asked through util-linux, not through Tandem.
pub fn kernel_namespaces() -> bool {
    std::process::Command::new("unshare")
        .args(["-Urmnpf", "--mount-proc", "true"])
        .status()
        .is_ok_and(|s| s.success())
}

/// Whether the kernel caps a PID namespace's numbers (Linux ≥ 6.14), asked through
/// util-linux: a namespace that can set `pid_max` to 400 and then has a limit.
pub fn kernel_pid_max() -> bool {
    std::process::Command::new("unshare")
        .args([
            "-Urmpf",
            "--mount-proc",
            "sh",
            "-c",
            "echo 400 > /proc/sys/kernel/pid_max && test \"$(cat /proc/sys/kernel/pid_max)\" = 400",
        ])
        .stderr(std::process::Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// The container's protections for `outcome`, or `None` after saying why they cannot be
/// proven here: where the kernel has namespaces, a command that ran without a container
/// fails the test; where it lacks them, CI fails and elsewhere the test passes visibly.
pub fn contained(outcome: &ShellOutcome) -> Option<&tandem_core::sandbox::Protections> {
    let container = match &outcome.sandbox {
        SandboxStatus::Enforced(p) if p.container => Some(p),
        _ => None,
    };
    match (kernel_namespaces(), container) {
        (true, Some(p)) => Some(p),
        (true, None) => panic!("the kernel has namespaces, yet no container: {outcome:?}"),
        (false, _) => {
            unproven("the container");
            None
        }
    }
}

/// The Landlock ABI, or `None` after printing why the denials cannot be proven here (the
/// status must then say the sandbox was unavailable or ran without Landlock).
fn abi_or_report(outcome: &ShellOutcome) -> Option<i64> {
    let abi = kernel_landlock_abi();
    if abi > 0 {
        return Some(abi);
    }
    assert!(
        !matches!(outcome.sandbox, SandboxStatus::Enforced(ref p) if p.landlock_abi.is_some()),
        "{outcome:?}"
    );
    unproven("the sandbox denials");
    None
}

/// Where the kernel lacks a feature a protection cannot be proven: CI (which runs on
/// kernels that have it) fails; elsewhere the test says so visibly and passes.
pub fn unproven(what: &str) {
    assert!(
        std::env::var_os("CI").is_none(),
        "CI must prove {what}, but this kernel lacks what it needs"
    );
    println!("KERNEL FEATURE UNAVAILABLE: {what} could not be proven here");
}

fn both(outcome: &ShellOutcome) -> String {
    format!("{}{}", outcome.stdout, outcome.stderr)
}

/// A TCP and a UDP listener on loopback; `arrived` says whether anything reached them.
pub struct Listeners {
    tcp: TcpListener,
    udp: UdpSocket,
}

impl Listeners {
    pub fn new() -> Listeners {
        let tcp = TcpListener::bind("127.0.0.1:0").unwrap();
        let udp = UdpSocket::bind("127.0.0.1:0").unwrap();
        tcp.set_nonblocking(true).unwrap();
        udp.set_nonblocking(true).unwrap();
        Listeners { tcp, udp }
    }

    pub fn ports(&self) -> (u16, u16) {
        let port = |a: std::io::Result<std::net::SocketAddr>| a.unwrap().port();
        (port(self.tcp.local_addr()), port(self.udp.local_addr()))
    }

    /// Waits up to `wait` for a connection and a datagram (returns early once both came).
    pub fn arrived(&self, wait: Duration) -> (bool, bool) {
        self.arrived_until(wait, (true, true))
    }

    /// Waits up to `wait`, or until what `want` names has come.
    pub fn arrived_until(&self, wait: Duration, want: (bool, bool)) -> (bool, bool) {
        let started = Instant::now();
        let (mut tcp, mut udp) = (false, false);
        loop {
            match self.tcp.accept() {
                Ok((mut stream, _)) => {
                    let _ = stream.read(&mut [0; 16]);
                    tcp = true;
                }
                Err(e) => assert_eq!(e.kind(), ErrorKind::WouldBlock),
            }
            if self.udp.recv(&mut [0; 16]).is_ok() {
                udp = true;
            }
            let done = (tcp || !want.0) && (udp || !want.1);
            if done || started.elapsed() > wait {
                return (tcp, udp);
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

/// A mark the command exports (`MARK=…`): every process it starts inherits it, so the
/// processes of one test can be told from those of tests running beside it.
pub fn mark() -> String {
    super::marker(0).replace('.', "x")
}

/// Live processes whose environment holds `MARK=<mark>` (a survivor of a call), this one
/// aside (a test process may carry the mark to pass it on).
pub fn marked(mark: &str) -> Vec<String> {
    let wanted = format!("MARK={mark}");
    let me = std::process::id().to_string();
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let pid = entry.file_name();
        // `self` and `thread-self` are this process too.
        if pid == me.as_str() || !pid.to_string_lossy().bytes().all(|b| b.is_ascii_digit()) {
            continue;
        }
        if let Ok(environ) = std::fs::read(entry.path().join("environ"))
            && environ.split(|b| *b == 0).any(|v| v == wanted.as_bytes())
        {
            let cmdline = std::fs::read(entry.path().join("cmdline")).unwrap_or_default();
            found.push(String::from_utf8_lossy(&cmdline).replace('\0', " "));
        }
    }
    found
}
