//! `tandem model show|check|set`: what Tandem knows of a model, the check-up, and the
//! person's per-model settings.

use anyhow::Result;
use tandem_core::app::{GenerationSettings, ModelProfile};

use super::ctx::{Ctx, runtime};

#[derive(clap::Subcommand)]
pub enum ModelCommand {
    /// What is known of a model: its window (and where it came from), native tool calls,
    /// images, your settings, how its search-replace edits fared.
    Show(Which),
    /// Run the check-up now: ask the server for the window and capabilities, and try one
    /// native tool call.
    Check(Which),
    /// Your settings for a model; a flag left out keeps its value, `default` clears it.
    Set {
        #[command(flatten)]
        which: Which,
        /// Context window to use instead of what the server reports (tokens).
        #[arg(long, value_name = "TOKENS|default")]
        context: Option<String>,
        /// Sampling temperature, 0 to 2.
        #[arg(long, value_name = "T|default")]
        temperature: Option<String>,
        /// Most tokens a reply may take.
        #[arg(long, value_name = "TOKENS|default")]
        max_output: Option<String>,
        /// How hard a reasoning model thinks: minimal, low, medium, high (OpenAI's
        /// reasoning models; other models ignore it).
        #[arg(long, value_name = "EFFORT|default")]
        reasoning_effort: Option<String>,
    },
}

#[derive(clap::Args)]
pub struct Which {
    /// The model (default: the provider's default model).
    pub model: Option<String>,
    /// The provider (default: the default provider).
    #[arg(long)]
    pub provider: Option<String>,
}

pub fn run(ctx: &Ctx, command: ModelCommand) -> Result<()> {
    let app = &ctx.app;
    let profile = match command {
        ModelCommand::Show(which) => runtime()?
            .block_on(app.model_profile(which.provider.as_deref(), which.model.as_deref()))?,
        ModelCommand::Check(which) => runtime()?
            .block_on(app.check_model(which.provider.as_deref(), which.model.as_deref()))?,
        ModelCommand::Set {
            which,
            context,
            temperature,
            max_output,
            reasoning_effort,
        } => {
            // The stored override only (the provider-wide one is not this model's setting).
            let stored = app
                .model_profile_stored(which.provider.as_deref(), which.model.as_deref())?
                .map(|p| p.settings)
                .unwrap_or_default();
            let settings = GenerationSettings {
                context_length: value(context, stored.context_length, "--context")?,
                temperature: value(temperature, stored.temperature, "--temperature")?,
                max_output_tokens: value(max_output, stored.max_output_tokens, "--max-output")?,
                reasoning_effort: match reasoning_effort.as_deref().map(str::trim) {
                    None => stored.reasoning_effort,
                    Some("default") => None,
                    Some(text) => Some(
                        text.parse()
                            .map_err(|e: String| anyhow::anyhow!("--reasoning-effort: {e}"))?,
                    ),
                },
            };
            app.set_model_settings(which.provider.as_deref(), which.model.as_deref(), &settings)?
        }
    };
    ctx.out(serde_json::to_value(&profile)?, describe(&profile));
    Ok(())
}

/// A flag's new value: absent keeps `old`, `default` clears it, anything else must parse.
fn value<T: std::str::FromStr>(
    flag: Option<String>,
    old: Option<T>,
    name: &str,
) -> Result<Option<T>> {
    match flag.as_deref().map(str::trim) {
        None => Ok(old),
        Some("default") => Ok(None),
        Some(text) => text
            .parse()
            .map(Some)
            .map_err(|_| anyhow::anyhow!("{name}: {text:?} is not a number (or `default`)")),
    }
}

fn describe(p: &ModelProfile) -> String {
    let yes_no = |b: bool| if b { "yes" } else { "no" };
    let window = match (
        p.context_length(),
        p.settings.context_length,
        &p.info.context_source,
    ) {
        (Some(n), Some(_), _) => format!("{n} tokens (your setting)"),
        (Some(n), None, Some(source)) => format!("{n} tokens (from {source})"),
        (Some(n), None, None) => format!("{n} tokens"),
        (None, _, _) => "unknown (8192 assumed; set it with `tandem model set --context`)".into(),
    };
    let tools = match p.tools_probe {
        Some(true) => "yes (a probe call came back)".to_string(),
        Some(false) => "no (the probe got no call; Agent mode uses the text protocol)".into(),
        None => format!(
            "{} (as the server says; not probed yet)",
            yes_no(p.info.supports_tools)
        ),
    };
    let checked = match p.checked_at {
        Some(ms) => humantime::format_rfc3339_seconds(
            std::time::UNIX_EPOCH
                + std::time::Duration::from_millis(u64::try_from(ms).unwrap_or(0)),
        )
        .to_string(),
        None => "never (`tandem model check`)".into(),
    };
    let opt = |v: Option<String>| v.unwrap_or_else(|| "default".into());
    let edits = match p.edit_blocks {
        0 => "none yet".to_string(),
        n => format!("{} of {n} search-replace blocks failed", p.edit_failures),
    };
    let tokens = match p.token_ratio {
        Some(r) => {
            format!("its server counts {r:.2}× Tandem's estimate (kept free in each request)")
        }
        None => "as estimated".to_string(),
    };
    format!(
        "model        {}\nwindow       {window}\nnative tools {tools}\nimages       {}\n\
         checked      {checked}\ntemperature  {}\nmax output   {}\nreasoning    {}\n\
         edits        {edits}\ntokens       {tokens}\n",
        p.info.id,
        yes_no(p.info.supports_images),
        opt(p.settings.temperature.map(|t| t.to_string())),
        opt(p.settings.max_output_tokens.map(|t| t.to_string())),
        opt(p.settings.reasoning_effort.map(|e| e.to_string())),
    )
}
