//! Every process Tandem starts for a model (the shell tool, dependency installs, checks) starts
//! here: in its own process group (so a timeout or a cancel kills everything it started), with
//! a scrubbed environment, inside the kernel sandbox when asked (see [`crate::sandbox`]), with
//! bounded output.
//!
//! Platform differences live in [`group`] (process groups, signals) and in `sandbox`.

pub mod env;
pub mod group;
pub mod output;
mod program;
mod shell;

pub use env::{agent_env, allowed_env, is_secret_env_name};
pub use group::{in_own_group, kill_group};
pub use output::{Capture, cap_output};
pub use program::resolve_program;
pub use shell::{
    DEFAULT_OUTPUT_CAP, DEFAULT_TIMEOUT, ExecError, Sandbox, ShellOutcome, ShellRequest, run_shell,
};

use crate::sandbox::{self, Confinement, Prepared, Protections, SandboxError};

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SandboxStatus {
    NotRequested,
    /// The kernel confined the command; what it enforced.
    Enforced(Protections),
    /// A sandbox was requested but the command ran without one; show `reason` to the user.
    Unavailable {
        reason: String,
    },
}

impl SandboxStatus {
    /// The warning to show when a requested sandbox could not be applied.
    pub fn warning(&self) -> Option<String> {
        let SandboxStatus::Unavailable { reason } = self else {
            return None;
        };
        Some(format!(
            "Warning: the sandbox is unavailable ({reason}); the command ran without \
             restrictions."
        ))
    }

    /// What the step card and `--json` show: `confined`, the protections that applied and the
    /// `gaps` (what the kernel here could not stop), or why there was no sandbox.
    pub fn to_json(&self) -> serde_json::Value {
        match self {
            SandboxStatus::NotRequested => serde_json::json!({ "confined": false }),
            SandboxStatus::Unavailable { reason } => {
                serde_json::json!({ "confined": false, "unavailable": reason })
            }
            SandboxStatus::Enforced(p) => {
                let mut value = serde_json::to_value(p).unwrap_or_default();
                value["confined"] = true.into();
                value["gaps"] = p.gaps().into();
                value
            }
        }
    }
}

/// Prepares `command` to run for a model: in `cwd`, with the allowed environment
/// ([`agent_env`] plus `env_names`), a session of its own (no terminal; Tandem kills its
/// process group), and, when `confinement` is given, inside the sandbox it builds. Callers
/// set no directory, environment or process group of their own. Keep the returned `Prepared`
/// until the child has been spawned, then drop it.
pub fn confine(
    command: &mut std::process::Command,
    confinement: Option<&Confinement>,
    cwd: &std::path::Path,
    env_names: &[String],
) -> Result<(SandboxStatus, Option<Prepared>), SandboxError> {
    command.env_clear().envs(agent_env(env_names));
    let Some(confinement) = confinement else {
        // Unconfined (approved under Trusted): the person's own home and temp directory.
        for name in ["HOME", "USER", "LOGNAME", "TMPDIR", "SHELL"] {
            if let Some(value) = std::env::var_os(name) {
                command.env(name, value);
            }
        }
        sandbox::unconfined(command, cwd);
        return Ok((SandboxStatus::NotRequested, None));
    };
    command.envs(agent_env(&confinement.env_names));
    command.envs(confinement.env());
    let prepared = sandbox::prepare(confinement, cwd)?;
    prepared.install(command, cwd);
    let status = match prepared.unavailable() {
        Some(reason) => SandboxStatus::Unavailable {
            reason: reason.to_string(),
        },
        None => SandboxStatus::Enforced(prepared.protections().clone()),
    };
    Ok((status, Some(prepared)))
}
