//! `tandem provider …` and `tandem models`: adding, listing, checking and removing model
//! providers (and CLI agents' logins), and the models a provider offers.

use std::io::Read;

use anyhow::{Context, Result, bail};
use clap::Subcommand;
use serde_json::json;

use super::ctx::{Ctx, runtime};
use tandem_core::app::NewProvider;
use tandem_core::llm::ProviderKind;
use tandem_core::store::ProviderSettings;

#[derive(Subcommand)]
pub enum ProviderCommand {
    /// Add a model provider.
    Add {
        #[arg(long)]
        name: String,
        #[arg(long, value_parser = parse_kind)]
        kind: ProviderKind,
        /// The server's URL; for `codex` and `claude-code`, the program to run (default: found
        /// on PATH).
        #[arg(long, alias = "program")]
        base_url: Option<String>,
        /// The environment variable that holds the API key.
        #[arg(long)]
        api_key_env: Option<String>,
        /// The model used when none is named.
        #[arg(long)]
        default_model: Option<String>,
        /// Overrides the context length the provider reports.
        #[arg(long)]
        context_length: Option<u32>,
    },
    /// List providers (keys are never shown).
    List,
    /// Store a provider's API key, read from standard input (in the keychain, else a 0600 file).
    SetKey {
        name: String,
        /// Keep the keys already stored and add this one: requests rotate to the next key
        /// when one is rate limited or out of quota.
        #[arg(long)]
        add: bool,
    },
    /// A provider's keys by fingerprint (never the key), and which one is in use.
    Keys { name: String },
    /// Remove one stored key, named by its fingerprint (`tandem provider keys NAME`).
    RemoveKey { name: String, fingerprint: String },
    /// Remove a provider.
    Remove { name: String },
    /// A CLI agent provider (codex, claude-code): is it installed, is it logged in?
    Status { name: String },
    /// Log a CLI agent provider in (Codex: device code; prints the link and the code).
    Login { name: String },
}

fn parse_kind(text: &str) -> Result<ProviderKind, String> {
    text.parse()
}

pub fn provider_cmd(ctx: &Ctx, command: ProviderCommand) -> Result<()> {
    let app = &ctx.app;
    match command {
        ProviderCommand::Add {
            name,
            kind,
            base_url,
            api_key_env,
            default_model,
            context_length,
        } => {
            let record = app.add_provider(NewProvider {
                name,
                kind,
                base_url,
                api_key_env,
                settings: ProviderSettings {
                    default_model,
                    context_length,
                },
            })?;
            let mut text = format!(
                "added provider {} ({kind}) at {}\n",
                record.name, record.base_url
            );
            let mut value = json!({"provider": record});
            // A CLI agent is looked for at once: missing or logged out is said now.
            if kind.is_cli_agent() {
                let status = runtime()?.block_on(app.agent_status(&record.name))?;
                text.push_str(&status_line(&record.name, &status));
                value["status"] = serde_json::to_value(&status)?;
            }
            ctx.out(value, text);
        }
        ProviderCommand::Status { name } => {
            let status = runtime()?.block_on(app.agent_status(&name))?;
            ctx.out(
                json!({"provider": name, "status": status, "ready": status.is_ready()}),
                status_line(&name, &status),
            );
            if let tandem_core::cli_agents::LoginStatus::Missing(_) = status {
                bail!("{name} is not installed");
            }
        }
        ProviderCommand::Login { name } => {
            let cancel = tokio_util::sync::CancellationToken::new();
            let json = ctx.json;
            let ok = runtime()?.block_on(app.agent_login(&name, &cancel, |line| match json {
                true => super::output::json(&json!({"line": line})),
                false => super::output::println(&line),
            }))?;
            ctx.out(
                json!({"logged_in": ok}),
                format!("{}\n", if ok { "logged in" } else { "not logged in" }),
            );
            if !ok {
                bail!("the login of {name} did not complete");
            }
        }
        ProviderCommand::List => {
            let mut rows = Vec::new();
            let mut text = String::new();
            for row in app.provider_rows()? {
                let (record, key) = (row.record, row.key.to_string());
                let keys = app.provider_keys(&record.name)?;
                let in_use = keys.iter().find(|k| k.in_use).map(|k| &k.fingerprint);
                let key_text = match (keys.len(), in_use) {
                    (0, _) | (_, None) => key.clone(),
                    (1, Some(fp)) => format!("{key} ({fp})"),
                    (n, Some(fp)) => format!("{key} ({n} keys, in use {fp})"),
                };
                text.push_str(&format!(
                    "{:<14} {:<10} {:<45} key: {key_text}\n",
                    record.name, record.kind, record.base_url
                ));
                rows.push(json!({"provider": record, "key": key, "keys": keys}));
            }
            ctx.out(json!({"providers": rows}), text);
        }
        ProviderCommand::Keys { name } => {
            let keys = app.provider_keys(&name)?;
            let text: String = keys
                .iter()
                .map(|k| {
                    let mark = if k.in_use { "  (in use)" } else { "" };
                    format!("{}  {}{mark}\n", k.fingerprint, k.source)
                })
                .collect();
            let text = match keys.is_empty() {
                true => format!("{name} has no key\n"),
                false => text,
            };
            ctx.out(json!({"provider": name, "keys": keys}), text);
        }
        ProviderCommand::RemoveKey { name, fingerprint } => {
            app.remove_key(&name, &fingerprint)?;
            ctx.out(
                json!({"removed": fingerprint}),
                format!("removed the key {fingerprint} of {name}\n"),
            );
        }
        ProviderCommand::SetKey { name, add } => {
            // The provider is checked before the key is read.
            app.provider(&name)?;
            let mut key = String::new();
            std::io::stdin()
                .read_to_string(&mut key)
                .context("reading the key from standard input")?;
            if key.trim().is_empty() {
                bail!("no key on standard input");
            }
            let stored = match add {
                true => app.add_key(&name, &key)?,
                false => app.set_key(&name, &key)?,
            };
            let (location, why) = (stored.location, stored.keychain_unavailable);
            let text = match (&location, &why) {
                (tandem_core::llm::secrets::SecretLocation::File(path), Some(why)) => format!(
                    "stored the key for {name} in {} (mode 0600), not in the OS keychain: {why}\n",
                    path.display()
                ),
                _ => format!("stored the key for {name}: {location:?}\n"),
            };
            ctx.out(
                json!({"stored": location, "keychain_unavailable": why}),
                text,
            );
        }
        ProviderCommand::Remove { name } => {
            app.remove_provider(&name)?;
            ctx.out(
                json!({"removed": name}),
                format!("removed provider {name}\n"),
            );
        }
    }
    Ok(())
}

/// One line saying whether a CLI agent is ready.
fn status_line(name: &str, status: &tandem_core::cli_agents::LoginStatus) -> String {
    use tandem_core::cli_agents::LoginStatus::*;
    let first = |s: &str| s.lines().next().unwrap_or("").to_string();
    match status {
        Missing(why) => format!("{name}: not installed: {why}\n"),
        LoggedIn(said) => format!("{name}: logged in ({})\n", first(said)),
        LoggedOut(said) => format!(
            "{name}: not logged in ({}); run `tandem provider login {name}`\n",
            first(said)
        ),
        Unknown(said) => format!("{name}: {said}\n"),
    }
}

pub fn models(ctx: &Ctx, provider_name: Option<String>) -> Result<()> {
    let listed = runtime()?.block_on(ctx.app.models_of(provider_name.as_deref()))?;
    let mut all = Vec::new();
    let mut text = String::new();
    for entry in listed {
        let name = entry.provider;
        match entry.models {
            Ok(models) => {
                for model in &models {
                    let window = model
                        .context_length
                        .map(|c| format!("{c} tokens"))
                        .unwrap_or_default();
                    text.push_str(&format!("{name:<14} {:<40} {window}\n", model.id));
                }
                all.push(json!({"provider": name, "models": models}));
            }
            Err(e) => {
                text.push_str(&format!("{name:<14} error: {e}\n"));
                all.push(json!({"provider": name, "error": e}));
            }
        }
    }
    ctx.out(json!({"providers": all}), text);
    Ok(())
}
