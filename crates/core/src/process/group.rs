//! Process groups: a command and everything it starts are killed together. The platform seam:
//! Unix gets real groups; elsewhere only the direct child is tracked (and killed by its
//! handle).

use std::process::ExitStatus;

/// Starts the command as the leader of a new process group.
pub fn in_own_group(command: &mut std::process::Command) {
    #[cfg(unix)]
    std::os::unix::process::CommandExt::process_group(command, 0);
    #[cfg(not(unix))]
    let _ = command;
}

/// The signal that ended a process, where the platform has signals.
pub fn exit_signal(status: &ExitStatus) -> Option<i32> {
    #[cfg(unix)]
    {
        std::os::unix::process::ExitStatusExt::signal(status)
    }
    #[cfg(not(unix))]
    {
        let _ = status;
        None
    }
}

/// SIGKILLs the process group led by `pid` (a child started [`in_own_group`]).
/// Refuses pids 0 and 1: `kill(0)` and `kill(-1)` would hit our own group or every process.
/// Without process groups (not Unix) this does nothing: callers also kill the child itself.
#[allow(unsafe_code)]
pub fn kill_group(pid: u32) {
    #[cfg(unix)]
    {
        let Ok(pid) = libc::pid_t::try_from(pid) else {
            return;
        };
        if pid <= 1 {
            return;
        }
        // SAFETY: kill(2) with a negative pid signals the process group we created for the
        // child (its pid is the group id); it touches no memory of ours.
        unsafe {
            libc::kill(-pid, libc::SIGKILL);
        }
    }
    #[cfg(not(unix))]
    let _ = pid;
}

/// Kills the command's process group when dropped, so cancelling by dropping the future
/// leaves no orphans.
pub struct GroupGuard(pub Option<u32>);

impl GroupGuard {
    /// Kills the group once; later calls and the drop do nothing. Disarming matters: once the
    /// shell is reaped its pid may be reused, so the group is never signalled again.
    pub fn kill_now(&mut self) {
        if let Some(pid) = self.0.take() {
            kill_group(pid);
        }
    }
}

impl Drop for GroupGuard {
    fn drop(&mut self) {
        self.kill_now();
    }
}
