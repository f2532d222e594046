//! `tandem gateway connect URL`: the approval client without the window. It answers an
//! executor's requests with the gateway's auto-approve rules until Ctrl-C; what needs a person
//! stays pending in the database, as the gateway leaves it, for the window to decide.

use std::io::BufRead;

use anyhow::{Context, Result, bail};
use clap::Subcommand;
use serde_json::json;
use tandem_core::agent::gateway::GatewayEvent;
use tandem_core::app::{ApproverSettings, ApproverStatus};
use tokio::sync::broadcast::error::RecvError;

use super::ctx::{Ctx, runtime};

/// Where the token comes from when neither the environment nor standard input gives one.
const TOKEN_ENV: &str = "TANDEM_EXECUTOR_TOKEN";

#[derive(Subcommand)]
pub enum GatewayCommand {
    /// Connect to an executor's WebSocket (ws://HOST:PORT/PATH) and answer its approval
    /// requests with the gateway's auto-approve rules (`tandem config get gateway.settings`)
    /// until Ctrl-C, reconnecting when the connection drops. Requests that need a person stay
    /// pending for the window. The token: TANDEM_EXECUTOR_TOKEN, else the first line of
    /// standard input with --token-stdin, else the one saved in Settings.
    Connect {
        url: String,
        #[arg(long)]
        token_stdin: bool,
    },
}

pub fn run(ctx: &Ctx, command: GatewayCommand) -> Result<()> {
    let GatewayCommand::Connect { url, token_stdin } = command;
    let token = match std::env::var(TOKEN_ENV) {
        Ok(token) if !token.trim().is_empty() => token,
        _ if token_stdin => {
            let mut line = String::new();
            std::io::stdin()
                .lock()
                .read_line(&mut line)
                .context("reading the token from standard input")?;
            line
        }
        _ => ctx.app.approver_settings()?.token,
    };
    if token.trim().is_empty() {
        bail!("no executor token: set {TOKEN_ENV}, pass --token-stdin, or save one in Settings");
    }
    let settings = ApproverSettings {
        url,
        connect: true,
        token: token.trim().to_string(),
    };
    let (json, app) = (ctx.json, &ctx.app);
    let say = |line: String| {
        if !json {
            super::output::println(&line);
        }
    };
    let mut pending = Vec::new();
    let mut decided = 0usize;
    let ended = runtime()?.block_on(async {
        let mut interrupts = super::interrupt::Interrupts::listen()?;
        let started = app.start_approver(&settings).await?;
        let (mut events, mut status) = (started.events, started.status);
        let ended = loop {
            tokio::select! {
                _ = interrupts.next() => break Ok("interrupted".to_string()),
                changed = status.changed() => {
                    if changed.is_err() {
                        break Ok("stopped".to_string());
                    }
                    let now = status.borrow_and_update().clone();
                    match now {
                        ApproverStatus::Connected => say(format!("connected to {}", settings.url)),
                        ApproverStatus::Reconnecting { after, error } => {
                            say(format!("{error}; reconnecting in {} s", after.as_secs_f32()));
                        }
                        ApproverStatus::Refused(why) => break Err(why),
                        ApproverStatus::Connecting | ApproverStatus::Stopped => {}
                    }
                }
                event = events.recv() => match event {
                    Ok(GatewayEvent::Requested { id, .. }) => {
                        pending.push(id);
                        say(format!("request #{id} needs a person: left pending for the window"));
                    }
                    Ok(GatewayEvent::Decided { id, approved, decided_by, reason }) => {
                        decided += 1;
                        let verdict = if approved { "approved" } else { "rejected" };
                        let why = reason.map(|r| format!(": {r}")).unwrap_or_default();
                        say(format!("request #{id} {verdict} by {decided_by}{why}"));
                    }
                    Ok(GatewayEvent::BadFrame { id, message, .. }) => {
                        let id = id.unwrap_or_else(|| "no id".into());
                        super::output::eprintln(format_args!("warning: the executor sent a frame Tandem cannot read ({id}): {message}"));
                    }
                    Ok(_) | Err(RecvError::Lagged(_)) => {}
                    Err(RecvError::Closed) => break Ok("stopped".to_string()),
                },
            }
        };
        app.stop_approver().await;
        anyhow::Ok(ended)
    })?;
    let ended = match ended {
        Ok(ended) => ended,
        Err(why) => bail!("{why}"),
    };
    ctx.out(
        json!({"url": settings.url, "decided": decided, "pending": pending, "ended": ended}),
        format!(
            "{ended}: {decided} decided, {} left pending\n",
            pending.len()
        ),
    );
    Ok(())
}
