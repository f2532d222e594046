//! `tandem prompt add|list|remove`: the prompt library (`@prompt:NAME` in prompts).

use std::path::PathBuf;

use anyhow::{Context, Result};
use clap::Subcommand;
use serde_json::json;

use super::ctx::Ctx;

#[derive(Subcommand)]
pub enum PromptCommand {
    /// Save a prompt (replacing the text of one with the same name).
    Add {
        /// Letters, digits, '-', '_' or '.': used as `@prompt:NAME`.
        #[arg(long)]
        name: String,
        /// Where to read its text (`-` reads standard input).
        #[arg(long, value_name = "FILE")]
        text_file: PathBuf,
    },
    /// List the saved prompts.
    List,
    /// Remove a saved prompt.
    Remove { name: String },
}

pub fn run(ctx: &Ctx, command: PromptCommand) -> Result<()> {
    let app = &ctx.app;
    match command {
        PromptCommand::Add { name, text_file } => {
            let text = String::from_utf8(super::read_input(&text_file)?)
                .context("the prompt's text is not UTF-8")?;
            let saved = app.save_prompt(&name, &text)?;
            ctx.out(
                json!({"prompt": saved}),
                format!(
                    "saved @prompt:{} ({} characters)\n",
                    saved.name,
                    saved.text.chars().count()
                ),
            );
        }
        PromptCommand::List => {
            let prompts = app.prompts()?;
            let text = prompts
                .iter()
                .map(|p| {
                    let first = p.text.lines().next().unwrap_or("");
                    let first: String = first.chars().take(70).collect();
                    format!("@prompt:{:<24} {first}\n", p.name)
                })
                .collect::<String>();
            let text = match text.is_empty() {
                true => "no saved prompts (add one with `tandem prompt add --name NAME --text-file F`)\n"
                    .to_string(),
                false => text,
            };
            ctx.out(json!({"prompts": prompts}), text);
        }
        PromptCommand::Remove { name } => {
            app.remove_prompt(&name)?;
            ctx.out(
                json!({"removed": name}),
                format!("removed @prompt:{name}\n"),
            );
        }
    }
    Ok(())
}
