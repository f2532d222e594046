//! The host may take away what a container shows between the moment its layout is planned
//! and the moment its child builds it (a toolchain uninstalled, a cache cleared, `/nix`
//! removed while the command starts): the command still runs, without it, and a secret taken
//! away is not made again by its cover.

use std::process::{Command, Stdio};

use tandem_core::process::confine;

use super::super::{Scratch, kernel_namespaces};

/// Prepares `script` in the container of `s` with `shown` readable and `hidden` hidden,
/// runs `between` once it is planned, then starts it: its status and output.
fn planned_then_started(
    s: &Scratch,
    shown: &std::path::Path,
    hidden: &std::path::Path,
    script: &str,
    between: impl FnOnce(),
) -> Result<std::process::Output, std::io::Error> {
    let mut confinement = s.confinement(false);
    confinement.readable.push(shown.to_path_buf());
    confinement.hidden.push(hidden.to_path_buf());
    let mut command = Command::new("/bin/sh");
    command
        .args(["-c", script])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let (_, prepared) = confine(&mut command, Some(&confinement), s.root(), &[]).unwrap();
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
    let (bin, secret) = (tool.path().join("bin"), tool.path().join("secret"));
    std::fs::create_dir_all(&bin).unwrap();
    std::fs::write(bin.join("tool"), "TOOL").unwrap();
    std::fs::create_dir_all(&secret).unwrap();
    std::fs::write(secret.join("key"), "KEY").unwrap();
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
        !out.contains("key"),
        "the hidden directory was shown: {out}"
    );

    // The secret taken away: its cover cannot be made inside the read-only toolchain, and
    // must not be; the command runs.
    let gone = || std::fs::remove_dir_all(&secret).unwrap();
    let output = planned_then_started(&s, tool.path(), &secret, &show, gone)
        .unwrap_or_else(|e| panic!("the command did not start: {e}"));
    assert!(output.status.success(), "{output:?}");
    assert!(String::from_utf8_lossy(&output.stdout).contains("TOOL"));
    assert!(!secret.exists(), "the cover made what it covers again");

    // The whole toolchain taken away: not shown, and the command runs.
    let gone = || std::fs::remove_dir_all(tool.path()).unwrap();
    let output = planned_then_started(&s, tool.path(), &secret, &show, gone)
        .unwrap_or_else(|e| panic!("the command did not start: {e}"));
    let out = String::from_utf8_lossy(&output.stdout).into_owned();
    assert!(output.status.success() && out.contains("ran"), "{output:?}");
    assert!(!out.contains("TOOL"), "{out}");
}
