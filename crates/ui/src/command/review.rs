//! The review panel's commands (`panels::review`): checking files and hunks of the pending
//! proposal, moving the hunk cursor, and approving or rejecting it.

use crate::backend::{Backend, Event};
use crate::model::review::Review;
use crate::model::state::AppState;

impl AppState {
    /// Checks or unchecks file `file` of the proposal, with all its hunks.
    pub(super) fn toggle_file(&mut self, file: usize) {
        if let Some(choice) = self.review_mut().and_then(|r| r.files.get_mut(file)) {
            choice.checked = !choice.checked;
            let checked = choice.checked;
            choice.hunks.iter_mut().for_each(|h| *h = checked);
        }
    }

    /// Checks or unchecks one hunk; its file is checked while any of its hunks is.
    pub(super) fn toggle_hunk(&mut self, file: usize, hunk: usize) {
        if let Some(choice) = self.review_mut().and_then(|r| r.files.get_mut(file)) {
            if let Some(h) = choice.hunks.get_mut(hunk) {
                *h = !*h;
            }
            choice.checked = choice.hunks.iter().any(|h| *h);
        }
    }

    pub(super) fn toggle_dependencies(&mut self) {
        if let Some(review) = self.review_mut() {
            review.dependencies = !review.dependencies;
        }
    }

    pub(super) fn set_review_reason(&mut self, reason: String) {
        if let Some(review) = self.review_mut() {
            review.reason = reason;
        }
    }

    /// Applies the checked part of the proposal (one commit).
    pub(super) fn approve(&mut self, backend: &Backend) {
        let (Some(project), Some(review)) = (&self.project, self.review()) else {
            return;
        };
        if !review.anything_checked() {
            self.toast("Nothing is checked to apply", true);
            return;
        }
        if project.chat.is_some() {
            backend.approve(review.message_id, review.selection(), review.reason.clone());
        }
    }

    pub(super) fn reject(&self, backend: &Backend) {
        if let Some(review) = self.review() {
            let (message_id, reason) = (review.message_id, review.reason.clone());
            backend.query(
                "rejecting the changes",
                move |app| {
                    // Why the person rejected it (empty: none given).
                    let reason = Some(reason.as_str()).filter(|r| !r.trim().is_empty());
                    app.reject(message_id, reason)
                },
                move |()| Event::Rejected(message_id),
            );
        }
    }

    pub(super) fn move_cursor(&mut self, step: isize) {
        let Some(review) = self.review_mut() else {
            return;
        };
        let positions = review.positions();
        if positions.is_empty() {
            return;
        }
        let current = positions
            .iter()
            .position(|p| *p == review.cursor)
            .unwrap_or(0) as isize;
        let next = (current + step).rem_euclid(positions.len() as isize) as usize;
        review.cursor = positions[next];
        if let Some(choice) = review.files.get_mut(review.cursor.0) {
            choice.expanded = true;
        }
    }

    /// Starts a fresh review of a plan (after a reply, or when a chat loads).
    pub fn set_review(&mut self, review: Option<(i64, tandem_core::edits::EditPlan)>) {
        if review.is_some() {
            self.show_review = true;
        }
        if let Some(chat) = self.chat_mut() {
            chat.review = review.map(|(id, plan)| Review::new(id, plan));
        }
    }
}
