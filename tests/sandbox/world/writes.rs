//! What a command may change: the project, and nothing outside it, nor the project's git
//! metadata, the host's device nodes, or what a link as its working directory points to.

use std::path::Path;

use tandem_core::process::{Sandbox, ShellRequest};

use crate::sandbox::{Scratch, abi_or_report, contained};
use crate::{request, run};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_project_is_writable_and_nothing_outside_it_is() {
    let project = tempfile::tempdir().unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let outside = tempfile::tempdir().unwrap();
    std::fs::write(outside.path().join("existing.txt"), "keep").unwrap();
    let scoped = |command: String| ShellRequest {
        sandbox: Sandbox::project(project.path(), tmp.path()),
        ..request(&command, project.path())
    };
    let inside = run(scoped(
        "echo x > inside.txt && mkdir sub && mv inside.txt sub/ && echo quiet > /dev/null \
         && touch \"$TMPDIR/scratch\" && printf %s \"$TMPDIR\""
            .into(),
    ))
    .await;
    assert_eq!(inside.exit_code, Some(0), "{inside:?}");
    assert!(project.path().join("sub/inside.txt").is_file());
    assert!(tmp.path().join("scratch").is_file());
    if abi_or_report(&inside).is_none() && contained(&inside).is_none() {
        return;
    }
    let existing = outside.path().join("existing.txt");
    let escape = format!("tandem-escape-{}", std::process::id());
    let tampering = format!(
        "echo x > '{o}/outside.txt'; rm -f '{e}'; mv '{e}' moved.txt; mkdir '{o}/newdir'; \
         touch /tmp/../tmp/{escape} /var/tmp/{escape} /dev/shm/{escape} $HOME/{escape}; \
         touch /usr/{escape} /etc/{escape} /{escape}",
        o = outside.path().display(),
        e = existing.display(),
    );
    run(scoped(tampering)).await;
    assert_eq!(std::fs::read_to_string(&existing).unwrap(), "keep");
    assert!(!outside.path().join("outside.txt").exists());
    assert!(!project.path().join("moved.txt").exists());
    assert!(!outside.path().join("newdir").exists());
    let home = std::env::var("HOME").unwrap_or_default();
    for dir in ["/tmp", "/var/tmp", "/dev/shm", &home, "/usr", "/etc", "/"] {
        assert!(
            !Path::new(dir).join(&escape).exists(),
            "wrote {dir}/{escape}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn git_metadata_is_read_only_while_the_project_is_writable() {
    let s = Scratch::new();
    let work = s
        .run(
            "git status --short && touch new.txt && echo more >> README.md && mkdir -p d/e \
             && echo x > d/e/f && rm notes.txt && mv data.json moved.json",
            false,
        )
        .await;
    if abi_or_report(&work).is_none() && contained(&work).is_none() {
        return;
    }
    assert_eq!(work.exit_code, Some(0), "{work:?}");
    let root = s.root();
    assert!(root.join("new.txt").is_file() && root.join("d/e/f").is_file());
    assert!(!root.join("notes.txt").exists() && root.join("moved.json").is_file());
    let before = s.snapshot();
    for attack in [
        "echo 'echo pwned' > .git/hooks/pre-commit",
        "git config core.fsmonitor 'echo pwned'",
        "echo '[core] fsmonitor = x' >> .git/config",
        "rm -rf .git",
        "mv .git elsewhere",
        "chmod -R 777 .git",
        "ln -s /tmp .git/hooks/link",
        "cd .git && echo x > hooks/post-checkout",
        "umount .git; echo x > .git/hooks/pre-commit",
    ] {
        let outcome = s.run(attack, false).await;
        assert_ne!(outcome.exit_code, Some(0), "{attack}: {outcome:?}");
    }
    assert_eq!(
        s.snapshot(),
        before,
        "something below .git or outside changed"
    );
    let fsmonitor = std::process::Command::new("git")
        .args(["config", "--get", "core.fsmonitor"])
        .current_dir(root)
        .output()
        .unwrap();
    assert!(fsmonitor.stdout.is_empty(), "{fsmonitor:?}");
    assert!(!root.join(".git/hooks/pre-commit").exists());
    assert!(!root.join("elsewhere").exists());
}

/// The working directory is entered inside the container, after the mounts: a directory
/// that is a link to `.git` or out of the project is refused, and one swapped for a link
/// afterwards still lands inside the container's own world.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_linked_working_directory_cannot_reach_past_the_mounts() {
    let s = Scratch::new();
    let root = s.root();
    std::os::unix::fs::symlink(".git", root.join("gitlink")).unwrap();
    std::os::unix::fs::symlink("/run", root.join("runlink")).unwrap();
    std::os::unix::fs::symlink(s.outside.path(), root.join("outlink")).unwrap();
    for link in ["gitlink", "runlink", "outlink", ".git", ".git/hooks"] {
        let outcome = tandem_core::process::run_shell(
            ShellRequest {
                sandbox: Sandbox::Confined(s.confinement(false)),
                ..request(
                    "echo x > hooks/pre-commit; echo x > planted",
                    &root.join(link),
                )
            },
            Default::default(),
        )
        .await;
        assert!(outcome.is_err(), "{link} was entered: {outcome:?}");
    }
    // The links resolve inside the container's world only: `/run` does not exist there.
    let before = s.snapshot();
    let outcome = s
        .run("cd runlink && ls; cd ../gitlink && echo x > hooks/pre-commit; cd ../outlink && echo x > planted", false)
        .await;
    if contained(&outcome).is_none() {
        return;
    }
    assert_ne!(outcome.exit_code, Some(0));
    assert_eq!(s.snapshot(), before, "{outcome:?}");
    assert!(!s.outside.path().join("planted").exists());
}

/// The device files are the host's own nodes: a command running as their owner (Tandem run
/// as root) must not change them (`chmod 000 /dev/null` would break the host), while reading
/// and writing them works.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_hosts_device_nodes_cannot_be_changed() {
    use std::os::unix::fs::{MetadataExt, PermissionsExt};

    let s = Scratch::new();
    let full = Path::new("/dev/full");
    let before = std::fs::metadata(full).unwrap();
    let outcome = s
        .run(
            "echo x > /dev/null && head -c 3 /dev/zero | wc -c; \
             chmod 600 /dev/full; touch -d 2001-01-01 /dev/full; ls -l /dev/full",
            false,
        )
        .await;
    let after = std::fs::metadata(full).unwrap();
    // Put back whatever happened.
    let _ = std::fs::set_permissions(full, before.permissions());
    let _ = std::process::Command::new("touch")
        .arg("-d")
        .arg(format!("@{}", before.mtime()))
        .arg(full)
        .status();
    if contained(&outcome).is_none() {
        return;
    }
    assert!(outcome.stdout.starts_with('3'), "{outcome:?}");
    assert_eq!(
        after.permissions().mode(),
        before.permissions().mode(),
        "the host's /dev/full was changed from inside: {outcome:?}"
    );
    assert_eq!(after.mtime(), before.mtime(), "{outcome:?}");
}
