//! `add-dependency`: install packages with the project's own package manager, after the
//! proposal's commit. A failure is reported; the committed files stay.

use std::io::Read;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde::Serialize;

use crate::process::{self, Capture};
use crate::sandbox::{self, Confinement};

/// Output kept from an install (head and tail), so a noisy install cannot fill memory.
const OUTPUT_CAP: usize = 20_000;

pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(300);

/// Files a package manager changes when it adds a dependency; these get committed.
pub const MANIFESTS: &[&str] = &[
    "package.json",
    "package-lock.json",
    "pnpm-lock.yaml",
    "yarn.lock",
    "bun.lock",
    "bun.lockb",
    "Cargo.toml",
    "Cargo.lock",
    "pyproject.toml",
    "uv.lock",
    "requirements.txt",
];

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct InstallReport {
    /// The command line as run.
    pub command: String,
    pub success: bool,
    pub exit_code: Option<i32>,
    pub timed_out: bool,
    /// stdout and stderr, interleaved by stream, capped.
    pub output: String,
    /// What the sandbox enforced (or the warning that there was none).
    pub sandbox: String,
}

#[derive(Debug, thiserror::Error)]
pub enum InstallError {
    #[error(
        "no package manifest (package.json, Cargo.toml, pyproject.toml) in the project, so \
         Tandem cannot tell how to install {0}"
    )]
    NoManifest(String),
    #[error("could not start `{command}`: {source} (is it installed and on PATH?)")]
    Spawn {
        command: String,
        source: std::io::Error,
    },
    #[error(transparent)]
    Sandbox(#[from] sandbox::SandboxError),
}

/// An install's confinement: `base` (the sandbox of agent commands) with the network allowed
/// (the person approved the install) and the package caches writable
/// ([`sandbox::install_caches`]).
pub fn install_confinement(mut base: Confinement) -> Confinement {
    base.writable = sandbox::install_caches(sandbox::home_dir().as_deref());
    base.network = true;
    base
}

/// The command that adds `packages` to the project at `root`, chosen by its lockfile.
pub fn install_command(root: &Path, packages: &[String]) -> Result<Vec<String>, InstallError> {
    let has = |name: &str| root.join(name).is_file();
    let mut argv: Vec<String> = if has("package.json") {
        if has("pnpm-lock.yaml") {
            vec!["pnpm".into(), "add".into()]
        } else if has("yarn.lock") {
            vec!["yarn".into(), "add".into()]
        } else if has("bun.lock") || has("bun.lockb") {
            vec!["bun".into(), "add".into()]
        } else {
            vec!["npm".into(), "install".into()]
        }
    } else if has("Cargo.toml") {
        vec!["cargo".into(), "add".into()]
    } else if has("pyproject.toml") {
        vec!["uv".into(), "add".into()]
    } else if has("requirements.txt") {
        vec![
            "python3".into(),
            "-m".into(),
            "pip".into(),
            "install".into(),
        ]
    } else {
        return Err(InstallError::NoManifest(packages.join(" ")));
    };
    // `--` ends the options: a package name can never be read as a flag.
    if argv[0] != "python3" {
        argv.push("--".into());
    }
    argv.extend(packages.iter().cloned());
    Ok(argv)
}

/// Runs `argv` in `root` with a timeout, capturing its output, in the sandbox `confinement`
/// allows (`None`: unconfined) and with the app's secrets out of its environment. The whole
/// process group is killed on timeout (package managers start children).
pub fn run_install(
    root: &Path,
    argv: &[String],
    timeout: Duration,
    confinement: Option<&Confinement>,
) -> Result<InstallReport, InstallError> {
    let command_line = argv.join(" ");
    let (program, args) = argv.split_first().ok_or_else(|| InstallError::Spawn {
        command: command_line.clone(),
        source: std::io::Error::new(std::io::ErrorKind::InvalidInput, "empty command"),
    })?;
    let mut command = Command::new(program);
    command
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let (status, prepared) = process::confine(&mut command, confinement, root, &[])?;
    let sandbox = match status {
        process::SandboxStatus::NotRequested => "Sandbox: none (not requested).".to_string(),
        process::SandboxStatus::Unavailable { reason } => {
            format!("Warning: no sandbox ({reason}).")
        }
        process::SandboxStatus::Enforced(protections) => protections.summary(),
    };
    let mut child = command.spawn().map_err(|source| InstallError::Spawn {
        command: command_line.clone(),
        source,
    })?;
    drop(prepared);
    let readers = [
        child.stdout.take().and_then(|s| reader(Box::new(s))),
        child.stderr.take().and_then(|s| reader(Box::new(s))),
    ];
    let started = Instant::now();
    let mut timed_out = false;
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break Some(status),
            Ok(None) if started.elapsed() >= timeout => {
                timed_out = true;
                process::kill_group(child.id());
                let _ = child.kill();
                break child.wait().ok();
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(20)),
            Err(_) => break None,
        }
    };
    let mut output = String::new();
    for handle in readers.into_iter().flatten() {
        if let Ok(text) = handle.join() {
            output.push_str(&text);
        }
    }
    Ok(InstallReport {
        command: command_line,
        success: !timed_out && status.is_some_and(|s| s.success()),
        exit_code: status.and_then(|s| s.code()),
        timed_out,
        output,
        sandbox,
    })
}

/// Reads a pipe to its end on a thread, keeping a bounded head and tail of it.
fn reader(mut stream: Box<dyn Read + Send>) -> Option<std::thread::JoinHandle<String>> {
    std::thread::Builder::new()
        .name("tandem-install-output".into())
        .spawn(move || {
            let mut capture = Capture::new(OUTPUT_CAP / 2);
            let mut buf = vec![0u8; 16 * 1024];
            while let Ok(n @ 1..) = stream.read(&mut buf) {
                capture.push(&buf[..n]);
            }
            capture.finish().0
        })
        .ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn picks_the_package_manager_by_lockfile() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        let pkgs = vec!["left-pad".to_string()];
        assert!(matches!(
            install_command(root, &pkgs),
            Err(InstallError::NoManifest(_))
        ));
        std::fs::write(root.join("package.json"), "{}").unwrap();
        assert_eq!(
            install_command(root, &pkgs).unwrap()[..2],
            ["npm", "install"]
        );
        std::fs::write(root.join("yarn.lock"), "").unwrap();
        assert_eq!(install_command(root, &pkgs).unwrap()[..2], ["yarn", "add"]);
        std::fs::write(root.join("pnpm-lock.yaml"), "").unwrap();
        assert_eq!(
            install_command(root, &pkgs).unwrap(),
            ["pnpm", "add", "--", "left-pad"]
        );
    }

    #[test]
    fn a_hung_install_is_killed_with_its_children() {
        let dir = tempfile::tempdir().unwrap();
        let argv: Vec<String> = ["sh", "-c", "echo started; sleep 30 & sleep 30"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        let started = Instant::now();
        let report = run_install(dir.path(), &argv, Duration::from_millis(300), None).unwrap();
        assert!(report.timed_out && !report.success, "{report:?}");
        assert!(report.output.contains("started"));
        // The readers only finish when every writer (the backgrounded sleep too) is gone.
        assert!(started.elapsed() < Duration::from_secs(20));
    }

    #[test]
    fn failure_is_reported_with_output() {
        let dir = tempfile::tempdir().unwrap();
        let argv: Vec<String> = ["sh", "-c", "echo oops >&2; exit 3"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        let report = run_install(dir.path(), &argv, DEFAULT_TIMEOUT, None).unwrap();
        assert_eq!(report.exit_code, Some(3));
        assert!(!report.success);
        assert!(report.output.contains("oops"));
    }

    #[test]
    fn long_output_keeps_head_and_tail() {
        let dir = tempfile::tempdir().unwrap();
        let script = "printf HEAD; i=0; while [ $i -lt 3000 ]; do printf 'éééééééééé'; i=$((i+1)); done; printf TAIL";
        let argv: Vec<String> = ["sh", "-c", script].iter().map(|s| s.to_string()).collect();
        let report = run_install(dir.path(), &argv, DEFAULT_TIMEOUT, None).unwrap();
        assert!(
            report.output.starts_with("HEAD"),
            "{}",
            &report.output[..20]
        );
        assert!(report.output.ends_with("TAIL"));
        assert!(report.output.contains("characters omitted"));
        assert!(report.output.chars().count() < OUTPUT_CAP);
    }
}
