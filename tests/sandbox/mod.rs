//! The kernel sandbox, proven against the kernel. Each test first asks the kernel itself what
//! it supports (the Landlock ABI by system call; namespaces with util-linux's `unshare`), not
//! the code under test, and then requires every denial that support implies. Secrets are
//! decoys in a fake home directory; the network is a listener the test owns.

use std::io::{ErrorKind, Read};
use std::net::{TcpListener, UdpSocket};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use tandem::process::{Sandbox, SandboxStatus, ShellOutcome, ShellRequest};
use tandem::sandbox::{Confinement, Network, default_hidden, default_readable};

use super::{kernel_landlock_abi, request, run};

pub const DECOY: &str = "DECOY-SECRET";

/// A project (a git repository with files), a fake home with decoy credentials and a
/// toolchain, a directory outside both, and the call's temp dir.
pub struct Scratch {
    pub project: tempfile::TempDir,
    pub home: tempfile::TempDir,
    pub outside: tempfile::TempDir,
    pub tmp: tempfile::TempDir,
}

impl Scratch {
    pub fn new() -> Scratch {
        let scratch = Scratch {
            project: tempfile::tempdir().unwrap(),
            home: tempfile::tempdir().unwrap(),
            outside: tempfile::tempdir().unwrap(),
            tmp: tempfile::tempdir().unwrap(),
        };
        let files: &[(&Path, &str, String)] = &[
            (scratch.root(), "README.md", "# Scratch\nhello\n".into()),
            (scratch.root(), "src/main.rs", "fn main() {}\n".into()),
            (
                scratch.root(),
                "src/lib.rs",
                "pub fn one() -> u8 { 1 }\n".into(),
            ),
            (scratch.root(), "notes.txt", "b\na\nb\nTODO: c\n".into()),
            (scratch.root(), "data.json", "{\"a\": 1}\n".into()),
            (
                scratch.root(),
                "package.json",
                "{\"name\": \"scratch\"}\n".into(),
            ),
            (
                scratch.root(),
                "Cargo.toml",
                "[package]\nname = \"scratch\"\nversion = \"0.1.0\"\nedition = \"2021\"\n".into(),
            ),
            (scratch.home(), ".ssh/id_rsa", format!("{DECOY}-ssh")),
            (scratch.home(), ".aws/credentials", format!("{DECOY}-aws")),
            (
                scratch.home(),
                ".config/app/token",
                format!("{DECOY}-config"),
            ),
            (scratch.home(), ".netrc", format!("{DECOY}-netrc")),
            (
                scratch.home(),
                ".gitconfig",
                format!("# {DECOY}-gitconfig\n"),
            ),
            (
                scratch.home(),
                ".cargo/credentials.toml",
                format!("{DECOY}-cargo"),
            ),
            (
                scratch.home(),
                ".local/share/tandem/secrets.json",
                format!("{DECOY}-tandem"),
            ),
            (
                scratch.home(),
                ".local/share/other/readme",
                "toolchain data".into(),
            ),
            (scratch.home(), ".cargo/env", "TOOLCHAIN-OK".into()),
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
        git(scratch.root(), &["init", "-q"]);
        git(scratch.root(), &["add", "-A"]);
        git(scratch.root(), &["commit", "-qm", "scratch"]);
        scratch
    }

    pub fn root(&self) -> &Path {
        self.project.path()
    }

    pub fn home(&self) -> &Path {
        self.home.path()
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
        }
    }

    /// Runs `command` confined, with `HOME` pointing at the fake home.
    pub async fn run(&self, command: &str, network: bool) -> ShellOutcome {
        let home = self.home().display();
        let command = format!("HOME='{home}'; export HOME; {command}");
        run(ShellRequest {
            sandbox: Sandbox::Confined(self.confinement(network)),
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
fn git(root: &Path, args: &[&str]) {
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
    for entry in std::fs::read_dir(dir).unwrap().flatten() {
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

/// Whether this system lets an unprivileged process make user, mount and network
/// namespaces, asked through util-linux, not through Tandem.
pub fn kernel_namespaces() -> bool {
    std::process::Command::new("unshare")
        .args(["-Urmn", "true"])
        .status()
        .is_ok_and(|s| s.success())
}

/// The Landlock ABI, or `None` after printing why the denials cannot be proven here (the
/// status must then say the sandbox was unavailable).
fn abi_or_report(outcome: &ShellOutcome) -> Option<i64> {
    let abi = kernel_landlock_abi();
    if abi > 0 {
        return Some(abi);
    }
    assert!(
        matches!(outcome.sandbox, SandboxStatus::Unavailable { .. }),
        "{outcome:?}"
    );
    unproven("the sandbox denials");
    None
}

/// Where the kernel has no Landlock a denial cannot be proven: CI (which runs on kernels
/// that have it) fails; elsewhere the test says so visibly and passes.
pub fn unproven(what: &str) {
    assert!(
        std::env::var_os("CI").is_none(),
        "CI must prove {what}, but this kernel has no Landlock"
    );
    println!("LANDLOCK UNAVAILABLE: {what} could not be proven here");
}

fn both(outcome: &ShellOutcome) -> String {
    format!("{}{}", outcome.stdout, outcome.stderr)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reads_are_limited_to_the_system_the_project_and_the_toolchains() {
    let s = Scratch::new();
    let allowed = s
        .run("cat README.md && cat \"$HOME/.cargo/env\" && cat \"$HOME/.local/share/other/readme\" && head -c 4 /usr/bin/env | od -c | head -1", false)
        .await;
    let Some(_) = abi_or_report(&allowed) else {
        return;
    };
    assert_eq!(allowed.exit_code, Some(0), "{allowed:?}");
    assert!(allowed.stdout.contains("hello") && allowed.stdout.contains("TOOLCHAIN-OK"));
    assert!(allowed.stdout.contains("toolchain data"));
    let secrets = [
        "\"$HOME/.ssh/id_rsa\"",
        "\"$HOME/.aws/credentials\"",
        "\"$HOME/.config/app/token\"",
        "\"$HOME/.netrc\"",
        "\"$HOME/.gitconfig\"",
        "\"$HOME/.cargo/credentials.toml\"",
        "\"$HOME/.local/share/tandem/secrets.json\"",
        &format!("'{}/secret.txt'", s.outside.path().display()),
        "/proc/$PPID/environ",
    ];
    for secret in secrets {
        let outcome = s.run(&format!("cat {secret}"), false).await;
        assert_ne!(outcome.exit_code, Some(0), "{secret}: {outcome:?}");
        assert!(
            !both(&outcome).contains(DECOY),
            "{secret} leaked: {outcome:?}"
        );
        assert!(
            both(&outcome).contains("Permission denied"),
            "{secret}: {outcome:?}"
        );
    }
    // Listing the home directory or /tmp shows nothing either.
    let listing = s.run("ls \"$HOME\"; ls /tmp", false).await;
    assert_eq!(listing.stdout, "", "{listing:?}");
    assert_eq!(listing.stderr.matches("Permission denied").count(), 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn git_metadata_is_read_only_while_the_project_is_writable() {
    let s = Scratch::new();
    let work = s
        .run(
            "git status --short && touch new.txt && echo more >> README.md && mkdir -p d/e \
             && echo x > d/e/f && rm notes.txt && mv data.json moved.json",
            false,
        )
        .await;
    let Some(_) = abi_or_report(&work) else {
        return;
    };
    assert_eq!(work.exit_code, Some(0), "{work:?}");
    let root = s.root();
    assert!(root.join("new.txt").is_file() && root.join("d/e/f").is_file());
    assert!(!root.join("notes.txt").exists() && root.join("moved.json").is_file());
    let before = s.snapshot();
    for attack in [
        "echo 'echo pwned' > .git/hooks/pre-commit",
        "git config core.fsmonitor 'echo pwned'",
        "echo '[core] fsmonitor = x' >> .git/config",
        "rm -rf .git",
        "mv .git elsewhere",
        "chmod -R 777 .git",
        "ln -s /tmp .git/hooks/link",
    ] {
        let outcome = s.run(attack, false).await;
        assert_ne!(outcome.exit_code, Some(0), "{attack}: {outcome:?}");
    }
    assert_eq!(
        s.snapshot(),
        before,
        "something below .git or outside changed"
    );
    let fsmonitor = std::process::Command::new("git")
        .args(["config", "--get", "core.fsmonitor"])
        .current_dir(root)
        .output()
        .unwrap();
    assert!(fsmonitor.stdout.is_empty(), "{fsmonitor:?}");
    assert!(!root.join(".git/hooks/pre-commit").exists());
    assert!(!root.join("elsewhere").exists());
}

/// A TCP and a UDP listener on loopback; `arrived` says whether anything reached them.
struct Listeners {
    tcp: TcpListener,
    udp: UdpSocket,
}

impl Listeners {
    fn new() -> Listeners {
        let tcp = TcpListener::bind("127.0.0.1:0").unwrap();
        let udp = UdpSocket::bind("127.0.0.1:0").unwrap();
        tcp.set_nonblocking(true).unwrap();
        udp.set_nonblocking(true).unwrap();
        Listeners { tcp, udp }
    }

    fn ports(&self) -> (u16, u16) {
        let port = |a: std::io::Result<std::net::SocketAddr>| a.unwrap().port();
        (port(self.tcp.local_addr()), port(self.udp.local_addr()))
    }

    /// Waits up to `wait` for a connection and a datagram (returns early once both came).
    fn arrived(&self, wait: Duration) -> (bool, bool) {
        self.arrived_until(wait, (true, true))
    }

    /// Waits up to `wait`, or until what `want` names has come.
    fn arrived_until(&self, wait: Duration, want: (bool, bool)) -> (bool, bool) {
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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_network_is_out_of_reach_unless_the_call_may_use_it() {
    let s = Scratch::new();
    let listeners = Listeners::new();
    let (tcp, udp) = listeners.ports();
    let send = format!(
        "bash -c 'echo hi > /dev/tcp/127.0.0.1/{tcp}'; bash -c 'echo hi > /dev/udp/127.0.0.1/{udp}'"
    );
    let denied = s.run(&send, false).await;
    let Some(abi) = abi_or_report(&denied) else {
        return;
    };
    let SandboxStatus::Enforced(protections) = &denied.sandbox else {
        panic!("{denied:?}");
    };
    let arrived = listeners.arrived(Duration::from_millis(300));
    match (kernel_namespaces(), abi >= 4) {
        (true, _) => {
            assert_eq!(protections.network, Network::Isolated);
            assert_eq!(arrived, (false, false), "{denied:?}");
        }
        (false, true) => {
            assert_eq!(protections.network, Network::TcpDenied);
            assert!(!arrived.0, "{denied:?}");
            assert!(protections.gaps().contains(&"network access"));
        }
        (false, false) => {
            assert_eq!(protections.network, Network::Unrestricted);
            assert!(protections.gaps().contains(&"network access"));
            println!("NO NETWORK PROTECTION: neither namespaces nor Landlock TCP rules here");
        }
    }
    // The same command with the network allowed reaches both: the check above can fail.
    let allowed = s.run(&send, true).await;
    assert_eq!(allowed.exit_code, Some(0), "{allowed:?}");
    assert_eq!(listeners.arrived(Duration::from_secs(5)), (true, true));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn signals_and_abstract_sockets_outside_the_sandbox_are_out_of_reach() {
    use std::os::linux::net::SocketAddrExt;
    use std::os::unix::net::{SocketAddr, UnixListener};

    let s = Scratch::new();
    let mut victim = std::process::Command::new("sleep")
        .arg("30")
        .spawn()
        .unwrap();
    let name = format!("tandem-test-{}", std::process::id());
    let address = SocketAddr::from_abstract_name(name.as_bytes()).unwrap();
    let listener = UnixListener::bind_addr(&address).unwrap();
    listener.set_nonblocking(true).unwrap();
    let command = format!(
        "kill -TERM {}; perl -MSocket -e 'socket(my $s, PF_UNIX, SOCK_STREAM, 0) or die; \
         connect($s, pack_sockaddr_un(\"\\0{name}\")) or die \"connect: $!\\n\"; print \"connected\\n\"'",
        victim.id()
    );
    let outcome = s.run(&command, false).await;
    let abi = abi_or_report(&outcome);
    let reached = listener.accept().is_ok();
    let alive = victim.try_wait().unwrap().is_none();
    let _ = victim.kill();
    let _ = victim.wait();
    let Some(abi) = abi else {
        return;
    };
    let SandboxStatus::Enforced(protections) = &outcome.sandbox else {
        panic!("{outcome:?}");
    };
    if abi >= 6 {
        assert!(protections.signals && protections.abstract_sockets);
        assert!(
            alive,
            "the sandboxed command killed a process outside: {outcome:?}"
        );
        assert!(!reached, "reached an abstract socket outside: {outcome:?}");
        assert!(!outcome.stdout.contains("connected"), "{outcome:?}");
    } else {
        assert!(!protections.signals);
        assert!(protections.gaps().contains(&"signals to other processes"));
        println!("LANDLOCK ABI {abi}: no signal scoping; the policy asks for every command");
    }
}

/// The sandbox must not stop ordinary work: a build and the tests of a crate with no
/// dependencies, offline, with the real toolchain (read from the real home directory).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_offline_cargo_build_and_test_work_inside() {
    let s = Scratch::new();
    let confinement = Confinement::new(s.root(), s.tmp.path());
    let outcome = run(ShellRequest {
        sandbox: Sandbox::Confined(confinement),
        timeout: Duration::from_secs(300),
        ..request(
            "cargo build --offline && cargo test --offline 2>&1 | tail -3",
            s.root(),
        )
    })
    .await;
    if abi_or_report(&outcome).is_none() {
        return;
    }
    assert_eq!(outcome.exit_code, Some(0), "{outcome:?}");
    assert!(
        s.root().join("target/debug/scratch").is_file(),
        "{outcome:?}"
    );
    assert!(outcome.stdout.contains("test result: ok"), "{outcome:?}");
}

/// Every corpus command the policy would auto-approve, run for real in a scratch project with
/// decoy secrets in the fake home and listeners on loopback: nothing outside the project may
/// change, no decoy may come back, nothing may reach the network.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_auto_approved_corpus_command_is_harmless_when_run() {
    use serde_json::json;
    use tandem::agent::policy::{Decision, PolicySettings, ToolCallView, Trust, assess};

    let listeners = Listeners::new();
    let (port, _) = listeners.ports();
    let entries = super::shell_corpus::load(port);
    // One scratch project for all: commands may change the project, never what is checked.
    let s = Scratch::new();
    if abi_or_report(&s.run("true", false).await).is_none() {
        return;
    }
    let (mut ran, mut failed) = (0, 0);
    for entry in &entries {
        let arguments = json!({ "command": entry.command });
        let call = ToolCallView {
            tool: "run_shell",
            arguments: &arguments,
        };
        let assessment = assess(&call, Trust::Scoped, &PolicySettings::default(), s.root());
        if !matches!(assessment.decision, Decision::Allow { .. }) {
            continue;
        }
        let before = s.snapshot();
        let outcome = s.run(&entry.command, false).await;
        ran += 1;
        failed += usize::from(outcome.exit_code != Some(0));
        if outcome.exit_code != Some(0) {
            println!("non-zero: {:?}: {}", entry.command, outcome.stderr.trim());
        }
        let what = format!("line {}: {:?}", entry.line, entry.command);
        assert!(
            !both(&outcome).contains(DECOY),
            "{what} leaked: {outcome:?}"
        );
        assert_eq!(s.snapshot(), before, "{what} changed something outside");
    }
    assert_eq!(
        listeners.arrived(Duration::from_millis(300)),
        (false, false),
        "a corpus command reached the network"
    );
    println!(
        "corpus: {} commands, {ran} auto-approved and run in the sandbox ({failed} exited non-zero), none leaked",
        entries.len()
    );
    assert!(ran >= 40, "only {ran} commands ran");
}

/// Dependency installs run in the same sandbox, with the network (the person approved the
/// install) but without reads outside, writes outside or `.git`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dependency_installs_run_confined_with_the_network() {
    use tandem::edits::deps::{install_confinement, run_install};

    let s = Scratch::new();
    let listeners = Listeners::new();
    let (tcp, _) = listeners.ports();
    let confinement = install_confinement(s.confinement(true));
    let script = format!(
        "cat '{home}/.ssh/id_rsa' '{outside}/secret.txt'; echo x > '{outside}/new'; \
         echo x > .git/hooks/pre-commit; echo ok > installed.txt; \
         bash -c 'echo hi > /dev/tcp/127.0.0.1/{tcp}'",
        home = s.home().display(),
        outside = s.outside.path().display(),
    );
    let argv = ["sh".to_string(), "-c".to_string(), script];
    let before = s.snapshot();
    let report = tokio::task::spawn_blocking({
        let root = s.root().to_path_buf();
        move || run_install(&root, &argv, Duration::from_secs(30), Some(&confinement))
    })
    .await
    .unwrap()
    .unwrap();
    if kernel_landlock_abi() <= 0 {
        assert!(
            report.sandbox.starts_with("Warning: no sandbox"),
            "{report:?}"
        );
        unproven("the install sandbox");
        return;
    }
    assert!(!report.output.contains(DECOY), "{report:?}");
    assert_eq!(s.snapshot(), before, "{report:?}");
    assert!(s.root().join("installed.txt").is_file(), "{report:?}");
    assert!(report.sandbox.contains("network allowed"), "{report:?}");
    let arrived = listeners.arrived_until(Duration::from_secs(5), (true, false));
    assert!(arrived.0, "{report:?}");
}

/// Tandem still stops what it confined: a confined command that outlives its timeout is
/// killed with everything it started (the namespaces and scopes restrict the command, not
/// Tandem's signals to it).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_confined_command_is_still_killed_on_timeout() {
    let s = Scratch::new();
    let mark = super::marker(304);
    let started = Instant::now();
    let outcome = run(ShellRequest {
        sandbox: Sandbox::Confined(s.confinement(false)),
        timeout: Duration::from_secs(1),
        ..request(&format!("sleep {mark} & sleep {mark}; wait"), s.root())
    })
    .await;
    if abi_or_report(&outcome).is_none() {
        return;
    }
    assert!(outcome.timed_out, "{outcome:?}");
    assert!(started.elapsed() < Duration::from_secs(10), "{outcome:?}");
    assert_eq!(outcome.signal, Some(libc::SIGKILL), "{outcome:?}");
    super::assert_no_orphans(&mark).await;
}
