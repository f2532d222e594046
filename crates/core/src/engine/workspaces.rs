//! The chats' workspaces as a whole: which there are, how big, whether they still serve a
//! pending proposal, and removing the ones that do not (at start-up, and when asked).
//!
//! A workspace is **stale** when its chat is gone or archived, or has no pending proposal:
//! nothing will read it again (the next turn of such a chat starts a fresh one on the tree
//! as it is). One in use (a turn or a run has it open, here or in another process) is never
//! removed.

use std::path::{Path, PathBuf};

use serde::Serialize;

use super::{Engine, Result};
use crate::layer::{self, Kind, Layer, LayerError};
use crate::store::{Chat, StoreError};

/// A chat's workspace, as listed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct WorkspaceInfo {
    pub chat_id: i64,
    /// The chat's title; `None` when the chat is gone.
    pub title: Option<String>,
    /// The project it is a view of.
    pub project: Option<PathBuf>,
    /// `overlay`, `copy`, or `unknown` (never opened through, or its record is unreadable).
    pub kind: &'static str,
    /// What it holds on disk, build output included.
    pub bytes: u64,
    /// Its chat has a proposal waiting for the person.
    pub pending: bool,
    /// A turn or a run has it open now.
    pub in_use: bool,
    /// Its chat is gone or archived, or has no pending proposal: cleaning removes it.
    pub stale: bool,
}

/// Which workspaces a clean removes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CleanScope {
    /// The stale ones.
    Stale,
    /// One chat's.
    Chat(i64),
    /// Every one not in use.
    All,
}

/// What a clean removed.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Cleaned {
    /// The chats whose workspaces went.
    pub removed: Vec<i64>,
    pub bytes_freed: u64,
    /// Chats whose workspaces were kept because a turn or a run had them open.
    pub in_use: Vec<i64>,
}

/// What a workspace's chat says of it.
struct ChatState {
    chat: Option<Chat>,
    pending: bool,
}

impl ChatState {
    fn stale(&self) -> bool {
        match &self.chat {
            None => true,
            Some(chat) => chat.archived_at.is_some() || !self.pending,
        }
    }
}

fn kind_name(kind: Option<Kind>) -> &'static str {
    match kind {
        Some(Kind::Overlay) => "overlay",
        Some(Kind::Copy) => "copy",
        None => "unknown",
    }
}

impl Engine {
    fn chat_state(&self, chat_id: i64) -> Result<ChatState> {
        let chat = match self.store.chat(chat_id) {
            Ok(chat) => Some(chat),
            Err(StoreError::NotFound { .. }) => None,
            Err(e) => return Err(e.into()),
        };
        let pending = match &chat {
            Some(_) => self.store.pending_proposal(chat_id)?.is_some(),
            None => false,
        };
        Ok(ChatState { chat, pending })
    }

    /// Every chat's workspace under `home` (the data directory), by chat id.
    pub fn workspaces(&self, home: &Path) -> Result<Vec<WorkspaceInfo>> {
        let mut out = Vec::new();
        for layer in layer::list(home) {
            let state = self.chat_state(layer.chat_id)?;
            let project = layer.project().or_else(|| {
                let chat = state.chat.as_ref()?;
                Some(self.store.project(chat.project_id).ok()?.path)
            });
            out.push(WorkspaceInfo {
                chat_id: layer.chat_id,
                title: state.chat.as_ref().map(|c| c.title.clone()),
                project,
                kind: kind_name(layer.kind()),
                bytes: layer.size(),
                pending: state.pending,
                in_use: layer.in_use(),
                stale: state.stale(),
            });
        }
        Ok(out)
    }

    /// Removes the workspaces of `scope` under `home`, never one in use: asked by chat, that
    /// is [`LayerError::Busy`]; otherwise it is kept and named in [`Cleaned::in_use`].
    pub fn clean_workspaces(&self, home: &Path, scope: CleanScope) -> Result<Cleaned> {
        let mut cleaned = Cleaned::default();
        let layers = match scope {
            CleanScope::Chat(id) => vec![Layer::of(home, id)],
            CleanScope::All | CleanScope::Stale => layer::list(home),
        };
        for layer in layers {
            if !layer.exists() {
                continue;
            }
            if scope == CleanScope::Stale && !self.chat_state(layer.chat_id)?.stale() {
                continue;
            }
            let bytes = layer.size();
            match layer.discard_unused()? {
                true => {
                    cleaned.removed.push(layer.chat_id);
                    cleaned.bytes_freed += bytes;
                }
                false if matches!(scope, CleanScope::Chat(_)) => {
                    return Err(LayerError::Busy.into());
                }
                false => cleaned.in_use.push(layer.chat_id),
            }
        }
        Ok(cleaned)
    }

    /// At start-up: the stale workspaces are moved aside at once and deleted by a thread of
    /// their own (a big one takes seconds). Never fails: a workspace that cannot be judged
    /// or moved now stays for the next start.
    pub(super) fn retire_stale_workspaces(&self) {
        let Some(home) = self.data_dir().map(Path::to_path_buf) else {
            return;
        };
        for layer in layer::list(&home) {
            if self
                .chat_state(layer.chat_id)
                .is_ok_and(|state| state.stale())
            {
                let _ = layer.retire(&home);
            }
        }
        if layer::trash_waiting(&home) {
            let _ = std::thread::Builder::new()
                .name("tandem-trash".into())
                .spawn(move || layer::empty_trash(&home));
        }
    }
}
