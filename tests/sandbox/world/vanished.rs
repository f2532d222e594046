//! The host may take away what a container shows between the moment its layout is planned
//! and the moment its child builds it (a toolchain uninstalled, a cache cleared, `/nix`
//! removed while the command starts): the command still runs, without it, and a secret taken
//! away is not made again by its cover.

use std::path::Path;
use std::process::{Command, Stdio};

use tandem_core::process::confine;

use super::super::{Scratch, kernel_namespaces};

/// `script` prepared in the container of `s` with `shown` readable and `hidden` hidden, not
/// started: the plan, to be kept until it has been.
fn planned(
    s: &Scratch,
    shown: &[&Path],
    hidden: &Path,
    script: &str,
) -> (Command, Option<tandem_core::sandbox::Prepared>) {
    let mut confinement = s.confinement(false);
    confinement
        .readable
        .extend(shown.iter().map(|p| p.to_path_buf()));
    confinement.hidden.push(hidden.to_path_buf());
    let mut command = Command::new("/bin/sh");
    command
        .args(["-c", script])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let (_, prepared) = confine(&mut command, Some(&confinement), s.root(), &[]).unwrap();
    (command, prepared)
}

/// [`planned`], then `between`, then started: its status and output.
fn planned_then_started(
    s: &Scratch,
    shown: &Path,
    hidden: &Path,
    script: &str,
    between: impl FnOnce(),
) -> Result<std::process::Output, std::io::Error> {
    let (mut command, prepared) = planned(s, &[shown], hidden, script);
    between();
    let output = command.output();
    drop(prepared);
    output
}

#[test]
fn a_directory_taken_away_after_the_plan_is_not_shown_and_the_command_runs() {
    if !kernel_namespaces() {
        return super::super::unproven("the container (no user namespaces here)");
    }
    let s = Scratch::new();
    let tool = tempfile::tempdir().unwrap();
    let bin = tool.path().join("bin");
    let (private, secret) = (
        tool.path().join("private"),
        tool.path().join("private/keys"),
    );
    std::fs::create_dir_all(&bin).unwrap();
    std::fs::write(bin.join("tool"), "TOOL").unwrap();
    std::fs::create_dir_all(&secret).unwrap();
    std::fs::write(secret.join("id_token"), "KEY").unwrap();
    let show = format!(
        "cat '{}/tool' 2>&1; ls '{}' 2>&1; echo ran",
        bin.display(),
        secret.display()
    );

    // Both there: the tool is shown, the secret's directory is covered (empty).
    let both = planned_then_started(&s, tool.path(), &secret, &show, || {}).unwrap();
    let out = String::from_utf8_lossy(&both.stdout).into_owned();
    assert!(both.status.success() && out.contains("TOOL"), "{both:?}");
    assert!(
        !out.contains("id_token"),
        "the hidden directory was shown: {out}"
    );

    // The secret taken away, its folder still there: the host may bring it back while the
    // command runs, and its cover cannot be made in the read-only toolchain. The command
    // does not start.
    let gone = || std::fs::remove_dir_all(&secret).unwrap();
    let refused = planned_then_started(&s, tool.path(), &secret, &show, gone);
    assert!(
        refused.is_err(),
        "started with its cover missing: {refused:?}"
    );
    assert!(!secret.exists(), "the cover made what it covers again");

    // Its folder taken away too: the mount shows the folder as it was, which nothing can
    // fill again. The command runs.
    std::fs::create_dir_all(&secret).unwrap();
    let gone = || std::fs::remove_dir_all(&private).unwrap();
    let output = planned_then_started(&s, tool.path(), &secret, &show, gone)
        .unwrap_or_else(|e| panic!("the command did not start: {e}"));
    assert!(output.status.success(), "{output:?}");
    assert!(String::from_utf8_lossy(&output.stdout).contains("TOOL"));

    // The whole toolchain taken away: not shown, and the command runs.
    std::fs::create_dir_all(&secret).unwrap();
    let gone = || std::fs::remove_dir_all(tool.path()).unwrap();
    let output = planned_then_started(&s, tool.path(), &secret, &show, gone)
        .unwrap_or_else(|e| panic!("the command did not start: {e}"));
    let out = String::from_utf8_lossy(&output.stdout).into_owned();
    assert!(output.status.success() && out.contains("ran"), "{output:?}");
    assert!(!out.contains("TOOL"), "{out}");
}

/// A hidden file of the project taken away after the plan and written again while the
/// command runs (a tool that regenerates `.env`) stays covered.
#[test]
fn a_secret_taken_away_after_the_plan_and_written_again_stays_hidden() {
    if !kernel_namespaces() {
        return super::super::unproven("the container (no user namespaces here)");
    }
    let s = Scratch::new();
    let env = s.root().join(".env");
    std::fs::write(&env, "API_KEY=FIRST-SECRET").unwrap();
    let read_later = "sleep 1; cat .env 2>&1; echo ran";
    let (mut command, prepared) = planned(&s, &[], &env, read_later);
    std::fs::remove_file(&env).unwrap();
    let child = command.spawn().unwrap();
    drop(prepared);
    std::thread::sleep(std::time::Duration::from_millis(300));
    std::fs::write(&env, "API_KEY=WRITTEN-AGAIN").unwrap();
    let output = child.wait_with_output().unwrap();
    let out = String::from_utf8_lossy(&output.stdout).into_owned();
    assert!(out.contains("ran"), "{output:?}");
    assert!(
        !out.contains("SECRET") && !out.contains("AGAIN"),
        "read: {out}"
    );
}
