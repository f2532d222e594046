//! No terminal: a command cannot type into the person's terminal (or answer Tandem's own
//! prompts), and the system calls that would leave the container are refused.

use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::process::CommandExt;

use super::{Scratch, contained, uncontained};

/// Set only in the child run by `a_command_cannot_type_into_the_persons_terminal`.
const INNER: &str = "TANDEM_TTY_CHECK_CHILD";

/// perl pushing `byte` into the input of its controlling terminal (`TIOCSTI`), as the
/// attack did to the person's shell.
fn inject(byte: char) -> String {
    format!(
        "perl -e 'open(my $t, \"+<\", \"/dev/tty\") or die \"tty: $!\\n\"; my $c = \"{byte}\"; \
         ioctl($t, {}, $c) or die \"ioctl: $!\\n\"; print \"injected\\n\"'",
        libc::TIOCSTI
    )
}

/// The half that runs in a child test process whose controlling terminal is a pty the
/// parent holds: a plain child injects `C` (the control), the confined command tries `K`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn terminal_check_inner_half() {
    if std::env::var_os(INNER).is_none() {
        return; // Only meaningful inside the child started below.
    }
    let s = Scratch::new();
    let control = uncontained(&s, &inject('C'));
    println!(
        "CONTROL {} {}",
        String::from_utf8_lossy(&control.stdout).trim(),
        String::from_utf8_lossy(&control.stderr).trim()
    );
    let outcome = s.run(&inject('K'), false).await;
    println!("CONTAINED {:?} {:?}", outcome.stdout, outcome.stderr);
    let kind = match contained(&outcome) {
        Some(_) => "container",
        None => "none",
    };
    println!("KIND {kind}");
}

#[allow(unsafe_code)]
fn open_pty() -> (OwnedFd, OwnedFd) {
    // SAFETY: posix_openpt/grantpt/unlockpt/ptsname_r on the descriptor we just opened;
    // the name buffer is ours; tcgetattr/cfmakeraw/tcsetattr on our own termios.
    unsafe {
        let master = libc::posix_openpt(libc::O_RDWR | libc::O_NOCTTY);
        assert!(master >= 0);
        assert_eq!(libc::grantpt(master), 0);
        assert_eq!(libc::unlockpt(master), 0);
        let mut name = [0 as libc::c_char; 128];
        assert_eq!(libc::ptsname_r(master, name.as_mut_ptr(), name.len()), 0);
        let slave = libc::open(name.as_ptr(), libc::O_RDWR | libc::O_NOCTTY);
        assert!(slave >= 0);
        let mut raw: libc::termios = std::mem::zeroed();
        assert_eq!(libc::tcgetattr(slave, &mut raw), 0);
        libc::cfmakeraw(&mut raw);
        assert_eq!(libc::tcsetattr(slave, libc::TCSANOW, &raw), 0);
        (OwnedFd::from_raw_fd(master), OwnedFd::from_raw_fd(slave))
    }
}

/// What is waiting in the terminal's input queue (what the person's shell would read next).
#[allow(unsafe_code)]
fn pending_input(slave: &OwnedFd) -> String {
    let fd = slave.as_raw_fd();
    let mut buf = [0u8; 64];
    // SAFETY: fcntl and read on our own descriptor into our own buffer.
    let n = unsafe {
        let flags = libc::fcntl(fd, libc::F_GETFL);
        libc::fcntl(fd, libc::F_SETFL, flags | libc::O_NONBLOCK);
        libc::read(fd, buf.as_mut_ptr().cast(), buf.len())
    };
    String::from_utf8_lossy(&buf[..usize::try_from(n).unwrap_or(0)]).into_owned()
}

#[test]
#[allow(unsafe_code)]
fn a_command_cannot_type_into_the_persons_terminal() {
    let (_master, slave) = open_pty();
    let stdin = slave.try_clone().unwrap();
    let mut child = std::process::Command::new(std::env::current_exe().unwrap());
    child
        .args([
            "--exact",
            "sandbox::terminal::terminal_check_inner_half",
            "--nocapture",
        ])
        .env(INNER, "1")
        .stdin(std::process::Stdio::from(stdin));
    // SAFETY: setsid and ioctl(TIOCSCTTY) only change the child's session: the pty becomes
    // its controlling terminal, as the person's terminal is Tandem's.
    unsafe {
        child.pre_exec(|| {
            if libc::setsid() < 0 || libc::ioctl(0, libc::TIOCSCTTY, 0) < 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let output = child.output().unwrap();
    let stdout = crate::common::succeeded(&output);
    let typed = pending_input(&slave);
    let legacy = std::fs::read_to_string("/proc/sys/dev/tty/legacy_tiocsti").unwrap_or_default();
    if !typed.contains('C') {
        // This kernel refuses TIOCSTI to everyone: nothing to prove.
        assert_eq!(legacy.trim(), "0", "the control could not type: {stdout}");
        println!("TIOCSTI is disabled on this kernel (dev.tty.legacy_tiocsti=0)");
        return;
    }
    if stdout.contains("KIND none") {
        return;
    }
    assert!(stdout.contains("KIND container"), "{stdout}");
    assert!(
        !typed.contains('K'),
        "the confined command typed into the terminal: {stdout}"
    );
}

/// System calls a build never needs are refused inside (EPERM), and work outside (the
/// control): terminal input injection on any descriptor, a new user namespace, tracing,
/// keyrings.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn escaping_system_calls_are_refused() {
    let s = Scratch::new();
    let perl = |what: &str, call: String| {
        format!(
            "perl -e '$r = do {{ {call} }}; print \"{what}=\", ($r < 0 ? $!+0 : \"ok\"), \"\\n\"';"
        )
    };
    let script = [
        perl(
            "tiocsti",
            format!(
                "my $c = \"x\"; ioctl(STDIN, {}, $c) ? 0 : -1",
                libc::TIOCSTI
            ),
        ),
        perl(
            "ptrace",
            format!("syscall({}, 0, 0, 0, 0)", libc::SYS_ptrace),
        ),
        perl("keyctl", format!("syscall({}, 0, -3, 1)", libc::SYS_keyctl)),
        "unshare -U true && echo unshare=ok || echo unshare=failed;".to_string(),
    ]
    .concat();
    let control = uncontained(&s, &script);
    let control = String::from_utf8_lossy(&control.stdout).into_owned();
    let eperm = format!("={}", libc::EPERM);
    // Outside: TIOCSTI on /dev/null is merely "not a terminal", the others work.
    assert!(
        control.contains(&format!("tiocsti={}", libc::ENOTTY)),
        "{control}"
    );
    for call in ["ptrace=ok", "keyctl=ok", "unshare=ok"] {
        assert!(control.contains(call), "control: {control}");
    }
    let outcome = s.run(&script, false).await;
    if contained(&outcome).is_none() {
        return;
    }
    for call in ["tiocsti", "ptrace", "keyctl"] {
        assert!(
            outcome.stdout.contains(&format!("{call}{eperm}")),
            "{call}: {outcome:?}"
        );
    }
    assert!(outcome.stdout.contains("unshare=failed"), "{outcome:?}");
}
