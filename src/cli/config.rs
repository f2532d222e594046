//! `tandem config get|set|unset|list` for the global settings, and `tandem project config` for
//! one project's (check command, trust, auto-approve, context globs). Both go through `App`,
//! which checks the values; this file parses flags and prints.

use anyhow::{Context, Result, bail};
use serde_json::{Value, json};
use tandem_core::app::ConfigValue;
use tandem_core::trust::Trust;

use super::ctx::Ctx;

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
    /// Every setting with its value or default.
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
    #[arg(long, value_name = "true|false|default", value_parser = parse_auto_approve)]
    pub auto_approve: Option<AutoApprove>,
    /// Only files matching these globs are sent as context (repeat; replaces the list).
    #[arg(long, value_name = "GLOB", conflicts_with = "no_include")]
    pub include: Vec<String>,
    /// Remove the include globs: every eligible file may be sent.
    #[arg(long)]
    pub no_include: bool,
    /// Files matching these globs are never sent (repeat; replaces the list).
    #[arg(long, value_name = "GLOB", conflicts_with = "no_exclude")]
    pub exclude: Vec<String>,
    /// Remove the exclude globs.
    #[arg(long)]
    pub no_exclude: bool,
    /// Set the rules for one mode (build, ask, agent, plan, security) from --rules-file;
    /// they are sent after AI_RULES.md in that mode.
    #[arg(long, value_name = "MODE", requires = "rules_file")]
    pub rules: Option<String>,
    /// Where to read the mode's rules (`-` reads standard input; an empty file removes them).
    #[arg(long, value_name = "FILE", requires = "rules")]
    pub rules_file: Option<std::path::PathBuf>,
    /// Remove the rules of one mode.
    #[arg(long, value_name = "MODE")]
    pub no_rules: Option<String>,
    /// Write a starter AI_RULES.md (committed) when the project has none.
    #[arg(long)]
    pub starter_rules: bool,
    /// At trust "trusted", let CLI agents (codex, claude-code) run with their own approvals
    /// and sandbox off (Tandem's sandbox still confines them).
    #[arg(long, conflicts_with = "no_agent_bypass")]
    pub allow_agent_bypass: bool,
    /// Withdraw --allow-agent-bypass.
    #[arg(long)]
    pub no_agent_bypass: bool,
}

/// `--auto-approve`: the project's own choice, or `None` for the global setting.
#[derive(Clone, Copy)]
pub struct AutoApprove(Option<bool>);

fn parse_trust(text: &str) -> Result<Trust, String> {
    match text.trim() {
        "read_only" | "read-only" => Ok(Trust::ReadOnly),
        "scoped" => Ok(Trust::Scoped),
        "trusted" => Ok(Trust::Trusted),
        other => Err(format!("{other:?}: trust is read_only, scoped or trusted")),
    }
}

fn parse_auto_approve(text: &str) -> Result<AutoApprove, String> {
    match text.trim() {
        "true" => Ok(AutoApprove(Some(true))),
        "false" => Ok(AutoApprove(Some(false))),
        "default" => Ok(AutoApprove(None)),
        other => Err(format!("{other:?}: auto-approve is true, false or default")),
    }
}

pub fn config(ctx: &Ctx, command: ConfigCommand) -> Result<()> {
    let app = &ctx.app;
    let value = match command {
        ConfigCommand::Get { key } => app.config_get(&key)?,
        ConfigCommand::Set { key, value } => app.config_set(&key, &value)?,
        ConfigCommand::Unset { key } => app.config_unset(&key)?,
        ConfigCommand::List => {
            let all = app.config_list()?;
            let width = all.iter().map(|v| v.key.len()).max().unwrap_or(0);
            let text = all.iter().map(|v| line(v, width)).collect();
            ctx.out(json!({ "settings": all }), text);
            return Ok(());
        }
    };
    ctx.out(serde_json::to_value(&value)?, line(&value, value.key.len()));
    Ok(())
}

/// `key  value`, or `key  default (default)`, or `key  (not set)`.
fn line(value: &ConfigValue, width: usize) -> String {
    let shown = match (&value.value, &value.default) {
        (Some(v), _) => plain(v),
        (None, Some(d)) => format!("{} (default)", plain(d)),
        (None, None) => "(not set)".into(),
    };
    format!("{:<width$}  {shown}\n", value.key)
}

/// A value as a person reads it: text without quotes, the rest as compact JSON.
fn plain(value: &Value) -> String {
    match value {
        Value::String(text) => text.clone(),
        other => other.to_string(),
    }
}

pub fn project(ctx: &Ctx, args: ProjectConfigArgs) -> Result<()> {
    let app = &ctx.app;
    if args
        .check_command
        .as_deref()
        .is_some_and(|c| c.trim().is_empty())
    {
        bail!("--check-command is empty; use --no-check-command to remove the check command");
    }
    let changes = args.check_command.is_some()
        || args.no_check_command
        || args.trust.is_some()
        || args.auto_approve.is_some()
        || !args.include.is_empty()
        || args.no_include
        || !args.exclude.is_empty()
        || args.no_exclude
        || args.rules.is_some()
        || args.no_rules.is_some()
        || args.allow_agent_bypass
        || args.no_agent_bypass;
    let mode_rules = match (&args.rules, &args.rules_file) {
        (Some(mode), Some(file)) => Some((
            mode.clone(),
            String::from_utf8(super::read_input(file)?).context("the rules are not UTF-8 text")?,
        )),
        _ => None,
    };
    if args.starter_rules {
        let project = app.project(&args.project)?;
        let commit = app.write_starter_rules(&project)?;
        if !ctx.json {
            let commit = commit
                .as_deref()
                .map(tandem_core::vcs::short)
                .unwrap_or("no commit");
            super::output::eprintln(format_args!(
                "wrote {} ({commit}): edit it to fit the project",
                tandem_core::app::RULES_FILE
            ));
        }
    }
    let project = match changes {
        false => app.project(&args.project)?,
        true => app.update_project_settings(&args.project, |s| {
            if let Some(command) = &args.check_command {
                s.check_command = Some(command.clone());
            }
            if args.no_check_command {
                s.check_command = None;
            }
            if let Some(trust) = args.trust {
                s.agent_trust = Some(trust);
            }
            if let Some(AutoApprove(auto)) = args.auto_approve {
                s.auto_approve = auto;
            }
            if !args.include.is_empty() || args.no_include {
                s.context_include = args.include.clone();
            }
            if !args.exclude.is_empty() || args.no_exclude {
                s.context_exclude = args.exclude.clone();
            }
            if let Some((mode, text)) = &mode_rules {
                s.mode_rules
                    .insert(mode.trim().to_lowercase(), text.clone());
            }
            if let Some(mode) = &args.no_rules {
                s.mode_rules.remove(&mode.trim().to_lowercase());
            }
            if args.allow_agent_bypass || args.no_agent_bypass {
                s.cli_agent_bypass = args.allow_agent_bypass;
            }
        })?,
    };
    let settings = &project.settings;
    let suggested = match settings.check_command {
        None => app.suggested_check_command(&project),
        Some(_) => None,
    };
    let check = match (&settings.check_command, &suggested) {
        (Some(command), _) => command.clone(),
        (None, Some(suggested)) => format!("(none; suggested: {suggested})"),
        (None, None) => "(none)".into(),
    };
    let global_auto = app.config_get("chat.auto_approve")?;
    let auto = match settings.auto_approve {
        Some(auto) => auto.to_string(),
        None => format!(
            "default ({})",
            global_auto.effective().map(plain).unwrap_or_default()
        ),
    };
    let trust = serde_json::to_value(settings.agent_trust.unwrap_or_default())?;
    let rules: Vec<String> = settings
        .mode_rules
        .iter()
        .map(|(mode, text)| format!("{mode} ({} lines)", text.lines().count()))
        .collect();
    let text = format!(
        "project: {} ({})\ncheck command: {check}\ntrust: {}\nauto-approve: {auto}\n\
         include: {}\nexclude: {}\nrules per mode: {}\nCLI agents without their sandbox: {}\n",
        project.name,
        project.path.display(),
        plain(&trust),
        list(&settings.context_include, "(all files)"),
        list(&settings.context_exclude, "(none)"),
        list(&rules, "(none)"),
        match settings.cli_agent_bypass {
            true => "allowed (at trust \"trusted\")",
            false => "no",
        },
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
            "mode_rules": settings.mode_rules,
            "cli_agent_bypass": settings.cli_agent_bypass,
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
