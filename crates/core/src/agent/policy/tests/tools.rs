//! Every tool under every trust level, and where paths and the working directory resolve.

use super::*;

#[test]
fn every_tool_kind_under_every_trust() {
    let cases: &[(&str, Value, Risk, [&str; 3])] = &[
        (
            "list_files",
            json!({ "path": "src" }),
            Low,
            ["allow", "allow", "allow"],
        ),
        (
            "read_file",
            json!({ "path": "src/main.rs" }),
            Low,
            ["allow", "allow", "allow"],
        ),
        (
            "grep",
            json!({ "pattern": "fn", "path": "src" }),
            Low,
            ["allow", "allow", "allow"],
        ),
        (
            "read_file",
            json!({ "path": "../secret" }),
            Medium,
            ["ask", "ask", "ask"],
        ),
        (
            "find_definitions",
            json!({ "name": "parse" }),
            Low,
            ["allow", "allow", "allow"],
        ),
        (
            "find_references",
            json!({ "name": "parse" }),
            Low,
            ["allow", "allow", "allow"],
        ),
        (
            "outline",
            json!({ "path": "src/main.rs" }),
            Low,
            ["allow", "allow", "allow"],
        ),
        (
            "outline",
            json!({ "path": "../secret.rs" }),
            Medium,
            ["ask", "ask", "ask"],
        ),
        (
            "write_file",
            json!({ "path": "src/x.rs", "content": "" }),
            Medium,
            ["ask", "ask", "deny"],
        ),
        (
            "search_replace",
            json!({ "path": "src/x.rs" }),
            Medium,
            ["ask", "ask", "deny"],
        ),
        (
            "rename_file",
            json!({ "from": "a", "to": "b" }),
            Medium,
            ["ask", "ask", "deny"],
        ),
        (
            "delete_file",
            json!({ "path": "a.txt" }),
            Medium,
            ["ask", "ask", "deny"],
        ),
        (
            "write_file",
            json!({ "path": "/etc/passwd" }),
            High,
            ["ask", "deny", "deny"],
        ),
        (
            "write_file",
            json!({ "path": "../x" }),
            High,
            ["ask", "deny", "deny"],
        ),
        (
            "write_file",
            json!({ "path": "~/.bashrc" }),
            High,
            ["ask", "deny", "deny"],
        ),
        (
            "rename_file",
            json!({ "from": "a", "to": "/tmp/a" }),
            High,
            ["ask", "deny", "deny"],
        ),
        (
            "write_file",
            json!({ "path": "/work/proj/src/x.rs" }),
            Medium,
            ["ask", "ask", "deny"],
        ),
        (
            "write_file",
            json!({ "path": ".git/hooks/pre-commit" }),
            High,
            ["ask", "ask", "deny"],
        ),
        (
            "write_file",
            json!({ "path": "/dev/sda" }),
            High,
            ["deny", "deny", "deny"],
        ),
        (
            "run_shell",
            json!({ "command": "ls" }),
            Low,
            ["allow", "allow", "deny"],
        ),
        (
            "run_shell",
            json!({ "command": "touch a" }),
            Medium,
            ["ask", "ask", "deny"],
        ),
        (
            "run_shell",
            json!({ "command": "rm -rf build" }),
            High,
            ["ask", "ask", "deny"],
        ),
        (
            "run_shell",
            json!({ "command": "rm -rf build", "cwd": "/tmp" }),
            High,
            ["deny"; 3],
        ),
        ("run_shell", json!({}), High, ["ask", "ask", "deny"]),
        (
            "github/create_issue",
            json!({ "title": "x" }),
            Medium,
            ["ask", "ask", "deny"],
        ),
        ("teleport", json!({}), High, ["ask", "ask", "deny"]),
    ];
    for (tool, args, risk, expected) in cases {
        for (trust, expected) in [Trust::Trusted, Trust::Scoped, Trust::ReadOnly]
            .iter()
            .zip(expected)
        {
            let a = call(tool, args.clone(), *trust, &PolicySettings::default());
            assert_eq!(a.risk, *risk, "{tool} {args}: {a:?}");
            assert_eq!(
                kind(&a.decision),
                *expected,
                "{tool} {args} under {trust:?}: {a:?}"
            );
            assert_eq!(
                a.parts.is_empty(),
                *tool != "run_shell" || args.get("command").is_none()
            );
        }
    }
    // Read-only trust cannot be opened up by patterns.
    let s = settings(&[], &[], &["tool:write_file", "*"]);
    let w = call("write_file", json!({ "path": "a" }), Trust::ReadOnly, &s);
    assert_eq!(kind(&w.decision), "deny");
    assert_eq!(kind(&shell("ls", Trust::ReadOnly, &s).decision), "deny");
}

/// What a read returns goes to the model: reading a file whose name looks secret is asked,
/// whichever tool or command reads it; other reads of the project are not.
#[test]
fn reading_a_file_whose_name_looks_secret_is_asked() {
    let s = PolicySettings::default();
    for (tool, args) in [
        ("read_file", json!({ "path": ".env" })),
        ("read_file", json!({ "path": "deploy/server.key" })),
        ("outline", json!({ "path": "config/credentials.json" })),
        (
            "grep",
            json!({ "pattern": "KEY", "path": "app/.env.production" }),
        ),
    ] {
        let a = call(tool, args.clone(), Trust::Trusted, &s);
        assert_eq!(kind(&a.decision), "ask", "{tool} {args}");
    }
    for command in [
        "cat .env",
        "head -n 5 deploy/id_rsa",
        "cd deploy && cat server.pem",
        "grep KEY .en''v",
        "cat *.pem",
        // Committed, a file's contents are read through git as well.
        "git show HEAD:.env",
        "git show HEAD~2:deploy/server.key",
        "git cat-file -p HEAD:config/credentials.json",
        "git log -p -- .env",
        "git blame deploy/id_rsa",
        "git grep PASSWORD -- prod.env",
    ] {
        assert_eq!(risk(command), Medium, "{command}");
        assert_eq!(kind(&shell(command, Trust::Trusted, &s).decision), "ask");
    }
    for (tool, args) in [
        ("read_file", json!({ "path": ".env.example" })),
        ("read_file", json!({ "path": "src/env.rs" })),
        ("grep", json!({ "pattern": "KEY", "path": "src" })),
    ] {
        let a = call(tool, args.clone(), Trust::Trusted, &s);
        assert_eq!(kind(&a.decision), "allow", "{tool} {args}");
    }
    assert_eq!(risk("cat src/env.rs"), Low);
    for command in [
        "git show HEAD:src/main.rs",
        "git log -p -- src",
        "git diff HEAD~1",
    ] {
        assert_eq!(risk(command), Low, "{command}");
    }
}

#[test]
fn paths_are_judged_from_the_current_directory() {
    assert_eq!(risk("cd src && touch a"), Medium);
    // `src` may be a symlink: climbing out of it leaves the directory unknown.
    assert_eq!(risk("cd src/.. && touch a"), High);
    assert_eq!(risk("cd .. && touch a"), High);
    assert_eq!(risk("cd && touch a"), High);
    assert_eq!(risk("cd $SOMEWHERE && touch a"), High);
    assert_eq!(risk("touch /work/proj/a"), Medium);
    assert_eq!(risk("touch /work/project2/a"), High);
    assert_eq!(risk("echo x > .git/config"), High);
    // A relative root is made absolute; nothing is read from disk.
    assert_eq!(
        classify_shell("touch a", Path::new("some/relative")).0,
        Medium
    );
}

#[test]
fn the_working_directory_must_resolve_inside_the_project() {
    let r = root();
    assert_eq!(resolve_cwd(r, None).unwrap(), r);
    assert_eq!(resolve_cwd(r, Some("")).unwrap(), r);
    assert_eq!(resolve_cwd(r, Some("src")).unwrap(), r.join("src"));
    assert_eq!(
        resolve_cwd(r, Some("./src/../src/x")).unwrap(),
        r.join("src/x")
    );
    assert_eq!(
        resolve_cwd(r, Some("/work/proj/src")).unwrap(),
        r.join("src")
    );
    for bad in [
        "..",
        "src/../..",
        "/tmp",
        "~",
        "~/x",
        "$HOME",
        "${PWD}/x",
        "`pwd`",
        "/work",
    ] {
        assert!(resolve_cwd(r, Some(bad)).is_err(), "{bad}");
    }
    let run = |cwd: &str, trust| {
        let args = json!({ "command": "ls", "cwd": cwd });
        call("run_shell", args, trust, &PolicySettings::default())
    };
    assert_eq!(kind(&run("src", Trust::Scoped).decision), "allow");
    for cwd in ["..", "/tmp", "~", "$HOME/x"] {
        let a = run(cwd, Trust::Scoped);
        assert_eq!(kind(&a.decision), "deny", "{cwd}: {a:?}");
        assert!(
            a.decision
                .reason()
                .contains("working directory must be inside the project"),
            "{cwd}: {a:?}"
        );
        let a = run(cwd, Trust::Trusted);
        assert!(a.risk >= Medium, "{cwd}: {a:?}");
        assert_eq!(kind(&a.decision), "ask", "{cwd}: {a:?}");
    }
    // No allow pattern runs a command in a refused directory.
    let lax = settings(&[], &[], &["*"]);
    let args = json!({ "command": "ls", "cwd": "/tmp" });
    let a = call("run_shell", args, Trust::Trusted, &lax);
    assert_eq!(kind(&a.decision), "ask");
}
