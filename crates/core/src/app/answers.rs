//! The person's answers to the two kinds of waiting question about a command: the agent's tool
//! call (`run_shell`) and an executor's gateway evaluation. When both wait on the same command
//! (the same fingerprint), one answer settles both, whichever front-end it came from.

use serde_json::Value;

use super::{App, Result};
use crate::agent::gateway::fingerprint;
use crate::agent::runner::Answer;
use crate::chat::PendingPermission;
use crate::store::{ExecutorRequest, ExecutorRequestKind};

/// The reason recorded on a gateway request decided by the answer to the agent's call.
pub const SAME_COMMAND: &str = "decided with the agent's tool call for the same command";

/// How far back pending gateway requests are looked for (the approvals tab shows as many).
const REQUESTS_SEARCHED: usize = 200;

/// The fingerprint a gateway request about the same command as this call would have: only a
/// `run_shell` call has one.
pub fn call_fingerprint(tool: &str, arguments: &Value) -> Option<String> {
    let command = (tool == "run_shell").then(|| arguments.get("command")?.as_str())??;
    Some(fingerprint(command))
}

impl App {
    /// Answers the agent's waiting call `approval_id`; a shell command's answer also decides
    /// the pending gateway evaluations of the same command that this process's gateway (or
    /// approval client) holds. False when the call no longer waits (the turn ended). An error
    /// comes only after the call was answered: the requests could not be read.
    pub async fn answer_call(&self, approval_id: u64, answer: Answer) -> Result<bool> {
        let call = self
            .pending_approvals()
            .into_iter()
            .find(|a| a.id == approval_id);
        let fingerprint = call.and_then(|c| call_fingerprint(&c.tool, &c.arguments));
        if !self.answer(approval_id, answer) {
            return Ok(false);
        }
        let Some(fingerprint) = fingerprint else {
            return Ok(true);
        };
        let approved = answer != Answer::Reject;
        for request in self.pending_evaluations(&fingerprint)? {
            if self.holds_request(request.id).await {
                // Decided meanwhile (by the executor's other client, or auto): nothing left.
                let reason = Some(SAME_COMMAND.to_string());
                let _ = self.decide_gateway(request.id, approved, reason).await;
            }
        }
        Ok(true)
    }

    /// Decides gateway request `id`; an evaluation also answers the agent's calls waiting on
    /// the same command in chat `shown` (the chat the person sees; calls in other chats are
    /// not answered for them). Returns the calls answered.
    pub async fn decide_request(
        &self,
        id: i64,
        approved: bool,
        shown: Option<i64>,
    ) -> Result<Vec<u64>> {
        let record = tokio::task::block_in_place(|| self.store().approval_request(id))?;
        self.decide_gateway(id, approved, None).await?;
        if record.kind != ExecutorRequestKind::Evaluation {
            return Ok(Vec::new());
        }
        let answer = if approved {
            Answer::Approve
        } else {
            Answer::Reject
        };
        let same = self
            .pending_approvals()
            .into_iter()
            .filter(|call| Some(call.chat_id) == shown && same_command(call, &record))
            .map(|call| call.id)
            .filter(|&call| self.answer(call, answer))
            .collect();
        Ok(same)
    }

    fn pending_evaluations(&self, fingerprint: &str) -> Result<Vec<ExecutorRequest>> {
        let requests = tokio::task::block_in_place(|| self.approval_requests(REQUESTS_SEARCHED))?;
        Ok(requests
            .into_iter()
            .filter(|r| {
                r.is_pending()
                    && r.kind == ExecutorRequestKind::Evaluation
                    && r.fingerprint == fingerprint
            })
            .collect())
    }
}

fn same_command(call: &PendingPermission, record: &ExecutorRequest) -> bool {
    call_fingerprint(&call.tool, &call.arguments).as_deref() == Some(record.fingerprint.as_str())
}
