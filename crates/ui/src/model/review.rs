//! The review's view model: which files and hunks of the pending proposal are checked, where
//! the keyboard cursor is, and why the person leaves part of it out.

use tandem_core::edits::{EditPlan, FileChange};

/// The pending proposal under review: what is checked, where the cursor is.
pub struct Review {
    pub message_id: i64,
    pub plan: EditPlan,
    pub files: Vec<FileChoice>,
    pub dependencies: bool,
    /// (file, hunk) with keyboard focus.
    pub cursor: (usize, usize),
    /// Why the person leaves part (or all) of it out; told to the model on the next turn.
    pub reason: String,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileChoice {
    pub checked: bool,
    pub hunks: Vec<bool>,
    pub expanded: bool,
}

impl Review {
    pub fn new(message_id: i64, plan: EditPlan) -> Self {
        let files = plan
            .files
            .iter()
            .map(|f| FileChoice {
                checked: f.applicable(),
                hunks: vec![f.applicable(); f.hunks.len()],
                expanded: true,
            })
            .collect();
        Review {
            message_id,
            dependencies: !plan.dependencies.is_empty(),
            plan,
            files,
            cursor: (0, 0),
            reason: String::new(),
        }
    }

    pub fn file(&self, index: usize) -> Option<(&FileChange, &FileChoice)> {
        Some((self.plan.files.get(index)?, self.files.get(index)?))
    }

    /// Whether anything is checked that can be applied.
    pub fn anything_checked(&self) -> bool {
        self.files.iter().zip(&self.plan.files).any(|(c, f)| {
            c.checked && f.applicable() && (f.hunks.is_empty() || c.hunks.iter().any(|h| *h))
        }) || (self.dependencies && !self.plan.dependencies.is_empty())
    }

    /// The selection to approve: checked, applicable files with their checked hunks.
    pub fn selection(&self) -> tandem_core::edits::Selection {
        let files = self
            .plan
            .files
            .iter()
            .zip(&self.files)
            .filter(|(f, c)| c.checked && f.applicable())
            .map(|(f, c)| tandem_core::edits::FileSelection {
                path: f.path.clone(),
                hunks: if c.hunks.iter().all(|h| *h) {
                    None
                } else {
                    Some(
                        c.hunks
                            .iter()
                            .enumerate()
                            .filter(|(_, h)| **h)
                            .map(|(i, _)| i)
                            .collect(),
                    )
                },
            })
            .collect();
        tandem_core::edits::Selection {
            files,
            dependencies: self.dependencies,
        }
    }

    /// All (file, hunk) positions in order, for n / p navigation.
    pub fn positions(&self) -> Vec<(usize, usize)> {
        self.plan
            .files
            .iter()
            .enumerate()
            .flat_map(|(f, file)| (0..file.hunks.len().max(1)).map(move |h| (f, h)))
            .collect()
    }
}
