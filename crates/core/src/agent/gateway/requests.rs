//! What executors ask and what the gateway tells: the requests as a client's frame holds
//! them, the auto-answer rules that settle some without the person, and the events
//! subscribers see.

use std::net::SocketAddr;

use serde::{Deserialize, Serialize};

use super::Risk;

/// What needs no person. The default asks for everything.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct AutoAnswer {
    /// Evaluations up to this (effective) risk are approved; `None` asks for all.
    pub evaluations_up_to: Option<Risk>,
    pub code_responses: CodeResponsePolicy,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CodeResponsePolicy {
    Always,
    /// Approved when the exit code is 0; asked otherwise.
    OnSuccess,
    /// Never auto-approved: always asked.
    #[default]
    Never,
}

impl AutoAnswer {
    /// Why `request` is approved without asking, or `None` when the person decides.
    pub(super) fn approves(&self, request: &GatewayRequest, risk: Option<Risk>) -> Option<String> {
        let GatewayRequest::CodeResponse { exit_code, .. } = request else {
            let (limit, risk) = (self.evaluations_up_to?, risk?);
            return (risk <= limit).then(|| format!("auto-approved: {risk} risk, limit {limit}"));
        };
        match self.code_responses {
            CodeResponsePolicy::Always => Some("auto-approved: all code responses".into()),
            CodeResponsePolicy::OnSuccess if *exit_code == 0 => {
                Some("auto-approved: exit 0".into())
            }
            CodeResponsePolicy::OnSuccess | CodeResponsePolicy::Never => None,
        }
    }
}

/// A request as the client's frame holds it (`type` included; see `docs/gateway.md`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum GatewayRequest {
    #[serde(rename = "security_evaluation", alias = "Security Evaluation Request")]
    Evaluation {
        code: String,
        language: Option<String>,
        explanation: String,
        /// As the client declared it.
        #[serde(alias = "risk_level")]
        risk: Risk,
    },
    #[serde(alias = "code response approval")]
    CodeResponse {
        code: Option<String>,
        stdout: String,
        stderr: String,
        exit_code: i32,
    },
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum GatewayEvent {
    /// A request waits for the person. Auto-approved requests only produce `Decided`.
    Requested {
        id: i64,
        client: Option<String>,
        fingerprint: String,
        request: GatewayRequest,
        /// The effective risk of an evaluation (see [`effective_risk`](super::effective_risk)); `None` otherwise.
        risk: Option<Risk>,
    },
    Decided {
        id: i64,
        approved: bool,
        /// "auto" or "user".
        decided_by: String,
        reason: Option<String>,
    },
    ClientConnected {
        conn: u64,
        addr: SocketAddr,
    },
    /// `abandoned`: its requests still pending, whose answer nobody is waiting for now.
    ClientGone {
        conn: u64,
        client: Option<String>,
        abandoned: Vec<i64>,
    },
    /// A frame that could not be read; the peer got an `error` frame saying the same, and
    /// nothing was recorded.
    BadFrame {
        conn: u64,
        id: Option<String>,
        message: String,
    },
}
