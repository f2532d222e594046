//! What a command leaves behind: a `.git` or a link planted in the project or its scratch
//! copy must not bring the host into the next call, nor make Tandem write outside the
//! project when it updates the copy or applies an approved proposal outside any sandbox.

use tandem_core::process::{Sandbox, ShellRequest};

use crate::sandbox::{DECOY, Scratch, both, contained, uncontained};
use crate::{request, run};

/// A project with no `.git` yet (a check's scratch copy of the project is one, every time,
/// and a check runs the proposal's code): a command plants a `.git` naming a directory
/// outside, as a `gitdir:` file or as a link; the next call must not show that directory.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_planted_git_does_not_bring_the_host_into_the_next_call() {
    for plant in ["file", "link"] {
        let s = Scratch::new();
        std::fs::remove_dir_all(s.root().join(".git")).unwrap();
        let outside = s.outside.path().canonicalize().unwrap();
        let secret = outside.join("secret.txt");
        let plant_command = match plant {
            // Git's own form for a linked worktree.
            "file" => format!("printf 'gitdir: %s\\n' '{}' > .git", outside.display()),
            // Resolved by the host to the parent of `outside`, by the container's root
            // (before the switch) to the same path inside it.
            _ => {
                let up = s.root().canonicalize().unwrap().components().count() - 1;
                let parent = outside.parent().unwrap().strip_prefix("/").unwrap();
                format!("ln -s '{}{}' .git", "../".repeat(up), parent.display())
            }
        };
        let planted = s
            .run(&format!("{plant_command} && echo planted"), false)
            .await;
        if contained(&planted).is_none() {
            return;
        }
        assert!(planted.stdout.contains("planted"), "{plant}: {planted:?}");
        // Control: outside the container the secret is there to be read.
        let control = uncontained(&s, &format!("cat '{}'", secret.display()));
        assert!(String::from_utf8_lossy(&control.stdout).contains(DECOY));
        let home = s.home().display();
        let next = tandem_core::process::run_shell(
            ShellRequest {
                sandbox: Sandbox::Confined(s.confinement(false)),
                ..request(
                    &format!("HOME='{home}'; cat '{}'; ls /tmp", secret.display()),
                    s.root(),
                )
            },
            Default::default(),
        )
        .await;
        // Refusing to run at all is safe too.
        if let Ok(next) = next {
            assert!(
                !both(&next).contains(DECOY),
                "{plant}: the planted .git showed a directory outside: {next:?}"
            );
        }
    }
}

/// A check runs the proposal's code in the project's scratch copy, which Tandem brings up to
/// date outside any sandbox before the next check: a link the code leaves there (a folder
/// of the copy replaced by a link to a directory outside) must not make Tandem write or
/// delete through it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_check_cannot_make_tandem_write_outside_through_the_scratch_copy() {
    use tandem_core::checks::Scratch as Copy;
    use tandem_core::edits::apply::PathWrite;

    let s = Scratch::new();
    let root = s.root().canonicalize().unwrap();
    let base = tempfile::tempdir().unwrap();
    let outside = s.outside.path().canonicalize().unwrap();
    std::fs::write(outside.join("main.rs"), "keep").unwrap();
    let copy = Copy::for_project(&root, Some(base.path())).unwrap();
    copy.prepare(&root, &[]).unwrap();
    assert!(copy.tree.join("src/main.rs").is_file());
    let before = s.snapshot();
    // The check, confined as checks are: the copy writable, the project readable.
    let mut confinement = s.confinement(false);
    confinement.project = copy.tree.clone();
    confinement.readable.push(root.clone());
    let planted = run(ShellRequest {
        sandbox: Sandbox::Confined(confinement),
        ..request(
            &format!(
                "rm -rf src && ln -s '{}' src && echo planted",
                outside.display()
            ),
            &copy.tree,
        )
    })
    .await;
    if contained(&planted).is_none() {
        return;
    }
    assert!(planted.stdout.contains("planted"), "{planted:?}");
    // The next check: the project's files again, and a proposal writing one new and one
    // existing file below `src`; then a check of a project that deleted one.
    let write = |rel: &str| PathWrite {
        rel: rel.into(),
        abs: root.join(rel),
        expected: None,
        new: Some((b"PWNED".to_vec(), 0o644)),
    };
    let _ = copy.prepare(&root, &[write("src/new.rs"), write("src/main.rs")]);
    std::fs::remove_file(root.join("src/lib.rs")).unwrap();
    std::fs::write(outside.join("lib.rs"), "keep").unwrap();
    let _ = copy.prepare(&root, &[]);
    let mut names: Vec<String> = std::fs::read_dir(&outside)
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert_eq!(
        std::fs::read_to_string(outside.join("main.rs")).unwrap_or_default(),
        "keep",
        "Tandem wrote outside through the copy: {names:?}"
    );
    assert_eq!(
        names,
        ["lib.rs", "main.rs", "secret.txt"],
        "Tandem wrote or deleted outside through the copy"
    );
    assert_eq!(s.snapshot().len(), before.len() + 1);
}

/// Between a proposal and the person's approval, a confined command (auto-approved) replaces
/// a folder of the project with a link to a directory outside (`~/.config/autostart`, say);
/// applying the approved proposal, outside any sandbox, must not write through the link:
/// the person approved a file of the project.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_approved_proposal_is_not_written_through_a_link_a_command_planted() {
    use tandem_core::edits::apply::{PathWrite, apply_writes};

    let s = Scratch::new();
    let root = s.root().canonicalize().unwrap();
    let outside = s.outside.path().canonicalize().unwrap();
    std::fs::create_dir_all(root.join("docs")).unwrap();
    // The proposal, made while `docs` was a folder of the project.
    let write = PathWrite {
        rel: "docs/dev.desktop".into(),
        abs: root.join("docs/dev.desktop"),
        expected: None,
        new: Some((b"[Desktop Entry]\nExec=sh -c pwned\n".to_vec(), 0o644)),
    };
    let planted = s
        .run(
            &format!(
                "rm -rf docs && ln -s '{}' docs && echo planted",
                outside.display()
            ),
            false,
        )
        .await;
    if contained(&planted).is_none() {
        return;
    }
    assert!(planted.stdout.contains("planted"), "{planted:?}");
    let applied = apply_writes(&tandem_core::folder::RealFs, &[write]);
    assert!(
        !outside.join("dev.desktop").exists(),
        "the approved proposal was written outside the project: {applied:?}"
    );
}
