//! A project's chats from the terminal: listing (archived ones apart), archiving, searching
//! their messages, and one chat's messages.

use anyhow::Result;
use serde_json::json;

use super::ctx::Ctx;

pub fn list(ctx: &Ctx, project: &str, archived: bool) -> Result<()> {
    let project = ctx.app.project(project)?;
    let chats = match archived {
        true => ctx.app.archived_chats(project.id)?,
        false => ctx.app.chats(project.id)?,
    };
    let text = chats
        .iter()
        .map(|c| {
            let model = c.model.as_deref().unwrap_or("");
            format!("{:>5}  {:<6} {:<40} {model}\n", c.id, c.mode, c.title)
        })
        .collect();
    ctx.out(json!({"chats": chats}), text);
    Ok(())
}

pub fn archive(ctx: &Ctx, chat: i64, undo: bool) -> Result<()> {
    let chat = ctx.app.set_chat_archived(chat, !undo)?;
    let what = if undo { "unarchived" } else { "archived" };
    ctx.out(
        json!({"chat": chat}),
        format!("{what} chat {} {}\n", chat.id, chat.title),
    );
    Ok(())
}

pub fn search(ctx: &Ctx, project: &str, query: &str) -> Result<()> {
    let project = ctx.app.project(project)?;
    let hits = ctx.app.search_chats(project.id, query)?;
    let text = hits
        .iter()
        .map(|h| {
            format!(
                "chat {:>4} {:<24} message {:>5} {:<9} {}\n",
                h.chat_id,
                h.chat_title.chars().take(24).collect::<String>(),
                h.message_id,
                h.role.as_str(),
                h.snippet
            )
        })
        .collect();
    ctx.out(json!({"hits": hits}), text);
    Ok(())
}

pub fn messages(ctx: &Ctx, chat: i64) -> Result<()> {
    let messages = ctx.app.messages(chat)?;
    let text = messages
        .iter()
        .map(|m| {
            let first = m.content.lines().next().unwrap_or("");
            format!(
                "{:>5}  {:<9} {:<11} {}\n",
                m.id,
                m.role.as_str(),
                m.status.as_str(),
                first
            )
        })
        .collect();
    ctx.out(json!({"messages": messages}), text);
    Ok(())
}
