//! `add-dependency`: install packages with the project's own package manager, after the
//! proposal's commit. A failure is reported; the committed files stay.

use std::io::Read;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde::Serialize;

use crate::agent::exec::{kill_process_group, scrubbed_env};
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

/// Package caches below the home directory an install may write (besides the project and its
/// temp dir): the package manager downloads into them.
const INSTALL_CACHES: &[&str] = &[
    ".npm",
    ".cache",
    ".cargo/registry",
    ".cargo/git",
    ".cargo/.package-cache",
    ".cargo/.global-cache",
    ".local/share/pnpm",
    ".pnpm-store",
    ".bun/install",
    ".yarn",
];

/// An install's confinement: `base` (the sandbox of agent commands) with the network allowed
/// (the person approved the install) and the package caches writable.
pub fn install_confinement(mut base: Confinement) -> Confinement {
    let home = sandbox::home_dir();
    base.writable = home
        .iter()
        .flat_map(|h| INSTALL_CACHES.iter().map(move |d| h.join(d)))
        .collect();
    if let Some(cargo) = std::env::var_os("CARGO_HOME").map(std::path::PathBuf::from) {
        base.writable
            .extend(["registry", "git"].map(|d| cargo.join(d)));
    }
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
    let vars = std::env::vars_os()
        .filter_map(|(name, value)| Some((name.into_string().ok()?, value.into_string().ok()?)));
    command
        .args(args)
        .current_dir(root)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .env_clear()
        .envs(scrubbed_env(vars));
    std::os::unix::process::CommandExt::process_group(&mut command, 0);
    let prepared = match confinement {
        Some(c) => {
            command.envs(c.env());
            let prepared = sandbox::prepare(c)?;
            prepared.install(&mut command);
            Some(prepared)
        }
        None => None,
    };
    let sandbox = match &prepared {
        None => "Sandbox: none (not requested).".to_string(),
        Some(p) => match p.unavailable() {
            Some(reason) => format!("Warning: no sandbox ({reason})."),
            None => p.protections().summary(),
        },
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
                kill_process_group(child.id());
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
        output: cap(&output),
        sandbox,
    })
}

fn reader(mut stream: Box<dyn Read + Send>) -> Option<std::thread::JoinHandle<String>> {
    std::thread::Builder::new()
        .name("tandem-install-output".into())
        .spawn(move || {
            let mut bytes = Vec::new();
            let _ = stream.read_to_end(&mut bytes);
            String::from_utf8_lossy(&bytes).into_owned()
        })
        .ok()
}

/// Keeps the head and the tail of long output, marking the cut.
pub fn cap(text: &str) -> String {
    if text.len() <= OUTPUT_CAP {
        return text.to_string();
    }
    let half = OUTPUT_CAP / 2;
    let mut head_end = half;
    while !text.is_char_boundary(head_end) {
        head_end -= 1;
    }
    let mut tail_start = text.len() - half;
    while !text.is_char_boundary(tail_start) {
        tail_start += 1;
    }
    format!(
        "{}\n[… {} bytes cut …]\n{}",
        &text[..head_end],
        tail_start - head_end,
        &text[tail_start..]
    )
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
        let text = format!("HEAD{}TAIL", "é".repeat(30_000));
        let capped = cap(&text);
        assert!(capped.starts_with("HEAD") && capped.ends_with("TAIL"));
        assert!(capped.len() < 21_000);
    }
}
