//! What changed, said once for every front-end: the turns' events and what the use cases
//! changed, on one stream ([`App::subscribe`]). The window maps it onto its state, the CLI
//! prints what it follows; neither decides what a use case changed.

use tokio::sync::broadcast;
use tokio::sync::broadcast::error::RecvError;

use super::App;
use crate::chat::ChatEvent;

/// How many changes a slow subscriber may fall behind before it misses some (it is told).
const BUFFER: usize = 256;

/// One thing that changed.
#[derive(Debug, Clone)]
pub enum AppEvent {
    /// A turn's event: started, a delta, a step, a question, finished, …
    Chat(Box<ChatEvent>),
    /// The project's chats changed: one made, renamed, switched to another mode, archived or
    /// deleted. The list shown is to be read again.
    ChatsChanged { project_id: i64 },
}

/// The stream of [`AppEvent`]s from the moment it was subscribed.
pub struct AppEvents {
    chats: broadcast::Receiver<ChatEvent>,
    changes: broadcast::Receiver<AppEvent>,
}

impl AppEvents {
    /// The next event. `Err(Lagged)` says some were missed (the subscriber was too slow);
    /// `Err(Closed)` that the app is gone.
    pub async fn recv(&mut self) -> Result<AppEvent, RecvError> {
        tokio::select! {
            event = self.chats.recv() => event.map(|e| AppEvent::Chat(Box::new(e))),
            event = self.changes.recv() => event,
        }
    }
}

/// Where the use cases say what they changed.
pub(super) struct Changes(broadcast::Sender<AppEvent>);

impl Default for Changes {
    fn default() -> Self {
        Changes(broadcast::channel(BUFFER).0)
    }
}

impl App {
    /// Every change from now on: the turns' events and what the use cases changed.
    pub fn subscribe(&self) -> AppEvents {
        AppEvents {
            chats: self.chat.subscribe(),
            changes: self.changes.0.subscribe(),
        }
    }

    /// Tells the subscribers (none listening is not an error).
    pub(super) fn changed(&self, event: AppEvent) {
        let _ = self.changes.0.send(event);
    }

    pub(super) fn chats_changed(&self, project_id: i64) {
        self.changed(AppEvent::ChatsChanged { project_id });
    }
}
