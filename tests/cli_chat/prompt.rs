//! What goes with a prompt: saved prompts and @-mentions, attachments, pages fetched.

use super::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn saved_prompts_and_at_mentions_archive_and_search() {
    let (dir, root, cli, server) = setup().await;
    let root_str = root.to_str().unwrap();
    let text_file = dir.path().join("explain.txt");
    std::fs::write(&text_file, "Explain what this code does, briefly.\n").unwrap();
    let saved = cli
        .json(&[
            "prompt",
            "add",
            "--name",
            "explain",
            "--text-file",
            text_file.to_str().unwrap(),
        ])
        .await;
    assert_eq!(saved["prompt"]["name"], "explain");
    let listed = cli.json(&["prompt", "list"]).await;
    assert_eq!(listed["prompts"][0]["name"], "explain");

    // `@prompt:NAME` is expanded before it is stored and sent; `@path` puts the file first.
    server.push(
        "POST",
        "/api/chat",
        ollama_stream(&["It returns one."], Duration::ZERO),
    );
    let out = cli
        .json(&[
            "chat",
            "--project",
            root_str,
            "--provider",
            "fake",
            "--mode",
            "ask",
            "@prompt:explain See @src/lib.rs.",
        ])
        .await;
    assert_eq!(out["status"], "complete");
    let chat_id = out["chat_id"].as_i64().unwrap().to_string();
    let request = server.requests().pop().unwrap();
    let messages = request.body["messages"].as_array().unwrap();
    let sent = messages.last().unwrap()["content"].as_str().unwrap();
    assert!(
        sent.contains("Explain what this code does, briefly. See @src/lib.rs."),
        "{sent}"
    );
    let whole = request.raw_body.clone();
    assert!(whole.contains("pub fn one() -> u32 { 1 }"), "{whole}");

    // An unknown prompt: a clear error, nothing stored, nothing sent.
    let before = server.requests().len();
    let failed = cli
        .command(&[
            "chat",
            "--project",
            root_str,
            "--chat",
            &chat_id,
            "@prompt:nope hi",
        ])
        .output()
        .await
        .unwrap();
    assert!(!failed.status.success());
    let stderr = String::from_utf8_lossy(&failed.stderr);
    assert!(
        stderr.contains("no saved prompt named \"nope\""),
        "{stderr}"
    );
    assert_eq!(server.requests().len(), before);
    let messages = cli.json(&["messages", "--chat", &chat_id]).await;
    assert_eq!(messages["messages"].as_array().unwrap().len(), 2);

    // The chat remembers its model: the next turn, named by chat only, uses it again.
    let chats = cli.json(&["chats", "--project", root_str]).await;
    assert_eq!(chats["chats"][0]["model"], "tiny");
    server.push(
        "POST",
        "/api/chat",
        ollama_stream(&["Again."], Duration::ZERO),
    );
    let again = cli
        .json(&[
            "chat",
            "--project",
            root_str,
            "--chat",
            &chat_id,
            "and again",
        ])
        .await;
    assert_eq!(again["status"], "complete");
    assert_eq!(server.requests().pop().unwrap().body["model"], "tiny");

    // Archived chats leave the list, stay searchable, and come back.
    cli.json(&["archive", "--chat", &chat_id]).await;
    let chats = cli.json(&["chats", "--project", root_str]).await;
    assert!(chats["chats"].as_array().unwrap().is_empty());
    let archived = cli
        .json(&["chats", "--project", root_str, "--archived"])
        .await;
    assert_eq!(archived["chats"][0]["id"].to_string(), chat_id);
    let hits = cli
        .json(&["search-chats", "--project", root_str, "RETURNS ONE"])
        .await;
    let hits = hits["hits"].as_array().unwrap();
    assert_eq!(hits.len(), 1, "{hits:?}");
    assert_eq!(hits[0]["snippet"], "It returns one.");
    assert_eq!(hits[0]["role"], "assistant");
    cli.json(&["archive", "--chat", &chat_id, "--undo"]).await;
    let chats = cli.json(&["chats", "--project", root_str]).await;
    assert_eq!(chats["chats"].as_array().unwrap().len(), 1);

    cli.json(&["prompt", "remove", "explain"]).await;
    assert!(
        cli.json(&["prompt", "list"]).await["prompts"]
            .as_array()
            .unwrap()
            .is_empty()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn attached_images_and_files_go_with_the_prompt_and_a_model_without_vision_is_refused() {
    let (dir, root, cli, server) = setup().await;
    let root_str = root.to_str().unwrap();
    let shot = dir.path().join("shot.png");
    std::fs::write(&shot, b"\x89PNG\r\n\x1a\na tiny picture").unwrap();
    let notes = dir.path().join("notes.txt");
    std::fs::write(&notes, "The footer should be blue.\n").unwrap();
    let blob = dir.path().join("blob.bin");
    std::fs::write(&blob, [0u8, 1, 2, 255]).unwrap();

    server.push(
        "POST",
        "/api/chat",
        ollama_stream(&["I see it."], Duration::ZERO),
    );
    let out = cli
        .json(&[
            "chat",
            "--project",
            root_str,
            "--provider",
            "fake",
            "--mode",
            "ask",
            "--attach",
            shot.to_str().unwrap(),
            "--attach",
            notes.to_str().unwrap(),
            "what is this?",
        ])
        .await;
    assert_eq!(out["status"], "complete");
    let chat = server
        .requests()
        .into_iter()
        .find(|r| r.path == "/api/chat")
        .unwrap();
    let user = chat.body["messages"]
        .as_array()
        .unwrap()
        .last()
        .unwrap()
        .clone();
    assert_eq!(user["images"].as_array().unwrap().len(), 1);
    let text = user["content"].as_str().unwrap();
    assert!(text.starts_with("what is this?"), "{text}");
    assert!(
        text.contains("Attached file notes.txt:\n```\nThe footer should be blue.\n```"),
        "{text}"
    );
    // The bytes live in the data directory, not in SQLite; the stored prompt is as typed.
    let kept: Vec<_> = std::fs::read_dir(cli.data.join("attachments"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert_eq!(kept.len(), 2);
    let messages = cli
        .json(&["messages", "--chat", &out["chat_id"].to_string()])
        .await;
    assert_eq!(messages["messages"][0]["content"], "what is this?");

    // Not an image nor text: refused before anything is created or sent.
    let before = server.requests().len();
    let refused = cli
        .command(&[
            "chat",
            "--project",
            root_str,
            "--provider",
            "fake",
            "--attach",
            blob.to_str().unwrap(),
            "look",
        ])
        .output()
        .await
        .unwrap();
    assert!(!refused.status.success());
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert!(stderr.contains("neither text nor a PNG"), "{stderr}");
    assert_eq!(server.requests().len(), before);

    // A model whose server says it has no vision: a clear refusal, no chat request.
    server.push(
        "POST",
        "/api/show",
        fake_provider::Reply::json(
            200,
            serde_json::json!({"capabilities": ["completion"],
                               "model_info": {"llama.context_length": 8192}}),
        ),
    );
    let refused = cli
        .command(&[
            "chat",
            "--project",
            root_str,
            "--provider",
            "fake",
            "--model",
            "text-only",
            "--attach",
            shot.to_str().unwrap(),
            "look",
        ])
        .output()
        .await
        .unwrap();
    assert!(!refused.status.success());
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert!(
        stderr.contains("text-only does not take images"),
        "{stderr}"
    );
    assert!(
        server
            .requests()
            .iter()
            .filter(|r| r.path == "/api/chat")
            .count()
            == 1
    );
    let chats = cli.json(&["chats", "--project", root_str]).await;
    assert_eq!(
        chats["chats"].as_array().unwrap().len(),
        1,
        "no empty chat left"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_page_mentioned_with_an_at_is_fetched_and_sent_with_the_prompt() {
    let (_dir, root, cli, server) = setup().await;
    let root_str = root.to_str().unwrap();
    server.push(
        "GET",
        "/guide",
        fake_provider::Reply::Raw {
            status: 200,
            headers: vec![("content-type".into(), "text/html".into())],
            body: b"<html><body><h2>Style</h2><p>Tabs, not spaces.</p></body></html>".to_vec(),
        },
    );
    server.push(
        "POST",
        "/api/chat",
        ollama_stream(&["Noted."], Duration::ZERO),
    );
    let url = format!("{}/guide", server.url());
    let prompt = format!("follow @{url}.");
    let out = cli
        .json(&[
            "chat",
            "--project",
            root_str,
            "--provider",
            "fake",
            "--mode",
            "ask",
            &prompt,
        ])
        .await;
    assert_eq!(out["status"], "complete");
    let request = server
        .requests()
        .into_iter()
        .find(|r| r.path == "/api/chat")
        .unwrap();
    let sent = request.body["messages"].as_array().unwrap().last().unwrap()["content"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(sent.starts_with(&prompt), "{sent}");
    assert!(sent.contains(&format!("The web page {url}:")), "{sent}");
    assert!(
        sent.contains("Tabs, not spaces.") && !sent.contains("<p>"),
        "{sent}"
    );

    // A page that cannot be fetched: a clear error, and nothing sent.
    let before = server
        .requests()
        .iter()
        .filter(|r| r.path == "/api/chat")
        .count();
    let missing = format!("look at @{}/missing", server.url());
    let failed = cli
        .command(&[
            "chat",
            "--project",
            root_str,
            "--provider",
            "fake",
            &missing,
        ])
        .output()
        .await
        .unwrap();
    assert!(!failed.status.success());
    let stderr = String::from_utf8_lossy(&failed.stderr);
    assert!(stderr.contains("/missing answered HTTP 404"), "{stderr}");
    let after = server
        .requests()
        .iter()
        .filter(|r| r.path == "/api/chat")
        .count();
    assert_eq!(before, after);
}

/// A server's error page is quoted in the error: what it says reaches the person's terminal,
/// so what a terminal would act on there (a retitle, OSC 52 setting the clipboard) is shown
/// escaped.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_servers_error_page_cannot_drive_the_terminal() {
    let (_dir, root, cli, server) = setup().await;
    server.push(
        "POST",
        "/api/chat",
        fake_provider::Reply::Raw {
            status: 400,
            headers: vec![("content-type".into(), "text/plain".into())],
            body: b"bad request\x1b]0;owned\x07\x1b]52;c;ZWNobyBwd25lZA==\x07".to_vec(),
        },
    );
    let out = cli
        .command(&[
            "chat",
            "--project",
            root.to_str().unwrap(),
            "--provider",
            "fake",
            "hello",
        ])
        .output()
        .await
        .unwrap();
    assert!(!out.status.success());
    let said = [out.stdout, out.stderr].concat();
    let said = String::from_utf8_lossy(&said);
    assert!(said.contains("bad request"), "{said}");
    assert!(!said.contains(['\u{1b}', '\u{7}']), "{said:?}");
    assert!(said.contains("\\x1b]52;c;"), "{said:?}");
}
