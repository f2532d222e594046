//! [`McpPool`]: the MCP servers of each project, kept running across agent turns.
//!
//! A project's servers start on its first agent turn ([`McpPool::hub`]) and keep running for
//! the next ones. Each turn hands in the configured servers: one removed, disabled or changed
//! since (its record differs) is stopped, a new one is started. [`McpPool::close_project`]
//! stops a project's servers; [`McpPool::close_all`] every one (the app closing).

use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;

use futures_util::future::join_all;

use super::slot::{Slot, Timing};
use super::{McpError, McpHub};
use crate::store::McpServerRecord;

/// The running MCP servers, per project id.
#[derive(Default)]
pub struct McpPool {
    projects: tokio::sync::Mutex<HashMap<i64, Vec<Arc<Slot>>>>,
    timing: Timing,
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

    /// The servers of `project` (stdio ones run in `root`) for one turn: those already
    /// running are reused; any not in `servers` as enabled, or changed, are stopped; the
    /// others are started. The errors are those of servers that could not start.
    pub async fn hub(
        &self,
        project: i64,
        root: &Path,
        servers: &[McpServerRecord],
    ) -> (McpHub, Vec<McpError>) {
        let (slots, retired) = {
            let mut projects = self.projects.lock().await;
            let slots = projects.entry(project).or_default();
            let wanted: Vec<&McpServerRecord> = servers.iter().filter(|s| s.enabled).collect();
            let same = |slot: &Slot, record: &McpServerRecord| {
                slot.record() == record && slot.cwd() == Some(root)
            };
            let (kept, retired): (Vec<_>, Vec<_>) = std::mem::take(slots)
                .into_iter()
                .partition(|slot| wanted.iter().any(|record| same(slot, record)));
            *slots = kept;
            for record in wanted {
                if !slots.iter().any(|slot| slot.record() == record) {
                    slots.push(Slot::new(record.clone(), Some(root.to_path_buf())));
                }
            }
            (slots.clone(), retired)
        };
        join_all(retired.iter().map(|slot| slot.stop())).await;
        let hub = McpHub::shared(slots, self.timing);
        let errors = hub.start().await;
        (hub, errors)
    }

    /// Stops the project's servers (and everything they started). A turn still running in
    /// the project gets "unavailable" from their tools.
    pub async fn close_project(&self, project: i64) {
        let slots = self.projects.lock().await.remove(&project);
        join_all(slots.iter().flatten().map(|slot| slot.stop())).await;
    }

    /// Stops the servers of every project but `keep` (the window shows one project at a time).
    pub async fn close_other_projects(&self, keep: i64) {
        let others: Vec<i64> = {
            let projects = self.projects.lock().await;
            projects.keys().copied().filter(|id| *id != keep).collect()
        };
        join_all(others.into_iter().map(|id| self.close_project(id))).await;
    }

    /// Stops, in every project, the servers not in `servers` as they are now (removed,
    /// disabled or changed), without starting any.
    pub async fn retire(&self, servers: &[McpServerRecord]) {
        let retired: Vec<Arc<Slot>> = {
            let mut projects = self.projects.lock().await;
            let current =
                |slot: &Arc<Slot>| servers.iter().any(|r| r.enabled && slot.record() == r);
            projects
                .values_mut()
                .flat_map(|slots| {
                    let (kept, retired) = std::mem::take(slots).into_iter().partition(current);
                    *slots = kept;
                    retired
                })
                .collect()
        };
        join_all(retired.iter().map(|slot| slot.stop())).await;
    }

    /// Stops every server.
    pub async fn close_all(&self) {
        let all: Vec<Arc<Slot>> = self
            .projects
            .lock()
            .await
            .drain()
            .flat_map(|(_, s)| s)
            .collect();
        join_all(all.iter().map(|slot| slot.stop())).await;
    }

    /// The projects with servers in the pool.
    pub async fn projects(&self) -> Vec<i64> {
        let mut ids: Vec<i64> = self.projects.lock().await.keys().copied().collect();
        ids.sort_unstable();
        ids
    }
}
