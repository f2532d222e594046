//! The project's own check (`cargo check`, `tsc --noEmit`, …) run on a proposal before the
//! person sees it: the proposal is written into a scratch copy of the project (see
//! [`scratch`]), never the working tree, and the check runs there inside the agent sandbox
//! with a timeout. Its output is read into [`Problem`]s where the format is known.

pub mod problems;
pub mod scratch;
mod suggest;

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Serialize;
use tokio_util::sync::CancellationToken;

pub use problems::{Problem, Severity};
pub use scratch::{Scratch, ScratchError};
pub use suggest::{suggest_check_command, suggest_for_files};

use crate::edits::EditPlan;
use crate::process::{self, Sandbox, ShellRequest};

/// A check may run this long by default (a cold `cargo check` of a real project takes a while).
pub const DEFAULT_CHECK_TIMEOUT: Duration = Duration::from_secs(300);
/// Output kept for the person and the model (head and tail).
const OUTPUT_CAP: usize = 12_000;

/// One run of the check on one proposal.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CheckRun {
    /// 1 for the first reply, 2 for the first repaired one, …
    pub round: usize,
    pub command: String,
    pub passed: bool,
    pub exit_code: Option<i32>,
    pub timed_out: bool,
    /// stdout then stderr, each capped.
    pub output: String,
    pub problems: Vec<Problem>,
    pub duration_ms: u64,
}

#[derive(Debug, thiserror::Error)]
pub enum CheckError {
    #[error(transparent)]
    Scratch(#[from] ScratchError),
    #[error("the proposal cannot be checked: {0}")]
    Plan(String),
    #[error("the check could not run: {0}")]
    Run(#[from] process::ExecError),
    #[error("the check's task failed: {0}")]
    Task(String),
}

/// Where and how checks run.
#[derive(Debug, Clone)]
pub struct CheckSettings {
    pub command: String,
    pub timeout: Duration,
    /// The agent sandbox's settings (what commands may also read, must never read).
    pub sandbox: crate::sandbox::Settings,
    /// Where scratch copies live (`None`: the system temp directory).
    pub scratch_base: Option<PathBuf>,
}

/// Applies `plan` to the scratch copy of `project` and runs the check there.
pub async fn check_plan(
    project: &Path,
    plan: &EditPlan,
    settings: &CheckSettings,
    round: usize,
    cancel: CancellationToken,
) -> Result<CheckRun, CheckError> {
    let writes = plan
        .writes(None)
        .map_err(|e| CheckError::Plan(e.to_string()))?;
    let project = project.to_path_buf();
    let base = settings.scratch_base.clone();
    let scratch = tokio::task::spawn_blocking(move || {
        let scratch = Scratch::for_project(&project, base.as_deref())?;
        scratch.prepare(&project, &writes)?;
        Ok::<_, ScratchError>((scratch, project))
    })
    .await
    .map_err(|e| CheckError::Task(e.to_string()))??;
    let (scratch, project) = scratch;
    let temp = tempfile::Builder::new()
        .prefix("tandem-check-")
        .tempdir()
        .map_err(|source| {
            CheckError::Scratch(ScratchError::Io {
                path: std::env::temp_dir(),
                source,
            })
        })?;
    let mut confinement = settings
        .sandbox
        .confinement(&scratch.tree, temp.path(), false);
    // The linked dependency folders live in the project: readable, not writable.
    confinement.readable.push(project.clone());
    let request = ShellRequest {
        timeout: settings.timeout,
        output_cap: OUTPUT_CAP,
        sandbox: Sandbox::Confined(confinement),
        ..ShellRequest::new(settings.command.clone(), scratch.tree.clone())
    };
    let outcome = process::run_shell(request, cancel).await?;
    let output = match (outcome.stdout.trim_end(), outcome.stderr.trim_end()) {
        ("", err) => err.to_string(),
        (out, "") => out.to_string(),
        (out, err) => format!("{out}\n{err}"),
    };
    let problems = problems::parse(&output, &[&scratch.tree, &project]);
    Ok(CheckRun {
        round,
        command: settings.command.clone(),
        passed: outcome.exit_code == Some(0) && !outcome.timed_out,
        exit_code: outcome.exit_code,
        timed_out: outcome.timed_out,
        output,
        problems,
        duration_ms: u64::try_from(outcome.duration.as_millis()).unwrap_or(u64::MAX),
    })
}

/// What the model is told when the check fails on its proposal.
pub fn feedback(run: &CheckRun) -> String {
    let mut text = report(run);
    text.push_str("\n\nSend your complete reply again, with every edit, fixing these.");
    text
}

/// What a failed check says to the model: how it failed, the problems parsed from its
/// output, and the output's end. The caller adds what the model should do about it.
pub fn report(run: &CheckRun) -> String {
    let how = match (run.timed_out, run.exit_code) {
        (true, _) => "timed out".to_string(),
        (false, Some(code)) => format!("failed with exit code {code}"),
        (false, None) => "was killed".to_string(),
    };
    let mut text = format!(
        "The project's check `{}` {how} on your proposal (nothing has been changed yet).\n",
        run.command
    );
    if !run.problems.is_empty() {
        text.push_str("\nProblems:\n");
        for p in run.problems.iter().take(30) {
            let col = p.column.map(|c| format!(":{c}")).unwrap_or_default();
            text.push_str(&format!("- {}:{}{col}: {}\n", p.path, p.line, p.message));
        }
    }
    let tail: Vec<&str> = run.output.lines().rev().take(60).collect();
    text.push_str("\nOutput (the end):\n```\n");
    for line in tail.iter().rev() {
        text.push_str(line);
        text.push('\n');
    }
    text.push_str("```");
    text
}
