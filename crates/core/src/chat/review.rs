//! A complete reply's proposal: planned for review, its edit record kept, applied when
//! auto-approve says so.

use std::sync::Arc;

use super::ChatService;
use super::turn::{Turn, TurnOutcome};

impl ChatService {
    /// Plans a complete reply (recording its proposal for review).
    pub(super) async fn review(&self, turn: &Turn, outcome: &mut TurnOutcome) {
        let engine = Arc::clone(&self.engine);
        let project = turn.project.clone();
        let id = turn.message_id;
        let result = tokio::task::spawn_blocking(move || {
            let message = engine.store().message(id)?;
            engine.record_plan(&project, &message)
        })
        .await;
        match result {
            Ok(Ok(plan)) => {
                if plan.is_proposal() {
                    self.give_way(turn);
                }
                outcome.plan = Some(plan);
            }
            Ok(Err(e)) => outcome.approve_error = Some(e.to_string()),
            Err(e) => outcome.approve_error = Some(e.to_string()),
        }
    }

    /// Adds this reply's search-replace record to its model's profile (how many tags it
    /// wrote and how many failed), which decides whether it is asked for whole files.
    pub(super) fn record_edit_outcome(&self, turn: &Turn, outcome: &TurnOutcome) {
        let Some(plan) = &outcome.plan else { return };
        let blocks = plan
            .operations
            .iter()
            .filter(|op| op.op == crate::edits::OpKind::SearchReplace);
        let (written, failed) = blocks.fold((0u32, 0u32), |(n, f), op| {
            (
                n + 1,
                f + u32::from(op.status == crate::edits::OpStatus::Error),
            )
        });
        if written > 0 {
            let _ = self.engine.store().record_edit_blocks(
                turn.choice.record.id,
                &turn.choice.model,
                written,
                failed,
            );
        }
    }

    /// Auto-approve: applies the reviewed proposal at once.
    pub(super) async fn approve(&self, turn: &Turn, outcome: &mut TurnOutcome) {
        if !outcome.plan.as_ref().is_some_and(|p| p.is_proposal()) {
            return;
        }
        let engine = Arc::clone(&self.engine);
        let id = turn.message_id;
        match tokio::task::spawn_blocking(move || engine.approve(id, None)).await {
            Ok(Ok(approved)) => outcome.approval = Some(approved),
            Ok(Err(e)) => outcome.approve_error = Some(e.to_string()),
            Err(e) => outcome.approve_error = Some(e.to_string()),
        }
    }
}
