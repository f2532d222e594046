//! How risky a model's action is, and how far the person trusts the agent in a project: the
//! vocabulary the agent's policy, the store, the gateway and the front-ends share. A leaf:
//! it imports nothing of Tandem. (`Display`, `FromStr` and the SQLite conversions of [`Risk`]
//! come from `store`.)

use serde::{Deserialize, Serialize};

/// How much harm an action can do, in order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Risk {
    Low,
    Medium,
    High,
}

/// How far the user trusts the agent in this project.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Trust {
    /// Writes outside the project are possible (high risk, so asked by default).
    Trusted,
    /// The agent may change the project only; writes outside it are denied.
    #[default]
    Scoped,
    /// The agent may only read: edit tools, `run_shell`, MCP and unknown tools are denied.
    ReadOnly,
}
