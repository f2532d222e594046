//! Which project files a turn packs first: the code index's ranking of the person's signals
//! (mentions, names in the prompt, the editor's tabs and selection, the last commits) and
//! the prompt's words, each with why.

use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

use git2::Repository;

use super::focus::Focus;
use crate::folder::context::{Priority, Walk};
use crate::index::{
    Changes, CodeIndex, Indexes, OPEN_WHY, PastCommit, Ranked, SELECTED_WHY, Signals,
};

/// The most ranked files packed before the rest (in path order); the first
/// [`MAPPED_FILES`] of them may go as their map when they do not fit whole.
const RANKED_FILES: usize = 400;
const MAPPED_FILES: usize = 120;
/// The longest a turn spends bringing the code index up to date.
const INDEX_BUDGET: std::time::Duration = std::time::Duration::from_millis(300);

/// The project's files ranked for `signals` by its code index, best first, each with why.
/// The index is brought up to date with the walk first: only changed files are read, for at
/// most [`INDEX_BUDGET`] (a project met for the first time is indexed over several turns, or
/// in the background); files not indexed yet are still packed, by path. An index that cannot
/// be used ranks nothing: the context is packed as without it.
pub(super) fn rank_files(
    indexes: &Indexes,
    root: &Path,
    repo: Option<&Repository>,
    walk: &Walk,
    changes: &Changes,
    signals: &Signals<'_>,
) -> Vec<Priority> {
    let ranked = || -> crate::index::Result<Vec<(Ranked, Option<Arc<str>>)>> {
        let deadline = std::time::Instant::now() + INDEX_BUDGET;
        let (project, _) = indexes.refreshed(root, walk, changes, Some(deadline))?;
        let mut project = crate::index::lock(&project);
        // What the history says is a hint: a history that cannot be read ranks nothing.
        if let Some(repo) = repo {
            let _ = learn_history(&mut project, repo, Some(deadline));
        }
        // The maps of those that may go as one, from the definitions the index keeps (a
        // file is not parsed again to be mapped) when it keeps them for the file as it is.
        let ranked = project.rank(signals, RANKED_FILES)?;
        let mut out = Vec::with_capacity(ranked.len());
        for (i, ranked) in ranked.into_iter().enumerate() {
            let known = match i < MAPPED_FILES {
                true => (project.symbols_in(root, &ranked.path)?)
                    .map(|symbols| Arc::from(crate::index::file_map(&symbols))),
                false => None,
            };
            out.push((ranked, known));
        }
        Ok(out)
    };
    let ranked = ranked().unwrap_or_else(|e| {
        // A damaged store is built again from the next turn on.
        indexes.forget_if_damaged(root, &e);
        Vec::new()
    });
    (ranked.into_iter())
        .enumerate()
        .map(|(i, (ranked, known_map))| match i < MAPPED_FILES {
            true => Priority {
                known_map,
                ..Priority::or_map(ranked.path, ranked.why)
            },
            false => Priority::new(ranked.path, ranked.why),
        })
        .collect()
}

/// The history cannot be read or learnt.
#[derive(Debug, thiserror::Error)]
pub(crate) enum HistoryError {
    #[error(transparent)]
    Vcs(#[from] crate::vcs::VcsError),
    #[error(transparent)]
    Index(#[from] crate::index::IndexError),
}

/// Brings what `index` learnt from the project's history (see [`crate::index::history`]) to
/// the commit at HEAD: only the commits it has not met yet are read (a diff of trees each),
/// until `deadline`; says whether it is done (a history cut short goes on at the next call,
/// the one it had stays meanwhile).
pub(crate) fn learn_history(
    index: &mut CodeIndex,
    repo: &Repository,
    deadline: Option<Instant>,
) -> Result<bool, HistoryError> {
    let Some(head) = crate::vcs::head(repo)? else {
        // No commit yet (a new or orphan branch): nothing is reachable, nothing said.
        if index.history_head()?.is_some() {
            index.learn_history("", &[], &[])?;
        }
        return Ok(true);
    };
    if index.history_head()?.as_deref() == Some(head.as_str()) {
        return Ok(true);
    }
    let ids = crate::vcs::newest_commits(repo, crate::index::history::COMMITS)?;
    let kept = index.kept_commits(&ids)?;
    let mut read = Vec::new();
    for id in ids.iter().filter(|id| !kept.contains(*id)) {
        // One commit at least, so that every call moves on.
        if !read.is_empty() && deadline.is_some_and(|d| Instant::now() >= d) {
            break;
        }
        // A commit that cannot be read (a damaged object) says nothing, and is not read
        // again.
        let said = crate::vcs::commit_changes(repo, id).unwrap_or_default();
        read.push(PastCommit {
            id: id.clone(),
            subject: said.subject,
            files: said.files,
            moved: said.moved,
        });
    }
    Ok(index.learn_history(&head, &ids, &read)?)
}

/// The editor's files, to follow the ranked ones: the selection's, then the open tabs, with
/// the index's whys. Those the index ranked are already in the list (a file given twice
/// keeps its first place and why); the others (not indexed yet) are still packed.
pub(super) fn editor_files(focus: &Focus) -> impl Iterator<Item = Priority> + '_ {
    let selected = (focus.selection.iter()).map(|s| Priority::or_map(s.path.clone(), SELECTED_WHY));
    let open = (focus.open.iter()).map(|path| Priority::or_map(path.clone(), OPEN_WHY));
    selected.chain(open)
}

/// The project's repository (none when it is not one) and the files its last few commits
/// edited (see [`crate::vcs::recently_edited`]; none when its history cannot be read).
pub(super) fn repository_and_recent(root: &Path) -> (Option<Repository>, Vec<String>) {
    let Ok(repo) = crate::vcs::open(root) else {
        return (None, Vec::new());
    };
    let recent = crate::vcs::recently_edited(&repo).unwrap_or_default();
    (Some(repo), recent)
}
