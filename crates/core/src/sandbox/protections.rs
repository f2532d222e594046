//! What a confined command was protected by, in words for the person: the step card, `tandem
//! sandbox`, the model's view of a command's result and the policy (which asks for every
//! command when anything is missing) all read this.

use serde::Serialize;

use super::Limits;

/// How the network was kept from a command.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Network {
    /// An empty network namespace: no TCP, UDP, raw or abstract-socket traffic leaves it.
    Isolated,
    /// Landlock denies TCP connect and bind; UDP and raw sockets are not restricted.
    TcpDenied,
    /// The person approved network use for this call.
    Allowed,
    /// Nothing restricts it.
    Unrestricted,
}

/// The protections one command ran under (or that [`super::probe`] found this system can
/// give).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Protections {
    /// The kernel's Landlock ABI; `None` without Landlock.
    pub landlock_abi: Option<i32>,
    /// The command ran in a root built for it (user, mount, PID, IPC and UTS namespaces):
    /// only the system, the project, the toolchains and private temp directories exist
    /// there; the home directory, `/run`, the host's `/tmp` and other processes do not.
    pub container: bool,
    /// Reads limited to the system, the project, the temp dir and the toolchains.
    pub reads: bool,
    /// Writes limited to the project and the temp dir.
    pub writes: bool,
    /// The project's `.git` cannot be written.
    pub git_read_only: bool,
    pub network: Network,
    /// Signals to processes outside the sandbox (Tandem itself) are denied.
    pub signals: bool,
    /// Abstract Unix sockets outside the sandbox (D-Bus, X11…) cannot be reached.
    pub abstract_sockets: bool,
    /// No terminal: a session of its own, and the system calls that inject input into a
    /// terminal or leave the sandbox (new user namespaces, `ptrace`, keyrings, `bpf`…)
    /// refused by a seccomp filter.
    pub no_terminal: bool,
    /// Every process it started ends with the call (its PID namespace dies with it), even
    /// those that left its session.
    pub processes_end: bool,
    /// The limits it ran under; `processes_limited` says whether the process count could
    /// be capped here.
    pub limits: Limits,
    pub processes_limited: bool,
    /// Things that work differently here (e.g. files cannot be created at the project root
    /// when `.git` is protected without a mount namespace), and why a container could not be
    /// built.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
}

impl Protections {
    pub fn none() -> Self {
        Protections {
            landlock_abi: None,
            container: false,
            reads: false,
            writes: false,
            git_read_only: false,
            network: Network::Unrestricted,
            signals: false,
            abstract_sockets: false,
            no_terminal: false,
            processes_end: false,
            limits: Limits::default(),
            processes_limited: false,
            notes: Vec::new(),
        }
    }

    /// What a command confined here is *not* protected from, in words for the person. Empty
    /// when the sandbox is complete. `Network::Allowed` is not a gap: the person chose it.
    pub fn gaps(&self) -> Vec<&'static str> {
        let checks = [
            (
                self.container,
                "reaching the home directory, /run and the host's /tmp",
            ),
            (self.reads, "reads outside the project"),
            (self.writes, "writes outside the project"),
            (self.git_read_only, "writes to .git"),
            (
                matches!(self.network, Network::Isolated | Network::Allowed),
                "network access",
            ),
            (self.signals, "signals to other processes"),
            (self.abstract_sockets, "abstract Unix sockets"),
            (self.no_terminal, "terminal input injection"),
            (self.processes_end, "processes outliving the call"),
            (self.processes_limited, "too many processes"),
        ];
        checks
            .iter()
            .filter(|(ok, _)| !ok)
            .map(|(_, w)| *w)
            .collect()
    }

    /// One line for the model, the step card and the log.
    pub fn summary(&self) -> String {
        let gaps = self.gaps();
        let network = match self.network {
            Network::Isolated => "no network",
            Network::TcpDenied => "TCP denied",
            Network::Allowed => "network allowed (approved)",
            Network::Unrestricted => "network not restricted",
        };
        let world = match self.container {
            true => {
                "Sandbox: a container of its own (the system read-only, the project, \
                     toolchains, private /tmp; no home directory, no other processes)"
            }
            false => {
                "Sandbox: reads limited to the project, its temp dir, system and \
                      toolchain directories"
            }
        };
        let mut text = format!(
            "{world}; writes only in the project (.git read-only) and the temp dir; {network}"
        );
        if !gaps.is_empty() {
            text.push_str(&format!("; NOT enforced here: {}", gaps.join(", ")));
        }
        text.push('.');
        for note in &self.notes {
            text.push_str(&format!(" {note}."));
        }
        text
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gaps_name_what_is_missing() {
        assert_eq!(Protections::none().gaps().len(), 10);
        let full = Protections {
            landlock_abi: Some(7),
            container: true,
            reads: true,
            writes: true,
            git_read_only: true,
            network: Network::Isolated,
            signals: true,
            abstract_sockets: true,
            no_terminal: true,
            processes_end: true,
            limits: Limits::default(),
            processes_limited: true,
            notes: Vec::new(),
        };
        assert!(full.gaps().is_empty());
        let tcp_only = Protections {
            network: Network::TcpDenied,
            ..full.clone()
        };
        assert_eq!(tcp_only.gaps(), ["network access"]);
        assert!(
            tcp_only
                .summary()
                .contains("NOT enforced here: network access")
        );
    }
}
