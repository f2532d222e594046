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

/// Runs the check on `plan`: written into a throwaway copy-on-write view of `project` (an
/// overlay: nothing is copied), or, where overlays cannot be mounted, into the scratch copy
/// of `project`; never into the project.
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
    if crate::sandbox::overlay::supported().is_ok() {
        let (project, writes) = (project.to_path_buf(), writes.clone());
        let opened = tokio::task::spawn_blocking(move || view_with(&project, &writes))
            .await
            .map_err(|e| CheckError::Task(e.to_string()))?;
        // An overlay that could not be mounted here (an odd path): the scratch copy serves.
        if let Ok((workspace, dir)) = opened {
            let run = check_workspace(&workspace, settings, round, cancel).await;
            let layer = workspace.layer().clone();
            drop(workspace);
            let _ = layer.discard();
            drop(dir);
            return run;
        }
    }
    check_in_scratch(project, writes, settings, round, cancel).await
}

/// Runs the check on `writes` in the scratch copy of `project` (where no overlay can be
/// mounted), in the agent's container with the project readable: the copy's links to its
/// dependency folders reach into it.
pub async fn check_in_scratch(
    project: &Path,
    writes: Vec<crate::edits::apply::PathWrite>,
    settings: &CheckSettings,
    round: usize,
    cancel: CancellationToken,
) -> Result<CheckRun, CheckError> {
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
    let temp = temp_dir()?;
    // The copy's secrets as the project's history has them (the copy has no `.git`).
    let mut confinement =
        (settings.sandbox).confinement_of(&scratch.tree, &project, temp.path(), false);
    // The linked dependency folders live in the project: readable, not writable; its
    // secrets stay hidden there too.
    confinement.readable.push(project.clone());
    (confinement.hidden).extend(crate::folder::loose_secrets(&project));
    let request = ShellRequest {
        timeout: settings.timeout,
        output_cap: OUTPUT_CAP,
        sandbox: Sandbox::Confined(confinement),
        ..ShellRequest::new(settings.command.clone(), scratch.tree.clone())
    };
    let outcome = process::run_shell(request, cancel).await?;
    Ok(check_run(
        settings,
        round,
        outcome,
        &[&scratch.tree, &project],
    ))
}

/// A throwaway overlay of `project` holding `writes`; its directory goes with the value.
fn view_with(
    project: &Path,
    writes: &[crate::edits::apply::PathWrite],
) -> Result<(crate::layer::Workspace, tempfile::TempDir), CheckError> {
    let failed = |e: String| CheckError::Plan(format!("the check's view: {e}"));
    let dir = tempfile::Builder::new()
        .prefix("tandem-check-")
        .tempdir()
        .map_err(|e| failed(e.to_string()))?;
    let layer = crate::layer::Layer::at(dir.path().join("layer"));
    let workspace =
        crate::layer::Workspace::open(layer, project, false).map_err(|e| failed(e.to_string()))?;
    if workspace.kind() != crate::layer::Kind::Overlay {
        return Err(failed("no overlay".into()));
    }
    for write in writes {
        let content = (write.new.as_ref()).map(|(bytes, mode)| (&bytes[..], *mode));
        (workspace.put(&write.rel, content)).map_err(|e| failed(e.to_string()))?;
    }
    Ok((workspace, dir))
}

/// Runs the check in `workspace` (the chat's, holding the agent's edits and what its
/// commands changed): at the project's path, in the agent's container.
pub async fn check_workspace(
    workspace: &crate::layer::Workspace,
    settings: &CheckSettings,
    round: usize,
    cancel: CancellationToken,
) -> Result<CheckRun, CheckError> {
    let outcome = run_in_workspace(workspace, settings, OUTPUT_CAP, cancel).await?;
    let project = workspace.project();
    Ok(check_run(settings, round, outcome, &[project]))
}

/// Runs `settings.command` in `workspace` as the check does (at the project's path, in the
/// agent's container, its temp dir private), keeping `output_cap` characters per stream.
/// What it changes stays in the workspace.
pub async fn run_in_workspace(
    workspace: &crate::layer::Workspace,
    settings: &CheckSettings,
    output_cap: usize,
    cancel: CancellationToken,
) -> Result<process::ShellOutcome, CheckError> {
    let temp = temp_dir()?;
    let project = workspace.project().to_path_buf();
    let mut confinement = settings.sandbox.confinement(&project, temp.path(), false);
    confinement.view = Some(workspace.project_view());
    let request = ShellRequest {
        timeout: settings.timeout,
        output_cap,
        sandbox: Sandbox::Confined(confinement),
        env_names: settings.sandbox.env_names.clone(),
        ..ShellRequest::new(settings.command.clone(), project)
    };
    Ok(process::run_shell(request, cancel).await?)
}

fn temp_dir() -> Result<tempfile::TempDir, CheckError> {
    tempfile::Builder::new()
        .prefix("tandem-check-")
        .tempdir()
        .map_err(|source| {
            CheckError::Scratch(ScratchError::Io {
                path: std::env::temp_dir(),
                source,
            })
        })
}

/// A check's outcome as a run: output, problems (paths read against `roots`), verdict.
fn check_run(
    settings: &CheckSettings,
    round: usize,
    outcome: process::ShellOutcome,
    roots: &[&Path],
) -> CheckRun {
    let output = match (outcome.stdout.trim_end(), outcome.stderr.trim_end()) {
        ("", err) => err.to_string(),
        (out, "") => out.to_string(),
        (out, err) => format!("{out}\n{err}"),
    };
    let problems = problems::parse(&output, roots);
    CheckRun {
        round,
        command: settings.command.clone(),
        passed: outcome.exit_code == Some(0) && !outcome.timed_out,
        exit_code: outcome.exit_code,
        timed_out: outcome.timed_out,
        output,
        problems,
        duration_ms: u64::try_from(outcome.duration.as_millis()).unwrap_or(u64::MAX),
    }
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
        "The project's check `{}` {how} on your proposal (the user's files are unchanged).\n",
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
