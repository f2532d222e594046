//! A hidden file the host replaces while a command runs — an editor's atomic save: the new
//! content written beside it, then renamed over it — loses its cover: the kernel detaches a
//! mount whose mount point is removed in another namespace. Landlock must then still refuse
//! it, so no Landlock grant may lie above a hidden path: not the home directory's nor
//! `/tmp`'s, though they are the container's own tmpfs, when the project or a toolchain is
//! mounted below them.

use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use tandem_core::process::confine;
use tandem_core::sandbox::{Confinement, Settings};

use super::super::{Scratch, git, kernel_namespaces, unproven};

/// Set in the child test process whose `HOME` is a fake home holding the project.
const CHILD: &str = "TANDEM_REPLACED_CHILD";

/// What the command read of `secrets` after the host replaced each (the first content was
/// `FIRST`, the new one is `REPLACED`), and, for each, how many mounts were still on its
/// path then: 0 says the cover was gone and Landlock alone stood.
fn replaced_while_running(c: &Confinement, cwd: &Path, secrets: &[PathBuf]) -> String {
    let go = c.temp.join("go");
    let names: Vec<String> = secrets
        .iter()
        .map(|s| format!("'{}'", s.display()))
        .collect();
    let names = names.join(" ");
    // `ready` once the container is built and the covers are on; then it waits for the
    // host's word, and reads.
    let script = format!(
        "echo ready; i=0; while [ ! -e '{go}' ] && [ $i -lt 400 ]; do sleep 0.05; i=$((i+1)); \
         done; for f in {names}; do echo \"mounts on $f: $(grep -c \" $f \" /proc/self/mountinfo)\"; \
         cat \"$f\" 2>&1; echo; done; echo done",
        go = go.display()
    );
    let mut command = Command::new("/bin/sh");
    command
        .args(["-c", &script])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let (_, prepared) = confine(&mut command, Some(c), cwd, &[]).unwrap();
    let mut child = command.spawn().unwrap();
    drop(prepared);
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let mut line = String::new();
    stdout.read_line(&mut line).unwrap();
    assert_eq!(line, "ready\n", "the command did not start");
    for secret in secrets {
        let new = secret.with_extension("tmp");
        std::fs::write(&new, "REPLACED").unwrap();
        std::fs::rename(&new, secret).unwrap();
    }
    std::fs::write(&go, "").unwrap();
    let mut out = String::new();
    stdout.read_to_string(&mut out).unwrap();
    let status = child.wait().unwrap();
    assert!(
        status.success() && out.contains("done"),
        "{status:?}: {out}"
    );
    out
}

/// Both walls' verdict: nothing of the new secret read, and each cover gone (so the test
/// proves what Landlock alone does).
fn assert_refused_by_landlock(out: &str, secrets: &[PathBuf]) {
    assert!(
        !out.contains("REPLACED"),
        "a replaced secret was read:\n{out}"
    );
    assert!(!out.contains("FIRST"), "a secret was read:\n{out}");
    for secret in secrets {
        let gone = format!("mounts on {}: 0", secret.display());
        assert!(
            out.contains(&gone),
            "the cover stayed; Landlock unproven:\n{out}"
        );
    }
    assert!(out.contains("Permission denied"), "{out}");
}

/// The test suite's usual place: the project below `/tmp`, which the container makes its own.
#[test]
fn a_secret_replaced_while_a_command_runs_stays_hidden_below_tmp() {
    if !kernel_namespaces() {
        return unproven("the container (no user namespaces here)");
    }
    let s = Scratch::new();
    let env = s.root().canonicalize().unwrap().join(".env");
    std::fs::write(&env, "API_KEY=FIRST").unwrap();
    let mut c = s.confinement(false);
    c.hidden.push(env.clone());
    let out = replaced_while_running(&c, s.root(), std::slice::from_ref(&env));
    println!("{out}");
    assert_refused_by_landlock(&out, &[env]);
}

/// Where people keep projects: below the home directory (`~/code/app`), with a toolchain's
/// credential beside it (`~/.gem/credentials`, in a toolchain mounted whole). Run in a test
/// process of its own whose `HOME` is the fake home, so the container makes it its own.
#[test]
fn a_secret_replaced_while_a_command_runs_stays_hidden_below_home() {
    if !kernel_namespaces() {
        return unproven("the container (no user namespaces here)");
    }
    let home = tempfile::tempdir().unwrap();
    let output = Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "sandbox::world::replaced::replaced_below_home_in_a_process_of_its_own",
            "--nocapture",
        ])
        .env("HOME", home.path())
        .env(CHILD, "1")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    println!("{stdout}");
    assert!(
        output.status.success() && stdout.contains("replaced: checked"),
        "{stdout}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
}

#[test]
fn replaced_below_home_in_a_process_of_its_own() {
    if std::env::var_os(CHILD).is_none() {
        return; // Only meaningful inside the process started above.
    }
    let home = PathBuf::from(std::env::var_os("HOME").unwrap())
        .canonicalize()
        .unwrap();
    let project = home.join("code/app");
    std::fs::create_dir_all(project.join("src")).unwrap();
    std::fs::write(project.join("src/main.rs"), "fn main() {}\n").unwrap();
    git(&project, &["init", "-q"]);
    git(&project, &["add", "-A"]);
    git(&project, &["commit", "-qm", "app"]);
    let env = project.join(".env");
    let gem = home.join(".gem/credentials");
    std::fs::create_dir_all(home.join(".gem/specs")).unwrap();
    std::fs::write(home.join(".gem/specs/index"), "GEM-OK").unwrap();
    std::fs::write(&env, "API_KEY=FIRST").unwrap();
    std::fs::write(&gem, ":rubygems_api_key: FIRST").unwrap();
    let temp = tempfile::tempdir().unwrap();
    // As the agent's shell has it: the settings' confinement, the project's `.env` hidden
    // because no commit holds it.
    let c = Settings::default().confinement(&project, temp.path(), false);
    assert!(c.hidden.contains(&env) && c.hidden.contains(&gem), "{c:?}");
    let secrets = [env, gem];
    let out = replaced_while_running(&c, &project, &secrets);
    println!("{out}");
    assert_refused_by_landlock(&out, &secrets);
    // The home directory's root is no longer granted, but what tools write there still
    // lands in the container's own tmpfs.
    let mut command = Command::new("/bin/sh");
    command
        .args(["-c", "mkdir -p \"$HOME/.cache/tool\" && echo x > \"$HOME/.cache/tool/f\" && cat \"$HOME/.cache/tool/f\""])
        .stdin(Stdio::null());
    let (_, prepared) = confine(&mut command, Some(&c), &project, &[]).unwrap();
    let output = command.output().unwrap();
    drop(prepared);
    assert!(output.status.success(), "{output:?}");
    assert!(
        !home.join(".cache/tool").exists(),
        "written to the host's home"
    );
    println!("replaced: checked");
}

/// The agent's workspace, an overlay at the project's path, is granted whole (Landlock could
/// only split it by the host's tree, not the workspace's): its covers hide a secret, and they
/// hold, mounted on the overlay's own entries, which a replacement below does not remove.
#[test]
fn a_secret_replaced_below_the_workspace_stays_covered() {
    use tandem_core::sandbox::{ProjectView, overlay};
    if !kernel_namespaces() || overlay::supported().is_err() {
        return unproven("the workspace's overlay");
    }
    let s = Scratch::new();
    let root = s.root().canonicalize().unwrap();
    let env = root.join(".env");
    std::fs::write(&env, "API_KEY=FIRST").unwrap();
    let layer = tempfile::tempdir().unwrap();
    let (upper, work) = (layer.path().join("upper"), layer.path().join("work"));
    std::fs::create_dir(&upper).unwrap();
    std::fs::create_dir(&work).unwrap();
    let view = overlay::mount(&root, &upper, &work).unwrap();
    let mut c = s.confinement(false);
    c.hidden.push(env.clone());
    c.view = Some(ProjectView::Overlay {
        namespaces: view.namespaces(),
        root: view.view().to_path_buf(),
    });
    let out = replaced_while_running(&c, &root, std::slice::from_ref(&env));
    println!("{out}");
    assert!(!out.contains("REPLACED") && !out.contains("FIRST"), "{out}");
    let kept = format!("mounts on {}: 1", env.display());
    assert!(out.contains(&kept), "the cover went: {out}");
}
