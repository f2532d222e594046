use std::fs;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use super::*;

#[test]
fn tokens_and_answers_read_back_as_written() {
    let token = Token {
        keeper: 0xdead_beef,
        seq: 42,
    };
    assert_eq!(Token::parse(&token.to_text()), Some(token));
    assert_eq!(Token::parse("zz:1"), None);
    assert_eq!(Token::parse("12"), None);
    let bytes = b"changed 1f:7 2\nsrc/a.rs\0docs\0";
    let answer = parse_answer(bytes).unwrap();
    let token = Token {
        keeper: 0x1f,
        seq: 7,
    };
    let paths = vec!["src/a.rs".to_string(), "docs".to_string()];
    assert_eq!(answer, Answer::Changed { token, paths });
    assert_eq!(
        parse_answer(b"everything 1f:7\n"),
        Some(Answer::Everything { token })
    );
    assert_eq!(
        parse_answer(b"changed 1f:7 0\n"),
        Some(Answer::Changed {
            token,
            paths: vec![]
        })
    );
    // An answer cut short (even between two paths), or not one, is no answer: every file
    // is looked at instead.
    assert_eq!(parse_answer(b"changed 1f:7 2\nsrc/a.rs\0"), None);
    assert_eq!(parse_answer(b"changed 1f:7 2\nsrc/a.rs\0docs"), None);
    assert_eq!(parse_answer(b"changed 1f:7 2"), None);
    assert_eq!(parse_answer(b"changed 1f:7\nsrc/a.rs\0"), None);
    assert_eq!(parse_answer(b"maybe 1f:7\n"), None);
}

#[test]
fn a_journal_that_is_off_or_cannot_be_a_socket_is_none() {
    let long = PathBuf::from(format!("/tmp/{}/x.journal", "d".repeat(120)));
    assert!(Journal::new(Path::new("/tmp/p"), long).is_none());
    let socket = PathBuf::from("/tmp/x.journal");
    assert!(Journal::new(Path::new("/tmp/a\nb"), socket.clone()).is_none());
    if std::env::var_os("TANDEM_JOURNAL").is_none() {
        assert_eq!(
            Journal::new(Path::new("/tmp/p"), socket).is_some(),
            cfg!(target_os = "linux")
        );
    }
}

/// Something on the socket that answers a byte at a time, for ever, costs a turn no more
/// than the wait: then every file is looked at.
#[cfg(unix)]
#[test]
fn an_answer_that_never_ends_is_given_up_within_the_wait() {
    use std::io::{BufRead, Write};
    let dir = tempfile::tempdir().unwrap();
    let socket = dir.path().join("slow.journal");
    let listener = std::os::unix::net::UnixListener::bind(&socket).unwrap();
    std::thread::spawn(move || {
        let (stream, _) = listener.accept().unwrap();
        let mut question = String::new();
        std::io::BufReader::new(&stream)
            .read_line(&mut question)
            .unwrap();
        for _ in 0..100 {
            if (&stream).write_all(b"c").is_err() {
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    });
    let journal = Journal {
        root: dir.path().to_path_buf(),
        socket,
    };
    let start = Instant::now();
    assert_eq!(journal.ask(None), None);
    assert!(
        start.elapsed() < ASK_WAIT + Duration::from_millis(200),
        "{:?}",
        start.elapsed()
    );
}

#[cfg(target_os = "linux")]
mod kept {
    use super::*;

    /// A keeper of `root` on a thread of this process, and its journal once it answers.
    fn keep(root: &Path, socket: &Path) -> (Journal, std::thread::JoinHandle<io::Result<()>>) {
        let (r, s) = (root.to_path_buf(), socket.to_path_buf());
        let thread = std::thread::spawn(move || serve(&r, &s));
        let journal = Journal {
            root: root.to_path_buf(),
            socket: socket.to_path_buf(),
        };
        let start = Instant::now();
        while journal.ask(None).is_none() {
            assert!(
                start.elapsed() < Duration::from_secs(10),
                "the keeper never answered"
            );
            std::thread::sleep(Duration::from_millis(10));
        }
        (journal, thread)
    }

    use std::io;

    /// Waits (up to 5 s) for the keeper on `thread` to leave.
    fn left(thread: &std::thread::JoinHandle<io::Result<()>>) {
        let start = Instant::now();
        while !thread.is_finished() {
            assert!(
                start.elapsed() < Duration::from_secs(5),
                "the keeper stayed"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    fn changed(journal: &Journal, since: Token) -> (Token, Vec<String>) {
        match journal.ask(Some(since)) {
            Some(Answer::Changed { token, mut paths }) => {
                paths.sort();
                (token, paths)
            }
            other => panic!("expected the changed paths, got {other:?}"),
        }
    }

    fn project() -> (tempfile::TempDir, PathBuf, PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("p").canonicalize().unwrap_or_else(|_| {
            fs::create_dir_all(dir.path().join("p/src/deep")).unwrap();
            dir.path().join("p").canonicalize().unwrap()
        });
        for (path, text) in [
            ("src/a.rs", "fn a() {}\n"),
            ("src/deep/b.rs", "fn b() {}\n"),
            ("README.md", "hi\n"),
        ] {
            fs::write(root.join(path), text).unwrap();
        }
        for folder in [
            ".git/objects",
            "node_modules/x",
            ".cache",
            ".github/workflows",
        ] {
            fs::create_dir_all(root.join(folder)).unwrap();
        }
        let socket = dir.path().join("j.sock");
        (dir, root, socket)
    }

    #[test]
    fn every_change_finished_before_the_question_is_in_the_answer() {
        let (_dir, root, socket) = project();
        let (journal, _thread) = keep(&root, &socket);
        let Some(Answer::Everything { token }) = journal.ask(None) else {
            panic!("a reader that never asked looks at everything");
        };
        let (token, paths) = changed(&journal, token);
        assert!(paths.is_empty(), "{paths:?}");

        // An edit in place that keeps the size, the inode and the time (what a `stat`
        // cannot tell apart) is seen; so is one deep down, asked at once.
        let a = root.join("src/a.rs");
        let before = fs::metadata(&a).unwrap().modified().unwrap();
        fs::write(&a, "fn z() {}\n").unwrap();
        fs::File::options()
            .write(true)
            .open(&a)
            .unwrap()
            .set_modified(before)
            .unwrap();
        fs::write(root.join("src/deep/b.rs"), "fn b() { a(); }\n").unwrap();
        let (token, paths) = changed(&journal, token);
        assert_eq!(paths, ["src/a.rs", "src/deep/b.rs"]);

        // Asked again: nothing new.
        let (token, paths) = changed(&journal, token);
        assert!(paths.is_empty(), "{paths:?}");

        // Made, removed, renamed; a new folder with files made in it at once stands for them.
        fs::write(root.join("new.rs"), "x").unwrap();
        fs::remove_file(root.join("README.md")).unwrap();
        fs::rename(root.join("src/a.rs"), root.join("src/c.rs")).unwrap();
        fs::create_dir_all(root.join("lib/inner")).unwrap();
        fs::write(root.join("lib/inner/d.rs"), "fn d() {}\n").unwrap();
        let (token, paths) = changed(&journal, token);
        // How much of the new folder is named by its own paths depends on when the keeper
        // watched it; the folder itself is always named.
        let (under_lib, others): (Vec<_>, Vec<_>) =
            paths.iter().partition(|p| p.starts_with("lib/"));
        assert_eq!(
            others,
            ["README.md", "lib", "new.rs", "src/a.rs", "src/c.rs"]
        );
        assert!(
            under_lib
                .iter()
                .all(|p| ["lib/inner", "lib/inner/d.rs"].contains(&p.as_str()))
        );
        // The new folder is watched: a later change in it is seen by its own path.
        fs::write(root.join("lib/inner/d.rs"), "fn e() {}\n").unwrap();
        let (token, paths) = changed(&journal, token);
        assert_eq!(paths, ["lib/inner/d.rs"]);

        // Folders a walk never enters are not watched; the project's configuration is.
        fs::write(root.join(".git/objects/o"), "x").unwrap();
        fs::write(root.join("node_modules/x/i.js"), "x").unwrap();
        fs::write(root.join(".cache/c"), "x").unwrap();
        fs::create_dir_all(root.join("target/debug")).unwrap();
        fs::write(root.join("target/debug/t"), "x").unwrap();
        fs::write(root.join(".github/workflows/ci.yml"), "on: push\n").unwrap();
        let (_, paths) = changed(&journal, token);
        assert_eq!(paths, [".github/workflows/ci.yml"]);
    }

    #[test]
    fn a_write_through_a_link_outside_the_project_is_seen() {
        let (dir, root, socket) = project();
        // One link made before the keeper starts, one after it (into the project).
        let outside = dir.path().join("outside");
        fs::create_dir(&outside).unwrap();
        fs::hard_link(root.join("src/a.rs"), outside.join("a.rs")).unwrap();
        let (journal, _thread) = keep(&root, &socket);
        let token = journal.ask(None).unwrap().token();
        fs::write(outside.join("shared.rs"), "fn s() {}\n").unwrap();
        fs::hard_link(outside.join("shared.rs"), root.join("src/shared.rs")).unwrap();
        let (token, paths) = changed(&journal, token);
        assert_eq!(paths, ["src/shared.rs"]);

        // Written in place through the outside names: no folder of the project sees it.
        for name in ["a.rs", "shared.rs"] {
            let mut file = fs::File::options()
                .append(true)
                .open(outside.join(name))
                .unwrap();
            std::io::Write::write_all(&mut file, b"// more\n").unwrap();
        }
        let (_, paths) = changed(&journal, token);
        assert_eq!(paths, ["src/a.rs", "src/shared.rs"]);
    }

    #[test]
    fn a_second_name_made_while_watching_reports_both() {
        let (_dir, root, socket) = project();
        let (journal, _thread) = keep(&root, &socket);
        let token = journal.ask(None).unwrap().token();
        // `ln src/a.rs src/b2.rs`, then a write through the new name only.
        fs::hard_link(root.join("src/a.rs"), root.join("src/b2.rs")).unwrap();
        fs::write(root.join("src/b2.rs"), "fn b2() {}\n").unwrap();
        let (token, paths) = changed(&journal, token);
        assert_eq!(paths, ["src/a.rs", "src/b2.rs"]);
        // From then on both names are watched: a write through either reports both.
        fs::write(root.join("src/b2.rs"), "fn b3() {}\n").unwrap();
        let (_, paths) = changed(&journal, token);
        assert_eq!(paths, ["src/a.rs", "src/b2.rs"]);
    }

    #[test]
    fn a_root_that_names_another_folder_is_not_answered_for() {
        let (dir, _, socket) = project();
        let parent = dir.path().join("work");
        fs::create_dir_all(parent.join("app/src")).unwrap();
        let root = parent.join("app").canonicalize().unwrap();
        fs::write(root.join("src/a.rs"), "fn a() {}\n").unwrap();
        let (journal, thread) = keep(&root, &socket);
        let token = journal.ask(None).unwrap().token();
        // The project's parent moved away and a copy put at its path: nothing watches the
        // copy (the root's own watch saw no move), so its changes would never be said.
        fs::rename(&parent, dir.path().join("work-old")).unwrap();
        fs::create_dir_all(root.join("src")).unwrap();
        fs::write(root.join("src/a.rs"), "fn changed() {}\n").unwrap();
        assert!(
            !matches!(journal.ask(Some(token)), Some(Answer::Changed { .. })),
            "a keeper answered for a folder it does not watch"
        );
        left(&thread);
    }

    #[test]
    fn a_moved_folder_or_another_keepers_token_means_looking_at_everything() {
        let (_dir, root, socket) = project();
        let (journal, _thread) = keep(&root, &socket);
        let token = journal.ask(None).unwrap().token();
        let foreign = Token {
            keeper: token.keeper ^ 1,
            seq: token.seq,
        };
        assert!(matches!(
            journal.ask(Some(foreign)),
            Some(Answer::Everything { .. })
        ));
        let ahead = Token {
            seq: token.seq + 1000,
            ..token
        };
        assert!(matches!(
            journal.ask(Some(ahead)),
            Some(Answer::Everything { .. })
        ));

        // A folder moved inside the project: its watches would name its old path.
        fs::rename(root.join("src/deep"), root.join("src/moved")).unwrap();
        let Some(Answer::Everything { token: after }) = journal.ask(Some(token)) else {
            panic!("a moved folder drops every token");
        };
        // Its new path is watched, and the new token counts from there.
        fs::write(root.join("src/moved/b.rs"), "fn m() {}\n").unwrap();
        let (_, paths) = changed(&journal, after);
        assert_eq!(paths, ["src/moved/b.rs"]);
    }

    #[test]
    fn a_question_about_another_folder_is_told_to_look_at_everything() {
        let (_dir, root, socket) = project();
        let (journal, _thread) = keep(&root, &socket);
        let token = journal.ask(None).unwrap().token();
        let other = Journal {
            root: root.join("src"),
            socket: socket.clone(),
        };
        assert!(matches!(
            other.ask(Some(token)),
            Some(Answer::Everything { .. })
        ));
    }

    #[test]
    fn events_lost_to_a_full_queue_drop_every_token() {
        let (_dir, root, _socket) = project();
        let mut keeper = crate::folder::journal::keeper::Keeper::new(&root).unwrap();
        let question = |t: Token| format!("since {} {}\n", t.to_text(), root.display());
        let token = keeper.since(b"since - /").token();
        assert!(matches!(
            keeper.since(question(token).as_bytes()),
            Answer::Changed { .. }
        ));
        // More events than the kernel queues, made while the keeper does not read.
        let queued: usize = fs::read_to_string("/proc/sys/fs/inotify/max_queued_events")
            .ok()
            .and_then(|t| t.trim().parse().ok())
            .unwrap_or(16384);
        for i in 0..queued + 64 {
            fs::write(root.join(format!("src/f{i}")), "").unwrap();
        }
        assert!(keeper.read_events().unwrap());
        assert!(matches!(
            keeper.since(question(token).as_bytes()),
            Answer::Everything { .. }
        ));
        // Watching again: changes after the new token are told again.
        let token = keeper.since(b"since - /").token();
        fs::write(root.join("src/deep/b.rs"), "fn q() {}\n").unwrap();
        assert!(keeper.read_events().unwrap());
        let Answer::Changed { paths, .. } = keeper.since(question(token).as_bytes()) else {
            panic!("a token after the overflow is good");
        };
        assert_eq!(paths, ["src/deep/b.rs"]);
    }

    #[test]
    fn the_keeper_leaves_when_its_socket_or_its_project_goes_and_is_alone() {
        let (dir, root, socket) = project();
        let (journal, thread) = keep(&root, &socket);
        // A second keeper for the same socket leaves at once.
        let second = serve(&root, &socket);
        assert!(second.is_ok());
        assert!(
            journal.ask(None).is_some(),
            "the first keeper still answers"
        );
        fs::remove_file(&socket).unwrap();
        left(&thread);
        assert!(thread.join().unwrap().is_ok());

        let socket = dir.path().join("k.sock");
        let (_, thread) = keep(&root, &socket);
        fs::remove_dir_all(&root).unwrap();
        left(&thread);
        assert!(
            !socket.exists(),
            "a keeper that leaves takes its socket away"
        );
    }
}
