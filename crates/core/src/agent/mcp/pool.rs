//! [`McpPool`]: the MCP servers of each chat and project, kept for their agent turns.
//!
//! A stdio server is a process Tandem starts for a model, so it runs in the world made for
//! the chat's agent (see [`World`]): its chat's workspace, open only while a turn holds it.
//! The pool keeps it per **chat**: started on the turn's first use ([`McpPool::hub`]) and
//! stopped when the turn ends ([`McpPool::close_chat`], before the workspace closes; a server
//! must never outlive the view it writes into). A remote server (HTTP, SSE) is no process of
//! Tandem's and sees no files: it is kept per **project**, across turns and chats, as before.
//!
//! Each turn hands in the configured servers: one removed, disabled or changed since (its
//! record differs) is stopped, a new one is started. [`McpPool::close_project`] stops a
//! project's servers, its chats' included; [`McpPool::close_all`] every one (the app closing).

use std::collections::HashMap;
use std::sync::Arc;

use futures_util::future::join_all;

use super::slot::{Slot, Timing};
use super::{McpError, McpHub, World};
use crate::store::{McpServerRecord, McpTransport};

/// The running MCP servers.
#[derive(Default)]
pub struct McpPool {
    running: tokio::sync::Mutex<Running>,
    timing: Timing,
}

#[derive(Default)]
struct Running {
    /// Remote servers, per project id.
    projects: HashMap<i64, Vec<Arc<Slot>>>,
    /// Stdio servers, per chat id, with the chat's project.
    chats: HashMap<i64, (i64, Vec<Arc<Slot>>)>,
}

impl Running {
    /// Takes out every slot `keep` says no to.
    fn retire(&mut self, keep: impl Fn(&Arc<Slot>) -> bool) -> Vec<Arc<Slot>> {
        let all = (self.projects.values_mut()).chain(self.chats.values_mut().map(|(_, s)| s));
        all.flat_map(|slots| {
            let (kept, retired) = std::mem::take(slots).into_iter().partition(&keep);
            *slots = kept;
            retired
        })
        .collect()
    }
}

fn is_stdio(record: &McpServerRecord) -> bool {
    matches!(record.transport, McpTransport::Stdio { .. })
}

async fn stop(slots: &[Arc<Slot>]) {
    join_all(slots.iter().map(|slot| slot.stop())).await;
}

impl McpPool {
    pub fn new() -> McpPool {
        McpPool::default()
    }

    /// With other time limits and backoff (tests).
    pub fn with_timing(timing: Timing) -> McpPool {
        McpPool {
            timing,
            ..McpPool::default()
        }
    }

    /// The servers of one agent turn in `chat` of `project`, stdio ones running in `world`
    /// (the chat's workspace): those already running are reused; any not in `servers` as
    /// enabled, or changed, are stopped; the others are started. The errors are those of
    /// servers that could not start.
    pub async fn hub(
        &self,
        project: i64,
        chat: i64,
        world: &World,
        servers: &[McpServerRecord],
    ) -> (McpHub, Vec<McpError>) {
        let wanted: Vec<&McpServerRecord> = servers.iter().filter(|s| s.enabled).collect();
        let (slots, retired) = {
            let mut running = self.running.lock().await;
            let mut retired = Vec::new();
            // A chat that moved to another project keeps none of its servers.
            if running.chats.get(&chat).is_some_and(|(p, _)| *p != project)
                && let Some((_, old)) = running.chats.remove(&chat)
            {
                retired.extend(old);
            }
            let remote = running.projects.entry(project).or_default();
            retired.extend(update(remote, &wanted, |r| !is_stdio(r), None));
            let remote = remote.clone();
            let (_, local) = running.chats.entry(chat).or_insert((project, Vec::new()));
            retired.extend(update(local, &wanted, is_stdio, Some(world)));
            let local = local.clone();
            // In the order the servers are configured.
            let name = |slot: &Arc<Slot>| wanted.iter().position(|r| r.name == slot.name());
            let mut slots: Vec<Arc<Slot>> = remote.into_iter().chain(local).collect();
            slots.sort_by_key(name);
            (slots, retired)
        };
        stop(&retired).await;
        let hub = McpHub::shared(slots, self.timing);
        let errors = hub.start().await;
        (hub, errors)
    }

    /// Stops the chat's stdio servers (and everything they started): its turn has ended, and
    /// its workspace is about to close. Its remote servers stay with the project.
    pub async fn close_chat(&self, chat: i64) {
        let slots = self.running.lock().await.chats.remove(&chat);
        stop(&slots.map(|(_, slots)| slots).unwrap_or_default()).await;
    }

    /// Stops the project's servers, its chats' included. A turn still running in the project
    /// gets "unavailable" from their tools.
    pub async fn close_project(&self, project: i64) {
        let slots: Vec<Arc<Slot>> = {
            let mut running = self.running.lock().await;
            let chats: Vec<i64> = (running.chats.iter())
                .filter(|(_, (p, _))| *p == project)
                .map(|(chat, _)| *chat)
                .collect();
            let local = chats
                .iter()
                .filter_map(|chat| running.chats.remove(chat))
                .flat_map(|(_, slots)| slots);
            let local: Vec<_> = local.collect();
            let remote = running.projects.remove(&project).unwrap_or_default();
            remote.into_iter().chain(local).collect()
        };
        stop(&slots).await;
    }

    /// Stops the servers of every project but `keep` (the window shows one project at a time).
    pub async fn close_other_projects(&self, keep: i64) {
        let others: Vec<i64> = self
            .projects()
            .await
            .into_iter()
            .filter(|id| *id != keep)
            .collect();
        join_all(others.into_iter().map(|id| self.close_project(id))).await;
    }

    /// Stops, everywhere, the servers not in `servers` as they are now (removed, disabled or
    /// changed), without starting any.
    pub async fn retire(&self, servers: &[McpServerRecord]) {
        let current = |slot: &Arc<Slot>| servers.iter().any(|r| r.enabled && slot.record() == r);
        let retired = self.running.lock().await.retire(current);
        stop(&retired).await;
    }

    /// Stops every server.
    pub async fn close_all(&self) {
        let all = {
            let mut running = self.running.lock().await;
            let all = running.retire(|_| false);
            *running = Running::default();
            all
        };
        stop(&all).await;
    }

    /// The projects with servers in the pool (their own, or their chats').
    pub async fn projects(&self) -> Vec<i64> {
        let running = self.running.lock().await;
        let chats = running.chats.values().map(|(project, _)| *project);
        let mut ids: Vec<i64> = running.projects.keys().copied().chain(chats).collect();
        ids.sort_unstable();
        ids.dedup();
        ids
    }

    /// The chats with stdio servers in the pool (their turns are running).
    pub async fn chats(&self) -> Vec<i64> {
        let mut ids: Vec<i64> = self.running.lock().await.chats.keys().copied().collect();
        ids.sort_unstable();
        ids
    }
}

/// Brings `slots` to the `wanted` records that `mine` says are theirs (running in `world`):
/// keeps those unchanged, adds new ones; returns those to stop.
fn update(
    slots: &mut Vec<Arc<Slot>>,
    wanted: &[&McpServerRecord],
    mine: impl Fn(&McpServerRecord) -> bool,
    world: Option<&World>,
) -> Vec<Arc<Slot>> {
    let wanted: Vec<&McpServerRecord> = wanted.iter().copied().filter(|r| mine(r)).collect();
    let same =
        |slot: &Slot, record: &McpServerRecord| slot.record() == record && slot.world() == world;
    let (kept, retired): (Vec<_>, Vec<_>) = std::mem::take(slots)
        .into_iter()
        .partition(|slot| wanted.iter().any(|record| same(slot, record)));
    *slots = kept;
    for record in wanted {
        if !slots.iter().any(|slot| slot.record() == record) {
            slots.push(Slot::new(record.clone(), world.cloned()));
        }
    }
    retired
}
