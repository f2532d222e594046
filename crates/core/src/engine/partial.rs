//! What the person left out of a proposal, and why: recorded with the approval so the chat
//! card and the commit say "1 of 2 hunks", and the next turn tells the model what was not
//! wanted (so it does not propose it again unchanged).

use crate::edits::apply::Selection;
use crate::edits::diff::unified;
use crate::edits::{EditPlan, FileChange, FileChangeKind};
use crate::store::{ApprovalNote, LeftOut};

/// Lines of a left-out hunk kept in the note; the rest is elided.
const HUNK_LINES: usize = 40;

/// The note for approving `selection` of `plan` (`None`: everything) with `reason`; `None`
/// when everything was applied and no reason was given.
pub fn approval_note(
    plan: &EditPlan,
    selection: Option<&Selection>,
    reason: Option<&str>,
) -> Option<ApprovalNote> {
    let mut note = ApprovalNote {
        reason: reason
            .map(str::trim)
            .filter(|r| !r.is_empty())
            .map(String::from),
        ..ApprovalNote::default()
    };
    for file in &plan.files {
        let units = units(file);
        let chosen = chosen(file, selection);
        note.hunks_total += units;
        note.hunks_applied += chosen.len();
        if chosen.len() == units {
            continue;
        }
        let whole = chosen.is_empty();
        let hunks = match file.binary {
            true => Vec::new(),
            false => (0..file.hunks.len())
                .filter(|i| whole || !chosen.contains(i))
                .map(|i| hunk_text(file, i))
                .collect(),
        };
        note.left_out.push(LeftOut {
            path: file.path.clone(),
            whole,
            hunks,
        });
    }
    if let Some(selection) = selection
        && !plan.dependencies.is_empty()
        && !selection.dependencies
    {
        note.left_out
            .push(LeftOut::dependencies(&plan.dependencies));
    }
    (note.partial() || !note.left_out.is_empty() || note.reason.is_some()).then_some(note)
}

/// The note for rejecting the whole proposal with `reason` (`None` without one).
pub fn rejection_note(plan: &EditPlan, reason: Option<&str>) -> Option<ApprovalNote> {
    let reason = reason.map(str::trim).filter(|r| !r.is_empty())?;
    Some(ApprovalNote {
        hunks_applied: 0,
        hunks_total: plan.files.iter().map(units).sum(),
        left_out: Vec::new(),
        reason: Some(reason.to_string()),
    })
}

/// Units of change in a file: its hunks, or one for a file applied whole (new, deleted,
/// binary).
fn units(file: &FileChange) -> usize {
    match file.kind {
        FileChangeKind::Added | FileChangeKind::Deleted => 1,
        _ if file.binary => 1,
        _ => file.hunks.len().max(1),
    }
}

/// The hunk indices of `file` that `selection` applies (for a file applied whole: `[0]` or
/// nothing).
fn chosen(file: &FileChange, selection: Option<&Selection>) -> Vec<usize> {
    let all: Vec<usize> = (0..units(file)).collect();
    let Some(selection) = selection else {
        return all;
    };
    let Some(choice) = selection.files.iter().find(|c| c.path == file.path) else {
        return Vec::new();
    };
    match &choice.hunks {
        None => all,
        Some(list) if whole(file) || file.hunks.len() <= 1 => match list.is_empty() {
            true => Vec::new(),
            false => vec![0],
        },
        Some(list) => {
            let mut list: Vec<usize> = list.iter().copied().filter(|&h| h < all.len()).collect();
            list.sort_unstable();
            list.dedup();
            list
        }
    }
}

fn whole(file: &FileChange) -> bool {
    file.binary || matches!(file.kind, FileChangeKind::Added | FileChangeKind::Deleted)
}

/// One hunk as unified-diff text (its `@@` header and lines), long ones shortened.
fn hunk_text(file: &FileChange, index: usize) -> String {
    let Some(hunk) = file.hunks.get(index) else {
        return String::new();
    };
    let text = unified(
        Some(&file.path),
        Some(&file.path),
        std::slice::from_ref(hunk),
    );
    let lines: Vec<&str> = text.lines().skip(2).collect();
    let mut out = lines
        .iter()
        .take(HUNK_LINES)
        .copied()
        .collect::<Vec<_>>()
        .join("\n");
    if lines.len() > HUNK_LINES {
        out.push_str(&format!("\n… {} more line(s)", lines.len() - HUNK_LINES));
    }
    out
}

/// The note as the model reads it on the next turn, after its reply.
pub fn for_the_model(note: &ApprovalNote, approved: bool) -> String {
    let mut text = String::new();
    if approved && note.partial() {
        text.push_str(&format!(
            "[The person applied only part of this proposal ({} of {} hunks). Left out:\n",
            note.hunks_applied, note.hunks_total
        ));
    } else if approved {
        text.push_str("[The person applied this proposal, leaving out:\n");
    } else {
        text.push_str("[The person rejected this proposal.\n");
    }
    for left in &note.left_out {
        let whole = if left.whole {
            " (the whole change)"
        } else {
            ""
        };
        text.push_str(&format!("- {}{whole}\n", left.path));
        for hunk in &left.hunks {
            text.push_str(hunk);
            text.push('\n');
        }
    }
    if let Some(reason) = &note.reason {
        text.push_str(&format!("Their reason: {reason}\n"));
    }
    text.push_str("Do not propose what was left out again unchanged.]");
    text
}
