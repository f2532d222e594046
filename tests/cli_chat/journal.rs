//! The change journal across real processes: `tandem context` on a project whose files change
//! between turns, with the keeper `tandem` starts in the background, packs what a data
//! directory that never saw the project packs; the keeper also sees an edit no `stat` can,
//! and it is gone once its project is.

use super::*;

/// `tandem context --json` on `cli`'s data directory: the included files with why, and the
/// files listed by path.
async fn packed(cli: &Cli, root: &std::path::Path, prompt: &str) -> (Vec<(String, String)>, Value) {
    let context = cli
        .json(&[
            "context",
            "--project",
            root.to_str().unwrap(),
            "--provider",
            "fake",
            "--prompt",
            prompt,
        ])
        .await;
    let b = &context["breakdown"];
    let included = (b["included"].as_array().unwrap().iter())
        .map(|f| {
            let (path, why) = (&f["path"], &f["why"]);
            (
                path.as_str().unwrap().to_string(),
                why.as_str().unwrap().to_string(),
            )
        })
        .collect();
    (included, b["files_listed"].clone())
}

/// What a data directory that never saw the project packs (no index, no journal).
async fn from_scratch(server: &FakeProvider, root: &std::path::Path, prompt: &str) -> Value {
    let dir = tempfile::tempdir().unwrap();
    let cli = Cli {
        data: dir.path().join("data"),
    };
    register(&cli, root, server).await;
    let (included, listed) = packed(&cli, root, prompt).await;
    serde_json::json!({"included": included, "listed": listed})
}

/// The keeper's socket in `data`, once it answers.
fn keeper_socket(data: &std::path::Path) -> std::path::PathBuf {
    let start = std::time::Instant::now();
    loop {
        let found = std::fs::read_dir(data.join("index"))
            .ok()
            .and_then(|entries| {
                (entries.flatten())
                    .map(|e| e.path())
                    .find(|p| p.extension().is_some_and(|e| e == "journal"))
            });
        if let Some(socket) = found
            && std::os::unix::net::UnixStream::connect(&socket).is_ok()
        {
            return socket;
        }
        assert!(
            start.elapsed() < Duration::from_secs(10),
            "no keeper answered"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Live processes whose command line names `text`.
fn processes_naming(text: &str) -> usize {
    let entries = std::fs::read_dir("/proc").unwrap().flatten();
    entries
        .filter_map(|e| std::fs::read(e.path().join("cmdline")).ok())
        .filter(|cmdline| String::from_utf8_lossy(cmdline).contains(text))
        .count()
}

#[cfg(target_os = "linux")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_journal_packs_what_a_fresh_look_packs_through_every_kind_of_change() {
    let (dir, root, cli, server) = setup().await;
    let write = |rel: &str, text: &str| common::write_file(&root, rel, text);
    for i in 0..12 {
        write(
            &format!("src/filler_{i:02}.rs"),
            &format!("pub fn filler_{i}() {{}}\n"),
        );
    }
    write("src/quasar.rs", "pub fn quasar_orbit() -> u32 { 1 }\n");
    packed(&cli, &root, "warm up").await;
    let socket = keeper_socket(&cli.data);
    // Asked once more: the index now stands at a token of the running keeper.
    packed(&cli, &root, "warm up").await;

    let same = async |prompt: &str| {
        let (included, listed) = packed(&cli, &root, prompt).await;
        let ours = serde_json::json!({"included": included, "listed": listed});
        assert_eq!(ours, from_scratch(&server, &root, prompt).await, "{prompt}");
        included
    };

    // An edit in place that keeps the size, the inode and the time: a `stat` cannot tell,
    // the journal can.
    let lib = root.join("src/lib.rs");
    let before = std::fs::metadata(&lib).unwrap();
    std::fs::write(&lib, "pub fn zyx() -> u32 { 1 }\n").unwrap();
    let file = std::fs::File::options().write(true).open(&lib).unwrap();
    file.set_modified(before.modified().unwrap()).unwrap();
    let after = std::fs::metadata(&lib).unwrap();
    assert_eq!(
        (after.len(), after.modified().unwrap()),
        (before.len(), before.modified().unwrap())
    );
    let included = same("rename zyx").await;
    assert_eq!(included[0].0, "src/lib.rs", "{included:?}");
    assert!(included[0].1.contains("zyx"), "{included:?}");

    // A new folder with a file made in it at once; then the folder moved; a file removed;
    // a folder ignored; a file appended to; a branch checked out by git.
    write("src/deep/er/nebula.rs", "pub fn nebula_cloud() {}\n");
    same("where is nebula cloud").await;
    std::fs::rename(root.join("src/deep"), root.join("src/moved")).unwrap();
    same("where is nebula cloud").await;
    std::fs::remove_file(root.join("src/quasar.rs")).unwrap();
    same("quasar orbit").await;
    write(".gitignore", "src/moved/\n");
    same("where is nebula cloud").await;
    let mut appended = std::fs::read_to_string(root.join("src/filler_03.rs")).unwrap();
    appended.push_str("pub fn pulsar_beam() {}\n");
    write("src/filler_03.rs", &appended);
    same("pulsar beam").await;
    common::git(&root, &["add", "-A"]);
    common::git(&root, &["commit", "-qm", "turns"]);
    common::git(&root, &["checkout", "-q", "HEAD~1"]);
    same("pulsar beam quasar orbit").await;

    // The keeper stayed up through all of it (the turns above used it), and leaves with
    // its project.
    assert!(std::os::unix::net::UnixStream::connect(&socket).is_ok());
    let named = socket.to_str().unwrap().to_string();
    assert_eq!(processes_naming(&named), 1, "one keeper for the project");
    drop(dir);
    let start = std::time::Instant::now();
    while processes_naming(&named) > 0 {
        assert!(
            start.elapsed() < Duration::from_secs(5),
            "the keeper outlived its project"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The keeper holds none of its starter's descriptors: a caller that hands `tandem` a pipe
/// beside its output (a script's status pipe) reads to its end once `tandem` is done, not
/// once the keeper leaves, half an hour later.
#[cfg(target_os = "linux")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_keeper_holds_none_of_its_starters_pipes() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("project");
    common::repo_with(&root, &[("src/lib.rs", "pub fn one() -> u32 { 1 }\n")]);
    let data = dir.path().join("data");
    // The shell passes its output down as descriptor 3 as well; `project add` starts the
    // keeper (it indexes the project).
    let mut sh = std::process::Command::new("sh");
    common::seal(&mut sh)
        .arg("-c")
        .arg(r#"exec 3>&1; "$0" --data-dir "$1" project add "$2" >/dev/null"#)
        .arg(env!("CARGO_BIN_EXE_tandem"))
        .arg(&data)
        .arg(&root)
        .stdin(Stdio::null())
        .stdout(Stdio::piped());
    let child = Command::from(sh).spawn().unwrap();
    let done = tokio::time::timeout(Duration::from_secs(20), child.wait_with_output()).await;
    let output = done.expect("the pipe stayed open after tandem ended: a keeper holds it");
    assert!(output.unwrap().status.success());
    // A keeper was started (without one this would prove nothing).
    keeper_socket(&data);
}
