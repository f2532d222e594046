//! `tandem search --project DIR PATTERN`: the project's files searched as the Search panel
//! does (literal by default, `--regex` for a regular expression).

use anyhow::Result;
use serde_json::json;
use tandem_core::app::SearchQuery;

use super::ctx::Ctx;

#[derive(clap::Args)]
pub struct SearchArgs {
    #[arg(long)]
    pub project: String,
    /// The pattern is a regular expression (default: plain text).
    #[arg(long)]
    pub regex: bool,
    #[arg(long, short = 'i')]
    pub ignore_case: bool,
    /// Only files matching this glob (`*.rs` matches at any depth).
    #[arg(long)]
    pub glob: Option<String>,
    /// Search under this folder (or this file) only.
    #[arg(long)]
    pub path: Option<String>,
    #[arg(long, default_value_t = 500)]
    pub max: usize,
    pub pattern: String,
}

pub fn run(ctx: &Ctx, args: SearchArgs) -> Result<()> {
    let project = ctx.app.project(&args.project)?;
    let query = SearchQuery {
        pattern: &args.pattern,
        literal: !args.regex,
        case_insensitive: args.ignore_case,
        glob: args.glob.as_deref(),
        start: args.path.as_deref(),
        max_matches: args.max,
        // The person's own search: their files, shown to them.
        leave_out_secrets: false,
    };
    let found = ctx.app.search(&project, &query)?;
    let mut text: String = found
        .matches
        .iter()
        .map(|m| format!("{}:{}: {}\n", m.path, m.line, m.text))
        .collect();
    if found.cut {
        text.push_str(&format!(
            "[stopped after {} matches: --max raises it]\n",
            args.max
        ));
    }
    if found.skipped > 0 {
        text.push_str(&format!(
            "[{} binary or larger-than-1-MiB files not searched]\n",
            found.skipped
        ));
    }
    ctx.out(
        json!({"matches": found.matches, "cut": found.cut, "skipped": found.skipped}),
        text,
    );
    Ok(())
}
