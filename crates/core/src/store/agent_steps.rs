//! The `agent_steps` table: every step of an agent turn (its plan, each tool call with the
//! approval decision and result, steps marked done, corrections, the final answer), so a chat
//! reloads with its whole trace.

use rusqlite::{Row, params};
use serde::Serialize;
use serde_json::Value;

use super::{Result, Store, StoreError, now_ms, text_enum};
use crate::trust::Risk;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum StepKind {
    Plan,
    Tool,
    StepDone,
    /// The model's turn broke the protocol; the correction sent back is the result.
    Correction,
    Final,
    /// Earlier tool results were shortened so the next request fits the model's window; the
    /// result says what was elided.
    Trimmed,
    /// A reply's edits failed and the errors went back to the model for another round; the
    /// result is the failed reply, the arguments `{"round", "errors": [{"path", "error"}]}`.
    Repair,
    /// The project's check ran on the proposal (in a scratch copy); the result is its output,
    /// the arguments `{"round", "command", "passed", "problems": [...]}`.
    Check,
}
text_enum!(StepKind {
    Plan => "plan",
    Tool => "tool",
    StepDone => "step_done",
    Correction => "correction",
    Final => "final",
    Trimmed => "trimmed",
    Repair => "repair",
    Check => "check",
});

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum StepDecision {
    /// Allowed by the policy without asking.
    Allowed,
    /// The person approved it.
    Approved,
    /// The person rejected it.
    Rejected,
    /// The policy refused it (hard deny, deny pattern, trust level).
    Denied,
    /// The turn ended before it could run (cancelled while it waited, ran or was still to
    /// come in the same reply, or the step limit was reached), or was cancelled as it ran.
    Cancelled,
}
text_enum!(StepDecision {
    Allowed => "allowed",
    Approved => "approved",
    Rejected => "rejected",
    Denied => "denied",
    Cancelled => "cancelled",
});

text_enum!(Risk { Low => "low", Medium => "medium", High => "high" });

impl StepDecision {
    /// Whether the call ran (or, for edit tools, joined the proposal).
    pub fn ran(self) -> bool {
        matches!(self, StepDecision::Allowed | StepDecision::Approved)
    }
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct AgentStep {
    pub id: i64,
    pub message_id: i64,
    pub seq: i64,
    pub kind: StepKind,
    pub tool: Option<String>,
    pub call_id: Option<String>,
    pub arguments: Option<Value>,
    pub risk: Option<Risk>,
    pub decision: Option<StepDecision>,
    pub reason: Option<String>,
    pub result: Option<String>,
    pub exit_code: Option<i64>,
    pub is_error: bool,
    pub duration_ms: Option<i64>,
    pub created_at: i64,
    /// The protections its command ran under (see `SandboxStatus::to_json`).
    pub sandbox: Option<Value>,
}

/// A step to record; `seq` is assigned in order per message.
#[derive(Debug, Clone, Default)]
pub struct NewStep<'a> {
    pub tool: Option<&'a str>,
    pub call_id: Option<&'a str>,
    pub arguments: Option<&'a Value>,
    pub risk: Option<Risk>,
    pub decision: Option<StepDecision>,
    pub reason: Option<&'a str>,
    pub result: Option<&'a str>,
    pub exit_code: Option<i64>,
    pub is_error: bool,
    pub duration_ms: Option<i64>,
    pub sandbox: Option<&'a Value>,
}

const COLUMNS: &str = "id, message_id, seq, kind, tool, call_id, arguments, risk, decision, \
                       reason, result, exit_code, is_error, duration_ms, created_at, sandbox";

fn from_row(row: &Row<'_>) -> rusqlite::Result<(AgentStep, Option<String>)> {
    Ok((
        AgentStep {
            id: row.get(0)?,
            message_id: row.get(1)?,
            seq: row.get(2)?,
            kind: row.get(3)?,
            tool: row.get(4)?,
            call_id: row.get(5)?,
            arguments: None,
            risk: row.get(7)?,
            decision: row.get(8)?,
            reason: row.get(9)?,
            result: row.get(10)?,
            exit_code: row.get(11)?,
            is_error: row.get(12)?,
            duration_ms: row.get(13)?,
            created_at: row.get(14)?,
            // Written by us as JSON; anything unreadable is shown as unknown, not an error.
            sandbox: row
                .get::<_, Option<String>>(15)?
                .and_then(|text| serde_json::from_str(&text).ok()),
        },
        row.get(6)?,
    ))
}

fn json_error(source: serde_json::Error) -> StoreError {
    StoreError::Json {
        what: "agent step arguments",
        source,
    }
}

impl Store {
    /// Appends a step to a reply's trace.
    pub fn add_agent_step(
        &self,
        message_id: i64,
        kind: StepKind,
        step: &NewStep<'_>,
    ) -> Result<AgentStep> {
        let arguments = step
            .arguments
            .map(serde_json::to_string)
            .transpose()
            .map_err(json_error)?;
        let sandbox = step
            .sandbox
            .map(serde_json::to_string)
            .transpose()
            .map_err(json_error)?;
        let id: i64 = self.conn().query_row(
            "INSERT INTO agent_steps (message_id, seq, kind, tool, call_id, arguments, risk,
                 decision, reason, result, exit_code, is_error, duration_ms, created_at, sandbox)
             VALUES (?1, (SELECT COALESCE(MAX(seq), 0) + 1 FROM agent_steps WHERE message_id = ?1),
                     ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14)
             RETURNING id",
            params![
                message_id,
                kind,
                step.tool,
                step.call_id,
                arguments,
                step.risk,
                step.decision,
                step.reason,
                step.result,
                step.exit_code,
                step.is_error,
                step.duration_ms,
                now_ms(),
                sandbox,
            ],
            |row| row.get(0),
        )?;
        self.agent_step(id)
    }

    pub fn agent_step(&self, id: i64) -> Result<AgentStep> {
        let sql = format!("SELECT {COLUMNS} FROM agent_steps WHERE id = ?1");
        let raw = self.conn().query_row(&sql, [id], from_row)?;
        finish(raw)
    }

    /// A reply's steps in order.
    pub fn agent_steps(&self, message_id: i64) -> Result<Vec<AgentStep>> {
        let sql = format!("SELECT {COLUMNS} FROM agent_steps WHERE message_id = ?1 ORDER BY seq");
        let conn = self.conn();
        let mut stmt = conn.prepare(&sql)?;
        let rows = stmt.query_map([message_id], from_row)?;
        rows.map(|row| finish(row?)).collect()
    }
}

fn finish((mut step, arguments): (AgentStep, Option<String>)) -> Result<AgentStep> {
    step.arguments = arguments
        .map(|a| serde_json::from_str(&a))
        .transpose()
        .map_err(json_error)?;
    Ok(step)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::{ChatMode, NewMessage, Role};

    #[test]
    fn steps_are_numbered_per_reply_and_read_back_in_order() {
        let store = Store::open_in_memory().unwrap();
        let project = store
            .insert_project("p", std::path::Path::new("/tmp/p"))
            .unwrap();
        let chat = store
            .create_chat(project.id, ChatMode::Agent, None)
            .unwrap();
        let a = store
            .insert_message(&NewMessage::new(chat.id, Role::Assistant, ""))
            .unwrap();
        let b = store
            .insert_message(&NewMessage::new(chat.id, Role::Assistant, ""))
            .unwrap();
        let args = serde_json::json!({"command": "ls"});
        let plan = NewStep {
            result: Some("1. look"),
            ..NewStep::default()
        };
        store.add_agent_step(a.id, StepKind::Plan, &plan).unwrap();
        store.add_agent_step(b.id, StepKind::Plan, &plan).unwrap();
        let call = NewStep {
            tool: Some("run_shell"),
            arguments: Some(&args),
            risk: Some(Risk::Low),
            decision: Some(StepDecision::Approved),
            exit_code: Some(2),
            is_error: true,
            ..NewStep::default()
        };
        let step = store.add_agent_step(a.id, StepKind::Tool, &call).unwrap();
        assert_eq!(step.seq, 2);
        let steps = store.agent_steps(a.id).unwrap();
        assert_eq!(steps.len(), 2);
        assert_eq!(steps[0].kind, StepKind::Plan);
        assert_eq!(steps[1].arguments.as_ref(), Some(&args));
        assert_eq!(steps[1].decision, Some(StepDecision::Approved));
        assert_eq!((steps[1].exit_code, steps[1].is_error), (Some(2), true));
        // Deleting the reply deletes its trace.
        store.delete_message(a.id).unwrap();
        assert!(store.agent_steps(a.id).unwrap().is_empty());
        assert_eq!(store.agent_steps(b.id).unwrap().len(), 1);
    }
}
