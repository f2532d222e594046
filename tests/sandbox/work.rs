//! The container must not stop ordinary work: builds, tests, installs.

use std::time::Duration;

use tandem_core::process::{Sandbox, ShellRequest};
use tandem_core::sandbox::Confinement;

use super::super::{kernel_landlock_abi, request, run};
use super::{DECOY, Listeners, Scratch, abi_or_report, unproven};

/// A build and the tests of a crate with no dependencies, offline, with the real toolchain
/// (read from the real home directory), in the container.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_offline_cargo_build_and_test_work_inside() {
    let s = Scratch::new();
    let confinement = Confinement::new(s.root(), s.tmp.path());
    let outcome = run(ShellRequest {
        sandbox: Sandbox::Confined(confinement),
        timeout: Duration::from_secs(300),
        ..request(
            "cargo build --offline && cargo test --offline 2>&1 | tail -3",
            s.root(),
        )
    })
    .await;
    if abi_or_report(&outcome).is_none() {
        return;
    }
    assert_eq!(outcome.exit_code, Some(0), "{outcome:?}");
    assert!(
        s.root().join("target/debug/scratch").is_file(),
        "{outcome:?}"
    );
    assert!(outcome.stdout.contains("test result: ok"), "{outcome:?}");
}

/// Dependency installs run in the same container, with the network (the person approved
/// the install) but without reads outside, writes outside or `.git`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dependency_installs_run_confined_with_the_network() {
    use tandem_core::edits::deps::{install_confinement, run_install};

    let s = Scratch::new();
    let listeners = Listeners::new();
    let (tcp, _) = listeners.ports();
    let confinement = install_confinement(s.confinement(true));
    let script = format!(
        "cat '{home}/.ssh/id_rsa' '{outside}/secret.txt'; echo x > '{outside}/new'; \
         echo x > .git/hooks/pre-commit; echo ok > installed.txt; \
         bash -c 'echo hi > /dev/tcp/127.0.0.1/{tcp}'",
        home = s.home().display(),
        outside = s.outside.path().display(),
    );
    let argv = ["sh".to_string(), "-c".to_string(), script];
    let before = s.snapshot();
    let report = tokio::task::spawn_blocking({
        let root = s.root().to_path_buf();
        move || run_install(&root, &argv, Duration::from_secs(30), Some(&confinement))
    })
    .await
    .unwrap()
    .unwrap();
    if kernel_landlock_abi() <= 0 && !super::kernel_namespaces() {
        assert!(
            report.sandbox.starts_with("Warning: no sandbox"),
            "{report:?}"
        );
        unproven("the install sandbox");
        return;
    }
    assert!(!report.output.contains(DECOY), "{report:?}");
    assert_eq!(s.snapshot(), before, "{report:?}");
    assert!(s.root().join("installed.txt").is_file(), "{report:?}");
    assert!(report.sandbox.contains("network allowed"), "{report:?}");
    let arrived = listeners.arrived_until(Duration::from_secs(5), (true, false));
    assert!(arrived.0, "{report:?}");
}
