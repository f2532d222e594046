//! Two real `tandem` processes on one data directory: a process starting while another
//! changes a project must leave that change alone. Every change of a project's tree or
//! history holds an OS lock for the project; the crash recovery of a start runs only for
//! a project whose lock it can take (a held lock means the change is alive), and a killed
//! holder releases it.

#![cfg(unix)]
#![allow(clippy::unwrap_used)] // tests state their expectations with unwrap

mod common;
mod fake_provider;

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use tandem_core::engine::project_lock_path;

/// A project added on a data directory, and the `tandem` binary on it.
struct Project {
    tandem: common::Cli,
    root: PathBuf,
}

impl Project {
    fn new(dir: &Path, files: &[(&str, &str)]) -> Project {
        let root = dir.join("project");
        common::repo_with(&root, files);
        let project = Project {
            tandem: common::Cli {
                data: dir.join("data"),
            },
            root: root.canonicalize().unwrap(),
        };
        project.tandem.json(&["project", "add", project.root()]);
        project
    }

    fn root(&self) -> &str {
        self.root.to_str().unwrap()
    }

    fn lock_path(&self) -> PathBuf {
        project_lock_path(&self.tandem.data, &self.root)
    }

    /// A proposal writing `files` files under `dir/`, each marked with `mark`.
    fn propose(&self, files: usize, dir: &str, mark: &str) -> String {
        let mut reply = String::from("Many files.\n");
        for f in 0..files {
            reply.push_str(&format!(
                "<tandem-write path=\"{dir}/f{f:04}.txt\">{mark} {f}\n</tandem-write>\n"
            ));
        }
        let file = self.tandem.data.with_file_name(format!("reply-{mark}.txt"));
        std::fs::write(&file, reply).unwrap();
        let out = self.tandem.json(&[
            "propose",
            "--project",
            self.root(),
            "--response",
            file.to_str().unwrap(),
            "--prompt",
            mark,
        ]);
        out["message_id"].as_i64().unwrap().to_string()
    }
}

/// A change in flight as a process writing it leaves the project: the commit made (not
/// yet HEAD), its record written, its new file on disk. Returns the new file's path.
fn change_in_flight(project: &Project) -> PathBuf {
    let root = &project.root;
    let blob = {
        let mut child = Command::new("git")
            .args(["hash-object", "-w", "--stdin"])
            .current_dir(root)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        use std::io::Write;
        child
            .stdin
            .take()
            .unwrap()
            .write_all(b"being written\n")
            .unwrap();
        let out = child.wait_with_output().unwrap();
        String::from_utf8(out.stdout).unwrap().trim().to_string()
    };
    let index = root.join(".git/tmp-index");
    let git_with_index = |args: &[&str]| {
        let out = Command::new("git")
            .args(args)
            .current_dir(root)
            .env("GIT_INDEX_FILE", &index)
            .env("GIT_AUTHOR_NAME", "T")
            .env("GIT_AUTHOR_EMAIL", "t@example.com")
            .env("GIT_COMMITTER_NAME", "T")
            .env("GIT_COMMITTER_EMAIL", "t@example.com")
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).unwrap().trim().to_string()
    };
    git_with_index(&["read-tree", "HEAD"]);
    git_with_index(&[
        "update-index",
        "--add",
        "--cacheinfo",
        &format!("100644,{blob},landing.txt"),
    ]);
    let tree = git_with_index(&["write-tree"]);
    let commit = git_with_index(&["commit-tree", &tree, "-p", "HEAD", "-m", "in flight"]);
    std::fs::remove_file(&index).unwrap();
    std::fs::write(root.join(".git/tandem-landing"), format!("{commit}\n")).unwrap();
    let file = root.join("landing.txt");
    std::fs::write(&file, "being written\n").unwrap();
    file
}

/// A process of its own holding the project's lock (`flock(1)` on a descriptor that the
/// process then keeps as `sleep`) until it is killed.
fn hold_lock(path: &Path) -> Child {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    let child = Command::new("sh")
        .args(["-c", "exec 9>>\"$0\" && flock 9 && exec sleep 60"])
        .arg(path)
        .spawn()
        .expect("sh and flock(1) (util-linux) run");
    let start = Instant::now();
    while !tandem_core::lockfile::held(path) {
        assert!(
            start.elapsed() < Duration::from_secs(10),
            "flock took the lock"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    child
}

#[test]
fn a_start_leaves_a_change_alone_while_its_process_holds_the_lock_and_recovers_it_once_killed() {
    let dir = tempfile::tempdir().unwrap();
    let project = Project::new(dir.path(), &[("a.txt", "a\n")]);
    let file = change_in_flight(&project);
    let record = project.root.join(".git/tandem-landing");
    let mut holder = hold_lock(&project.lock_path());

    // A second process starts (every start runs the recovery) while the first writes.
    project.tandem.json(&["chats", "--project", project.root()]);
    assert!(file.exists(), "a change in flight is not recovered away");
    assert!(
        record.exists(),
        "its record stays for its process to finish"
    );
    // A change of this project waits for the holder, and says so when it does not end.
    let id = project.propose(1, "waits", "w");
    let started = Instant::now();
    let mut approve = project
        .tandem
        .command(&["approve", &id])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(600));
    assert!(
        approve.try_wait().unwrap().is_none(),
        "the approval waits while another process changes the project"
    );
    assert!(!project.root.join("waits/f0000.txt").exists());

    // The holder is killed: the kernel drops its lock, the waiting approval goes first
    // (its own recovery puts the dead change back), and the next start finds nothing.
    holder.kill().unwrap();
    holder.wait().unwrap();
    let out = approve.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(started.elapsed() < Duration::from_secs(30));
    assert!(!file.exists(), "the dead change was put back");
    assert!(!record.exists());
    assert_eq!(
        std::fs::read_to_string(project.root.join("waits/f0000.txt")).unwrap(),
        "w 0\n"
    );
    let status = common::git(&project.root, &["status", "--porcelain"]);
    assert_eq!(status, "", "the tree is HEAD's");
}

#[test]
fn a_start_with_no_one_holding_the_lock_recovers_a_dead_change() {
    let dir = tempfile::tempdir().unwrap();
    let project = Project::new(dir.path(), &[("a.txt", "a\n")]);
    let file = change_in_flight(&project);
    project.tandem.json(&["chats", "--project", project.root()]);
    assert!(!file.exists(), "a killed process's change is put back");
    assert!(!project.root.join(".git/tandem-landing").exists());
}

/// The case, with real processes racing: one approves a 3,000-file proposal while
/// another is started again and again.
#[test]
fn approving_a_big_proposal_while_another_process_starts_again_and_again() {
    let dir = tempfile::tempdir().unwrap();
    let project = Project::new(dir.path(), &[("a.txt", "a\n")]);
    for round in 0..2 {
        let mark = format!("round{round}");
        let id = project.propose(3000, &format!("gen{round}"), &mark);
        let mut approve = project
            .tandem
            .command(&["approve", &id])
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut starts = 0;
        let status = loop {
            if let Some(status) = approve.try_wait().unwrap() {
                break status;
            }
            let out = project
                .tandem
                .run(&["--json", "chats", "--project", project.root()]);
            assert!(
                out.status.success(),
                "{}",
                String::from_utf8_lossy(&out.stderr)
            );
            starts += 1;
        };
        let mut err = String::new();
        use std::io::Read;
        approve
            .stderr
            .take()
            .unwrap()
            .read_to_string(&mut err)
            .unwrap();
        assert!(
            status.success(),
            "round {round} after {starts} starts: {err}"
        );
        assert!(starts > 0, "round {round}: the other process did start");
        assert_eq!(common::git(&project.root, &["status", "--porcelain"]), "");
        let landed = std::fs::read_dir(project.root.join(format!("gen{round}")))
            .unwrap()
            .count();
        assert_eq!(landed, 3000, "round {round}");
        assert_eq!(
            std::fs::read_to_string(project.root.join(format!("gen{round}/f2999.txt"))).unwrap(),
            format!("{mark} 2999\n")
        );
    }
}

/// The reply of `chat` the CLI lists last: (status, content).
fn last_reply(project: &Project) -> Option<(String, String)> {
    let chats = project.tandem.json(&["chats", "--project", project.root()]);
    let chat = chats["chats"].as_array()?.first()?["id"]
        .as_i64()?
        .to_string();
    let listed = project.tandem.json(&["messages", "--chat", &chat]);
    let last = listed["messages"].as_array()?.last()?.clone();
    (last["role"] == "assistant").then(|| {
        (
            last["status"].as_str().unwrap_or_default().to_string(),
            last["content"].as_str().unwrap_or_default().to_string(),
        )
    })
}

/// A window (or `tandem chat`) streams a reply while another process starts: every start
/// marks replies a dead process left streaming as interrupted, but this one's process is
/// alive. Once it is killed, the next start does mark it.
#[test]
fn a_reply_streaming_in_a_live_process_is_left_streaming_by_another_start() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let server = runtime.block_on(fake_provider::FakeProvider::start());
    let dir = tempfile::tempdir().unwrap();
    let project = Project::new(dir.path(), &[("a.txt", "a\n")]);
    let provider = common::fake_provider_args(&server.url());
    let provider: Vec<&str> = provider.iter().map(String::as_str).collect();
    project.tandem.json(&provider);
    let pieces: Vec<String> = (0..40).map(|i| format!("word{i} ")).collect();
    let pieces: Vec<&str> = pieces.iter().map(String::as_str).collect();
    server.push(
        "POST",
        "/api/chat",
        fake_provider::ollama_stream(&pieces, Duration::from_millis(250)),
    );
    let mut streaming = project
        .tandem
        .command(&[
            "chat",
            "--project",
            project.root(),
            "--provider",
            "fake",
            "hello",
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    // Each look is a start of another process.
    let start = Instant::now();
    loop {
        // (The listing shows a streaming reply's text only once it ends.)
        if let Some((status, content)) = last_reply(&project) {
            assert_eq!(status, "streaming", "{content}");
            break;
        }
        assert!(
            start.elapsed() < Duration::from_secs(20),
            "the reply streams"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    std::thread::sleep(Duration::from_millis(1500));
    for _ in 0..3 {
        let (status, _) = last_reply(&project).unwrap();
        assert_eq!(
            status, "streaming",
            "another start leaves a live reply alone"
        );
    }
    streaming.kill().unwrap();
    streaming.wait().unwrap();
    let (status, content) = last_reply(&project).unwrap();
    assert_eq!(status, "interrupted", "its process is dead");
    assert!(
        content.starts_with("word0 word1 "),
        "the text so far is kept: {content}"
    );
    drop(server);
}
