//! The container built for a user who is not root, as real users are: the test runs itself
//! again as `nobody` (through `setpriv`, when the tests run as root) and reads what the child
//! half reports.

use tandem_core::process::{Sandbox, ShellRequest};

use crate::{request, run};

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
    crate::sandbox::git(project.path(), &["init", "-q"]);
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
            "sandbox::world::not_root::not_root_inner_half",
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
    let stdout = crate::common::succeeded(&output);
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
        crate::sandbox::unproven("the container for a user who is not root");
        return;
    }
    assert!(
        stdout.contains("CONTAINER true"),
        "no container for a user who is not root: {stdout}"
    );
}
