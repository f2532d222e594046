//! The root built for the command: what is not mounted cannot be reached by any path.

use std::path::Path;

use tandem_core::process::{Sandbox, ShellRequest};
use tandem_core::sandbox::Confinement;

use super::super::{request, run};
use super::{DECOY, Scratch, abi_or_report, both, contained, uncontained};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn secrets_of_the_home_and_other_projects_do_not_exist_inside() {
    let s = Scratch::new();
    let allowed = s
        .run(
            "cat README.md && cat \"$HOME/.cargo/env\" && \
             cat \"$HOME/.cargo/registry/index/crate\" && head -c 4 /usr/bin/env | od -c | head -1",
            false,
        )
        .await;
    let Some(_) = contained(&allowed) else {
        return;
    };
    assert_eq!(allowed.exit_code, Some(0), "{allowed:?}");
    assert!(allowed.stdout.contains("hello") && allowed.stdout.contains("TOOLCHAIN-OK"));
    assert!(allowed.stdout.contains("REGISTRY-OK"), "{allowed:?}");
    let secrets = [
        ".ssh/id_rsa",
        ".aws/credentials",
        ".config/app/token",
        ".netrc",
        ".gitconfig",
        ".bash_history",
        ".cargo/credentials.toml",
        ".cargo/config.toml",
        ".cache/huggingface/token",
        ".cache/tandem/scratch/0123/tree/src/main.rs",
        ".local/share/tandem/secrets.json",
        ".local/share/other/readme",
    ];
    let outside = format!("{}/secret.txt", s.outside.path().display());
    for secret in secrets
        .iter()
        .map(|p| format!("$HOME/{p}"))
        .chain([outside])
    {
        // Control: outside the container the file is there to be read.
        let control = uncontained(&s, &format!("cat \"{secret}\""));
        assert!(
            String::from_utf8_lossy(&control.stdout).contains(DECOY),
            "{secret}"
        );
        let outcome = s
            .run(&format!("cat \"{secret}\"; test -e \"{secret}\""), false)
            .await;
        assert_ne!(outcome.exit_code, Some(0), "{secret} exists: {outcome:?}");
        assert!(
            !both(&outcome).contains(DECOY),
            "{secret} leaked: {outcome:?}"
        );
    }
    // Nothing of the home directory shows, not even the names of what is hidden.
    let listing = s
        .run(
            "ls -a \"$HOME\" \"$HOME/.config\" \"$HOME/.cache\" /tmp /run /var/run 2>&1; ls -a /",
            false,
        )
        .await;
    for name in [
        ".ssh",
        ".aws",
        "app",
        "huggingface",
        "tandem",
        ".netrc",
        "run\n",
    ] {
        assert!(!listing.stdout.contains(name), "{name} shows: {listing:?}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn etc_holds_no_credentials_of_the_host() {
    let s = Scratch::new();
    // Files of the host's /etc that can carry credentials.
    let files = [
        "/etc/environment",
        "/etc/shadow",
        "/etc/npmrc",
        "/etc/pip.conf",
        "/etc/gitconfig",
    ];
    let probe = files
        .iter()
        .map(|f| format!("test -e {f} && echo PRESENT:{f};"))
        .collect::<String>();
    let outcome = s
        .run(
            &format!("{probe} cat /etc/passwd; getent hosts localhost; id -un"),
            false,
        )
        .await;
    let Some(_) = contained(&outcome) else {
        return;
    };
    assert!(!outcome.stdout.contains("PRESENT"), "{outcome:?}");
    // What programs need is there: users, names.
    assert!(outcome.stdout.contains(":x:"), "{outcome:?}");
    assert!(outcome.stdout.contains(" localhost"), "{outcome:?}");
    let real_passwd = std::fs::read_to_string("/etc/passwd").unwrap();
    assert!(outcome.stdout.lines().count() < real_passwd.lines().count() + 4);
}

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

/// The project opened as the home directory: its credentials are covered, not shown.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hidden_paths_inside_the_project_are_covered() {
    let s = Scratch::new();
    let home = s.home();
    git(home);
    let tmp = tempfile::tempdir().unwrap();
    let mut confinement = Confinement::new(home, tmp.path());
    confinement.hidden = tandem_core::sandbox::default_hidden(Some(home));
    let outcome = run(ShellRequest {
        sandbox: Sandbox::Confined(confinement),
        ..request(
            "cat .ssh/id_rsa .aws/credentials .netrc .config/app/token; ls -a .ssh; echo x > .netrc",
            home,
        )
    })
    .await;
    if contained(&outcome).is_none() {
        return;
    }
    assert!(!both(&outcome).contains(DECOY), "{outcome:?}");
    assert!(
        std::fs::read_to_string(home.join(".netrc"))
            .unwrap()
            .contains(DECOY)
    );
}

fn git(dir: &Path) {
    super::git(dir, &["init", "-q"]);
}

/// Set only in the child run by `the_container_is_built_for_a_user_who_is_not_root`.
const AS_USER: &str = "TANDEM_NOT_ROOT_CHILD";

/// The half that runs as a user who is not root (the person, on a real machine), with the
/// process made non-dumpable as Tandem's `main` makes itself.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn not_root_inner_half() {
    if std::env::var_os(AS_USER).is_none() {
        return; // Only meaningful inside the child started below.
    }
    tandem_core::sandbox::harden_this_process();
    let project = tempfile::tempdir().unwrap();
    let tmp = tempfile::tempdir().unwrap();
    super::git(project.path(), &["init", "-q"]);
    let outcome = run(ShellRequest {
        sandbox: Sandbox::project(project.path(), tmp.path()),
        ..request("id -u; echo ran", project.path())
    })
    .await;
    println!("OUTCOME {outcome:?}");
    let container =
        matches!(&outcome.sandbox, tandem_core::process::SandboxStatus::Enforced(p) if p.container);
    println!("CONTAINER {container}");
}

/// Real users are not root: the container must be built for them too, not only for the
/// root of CI. Run as `nobody` through `setpriv` when the tests run as root.
#[test]
fn the_container_is_built_for_a_user_who_is_not_root() {
    // SAFETY: getuid(2) takes no arguments.
    #[allow(unsafe_code)]
    let uid = unsafe { libc::getuid() };
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path().join("home");
    std::fs::create_dir(&home).unwrap();
    let exe = dir.path().join("agent_shell");
    std::fs::copy(std::env::current_exe().unwrap(), &exe).unwrap();
    let mut command = match uid {
        0 => {
            use std::os::unix::fs::PermissionsExt;
            let open = std::fs::Permissions::from_mode(0o755);
            std::fs::set_permissions(dir.path(), open.clone()).unwrap();
            std::fs::set_permissions(&home, open).unwrap();
            let chown = std::process::Command::new("chown")
                .args(["65534:65534"])
                .arg(&home)
                .status()
                .unwrap();
            assert!(chown.success());
            let mut c = std::process::Command::new("setpriv");
            c.args(["--reuid=65534", "--regid=65534", "--clear-groups"])
                .arg(&exe);
            c
        }
        _ => std::process::Command::new(&exe),
    };
    let output = command
        .args([
            "--exact",
            "sandbox::world::not_root_inner_half",
            "--nocapture",
        ])
        .env_clear()
        .env("PATH", "/usr/local/bin:/usr/bin:/bin")
        .env("HOME", &home)
        .env("TMPDIR", "/tmp")
        .env(AS_USER, "1")
        .current_dir(dir.path())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(
        stdout.contains("OUTCOME"),
        "the inner half did not run: {stdout}"
    );
    // Asked of the kernel as that user, through util-linux.
    let namespaces = std::process::Command::new("setpriv")
        .args(["--reuid=65534", "--regid=65534", "--clear-groups"])
        .args(["unshare", "-Urmnpf", "--mount-proc", "true"])
        .current_dir(dir.path())
        .status()
        .is_ok_and(|s| s.success());
    if uid == 0 && !namespaces {
        super::unproven("the container for a user who is not root");
        return;
    }
    assert!(
        stdout.contains("CONTAINER true"),
        "no container for a user who is not root: {stdout}"
    );
}

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

/// Toolchain directories mounted whole keep credentials their own tools write there:
/// RubyGems' API key (`~/.gem/credentials`, written by `gem signin`) and uv's credential
/// store (`~/.local/share/uv/credentials/credentials.toml`, written by `uv auth login`).
/// The toolchains stay readable; the credentials must not be.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn credentials_tools_keep_in_their_toolchain_directories_are_hidden() {
    let s = Scratch::new();
    let home = s.home();
    let files = [
        (
            ".gem/credentials",
            format!(":rubygems_api_key: {DECOY}-gem"),
        ),
        (
            ".local/share/uv/credentials/credentials.toml",
            format!("[[credential]]\npassword = \"{DECOY}-uv\"\n"),
        ),
        (".gem/specs/index", "GEM-OK".into()),
        (".local/share/uv/python/index", "UV-OK".into()),
    ];
    for (name, text) in &files {
        let path = home.join(name);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }
    let outcome = s
        .run(
            "cat \"$HOME/.gem/specs/index\" \"$HOME/.local/share/uv/python/index\"; \
             cat \"$HOME/.gem/credentials\" \"$HOME/.local/share/uv/credentials/credentials.toml\"",
            false,
        )
        .await;
    if contained(&outcome).is_none() {
        return;
    }
    // The toolchains are there.
    assert!(
        outcome.stdout.contains("GEM-OK") && outcome.stdout.contains("UV-OK"),
        "{outcome:?}"
    );
    assert!(!both(&outcome).contains(DECOY), "{outcome:?}");
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
