//! Proposals from the command line: store a reply as one, show its diff, approve it (whole, by
//! file or by hunk) or reject it.

use std::path::PathBuf;

use anyhow::{Context, Result, bail};
use clap::Subcommand;
use serde_json::json;

use tandem_core::edits::plan::EditPlan;
use tandem_core::edits::{FileSelection, OpStatus, Selection};

use super::ctx::Ctx;
use super::read_input;

#[derive(Subcommand)]
pub enum ProposalCommand {
    /// Store a model reply as a proposal and show its plan.
    Propose {
        /// Project id or folder path.
        #[arg(long)]
        project: String,
        /// The reply text (`-` reads standard input).
        #[arg(long, value_name = "FILE")]
        response: PathBuf,
        /// The prompt the reply answers (stored as the user message).
        #[arg(long)]
        prompt: Option<String>,
        /// Add to this chat instead of starting a new one.
        #[arg(long)]
        chat: Option<i64>,
    },
    /// Print a proposal's unified diff.
    Diff { message_id: i64 },
    /// Apply a pending proposal as one commit.
    Approve {
        message_id: i64,
        /// Apply only these files (repeat); `PATH:1,3` applies only hunks 1 and 3 (1-based).
        #[arg(long = "only", value_name = "PATH[:HUNKS]")]
        only: Vec<String>,
        /// With --only: do not install the proposal's dependencies.
        #[arg(long)]
        skip_dependencies: bool,
        /// Why the rest was left out; told to the model on the next turn with what was.
        #[arg(long)]
        reason: Option<String>,
    },
    /// Reject a pending proposal; nothing on disk changes.
    Reject {
        message_id: i64,
        /// Why; told to the model on the next turn.
        #[arg(long)]
        reason: Option<String>,
    },
}

pub fn run(ctx: &Ctx, command: ProposalCommand) -> Result<()> {
    let app = &ctx.app;
    let out = |value: serde_json::Value, text: String| ctx.out(value, text);
    match command {
        ProposalCommand::Propose {
            project,
            response,
            prompt,
            chat,
        } => {
            let project = app.project(&project)?;
            let reply = String::from_utf8(read_input(&response)?)
                .context("the response file is not UTF-8 text")?;
            let proposal = app.propose(&project, chat, prompt.as_deref(), &reply)?;
            let id = proposal.message.id;
            out(
                json!({
                    "message_id": id,
                    "chat_id": proposal.chat.id,
                    "approval_state": proposal.message.approval_state,
                    "operations": operations_json(&proposal.plan),
                    "files": proposal.plan.files,
                    "dependencies": proposal.plan.dependencies,
                    "summary": proposal.plan.summary,
                }),
                plan_text(id, proposal.chat.id, &proposal.plan),
            );
        }
        ProposalCommand::Diff { message_id } => {
            let review = app.review(message_id)?;
            let diff = review.plan.unified_diff();
            out(
                json!({"message_id": message_id, "diff": diff}),
                diff.clone(),
            );
        }
        ProposalCommand::Approve {
            message_id,
            only,
            skip_dependencies,
            reason,
        } => {
            let selection = selection(&only, skip_dependencies)?;
            let outcome = app.approve(message_id, selection.as_ref(), reason.as_deref())?;
            let mut text = match &outcome.commit {
                Some(commit) => format!("approved: commit {commit}\n"),
                None => "approved: nothing needed changing, no commit\n".to_string(),
            };
            if let Some(manual) = &outcome.manual_commit {
                text.push_str(&format!(
                    "(your uncommitted edits were committed first: {manual})\n"
                ));
            }
            if let Some(report) = &outcome.install {
                let state = if report.success { "ok" } else { "FAILED" };
                text.push_str(&format!(
                    "dependencies: `{}` {state}\n{}",
                    report.command, report.output
                ));
            }
            if let Some(error) = &outcome.install_error {
                text.push_str(&format!("dependencies not installed: {error}\n"));
            }
            out(serde_json::to_value(&outcome)?, text);
        }
        ProposalCommand::Reject { message_id, reason } => {
            app.reject(message_id, reason.as_deref())?;
            out(
                json!({"message_id": message_id, "approval_state": "rejected"}),
                format!("rejected message {message_id}\n"),
            );
        }
    }
    Ok(())
}

/// `--only PATH[:1,3]` (hunks 1-based, as shown by `tandem diff`).
fn selection(only: &[String], skip_dependencies: bool) -> Result<Option<Selection>> {
    if only.is_empty() {
        if skip_dependencies {
            bail!("--skip-dependencies needs --only (name the files to apply)");
        }
        return Ok(None);
    }
    let files = only
        .iter()
        .map(|spec| {
            let (path, hunks) = match spec.rsplit_once(':') {
                Some((path, list))
                    if !list.is_empty()
                        && list.split(',').all(|h| h.trim().parse::<usize>().is_ok()) =>
                {
                    let hunks = list
                        .split(',')
                        .filter_map(|h| h.trim().parse::<usize>().ok())
                        .map(|h| h.checked_sub(1).context("hunks are numbered from 1"))
                        .collect::<Result<Vec<_>>>()?;
                    (path.to_string(), Some(hunks))
                }
                _ => (spec.clone(), None),
            };
            Ok(FileSelection { path, hunks })
        })
        .collect::<Result<_>>()?;
    Ok(Some(Selection {
        files,
        dependencies: !skip_dependencies,
    }))
}

fn operations_json(plan: &EditPlan) -> serde_json::Value {
    serde_json::to_value(&plan.operations).unwrap_or_default()
}

fn plan_text(message_id: i64, chat_id: i64, plan: &EditPlan) -> String {
    let mut text = format!("message {message_id} in chat {chat_id}\n");
    if let Some(summary) = &plan.summary {
        text.push_str(&format!("summary: {summary}\n"));
    }
    for op in &plan.operations {
        let status = match op.status {
            OpStatus::Ok => match &op.note {
                Some(note) => format!("ok ({note})"),
                None => "ok".to_string(),
            },
            OpStatus::AlreadyApplied => "already applied".to_string(),
            OpStatus::Error => format!("ERROR: {}", op.error.as_deref().unwrap_or("")),
        };
        let target = match &op.to {
            Some(to) => format!("{} -> {to}", op.path),
            None => op.path.clone(),
        };
        text.push_str(&format!(
            "  {:<15} {:<40} +{:<4} -{:<4} {status}\n",
            serde_json::to_value(op.op)
                .ok()
                .and_then(|v| v.as_str().map(str::to_string))
                .unwrap_or_default(),
            target,
            op.added,
            op.removed
        ));
    }
    for sql in &plan.sql {
        text.push_str(&format!(
            "  sql (not executed): {}\n",
            sql.description.as_deref().unwrap_or(&sql.sql)
        ));
    }
    for finding in &plan.security_findings {
        text.push_str(&format!(
            "  security finding [{}]: {}\n",
            finding.level, finding.title
        ));
    }
    if plan.is_proposal() {
        let ready = plan.errors().next().is_none();
        text.push_str(&if ready {
            format!("review: tandem diff {message_id} | approve: tandem approve {message_id} | reject: tandem reject {message_id}\n")
        } else {
            format!("some operations failed: approve only the working files with `tandem approve {message_id} --only PATH`, or reject\n")
        });
    } else {
        text.push_str("no changes proposed\n");
    }
    text
}
