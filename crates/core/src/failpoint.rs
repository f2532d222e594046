//! Fail points: named places where a test makes the process kill itself with SIGKILL (no
//! destructor, no flush, no signal handler runs), to prove that a kill at exactly that
//! point leaves everything whole after a restart (`tests/kill9.rs`).
//!
//! Armed by `TANDEM_FAILPOINT=NAME` (the first time the point is reached) or `NAME:N` (the
//! N-th time), and only in builds with debug assertions: the test builds. A release build
//! compiles [`hit`] to nothing and never reads the variable, so no environment (a shell
//! profile, a project's `.envrc`) can make a shipped Tandem kill itself. Commands Tandem
//! runs never see the variable either: every `TANDEM_*` name counts as a secret there.
//!
//! The points (where each is called says what happened before it):
//! - `apply-after-files`: an approval wrote its N-th file
//! - `approve-before-landing`: the proposal is marked applying, the files not yet recorded
//! - `approve-after-head`: HEAD moved to the approval's commit; the landing record remains
//! - `commit-before-record`: the approval is committed, not yet recorded as approved
//! - `mid-checkout`: a restore or undo wrote its N-th file
//! - `land-after-head`: a restore or undo moved HEAD; the landing record remains
//! - `undo-before-record`: an undo is committed, not yet recorded on its message
//! - `agent-after-tool`: an agent's N-th tool call ran, its step not yet recorded
//! - `commit-all-before-commit`: every change in the working tree (the person's work before
//!   a restore or an undo, a new project's files) is in a tree, not yet committed
//! - `add-after-init`: a project being added has its new `.git`, without a commit yet
//! - `write-before-rename`: a file's new content is in its temporary file, not yet renamed
//!   over it (any atomic write: the N-th of the process)
//! - `save-after-commit`: a saved (renamed, deleted) file is committed, the index not yet
//!   written

/// The variable that arms a fail point.
pub const VAR: &str = "TANDEM_FAILPOINT";

/// Kills this process with SIGKILL when `name` is the armed point and this is the time it
/// was armed for; otherwise does nothing.
#[inline]
pub fn hit(name: &str) {
    #[cfg(debug_assertions)]
    armed::hit(name);
    #[cfg(not(debug_assertions))]
    let _ = name;
}

/// `NAME` or `NAME:N` (N ≥ 1): the point and the time it kills at. `None` when malformed.
pub fn parse(spec: &str) -> Option<(&str, usize)> {
    let (name, nth) = match spec.split_once(':') {
        Some((name, n)) => (name, n.parse().ok().filter(|n| *n > 0)?),
        None => (spec, 1),
    };
    (!name.is_empty()).then_some((name, nth))
}

#[cfg(debug_assertions)]
mod armed {
    use std::sync::OnceLock;
    use std::sync::atomic::{AtomicUsize, Ordering};

    static ARMED: OnceLock<Option<(String, usize)>> = OnceLock::new();
    static HITS: AtomicUsize = AtomicUsize::new(0);

    pub(super) fn hit(name: &str) {
        let armed = ARMED.get_or_init(|| {
            let spec = std::env::var(super::VAR).ok()?;
            super::parse(&spec).map(|(name, nth)| (name.to_string(), nth))
        });
        if let Some((point, nth)) = armed
            && point == name
            && HITS.fetch_add(1, Ordering::SeqCst) + 1 == *nth
        {
            die();
        }
    }

    #[cfg(unix)]
    #[allow(unsafe_code)]
    fn die() {
        // SAFETY: kill(2) on our own pid with SIGKILL: the process ends here.
        unsafe {
            libc::kill(libc::getpid(), libc::SIGKILL);
        }
    }

    #[cfg(not(unix))]
    fn die() {
        std::process::abort();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_point_is_named_with_the_time_it_kills_at() {
        assert_eq!(parse("mid-checkout"), Some(("mid-checkout", 1)));
        assert_eq!(
            parse("apply-after-files:25"),
            Some(("apply-after-files", 25))
        );
        for malformed in ["", ":3", "apply-after-files:0", "apply-after-files:x"] {
            assert_eq!(parse(malformed), None, "{malformed}");
        }
    }

    #[test]
    fn an_unarmed_point_does_nothing() {
        // This test process has no armed point (it would not be running otherwise).
        assert!(std::env::var_os(VAR).is_none());
        hit("apply-after-files");
    }
}
