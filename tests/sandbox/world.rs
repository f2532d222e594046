//! The root built for the command: what is not mounted cannot be reached by any path. Here,
//! what it must not read: the home's and the host's credentials, and those inside the project
//! or a toolchain's directory. What it may change is in `writes`, what it leaves behind for
//! Tandem or the next call in `planted`, and the container built for a user who is not root
//! in `not_root`.

mod not_root;
mod planted;
mod replaced;
mod vanished;
mod writes;

use std::path::Path;

use tandem_core::process::{Sandbox, ShellRequest};
use tandem_core::sandbox::Confinement;

use super::super::{request, run};
use super::{DECOY, Scratch, both, contained, uncontained};

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

/// The project's own secrets that no commit holds (a `.env`, a local key, credentials beside
/// the code, a secrets folder, a committed template filled in, one behind an innocent link)
/// are not in the world: no glob, recursive
/// search or link reads them, and they cannot be written. A key the project commits (a
/// test's) stays, with the rest of the project.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_projects_untracked_secrets_are_not_in_the_world() {
    let s = Scratch::new();
    let root = s.root();
    let files = [
        (".env", format!("TOKEN={DECOY}-env")),
        ("deploy/prod.env", format!("{DECOY}-prod")),
        ("keys/server.key", format!("{DECOY}-key")),
        (
            "config/credentials.json",
            format!("{{\"k\": \"{DECOY}-json\"}}"),
        ),
        ("secrets/db.txt", format!("{DECOY}-folder")),
        ("app/.env", format!("TOKEN={DECOY}-filled")),
        ("tests/fixture.key", "COMMITTED-TEST-KEY".to_string()),
    ];
    for (path, text) in &files {
        let path = root.join(path);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }
    std::fs::write(root.join(".gitignore"), ".env\nkeys/\n").unwrap();
    // `app/.env` is committed as a template, then filled in.
    std::fs::write(root.join("app/.env"), "TOKEN=").unwrap();
    super::git(
        root,
        &["add", "-f", ".gitignore", "tests/fixture.key", "app/.env"],
    );
    super::git(root, &["commit", "-qm", "fixture"]);
    // Staged, never committed: its object is in `.git`, readable without naming it.
    super::git(root, &["add", "-f", "keys/server.key"]);
    std::fs::write(root.join("app/.env"), format!("TOKEN={DECOY}-filled")).unwrap();
    std::os::unix::fs::symlink(".env", root.join("settings.txt")).unwrap();
    // The key again under an innocent name: the same file (a hard link).
    std::fs::hard_link(root.join("keys/server.key"), root.join("src/keep.txt")).unwrap();
    let attacks = "cat .env app/.env secrets/*; cat deploy/* keys/* config/*; head -n 5 * .*; \
         grep -r DECOY . ; find . -type f -exec cat {} + ; cat settings.txt src/keep.txt; \
         git show :keys/server.key; git cat-file --batch-all-objects --batch; \
         echo overwritten > .env; echo overwritten > keys/server.key";
    // Control: outside the container every attack finds the secrets.
    let control = uncontained(&s, "grep -r DECOY . ; cat settings.txt src/keep.txt");
    let control = String::from_utf8_lossy(&control.stdout);
    for (path, text) in &files[..6] {
        assert!(control.contains(text.as_str()), "{path}: {control}");
    }
    let control = uncontained(&s, "git cat-file --batch-all-objects --batch");
    let control = String::from_utf8_lossy(&control.stdout);
    assert!(control.contains(&files[2].1), "{control}");
    let tmp = tempfile::tempdir().unwrap();
    let outcome = run(ShellRequest {
        sandbox: Sandbox::Confined(Confinement::new(root, tmp.path())),
        ..request(&format!("{attacks}; cat tests/fixture.key README.md"), root)
    })
    .await;
    if contained(&outcome).is_none() {
        return;
    }
    let seen = both(&outcome);
    assert!(!seen.contains(DECOY), "{seen}");
    assert!(
        seen.contains("COMMITTED-TEST-KEY") && seen.contains("hello"),
        "{seen}"
    );
    for (path, text) in &files {
        assert_eq!(std::fs::read_to_string(root.join(path)).unwrap(), *text);
    }
}

/// A check's scratch copy (made where no overlay can be mounted) has no `.git`: what it holds
/// is hidden as the project's history has it, so the key the project commits for its tests
/// is there for the check, and a `.env` git does not track is not, in the copy or in the
/// project the copy's links reach.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_checks_scratch_copy_hides_secrets_as_the_projects_history_does() {
    if !super::kernel_namespaces() {
        super::unproven("the container");
        return;
    }
    let s = Scratch::new();
    let root = s.root();
    std::fs::create_dir_all(root.join("tests")).unwrap();
    std::fs::write(root.join("tests/fixture.key"), "COMMITTED-TEST-KEY").unwrap();
    super::git(root, &["add", "-f", "tests/fixture.key"]);
    super::git(root, &["commit", "-qm", "fixture"]);
    std::fs::write(root.join(".env"), format!("TOKEN={DECOY}-env")).unwrap();
    let scratches = tempfile::tempdir().unwrap();
    let settings = tandem_core::checks::CheckSettings {
        command: format!(
            "cat tests/fixture.key; cat .env; grep -r DECOY . ; cat {}/.env",
            root.display()
        ),
        timeout: std::time::Duration::from_secs(60),
        sandbox: tandem_core::sandbox::Settings::default(),
        scratch_base: Some(scratches.path().to_path_buf()),
    };
    let run = tandem_core::checks::check_in_scratch(
        root,
        Vec::new(),
        &settings,
        1,
        tokio_util::sync::CancellationToken::new(),
    )
    .await
    .unwrap();
    assert!(run.output.contains("COMMITTED-TEST-KEY"), "{run:?}");
    assert!(!run.output.contains(DECOY), "{run:?}");
}
