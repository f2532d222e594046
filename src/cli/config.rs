//! `tandem config get|set|unset|list` for the global settings, and `tandem project config` for
//! one project's (check command, trust, auto-approve, context globs).

use anyhow::{Result, bail};
use serde_json::json;
use tandem::app::ConfigValue;
use tandem::trust::Trust;

use super::chat::Ctx;

#[derive(clap::Subcommand)]
pub enum ConfigCommand {
    /// Print a setting's value (or its default).
    Get { key: String },
    /// Save a setting, checked against the values it takes.
    Set {
        key: String,
        #[arg(allow_hyphen_values = true)]
        value: String,
    },
    /// Remove a saved value: the default applies again.
    Unset { key: String },
    /// Every setting with its value, default and meaning.
    List,
}

#[derive(clap::Args)]
pub struct ProjectConfigArgs {
    /// The project (its folder, or its id).
    #[arg(long)]
    pub project: String,
    /// The command that checks a proposal (run in a scratch copy), e.g. "cargo check".
    #[arg(long, value_name = "CMD", conflicts_with = "no_check_command")]
    pub check_command: Option<String>,
    /// Remove the check command.
    #[arg(long)]
    pub no_check_command: bool,
    /// How far the agent is trusted here: read_only, scoped or trusted.
    #[arg(long, value_parser = parse_trust)]
    pub trust: Option<Trust>,
    /// Apply Build proposals here without review: true, false, or default (the global setting).
    #[arg(long, value_name = "true|false|default")]
    pub auto_approve: Option<String>,
    /// Only files matching these globs are sent as context (repeat; replaces the list).
    #[arg(long, value_name = "GLOB")]
    pub include: Vec<String>,
    /// Files matching these globs are never sent (repeat; replaces the list).
    #[arg(long, value_name = "GLOB")]
    pub exclude: Vec<String>,
}

fn parse_trust(text: &str) -> Result<Trust, String> {
    match text.trim() {
        "read_only" | "read-only" => Ok(Trust::ReadOnly),
        "scoped" => Ok(Trust::Scoped),
        "trusted" => Ok(Trust::Trusted),
        other => Err(format!("{other:?}: trust is read_only, scoped or trusted")),
    }
}

pub fn config(ctx: &Ctx, command: ConfigCommand) -> Result<()> {
    let app = &ctx.app;
    let values = match command {
        ConfigCommand::Get { key } => vec![app.config_get(&key)?],
        ConfigCommand::Set { key, value } => vec![app.config_set(&key, &value)?],
        ConfigCommand::Unset { key } => vec![app.config_unset(&key)?],
        ConfigCommand::List => {
            let all = app.config_list()?;
            let text = all.iter().map(line).collect();
            ctx.out(json!({ "settings": all }), text);
            return Ok(());
        }
    };
    let value = &values[0];
    ctx.out(serde_json::to_value(value)?, line(value));
    Ok(())
}

fn line(value: &ConfigValue) -> String {
    let shown = match (&value.value, &value.default) {
        (Some(v), _) => v.to_string(),
        (None, Some(d)) => format!("{d} (default)"),
        (None, None) => "(not set)".into(),
    };
    format!("{:<26} {shown}\n", value.key)
}

pub fn project(ctx: &Ctx, args: ProjectConfigArgs) -> Result<()> {
    let app = &ctx.app;
    let auto_approve = match args.auto_approve.as_deref().map(str::trim) {
        None => None,
        Some("true") => Some(Some(true)),
        Some("false") => Some(Some(false)),
        Some("default") => Some(None),
        Some(other) => bail!("--auto-approve {other:?}: use true, false or default"),
    };
    let project = app.update_project_settings(&args.project, |s| {
        if let Some(command) = &args.check_command {
            s.check_command = Some(command.trim().to_string());
        }
        if args.no_check_command {
            s.check_command = None;
        }
        if let Some(trust) = args.trust {
            s.agent_trust = Some(trust);
        }
        if let Some(auto) = auto_approve {
            s.auto_approve = auto;
        }
        if !args.include.is_empty() {
            s.context_include = args.include.clone();
        }
        if !args.exclude.is_empty() {
            s.context_exclude = args.exclude.clone();
        }
    })?;
    let settings = &project.settings;
    let suggested = settings
        .check_command
        .is_none()
        .then(|| app.suggested_check_command(&project))
        .flatten();
    let check = match (&settings.check_command, &suggested) {
        (Some(command), _) => command.clone(),
        (None, Some(suggested)) => format!("(none; suggested: {suggested})"),
        (None, None) => "(none)".into(),
    };
    let auto = match settings.auto_approve {
        Some(true) => "on",
        Some(false) => "off",
        None => "as the global setting",
    };
    let trust = settings.agent_trust.unwrap_or_default();
    let text = format!(
        "project        {} ({})\ncheck command  {check}\ntrust          {}\nauto-approve   {auto}\n\
         include        {}\nexclude        {}\n",
        project.name,
        project.path.display(),
        serde_json::to_value(trust)?.as_str().unwrap_or("scoped"),
        list(&settings.context_include, "(all)"),
        list(&settings.context_exclude, "(none)"),
    );
    ctx.out(
        json!({
            "project_id": project.id,
            "path": project.path,
            "check_command": settings.check_command,
            "suggested_check_command": suggested,
            "trust": trust,
            "auto_approve": settings.auto_approve,
            "context_include": settings.context_include,
            "context_exclude": settings.context_exclude,
        }),
        text,
    );
    Ok(())
}

fn list(globs: &[String], empty: &str) -> String {
    match globs.is_empty() {
        true => empty.into(),
        false => globs.join(", "),
    }
}
