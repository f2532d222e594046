//! The network and every socket outside the container are out of reach.

use std::os::unix::net::UnixListener;
use std::path::{Path, PathBuf};
use std::time::Duration;

use tandem_core::process::SandboxStatus;
use tandem_core::sandbox::Network;

use super::{Listeners, Scratch, abi_or_report, contained, kernel_namespaces, uncontained};

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

/// A Unix socket server the test runs; `connected` says whether anyone reached it.
struct Server {
    listener: UnixListener,
    path: PathBuf,
}

impl Server {
    fn at(path: &Path) -> Server {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        let _ = std::fs::remove_file(path);
        let listener = UnixListener::bind(path).unwrap();
        listener.set_nonblocking(true).unwrap();
        Server {
            listener,
            path: path.to_path_buf(),
        }
    }

    fn connected(&self) -> bool {
        let mut any = false;
        while self.listener.accept().is_ok() {
            any = true;
        }
        any
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

/// perl connecting to the pathname socket `path` (as given: relative paths too).
fn connect(path: &str) -> String {
    format!(
        "perl -MSocket -e 'socket(my $s, PF_UNIX, SOCK_STREAM, 0) or die; \
         connect($s, pack_sockaddr_un(\"{path}\")) or die \"connect {path}: $!\\n\"; \
         print \"connected {path}\\n\"'"
    )
}

/// Servers at the places the attacks used: a terminal multiplexer's socket below the host's
/// `/tmp` (its commands run outside any sandbox), one inside a hidden directory of the
/// home, and one below `/run` reached through a relative path.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sockets_outside_the_container_cannot_be_reached_by_any_path() {
    let s = Scratch::new();
    let id = std::process::id();
    let tmux = PathBuf::from(format!("/tmp/tmux-{id}/default"));
    let hidden = s.home().join(".config/app/agent.sock");
    let run_dir = PathBuf::from(format!("/run/tandem-test-{id}"));
    let servers = [
        Server::at(&tmux),
        Server::at(&hidden),
        Server::at(&run_dir.join("bus")),
    ];
    let depth = s.root().components().count();
    let relative_run = format!("{}run/tandem-test-{id}/bus", "../".repeat(depth));
    let paths = [
        tmux.display().to_string(),
        hidden.display().to_string(),
        relative_run,
    ];
    for (server, path) in servers.iter().zip(&paths) {
        // Control: outside, the socket answers.
        let control = uncontained(&s, &connect(path));
        assert!(control.status.success(), "{path}: {control:?}");
        assert!(server.connected(), "{path}: the control did not connect");
        let outcome = s.run(&connect(path), false).await;
        if contained(&outcome).is_none() {
            return;
        }
        assert!(!outcome.stdout.contains("connected"), "{path}: {outcome:?}");
        assert!(
            !server.connected(),
            "{path} was reached from inside: {outcome:?}"
        );
    }
    let _ = std::fs::remove_dir(tmux.parent().unwrap());
    let _ = std::fs::remove_dir(&run_dir);
}

/// A project with no `.git` yet (a check's scratch copy): a command plants a `.git` file
/// naming the directory of a terminal multiplexer's socket; the next call must not be able
/// to connect to it (a read-only mount does not stop `connect`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_planted_git_does_not_bring_host_sockets_into_the_next_call() {
    let s = Scratch::new();
    std::fs::remove_dir_all(s.root().join(".git")).unwrap();
    let dir = PathBuf::from(format!("/tmp/tmux-git-{}", std::process::id()));
    let socket = dir.join("default");
    let server = Server::at(&socket);
    let path = socket.display().to_string();
    let control = uncontained(&s, &connect(&path));
    assert!(control.status.success(), "{control:?}");
    assert!(server.connected(), "the control did not connect");
    let planted = s
        .run(
            &format!("printf 'gitdir: {}\\n' > .git", dir.display()),
            false,
        )
        .await;
    if contained(&planted).is_none() {
        return;
    }
    assert_eq!(planted.exit_code, Some(0), "{planted:?}");
    let outcome = s.run(&connect(&path), false).await;
    let reached = server.connected();
    drop(server);
    let _ = std::fs::remove_dir(&dir);
    assert!(!outcome.stdout.contains("connected"), "{outcome:?}");
    assert!(!reached, "{path} was reached from inside: {outcome:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn signals_and_abstract_sockets_outside_the_sandbox_are_out_of_reach() {
    use std::os::linux::net::SocketAddrExt;
    use std::os::unix::net::SocketAddr;

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
    if protections.container || abi >= 6 {
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

/// A descriptor Tandem holds without close-on-exec (inherited from whatever started it: a
/// terminal, an IDE, a launcher; a socket to a session bus or an agent) must not reach the
/// command: it would be a channel out of the container.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[allow(unsafe_code)]
async fn descriptors_tandem_inherited_do_not_reach_the_command() {
    use std::io::Read;
    use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
    use std::os::unix::net::UnixStream;

    let s = Scratch::new();
    let (mut ours, theirs) = UnixStream::pair().unwrap();
    ours.set_nonblocking(true).unwrap();
    // SAFETY: F_DUPFD makes a copy of our descriptor without close-on-exec, owned below.
    let leaked = unsafe {
        let fd = libc::fcntl(theirs.as_raw_fd(), libc::F_DUPFD, 200);
        assert!(fd >= 200);
        OwnedFd::from_raw_fd(fd)
    };
    let fd = leaked.as_raw_fd();
    let write = |what: &str| format!("bash -c 'echo {what} >&{fd}' && echo wrote");
    let mut read = || {
        let mut buf = [0u8; 64];
        let n = ours.read(&mut buf).unwrap_or(0);
        String::from_utf8_lossy(&buf[..n]).into_owned()
    };
    // Control: a command outside receives it and writes through it.
    let control = uncontained(&s, &write("control"));
    assert!(control.status.success(), "{control:?}");
    assert!(read().contains("control"));
    let outcome = s
        .run(&format!("ls -l /proc/self/fd; {}", write("inside")), false)
        .await;
    drop(leaked);
    if contained(&outcome).is_none() {
        return;
    }
    let got = read();
    assert!(
        !got.contains("inside") && !outcome.stdout.contains("wrote"),
        "the command wrote through an inherited descriptor: {outcome:?}"
    );
}

/// `/nix` is shown (a Nix system's programs live there), and with it the Nix daemon's
/// socket: through it a command could have the daemon build a fixed-output derivation,
/// which runs outside with the network. Where this machine has no Nix, the test (as root)
/// puts a socket where the daemon's would be, and removes it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_nix_daemon_cannot_be_reached() {
    let s = Scratch::new();
    let socket = Path::new("/nix/var/nix/daemon-socket/socket");
    let made = !Path::new("/nix").exists();
    // SAFETY: getuid(2) takes no arguments.
    #[allow(unsafe_code)]
    let root = unsafe { libc::getuid() } == 0;
    if made && !root {
        println!("no Nix here and not root: the Nix daemon's socket cannot be put in place");
        return;
    }
    let server = made.then(|| Server::at(socket));
    let path = socket.display().to_string();
    let control = uncontained(&s, &connect(&path));
    let controlled = server.as_ref().is_none_or(Server::connected);
    let outcome = s.run(&connect(&path), false).await;
    let reached = server.as_ref().is_some_and(Server::connected);
    drop(server);
    if made {
        let _ = std::fs::remove_dir_all("/nix");
    }
    assert!(control.status.success() && controlled, "{control:?}");
    if contained(&outcome).is_none() {
        return;
    }
    assert!(!outcome.stdout.contains("connected"), "{outcome:?}");
    assert!(!reached, "the Nix daemon's socket was reached: {outcome:?}");
}
