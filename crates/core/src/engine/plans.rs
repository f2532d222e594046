//! A reply's plan, made once and reused while nothing it was made from has changed: the
//! reply's text and agent steps, and every path the plan touches (with the folders above it)
//! as `stat` sees them. Showing a proposal again (the chat reloaded when the turn ends, the
//! window opening the review, the CLI's `diff`) then costs a few `stat`s, not a re-read and
//! re-match of every edit. Approving and rejecting never take a plan from here: they plan
//! again under the project's lock, against the tree as it is.

use std::collections::HashMap;
use std::hash::{Hash, Hasher};
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

use crate::edits::plan::EditPlan;
use crate::folder::{Stamp, stamp};
use crate::store::{AgentStep, Message};

/// Plans kept, at most: the open chats' latest proposals.
const KEPT: usize = 64;

#[derive(Default)]
pub(super) struct Plans {
    kept: Mutex<HashMap<i64, Kept>>,
    made: AtomicU64,
}

struct Kept {
    inputs: u64,
    stamps: Vec<(PathBuf, Option<Stamp>)>,
    plan: EditPlan,
}

/// What a message's plan is made from besides the tree: its text, its agent steps (tool,
/// arguments, whether they ran) and the project's root.
pub(super) fn inputs(root: &Path, message: &Message, steps: &[AgentStep]) -> u64 {
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    root.hash(&mut hasher);
    message.content.hash(&mut hasher);
    for step in steps {
        step.tool.hash(&mut hasher);
        step.arguments
            .as_ref()
            .map(|a| a.to_string())
            .hash(&mut hasher);
        step.decision.map(|d| d.ran()).hash(&mut hasher);
        step.is_error.hash(&mut hasher);
    }
    hasher.finish()
}

/// Every path `plan` read or would write, and each folder above it up to the root: a folder
/// that became a file or a link, or a file that appeared, shows in one of them.
fn watched(plan: &EditPlan) -> Vec<PathBuf> {
    let mut paths: Vec<PathBuf> = Vec::new();
    let named = (plan.base.keys().map(String::as_str))
        .chain(plan.operations.iter().map(|op| op.path.as_str()))
        .chain(plan.operations.iter().filter_map(|op| op.to.as_deref()));
    for rel in named {
        let mut path = plan.root.join(rel);
        loop {
            if !paths.contains(&path) {
                paths.push(path.clone());
            }
            if path == plan.root || !path.pop() || !path.starts_with(&plan.root) {
                break;
            }
        }
    }
    paths
}

impl Plans {
    /// The kept plan of `message_id`, if it was made from `inputs` and nothing it watched has
    /// changed since.
    pub(super) fn get(&self, message_id: i64, inputs: u64) -> Option<EditPlan> {
        let kept = self.kept.lock().unwrap_or_else(|e| e.into_inner());
        let entry = kept.get(&message_id)?;
        let unchanged = entry.inputs == inputs
            && (entry.stamps.iter()).all(|(path, then)| stamp(path) == *then);
        unchanged.then(|| entry.plan.clone())
    }

    /// Keeps `plan`, just made from `inputs`.
    pub(super) fn put(&self, message_id: i64, inputs: u64, plan: &EditPlan) {
        self.made.fetch_add(1, Ordering::Relaxed);
        let stamps = (watched(plan).into_iter())
            .map(|path| {
                let now = stamp(&path);
                (path, now)
            })
            .collect();
        let mut kept = self.kept.lock().unwrap_or_else(|e| e.into_inner());
        if kept.len() >= KEPT && !kept.contains_key(&message_id) {
            // The oldest message's plan goes first (ids grow with time).
            if let Some(oldest) = kept.keys().min().copied() {
                kept.remove(&oldest);
            }
        }
        let plan = plan.clone();
        kept.insert(
            message_id,
            Kept {
                inputs,
                stamps,
                plan,
            },
        );
    }

    /// How many plans were made since the engine started.
    pub(super) fn made(&self) -> u64 {
        self.made.load(Ordering::Relaxed)
    }
}
