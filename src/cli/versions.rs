//! A project's versions from the command line: its history, one version's diff, restore,
//! undo, and saving a file as the editor does (each change one commit).

use std::path::PathBuf;
use std::time::{Duration, UNIX_EPOCH};

use anyhow::Result;
use clap::Subcommand;
use serde_json::json;

use tandem_core::vcs;

use super::ctx::Ctx;
use super::read_input;

#[derive(Subcommand)]
pub enum VersionCommand {
    /// List a project's versions (commits), newest first.
    Log {
        #[arg(long)]
        project: String,
        #[arg(long, default_value_t = 50)]
        limit: usize,
    },
    /// Print one version's diff against its parent.
    ShowVersion {
        #[arg(long)]
        project: String,
        commit: String,
    },
    /// Bring the project back to a version (as a new commit).
    Restore {
        #[arg(long)]
        project: String,
        commit: String,
    },
    /// Undo the last approved change (as a new commit).
    Undo {
        #[arg(long)]
        project: String,
    },
    /// Save a file's new content and commit it, as the editor does.
    Save {
        #[arg(long)]
        project: String,
        /// The file, relative to the project.
        path: String,
        /// Where to read the new content (`-` reads standard input).
        #[arg(long, value_name = "FILE")]
        from: PathBuf,
    },
}

pub fn run(ctx: &Ctx, command: VersionCommand) -> Result<()> {
    let app = &ctx.app;
    let out = |value: serde_json::Value, text: String| ctx.out(value, text);
    match command {
        VersionCommand::Log { project, limit } => {
            let project = app.project(&project)?;
            let versions = app.history(&project, limit)?;
            let mut text = String::new();
            for v in &versions {
                text.push_str(&format!(
                    "{}  {}  {}\n",
                    vcs::short(&v.hash),
                    time(v.time),
                    v.message.lines().next().unwrap_or("")
                ));
                for f in &v.files {
                    let kind = format!("{:?}", f.kind).to_lowercase();
                    text.push_str(&format!("         {kind} {}\n", f.path));
                }
            }
            out(json!({"versions": versions}), text);
        }
        VersionCommand::ShowVersion { project, commit } => {
            let project = app.project(&project)?;
            let diff = app.version_diff(&project, &commit)?;
            out(json!({"commit": commit, "diff": diff}), diff.clone());
        }
        VersionCommand::Restore { project, commit } => {
            let project = app.project(&project)?;
            let outcome = app.restore(&project, &commit)?;
            let mut text = match &outcome.commit {
                Some(c) => format!(
                    "restored {}: commit {c}; {} later chat message(s) removed\n",
                    vcs::short(&outcome.restored),
                    outcome.removed_messages
                ),
                None => format!(
                    "the project already is at {}\n",
                    vcs::short(&outcome.restored)
                ),
            };
            for note in outcome.notes() {
                text.push_str(&format!("note: {note}\n"));
            }
            out(serde_json::to_value(&outcome)?, text);
        }
        VersionCommand::Undo { project } => {
            let project = app.project(&project)?;
            let outcome = app.undo(&project)?;
            let mut text = format!(
                "undid {}: commit {}\n",
                vcs::short(&outcome.reverted),
                outcome.commit
            );
            for note in outcome.notes() {
                text.push_str(&format!("note: {note}\n"));
            }
            out(serde_json::to_value(&outcome)?, text);
        }
        VersionCommand::Save {
            project,
            path,
            from,
        } => {
            let project = app.project(&project)?;
            let bytes = read_input(&from)?;
            let commit = app.save_file(&project, &path, &bytes)?;
            let text = match &commit {
                Some(c) => format!("saved {path}: commit {c}\n"),
                None => format!("saved {path}: unchanged\n"),
            };
            out(json!({"commit": commit}), text);
        }
    }
    Ok(())
}

fn time(seconds: i64) -> String {
    let when = UNIX_EPOCH + Duration::from_secs(u64::try_from(seconds).unwrap_or(0));
    humantime::format_rfc3339_seconds(when).to_string()
}
