//! Chats in the background: creating and loading them, sending and redoing turns (async,
//! straight on the runtime), and approving the proposals replies make.

use std::future::Future;
use std::sync::Arc;

use tokio::task::block_in_place;

use super::refresh::reload_chat;
use super::{Backend, Emit, Event, Opened};
use tandem_core::app::{App, AppError, SendOptions, StartedTurn};
use tandem_core::edits::Selection;
use tandem_core::store::ChatMode;

impl Backend {
    pub fn load_chat(&self, chat_id: i64) {
        self.spawn("loading the chat", move |app, emit| {
            reload_chat(&app, &emit, chat_id)
        });
    }

    pub fn new_chat(&self, project_id: i64, mode: ChatMode) {
        self.spawn("creating a chat", move |app, emit| {
            let chat = app.new_chat(project_id, mode)?;
            reload_chat(&app, &emit, chat.id)
        });
    }

    /// Starts a new chat from a summary of `chat_id`, and shows it.
    pub fn summarize_into_new_chat(&self, chat_id: i64, options: SendOptions) {
        self.spawn_async("summarizing the chat", move |app, emit| async move {
            let chat = app.summarize_into_new_chat(chat_id, &options).await?;
            reload_chat(&app, &emit, chat.id)
        });
    }

    /// Sends a prompt in `mode` (the chat is switched first when it differs, so the turn
    /// cannot start in the old mode), or redoes the last one; the reply streams in as
    /// [`Event::Chat`] events.
    pub fn send(
        &self,
        chat_id: i64,
        mode: ChatMode,
        prompt: String,
        options: SendOptions,
        redo: bool,
    ) {
        self.spawn_async("sending", move |app, emit| async move {
            let attachments = options.attachments.clone();
            let started = match redo {
                true => app.redo(chat_id, options).await,
                false => app.send(chat_id, Some(mode), &prompt, options).await,
            };
            let started = match started {
                Ok(started) => started,
                Err(e) if redo => return Err(e.into()),
                Err(e) => return not_sent(&emit, None, prompt, attachments, e).await,
            };
            run_turn(&emit, started).await
        });
    }

    /// Starts a chat in the project and sends the first prompt into it.
    pub fn start_chat(
        &self,
        project_id: i64,
        mode: ChatMode,
        prompt: String,
        options: SendOptions,
    ) {
        self.spawn_async("starting a chat", move |app, emit| async move {
            let attachments = options.attachments.clone();
            // Open before the send, so that the turn's first events find it.
            let (new, loaded) = block_in_place(|| -> anyhow::Result<_> {
                let new = app.start_chat(project_id, mode)?;
                let loaded = app.load_chat(new.chat.id)?;
                Ok((new, loaded))
            })?;
            emit.send_async(Event::ChatLoaded(Box::new(loaded))).await;
            let chat_id = new.chat.id;
            let started = match new.send(&prompt, options).await {
                Ok(started) => started,
                // The chat made for the prompt is gone again.
                Err(e) => return not_sent(&emit, Some(chat_id), prompt, attachments, e).await,
            };
            run_turn(&emit, started).await
        });
    }

    /// Runs `start`, an async use case that starts a turn (implementing a plan, fixing
    /// problems), and reports the turn from start to finish, then the chat as it is after it.
    pub fn turn<F, Fut>(&self, action: &str, start: F)
    where
        F: FnOnce(Arc<App>) -> Fut + Send + 'static,
        Fut: Future<Output = Result<StartedTurn, AppError>> + Send + 'static,
    {
        self.spawn_async(action, move |app, emit| async move {
            let started = start(Arc::clone(&app)).await?;
            run_turn(&emit, started).await
        });
    }

    /// Cancels a streaming reply (a flag and a token: no waiting).
    pub fn cancel(&self, chat_id: i64) {
        if let Opened::Ready(app) = &*self.app.borrow() {
            app.cancel(chat_id);
        }
    }

    /// `reason`: why the person left part out (empty: none given).
    pub fn approve(&self, message_id: i64, selection: Selection, reason: String) {
        self.spawn("applying the changes", move |app, emit| {
            let reason = Some(reason.as_str()).filter(|r| !r.trim().is_empty());
            let outcome = app.approve(message_id, Some(&selection), reason)?;
            if let Some(report) = &outcome.install {
                emit.send(Event::Log(format!(
                    "$ {}\n{}",
                    report.command, report.output
                )));
            }
            if let Some(error) = &outcome.install_error {
                emit.send(Event::Log(format!("dependencies not installed: {error}")));
            }
            emit.send(Event::Approved {
                message_id,
                outcome,
            });
            Ok(())
        });
    }
}

/// Reports a started turn, and waits for it to end (a task that failed is reported as an
/// error). Its end comes on the app's stream: `ChatEventKind::Finished` (with what
/// auto-approve made of its proposal), then the chat changed, which the window reads again if
/// it is the one open, once it no longer streams.
async fn run_turn(emit: &Emit, started: StartedTurn) -> anyhow::Result<()> {
    let chat_id = started.chat_id;
    emit.send_async(Event::TurnStarted {
        chat_id,
        user: started.user.clone(),
        reply_id: started.reply_id,
    })
    .await;
    started.finish().await?;
    Ok(())
}

/// A prompt the person typed that could not be sent: the error is shown and the prompt goes
/// back to the composer (with its attachments), so that nothing typed is lost.
async fn not_sent(
    emit: &Emit,
    deleted_chat: Option<i64>,
    prompt: String,
    attachments: Vec<tandem_core::app::Attach>,
    error: AppError,
) -> anyhow::Result<()> {
    emit.send_async(Event::NotSent {
        deleted_chat,
        prompt,
        attachments,
        message: format!("{:#}", anyhow::Error::from(error)),
    })
    .await;
    Ok(())
}
