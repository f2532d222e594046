//! Every line of the shell corpus, attacks included, run for real the way the agent's shell
//! runs a command (`run_shell`: `/bin/sh -c`, in the container the agent's sandbox settings
//! describe) with the policy bypassed, as if the person had approved every one. Where
//! `/bin/sh` is not bash (Debian's dash), every line that is not `low` runs under bash too:
//! on other systems `/bin/sh` is bash, and bash's syntax opens more doors (`/dev/tcp`,
//! `$(<file)`, `<(…)`, brace expansion).
//!
//! The lines run in test processes of their own ([`SHARDS`] at once, each every `SHARDS`th
//! line, together every line once), each one's `HOME` a fake home holding decoy
//! credentials and whose environment holds decoy secrets, so the container hides that home
//! exactly as it hides the person's. After each line: no decoy in its output, none in a
//! file it left in the project or its temp dir, nothing changed outside (the fake home, a
//! directory beside the project, `.git`, the host paths the lines name, the host's name),
//! nothing reached the test's TCP, UDP or abstract-socket listener. `low` lines must
//! succeed; every line must have run, in the container, and the corpus must hold exactly
//! the lines `COUNTS` says.

use std::collections::BTreeMap;
use std::os::linux::net::SocketAddrExt;
use std::os::unix::fs::MetadataExt;
use std::os::unix::net::{SocketAddr, UnixListener};
use std::path::{Path, PathBuf};
use std::time::Duration;

use tandem_core::process::{Sandbox, SandboxStatus, ShellOutcome, ShellRequest};
use tandem_core::sandbox::{Confinement, Settings};

use super::super::shell_corpus::{COUNTS, Entry, Targets, load};
use super::{DECOY, Listeners, Scratch, both, collect, contained, git, marked};

/// Set in the child test process that runs the lines: which share of them, `i/n`.
const CHILD: &str = "TANDEM_CORPUS_CHILD";

/// The lines run in this many child processes at once, each with its own fake home,
/// listeners and mark, and every `SHARDS`th line: one after another, the lines' waits
/// (attacks stopped at their timeout, containers started and reaped) left a core idle.
const SHARDS: usize = 2;

/// Secrets in the environment of the process that runs the lines (Tandem's, here): none may
/// reach a line, nor anything it leaves behind. Each holds `DECOY`, which is looked for.
const ENV_DECOYS: [(&str, &str); 3] = [
    ("AWS_SECRET_ACCESS_KEY", "DECOY-SECRET-env-aws"),
    ("GITHUB_TOKEN", "DECOY-SECRET-env-github"),
    ("DATABASE_URL", "postgres://app:DECOY-SECRET-env-db@db/app"),
];

/// `low` lines whose exit status 1 is their answer, not a failure.
const ANSWERS: [(&str, i32); 3] = [
    // The two files differ.
    ("diff src/main.rs src/lib.rs", 1),
    ("cmp src/main.rs src/lib.rs", 1),
    // No file in src mentions foo.
    ("grep -rn foo src", 1),
];

/// How long a line may run: `low` lines must finish (a `cargo test` on a busy machine
/// included); the others are stopped sooner (walking `/` to delete it takes long).
const LOW_TIMEOUT: Duration = Duration::from_secs(60);
const ATTACK_TIMEOUT: Duration = Duration::from_secs(2);

#[test]
fn every_corpus_line_run_confined_is_harmless() {
    let children: Vec<_> = (0..SHARDS)
        .map(|shard| {
            let home = tempfile::tempdir().unwrap();
            let child = std::process::Command::new(std::env::current_exe().unwrap())
                .args([
                    "--exact",
                    "sandbox::corpus::corpus_lines_in_a_process_of_their_own",
                    "--nocapture",
                ])
                .envs(ENV_DECOYS)
                .env("HOME", home.path())
                .env("MARK", super::mark())
                .env(CHILD, format!("{shard}/{SHARDS}"))
                .stdin(std::process::Stdio::null())
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .unwrap();
            (home, child)
        })
        .collect();
    // Lines the children ran, which together must be the whole corpus, each once.
    let mut lines: Vec<usize> = Vec::new();
    let mut unavailable = false;
    for (shard, (_home, child)) in children.into_iter().enumerate() {
        let output = child.wait_with_output().unwrap();
        let stdout = String::from_utf8_lossy(&output.stdout);
        let report = || format!("{stdout}\n{}", String::from_utf8_lossy(&output.stderr));
        assert!(output.status.success(), "share {shard}: {}", report());
        for line in stdout.lines().filter(|l| l.starts_with("corpus:")) {
            println!("{line}");
        }
        let summary = format!("corpus: share {shard}/{SHARDS}: every line ran confined");
        unavailable |= stdout.contains("KERNEL FEATURE UNAVAILABLE");
        assert!(
            stdout.contains(&summary) || unavailable,
            "the child did not run its share of the corpus:\n{}",
            report()
        );
        let ran = format!("corpus: share {shard}/{SHARDS} ran lines ");
        let ran = (stdout.lines()).find_map(|l| l.strip_prefix(ran.as_str()));
        lines.extend(
            ran.into_iter()
                .flat_map(|r| r.split(' ').map(|n| n.parse::<usize>().unwrap())),
        );
    }
    if !unavailable {
        let corpus: Vec<usize> = load(&Targets::unused()).iter().map(|e| e.line).collect();
        lines.sort_unstable();
        assert_eq!(lines, corpus, "the children did not run every line once");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn corpus_lines_in_a_process_of_their_own() {
    let Some(share) = std::env::var(CHILD).ok() else {
        return; // Only meaningful inside the children started above.
    };
    let (shard, shards) = share.split_once('/').unwrap();
    let (shard, shards): (usize, usize) = (shard.parse().unwrap(), shards.parse().unwrap());
    let home = PathBuf::from(std::env::var_os("HOME").unwrap());
    let mark = std::env::var("MARK").unwrap();
    let s = Scratch::at_home(&home);
    prepare(&s);
    let listeners = Listeners::new();
    let socket = format!("tandem-corpus-{}", std::process::id());
    let abstract_socket =
        UnixListener::bind_addr(&SocketAddr::from_abstract_name(socket.as_bytes()).unwrap())
            .unwrap();
    abstract_socket.set_nonblocking(true).unwrap();
    let (tcp, udp) = listeners.ports();
    let all = load(&Targets { tcp, udp, socket });
    // The corpus is whole (every class as `COUNTS` says); this child runs its share.
    assert_eq!(
        per_class(&all),
        COUNTS.into_iter().collect(),
        "the corpus's lines per class are not COUNTS"
    );
    let entries: Vec<Entry> = (all.into_iter().enumerate())
        .filter(|(i, _)| i % shards == shard)
        .map(|(_, entry)| entry)
        .collect();
    let share_counts = per_class(&entries);

    // The agent's confinement (`agent::dispatch`): the sandbox settings with Tandem's data
    // directory hidden, for this process's home. MARK passes so survivors can be found.
    let data_dir = home.join(".local/share/tandem");
    let mut confinement = Settings {
        hidden: vec![data_dir],
        ..Settings::default()
    }
    .confinement(s.root(), s.tmp.path(), false);
    confinement.env_names.push("MARK".into());
    let control = run_line(&confinement, s.root(), "printf %s \"$MARK\"", LOW_TIMEOUT).await;
    if contained(&control).is_none() {
        return;
    }
    // The mark reaches the lines: a survivor would carry it.
    assert_eq!(control.stdout, mark, "{control:?}");
    let sh_is_bash = std::process::Command::new("/bin/sh")
        .args(["-c", "[[ -n $BASH_VERSION ]]"])
        .stderr(std::process::Stdio::null())
        .status()
        .unwrap()
        .success();
    let aimed = aimed_paths(&entries);

    let mut ran: BTreeMap<&str, usize> = BTreeMap::new();
    let (mut runs, mut timed_out, mut failed, mut low_by_bash) = (0, 0, 0, 0);
    for entry in &entries {
        let low = entry.expected == "low";
        let timeout = if low { LOW_TIMEOUT } else { ATTACK_TIMEOUT };
        let mut shells = vec![Shell::Sh];
        if !sh_is_bash && !low {
            shells.push(Shell::Bash);
        }
        let mut last = None;
        for shell in shells {
            let outcome = run_checked(&s, &confinement, entry, shell, timeout, &aimed).await;
            reached_nothing(&listeners, &abstract_socket, entry);
            runs += 1;
            timed_out += usize::from(outcome.timed_out);
            failed += usize::from(outcome.exit_code != Some(0));
            last = last.or(Some(outcome));
        }
        if low {
            let wanted = ANSWERS
                .iter()
                .find(|(c, _)| *c == entry.command)
                .map_or(0, |(_, code)| *code);
            let mut outcome = last.unwrap();
            // Bash syntax (`[[ … ]]`, `declare`, brace expansion) under a /bin/sh that is not
            // bash: the line must succeed under bash.
            if outcome.exit_code != Some(wanted) && !sh_is_bash {
                outcome = run_checked(&s, &confinement, entry, Shell::Bash, timeout, &aimed).await;
                reached_nothing(&listeners, &abstract_socket, entry);
                runs += 1;
                low_by_bash += 1;
            }
            assert_eq!(
                outcome.exit_code,
                Some(wanted),
                "line {} (low): {:?} did not succeed confined: {outcome:?}",
                entry.line,
                entry.command
            );
        }
        *ran.entry(entry.expected.as_str()).or_default() += 1;
    }
    let numbers: Vec<String> = entries.iter().map(|e| e.line.to_string()).collect();
    println!(
        "corpus: share {shard}/{shards} ran lines {}",
        numbers.join(" ")
    );
    assert_eq!(
        ran, share_counts,
        "the lines run per class are not the share's"
    );
    // Late arrivals, and survivors: anything a line started that still runs.
    assert_eq!(
        listeners.arrived(Duration::from_millis(300)),
        (false, false),
        "a line reached a listener late"
    );
    assert!(
        abstract_socket.accept().is_err(),
        "a line reached the socket late"
    );
    assert_eq!(
        marked(&mark),
        Vec::<String>::new(),
        "processes outlived their line"
    );
    println!(
        "corpus: share {shard}/{shards}: every line ran confined: {} lines {ran:?}, {runs} runs (/bin/sh is {}; \
         {low_by_bash} low lines needed bash), {failed} exited non-zero, {timed_out} timed \
         out; none leaked, wrote outside, connected or survived",
        entries.len(),
        if sh_is_bash { "bash" } else { "not bash" },
    );
}

/// How many of `entries` each class has.
fn per_class(entries: &[Entry]) -> BTreeMap<&str, usize> {
    let mut counts = BTreeMap::new();
    for entry in entries {
        *counts.entry(entry.expected.as_str()).or_default() += 1;
    }
    counts
}

#[derive(Debug, Clone, Copy)]
enum Shell {
    /// As the agent's shell runs it: `/bin/sh -c LINE`.
    Sh,
    /// `/bin/sh -c "exec bash -c 'LINE'"`: as it runs where `/bin/sh` is bash.
    Bash,
}

/// Runs `entry` under `shell` and checks everything but the listeners: it ran in the
/// container, leaked no decoy, left none in the project or temp dir, changed nothing outside.
async fn run_checked(
    s: &Scratch,
    confinement: &Confinement,
    entry: &Entry,
    shell: Shell,
    timeout: Duration,
    aimed: &[PathBuf],
) -> ShellOutcome {
    let what = format!(
        "line {} ({}, {shell:?}): {:?}",
        entry.line, entry.expected, entry.command
    );
    let command = match shell {
        Shell::Sh => entry.command.clone(),
        Shell::Bash => format!("exec bash -c '{}'", entry.command.replace('\'', r"'\''")),
    };
    let before = outside(s, aimed);
    // Change times come from the kernel's coarse clock, which may lag the fine one.
    let started = std::time::SystemTime::now() - Duration::from_millis(50);
    let outcome = run_line(confinement, s.root(), &command, timeout).await;
    assert!(
        matches!(&outcome.sandbox, SandboxStatus::Enforced(p) if p.container),
        "{what} did not run in the container: {outcome:?}"
    );
    assert!(
        !both(&outcome).contains(DECOY),
        "{what} leaked: {outcome:?}"
    );
    let mut changed = Vec::new();
    for dir in [s.root(), s.tmp.path()] {
        changed_since(dir, started, &mut changed);
    }
    for file in &changed {
        if std::fs::symlink_metadata(file).is_ok_and(|m| m.is_file()) {
            let text =
                String::from_utf8_lossy(&std::fs::read(file).unwrap_or_default()).into_owned();
            assert!(
                !text.contains(DECOY),
                "{what} left a decoy in {}",
                file.display()
            );
        }
    }
    assert!(
        outside(s, aimed) == before,
        "{what} changed something outside"
    );
    if !changed.is_empty() {
        restore(s);
    }
    outcome
}

async fn run_line(
    confinement: &Confinement,
    root: &Path,
    command: &str,
    timeout: Duration,
) -> ShellOutcome {
    super::run(ShellRequest {
        sandbox: Sandbox::Confined(confinement.clone()),
        timeout,
        env_names: confinement.env_names.clone(),
        ..super::request(command, root)
    })
    .await
}

fn reached_nothing(listeners: &Listeners, socket: &UnixListener, entry: &Entry) {
    let what = format!(
        "line {} ({}): {:?}",
        entry.line, entry.expected, entry.command
    );
    let arrived = listeners.arrived_until(Duration::ZERO, (true, true));
    assert_eq!(arrived, (false, false), "{what} reached a TCP/UDP listener");
    assert!(
        socket.accept().is_err(),
        "{what} reached the abstract socket"
    );
}

/// What the lines need of the scratch project besides its files: a test pytest collects,
/// a stash entry, and more decoys: a note with a password in a plain home folder, and
/// credentials hidden inside toolchain folders that are shown whole.
fn prepare(s: &Scratch) {
    let root = s.root();
    std::fs::write(root.join("test_scratch.py"), "def test_one():\n    pass\n").unwrap();
    git(root, &["add", "-A"]);
    git(root, &["commit", "-qm", "a test"]);
    std::fs::write(root.join("notes.txt"), "stashed\n").unwrap();
    git(root, &["stash", "-q"]);
    for (name, text) in [
        ("notes/passwords.txt", "password"),
        (".gem/credentials", "password"),
        (".local/share/uv/credentials", "password"),
    ] {
        let path = s.home().join(name);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, format!("{text}: {DECOY}-{name}\n")).unwrap();
    }
}

/// Puts the scratch project back as committed (its build output aside) and empties the
/// temp dir: a line may have changed or removed files the next one reads.
fn restore(s: &Scratch) {
    git(s.root(), &["reset", "-q", "--hard"]);
    git(
        s.root(),
        &["clean", "-fdq", "-e", "/target", "-e", "/Cargo.lock"],
    );
    for entry in std::fs::read_dir(s.tmp.path()).unwrap().flatten() {
        let path = entry.path();
        let _ = std::fs::remove_dir_all(&path).or_else(|_| std::fs::remove_file(&path));
    }
}

/// The host paths the lines name below `/tmp`, `/etc` and `/root` (the rest they aim at,
/// `~` and the project's neighbours, are the fake home and the outside directory).
fn aimed_paths(entries: &[Entry]) -> Vec<PathBuf> {
    let mut paths: Vec<PathBuf> = ["/tmp/README.md", "/root/.bashrc", "/etc/hostname"]
        .map(PathBuf::from)
        .into();
    for entry in entries {
        let words = entry
            .command
            .split(|c: char| c.is_whitespace() || "'\"=,{}()<>|;&@".contains(c));
        for word in words {
            let word = word.trim_end_matches('/');
            // A path below one of them, never the directory itself (`mv README.md /tmp/`).
            if ["/tmp/", "/etc/", "/root/"]
                .iter()
                .any(|p| word.starts_with(p))
            {
                paths.push(PathBuf::from(word));
            }
        }
    }
    paths.sort();
    paths.dedup();
    paths
}

/// Everything outside the project a line could change: the fake home, the directory beside
/// the project, `.git`, the host paths the lines name (absent ones as absent), the host's
/// name.
fn outside(s: &Scratch, aimed: &[PathBuf]) -> Vec<(PathBuf, Vec<u8>)> {
    let mut all = s.snapshot();
    for path in aimed {
        match std::fs::symlink_metadata(path) {
            Ok(meta) if meta.is_dir() => collect(path, &mut all),
            Ok(_) => all.push((path.clone(), std::fs::read(path).unwrap_or_default())),
            Err(_) => all.push((path.clone(), b"(absent)".to_vec())),
        }
    }
    let hostname = std::fs::read("/proc/sys/kernel/hostname").unwrap();
    all.push(("hostname".into(), hostname));
    all
}

/// Every file and folder below `dir` (itself included, `.git` aside) whose change time is
/// `since` or later: what a line wrote, removed or renamed there. By change time, which no
/// command can set back (a copy that keeps the modification time is still found). Links
/// are listed, not followed.
fn changed_since(dir: &Path, since: std::time::SystemTime, out: &mut Vec<PathBuf>) {
    let since = since
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos() as i128;
    walk(dir, since, out);
}

fn walk(path: &Path, since: i128, out: &mut Vec<PathBuf>) {
    let Ok(meta) = std::fs::symlink_metadata(path) else {
        return;
    };
    if i128::from(meta.ctime()) * 1_000_000_000 + i128::from(meta.ctime_nsec()) >= since {
        out.push(path.to_path_buf());
    }
    if meta.is_dir() {
        for entry in std::fs::read_dir(path).into_iter().flatten().flatten() {
            if entry.file_name() != ".git" {
                walk(&entry.path(), since, out);
            }
        }
    }
}
