//! A Build turn's rounds: the project's check run on its proposal (in the chat's workspace)
//! and recorded, and each next round started with what failed (see [`super::repair`]).

use std::path::PathBuf;
use std::time::Duration;

use super::repair;
use super::turn::{Turn, TurnOutcome};
use super::{ChatEventKind, ChatService};
use crate::edits::EditPlan;
use crate::store::keys::{CHECK_TIMEOUT_SECS, SCRATCH_DIR};
use crate::store::{NewStep, StepKind};

impl ChatService {
    /// Runs the project's check on the turn's proposal in a scratch copy, recording it as a
    /// step. `None` when there is nothing to check (no check command, no proposal, a conflict)
    /// or the turn was cancelled. A check that cannot run at all is a failed run whose output
    /// says why (it is not the model's to fix).
    pub(super) async fn check(
        &self,
        turn: &Turn,
        plan: &EditPlan,
        round: usize,
    ) -> Option<crate::checks::CheckRun> {
        if !plan.is_proposal() || plan.conflicts().next().is_some() {
            return None;
        }
        let settings = self.check_settings(turn)?;
        let result = crate::checks::check_plan(
            &turn.project.path,
            plan,
            &settings,
            round,
            turn.cancel.child_token(),
        )
        .await;
        self.record_check(turn, &settings, round, result)
    }

    /// Runs the project's check in the chat's workspace (the agent's edits and what its
    /// commands changed are there), recording it as a step.
    pub(super) async fn check_workspace(
        &self,
        turn: &Turn,
        workspace: &crate::layer::Workspace,
        round: usize,
    ) -> Option<crate::checks::CheckRun> {
        let settings = self.check_settings(turn)?;
        let result =
            crate::checks::check_workspace(workspace, &settings, round, turn.cancel.child_token())
                .await;
        self.record_check(turn, &settings, round, result)
    }

    /// How the project's check runs; `None` when it has none.
    pub(super) fn check_settings(&self, turn: &Turn) -> Option<crate::checks::CheckSettings> {
        let command = turn.project.settings.check_command.clone()?;
        if command.trim().is_empty() {
            return None;
        }
        let store = self.engine.store();
        Some(crate::checks::CheckSettings {
            command,
            timeout: store
                .setting::<u64>(CHECK_TIMEOUT_SECS)
                .ok()
                .flatten()
                .map_or(crate::checks::DEFAULT_CHECK_TIMEOUT, Duration::from_secs),
            sandbox: self.sandbox_settings(),
            scratch_base: store.setting::<PathBuf>(SCRATCH_DIR).ok().flatten(),
        })
    }

    /// Records a check's run as a step (one that could not run at all as a failed run whose
    /// output says why); `None` when the turn was cancelled.
    pub(super) fn record_check(
        &self,
        turn: &Turn,
        settings: &crate::checks::CheckSettings,
        round: usize,
        result: Result<crate::checks::CheckRun, crate::checks::CheckError>,
    ) -> Option<crate::checks::CheckRun> {
        if turn.cancel.is_cancelled() {
            return None;
        }
        let store = self.engine.store();
        let run = result.unwrap_or_else(|e| crate::checks::CheckRun {
            round,
            command: settings.command.clone(),
            passed: false,
            exit_code: None,
            timed_out: false,
            output: e.to_string(),
            problems: Vec::new(),
            duration_ms: 0,
        });
        let arguments = serde_json::json!({
            "round": run.round,
            "command": run.command,
            "passed": run.passed,
            "timed_out": run.timed_out,
            "problems": run.problems,
        });
        let step = NewStep {
            arguments: Some(&arguments),
            result: Some(&run.output),
            exit_code: run.exit_code.map(i64::from),
            is_error: !run.passed,
            duration_ms: i64::try_from(run.duration_ms).ok(),
            ..NewStep::default()
        };
        if let Ok(step) = store.add_agent_step(turn.message_id, StepKind::Check, &step) {
            self.event(turn, ChatEventKind::Step { step });
        }
        Some(run)
    }

    /// Keeps the failed reply as a step and starts the reply over for repair round `round`.
    /// `false` when that could not be saved (the failed reply then stays the proposal).
    pub(super) fn start_round(
        &self,
        turn: &Turn,
        round: usize,
        failures: &[repair::Failure],
        outcome: &mut TurnOutcome,
    ) -> bool {
        let store = self.engine.store();
        let arguments = serde_json::json!({ "round": round, "errors": failures });
        let step = NewStep {
            arguments: Some(&arguments),
            result: Some(&outcome.content),
            is_error: true,
            ..NewStep::default()
        };
        let recorded = store
            .add_agent_step(turn.message_id, StepKind::Repair, &step)
            .and_then(|step| {
                store.restart_reply(turn.message_id)?;
                Ok(step)
            });
        match recorded {
            Ok(step) => {
                self.event(turn, ChatEventKind::Step { step });
                self.event(turn, ChatEventKind::Retrying { round });
                outcome.content.clear();
                outcome.plan = None;
                outcome.error = None;
                true
            }
            Err(e) => {
                outcome.approve_error = Some(format!("the failed edits could not be retried: {e}"));
                false
            }
        }
    }
}
