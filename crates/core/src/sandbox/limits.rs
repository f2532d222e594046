//! The limits every confined command runs under: how many processes, how much memory, how
//! large a file, how much CPU time and how much private temporary space. Defaults that a
//! `cargo build` or an `npm install` of an ordinary project fits in; the person changes them
//! with `tandem config set agent.limits '{…}'` or in Settings.

use serde::{Deserialize, Serialize};

/// Limits of one confined command (and everything it starts).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Limits {
    /// Processes and threads alive at once in the command's container. Its PID namespace's
    /// numbers are capped at this plus 300 (Linux ≥ 6.14): the kernel hands out the numbers
    /// below 300 only once, so until the numbers first wrap up to 299 more may run, after
    /// that at most this many. For people who are not root, also `RLIMIT_NPROC` (exact).
    pub processes: u32,
    /// Memory one process may take for its data (`RLIMIT_DATA`), in MiB.
    pub memory_mb: u64,
    /// The largest file a process may write (`RLIMIT_FSIZE`), in MiB.
    pub file_size_mb: u64,
    /// CPU time one process may use (`RLIMIT_CPU`), in seconds. The command's wall-clock
    /// timeout is separate.
    pub cpu_secs: u64,
    /// Size of each private, memory-backed directory of the container (`/tmp`, `/dev/shm`,
    /// the home directory), in MiB.
    pub tmp_mb: u64,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            processes: 1024,
            memory_mb: 8 * 1024,
            file_size_mb: 4 * 1024,
            cpu_secs: 3600,
            tmp_mb: 1024,
        }
    }
}

/// The smallest process limit: a shell, a build tool and its workers.
pub const MIN_PROCESSES: u32 = 16;

impl Limits {
    /// The limits with every value raised to a floor a shell can start under (a zero would
    /// make every command fail in a way that says nothing).
    pub fn sane(self) -> Self {
        Limits {
            processes: self.processes.max(MIN_PROCESSES),
            memory_mb: self.memory_mb.max(64),
            file_size_mb: self.file_size_mb.max(1),
            cpu_secs: self.cpu_secs.max(1),
            tmp_mb: self.tmp_mb.max(1),
        }
    }

    /// The `pid_max` of the container's PID namespace that lets `processes` live at once.
    /// The kernel keeps numbers below 300 for the first pass only (after the numbers wrap it
    /// hands out 300 and up), so the cap is the limit plus those.
    pub fn pid_max(&self) -> u32 {
        self.processes.saturating_add(300).max(301)
    }

    /// One line for the person: "1024 processes, 8192 MiB memory per process, …".
    pub fn summary(&self) -> String {
        format!(
            "{} processes, {} MiB data per process, files up to {} MiB, {} s CPU per \
             process, {} MiB for each private temp directory",
            self.processes, self.memory_mb, self.file_size_mb, self.cpu_secs, self.tmp_mb
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn limits_read_partial_json_and_refuse_unknown_fields() {
        let partial: Limits = serde_json::from_str(r#"{"processes": 64}"#).unwrap_or_default();
        assert_eq!(partial.processes, 64);
        assert_eq!(partial.memory_mb, Limits::default().memory_mb);
        assert!(serde_json::from_str::<Limits>(r#"{"procs": 1}"#).is_err());
        let zero = Limits {
            processes: 0,
            memory_mb: 0,
            ..Limits::default()
        }
        .sane();
        assert_eq!((zero.processes, zero.memory_mb), (MIN_PROCESSES, 64));
        assert_eq!(Limits::default().pid_max(), 1324);
    }
}
