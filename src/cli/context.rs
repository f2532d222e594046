//! `tandem context`: what a turn would send the model, part by part and file by file, without
//! sending it.

use anyhow::Result;
use serde_json::json;

use tandem_core::app::{PackedAs, SendOptions};

use super::chat::EditorArgs;
use super::ctx::{Ctx, runtime};

pub fn context(
    ctx: &Ctx,
    project: &str,
    prompt: &str,
    provider_name: Option<String>,
    model: Option<String>,
    editor: EditorArgs,
) -> Result<()> {
    let project = ctx.app.project(project)?;
    let options = SendOptions {
        provider: provider_name,
        model,
        editor: editor.focus(),
        ..SendOptions::default()
    };
    let breakdown = runtime()?.block_on(ctx.app.preview(&project, None, prompt, &options))?;
    // A big project lists thousands of paths: only the form asked for is built.
    if ctx.json {
        ctx.out(json!({"breakdown": breakdown}), String::new());
        return Ok(());
    }
    let mut text = format!(
        "{}\nwindow {}: system {} + codebase {} + history {} + prompt {} = {} tokens sent, {} reserved for the reply{}\nfiles: {} included, {} listed by path only, {} skipped\n",
        breakdown.meter(),
        breakdown.window,
        breakdown.system,
        breakdown.codebase,
        breakdown.history,
        breakdown.prompt,
        breakdown.total(),
        breakdown.reply_reserve,
        match breakdown.margin {
            0 => String::new(),
            m => format!(", {m} kept free for how this model counts tokens"),
        },
        breakdown.files_included,
        breakdown.files_listed.len(),
        breakdown.files_skipped.len()
    );
    if let Some(s) = &breakdown.selection {
        text.push_str(&format!(
            "selection sent with the prompt ({} tokens): {} lines {}-{}\n",
            s.tokens, s.path, s.first_line, s.last_line
        ));
    }
    for file in &breakdown.included {
        let how = match file.packed_as {
            PackedAs::Whole => "whole",
            PackedAs::Map => "map",
        };
        text.push_str(&format!(
            "  {how} ({} tokens): {} ({})\n",
            file.tokens, file.path, file.why
        ));
    }
    for path in &breakdown.files_listed {
        text.push_str("  by path only (over budget): ");
        text.push_str(path);
        text.push('\n');
    }
    for (path, reason) in &breakdown.files_skipped {
        text.push_str(&format!("  skipped ({reason:?}): {path}\n"));
    }
    ctx.out(serde_json::Value::Null, text);
    Ok(())
}
