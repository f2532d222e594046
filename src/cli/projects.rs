//! Projects from the command line: add a folder (indexed while the person waits), list them,
//! show or change one's settings.

use std::path::PathBuf;

use anyhow::Result;
use clap::Subcommand;
use serde_json::json;

use super::config;
use super::ctx::Ctx;

#[derive(Subcommand)]
pub enum ProjectCommand {
    /// Add a folder as a project (runs `git init` if it is not a repository).
    Add {
        path: PathBuf,
        #[arg(long)]
        name: Option<String>,
    },
    /// List projects.
    List,
    /// Show or change a project's settings: check command, trust, auto-approve, context globs.
    Config(config::ProjectConfigArgs),
}

pub fn run(ctx: &Ctx, command: ProjectCommand) -> Result<()> {
    let app = &ctx.app;
    let out = |value: serde_json::Value, text: String| ctx.out(value, text);
    match command {
        ProjectCommand::Add { path, name } => {
            let added = app.add_project(&path, name.as_deref())?;
            let p = &added.project;
            let note = match (added.already_added, added.initialized_git) {
                (true, _) => " (already added)",
                (false, true) => " (initialised a git repository with an initial commit)",
                (false, false) => "",
            };
            // The code index is built now, while the person waits for the import anyway, so
            // that the first turn does not.
            let indexed = app.index_project(p)?;
            let files = indexed.extracted + indexed.unchanged;
            out(
                json!({"project_id": p.id, "name": p.name, "path": p.path, "initialized_git": added.initialized_git, "indexed_files": files}),
                format!(
                    "project {} {} at {}{note}; {files} files in its code index\n",
                    p.id,
                    p.name,
                    p.path.display()
                ),
            );
        }
        ProjectCommand::List => {
            let projects = app.projects()?;
            let text = projects
                .iter()
                .map(|p| format!("{:>4}  {:<20} {}\n", p.id, p.name, p.path.display()))
                .collect();
            out(json!({"projects": projects}), text);
        }
        ProjectCommand::Config(args) => config::project(ctx, args)?,
    }
    Ok(())
}
