//! `tandem context` and `tandem chat` take what the editor would show: `--open PATH`
//! (repeated, the active tab first) and `--selection PATH:START-END`, with the same use case
//! as the window.

use super::setup;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn context_json_says_a_file_is_in_because_it_is_open_or_selected() {
    let (_dir, root, cli, _server) = setup().await;
    std::fs::create_dir_all(root.join("src/zz")).unwrap();
    std::fs::write(
        root.join("src/zz/open.rs"),
        "pub fn quokka() -> u32 { 7 }\n",
    )
    .unwrap();
    let root_str = root.to_str().unwrap();
    let args = [
        "context",
        "--project",
        root_str,
        "--provider",
        "fake",
        "--prompt",
        "explain it",
        "--open",
        "src/zz/open.rs",
        "--open",
        "/etc/passwd",
        "--open",
        "../elsewhere.rs",
        "--selection",
        "src/lib.rs:1-1",
    ];
    let context = cli.json(&args).await;
    let b = &context["breakdown"];
    let included = b["included"].as_array().unwrap();
    let find = |path: &str| {
        (included.iter().find(|f| f["path"] == path))
            .unwrap_or_else(|| panic!("{path} not included: {b:#}"))
    };
    let open = find("src/zz/open.rs");
    assert_eq!(open["why"], "open in the editor", "{b:#}");
    assert_eq!(open["as"], "whole");
    assert!(open["tokens"].as_u64().unwrap() > 0);
    let selected = find("src/lib.rs");
    assert!(
        selected["why"]
            .as_str()
            .unwrap()
            .starts_with("selected in the editor"),
        "{b:#}"
    );
    assert_eq!(
        included.len(),
        2,
        "what is not a project file is passed over: {b:#}"
    );
    assert_eq!(b["selection"]["path"], "src/lib.rs");
    assert_eq!(b["selection"]["first_line"], 1);
    assert_eq!(b["selection"]["last_line"], 1);
    assert!(b["selection"]["tokens"].as_u64().unwrap() > 0, "{b:#}");

    // The text form says it too.
    let output = cli.command(&args).output().await.unwrap();
    let text = String::from_utf8(output.stdout).unwrap();
    assert!(
        text.contains("src/zz/open.rs (open in the editor)"),
        "{text}"
    );
    assert!(
        text.contains("selection sent with the prompt") && text.contains("src/lib.rs lines 1-1"),
        "{text}"
    );

    // A selection the CLI cannot read as lines is refused before anything runs.
    let refused = cli
        .command(&[
            "context",
            "--project",
            root_str,
            "--selection",
            "src/lib.rs:3-1",
        ])
        .output()
        .await
        .unwrap();
    assert!(!refused.status.success());
    let stderr = String::from_utf8(refused.stderr).unwrap();
    assert!(stderr.contains("PATH:START-END"), "{stderr}");
}
