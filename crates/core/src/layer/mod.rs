//! The agent's workspace: a copy-on-write view of the project holding one chat's pending
//! changes, so the agent reads, runs and tests its own edits while the person's tree stays
//! as it is until they approve.
//!
//! Each chat has a **layer** under the data directory (`workspaces/<chat>`): on Linux the
//! upper directory of an overlay whose lower is the project, mounted at the project's own
//! path in a holder's namespaces while in use ([`crate::sandbox::overlay`]); elsewhere, or
//! where overlays cannot be mounted, a copy of the project (made with `copy_file_range`,
//! which clones blocks where the filesystem can). A [`Workspace`] is a layer in use: the
//! agent's tools read and write its [`Workspace::view`], its commands run with it at the
//! project's path, and [`Workspace::changes_since`] says what changed, for the proposal.
//!
//! Ignored paths (`target/`, `node_modules/`…) stay in the layer across turns (a second
//! build is incremental) and are never proposed; `.git` is never part of it. The layer goes
//! when its proposal is approved or rejected, or its chat is deleted or archived.

mod clean;
mod hold;
mod lock;
mod scan;
mod track;

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

pub use clean::{empty_trash, list, trash_waiting};
pub use hold::{Ending, Held, LeftOut};
pub use scan::{MAX_CHANGE_BYTES, Snapshot};
pub use track::Tracker;

use crate::sandbox::ProjectView;
use crate::sandbox::overlay::{self, Overlay};

/// What changed to one path of a workspace, as the proposal takes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Change {
    /// Created or changed: its new text.
    Write {
        path: String,
        content: String,
    },
    Delete {
        path: String,
    },
    /// Changed but not carried into the proposal (not UTF-8 text, too large, a link): why.
    Skipped {
        path: String,
        reason: String,
    },
}

impl Change {
    pub fn path(&self) -> &str {
        match self {
            Change::Write { path, .. } | Change::Delete { path } | Change::Skipped { path, .. } => {
                path
            }
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum LayerError {
    /// Its cause is in the message and not a `source`: printed as a chain, it showed twice.
    #[error("the chat's workspace ({path}) cannot be used: {cause}")]
    Io {
        path: PathBuf,
        cause: std::io::Error,
    },
    #[error("the chat's workspace cannot be mounted: {0}")]
    Mount(String),
    #[error("the chat's workspace cannot be copied: {0}")]
    Copy(String),
    #[error("the chat's workspace is in use (by a turn or a run): try again when it ends")]
    Busy,
    #[error(
        "{path} in the chat's workspace was put there by an earlier proposal and cannot be \
         taken back ({why}): `tandem workspace clean --chat {chat}` starts the workspace afresh"
    )]
    Held {
        chat: i64,
        path: String,
        why: String,
    },
    #[error(
        "the chat's workspace's record cannot be read ({why}): `tandem workspace clean --chat \
         {chat}` starts the workspace afresh"
    )]
    Record { chat: i64, why: String },
}

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> LayerError + '_ {
    move |cause| LayerError::Io {
        path: path.to_path_buf(),
        cause,
    }
}

/// What the layer keeps beside its files.
#[derive(Debug, Default, Clone, Serialize, Deserialize)]
#[serde(default)]
struct Meta {
    /// The project it is a layer of (a layer never moves to another).
    project: PathBuf,
    /// How it is kept: `overlay` or `copy`.
    kind: String,
    /// Each changed path's content hash in the project when the workspace first changed it
    /// (`None`: it did not exist): what the person's tree is compared with, so a file they
    /// changed meanwhile is a conflict, never overwritten.
    bases: BTreeMap<String, Option<String>>,
    /// What [`Workspace::hold`] last put of a pending proposal, each path's content hash
    /// (`None`: deleted): a path still so is the proposal's, not the workspace's own.
    held: Option<BTreeMap<String, Option<String>>>,
}

/// How a layer is used.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// An overlay's upper directory (Linux with user namespaces).
    Overlay,
    /// A copy of the project.
    Copy,
}

/// Where the layers live: `<data dir>/workspaces`.
pub fn base_dir(data_dir: &Path) -> PathBuf {
    data_dir.join("workspaces")
}

/// One chat's layer on disk.
#[derive(Debug, Clone)]
pub struct Layer {
    pub chat_id: i64,
    dir: PathBuf,
}

impl Layer {
    pub fn of(data_dir: &Path, chat_id: i64) -> Layer {
        Layer {
            chat_id,
            dir: base_dir(data_dir).join(chat_id.to_string()),
        }
    }

    /// A layer in `dir` (a throwaway one: a check's).
    pub fn at(dir: PathBuf) -> Layer {
        Layer { chat_id: 0, dir }
    }

    pub fn exists(&self) -> bool {
        self.dir.is_dir()
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Bytes it holds (ignored build output included).
    pub fn size(&self) -> u64 {
        fn walk(dir: &Path) -> u64 {
            let Ok(entries) = fs::read_dir(dir) else {
                return 0;
            };
            entries
                .flatten()
                .map(|e| match e.file_type() {
                    Ok(t) if t.is_dir() => walk(&e.path()),
                    Ok(_) => e.metadata().map(|m| m.len()).unwrap_or(0),
                    Err(_) => 0,
                })
                .sum()
        }
        walk(&self.dir)
    }

    /// Removes it (nothing of it is mounted when no workspace of it is in use).
    pub fn discard(&self) -> Result<(), LayerError> {
        if !self.dir.exists() {
            lock::remove_if_free(&self.dir);
            return Ok(());
        }
        // The overlay leaves a `work/work` directory without permissions.
        allow_removal(&self.dir);
        fs::remove_dir_all(&self.dir).map_err(io(&self.dir))?;
        lock::remove_if_free(&self.dir);
        Ok(())
    }

    /// How it was last used (`None`: never opened, or its record is unreadable).
    pub fn kind(&self) -> Option<Kind> {
        match self.meta().kind.as_str() {
            "overlay" => Some(Kind::Overlay),
            "copy" => Some(Kind::Copy),
            _ => None,
        }
    }

    /// Whether a workspace of it is open now, in this process or another.
    pub fn in_use(&self) -> bool {
        lock::held(&self.dir)
    }

    /// Its record, for what is only read (unreadable: as if never used).
    fn meta(&self) -> Meta {
        self.record().unwrap_or_default()
    }

    /// Its record, for what writes it back: none yet is a fresh one; one that cannot be read
    /// is refused, never replaced (its bases mark the person's conflicts, its `held` what a
    /// proposal put).
    fn record(&self) -> Result<Meta, LayerError> {
        let path = self.dir.join("meta.json");
        match fs::read(&path) {
            Ok(bytes) => serde_json::from_slice(&bytes).map_err(|e| LayerError::Record {
                chat: self.chat_id,
                why: format!("{}: {e}", path.display()),
            }),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Meta::default()),
            Err(e) => Err(LayerError::Io { path, cause: e }),
        }
    }

    fn save_meta(&self, meta: &Meta) -> Result<(), LayerError> {
        let path = self.dir.join("meta.json");
        let bytes = serde_json::to_vec_pretty(meta).unwrap_or_default();
        fs::write(&path, bytes).map_err(io(&path))
    }

    /// Each changed path's content in the project when the workspace first changed it.
    pub fn bases(&self) -> BTreeMap<String, Option<String>> {
        self.meta().bases
    }

    /// Notes `paths`' current content in `project` as their base, for those without one.
    pub(crate) fn note_bases<'a>(
        &self,
        project: &Path,
        paths: impl IntoIterator<Item = &'a str>,
    ) -> Result<(), LayerError> {
        let mut meta = self.record()?;
        let mut added = false;
        for rel in paths {
            if meta.bases.contains_key(rel) {
                continue;
            }
            let hash = crate::folder::read_regular(&project.join(rel))
                .ok()
                .map(|(bytes, _)| crate::folder::blob_hash(&bytes));
            meta.bases.insert(rel.to_string(), hash);
            added = true;
        }
        match added {
            true => self.save_meta(&meta),
            false => Ok(()),
        }
    }

    /// The project it is a layer of, when it has been used.
    pub fn project(&self) -> Option<PathBuf> {
        let meta = self.meta();
        (!meta.project.as_os_str().is_empty()).then_some(meta.project)
    }
}

/// Whether a layer meant for an overlay may become a copy: only while its upper directory
/// holds nothing (else its changes would be lost).
fn copy_allowed(layer: &Layer) -> Result<bool, LayerError> {
    let upper = layer.dir.join("upper");
    let empty = fs::read_dir(&upper).map_err(io(&upper))?.next().is_none();
    Ok(empty)
}

/// Gives the owner every right on `dir` and below, so it can be removed.
fn allow_removal(dir: &Path) {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let Ok(meta) = fs::symlink_metadata(dir) else {
            return;
        };
        if !meta.is_dir() {
            return;
        }
        let _ = fs::set_permissions(dir, fs::Permissions::from_mode(0o700));
        if let Ok(entries) = fs::read_dir(dir) {
            for entry in entries.flatten() {
                allow_removal(&entry.path());
            }
        }
    }
    #[cfg(not(unix))]
    let _ = dir;
}

/// A layer in use.
pub struct Workspace {
    layer: Layer,
    project: PathBuf,
    backing: Backing,
    /// Held while it is open: no other opens it, nothing cleans it away.
    _lock: lock::Lock,
}

enum Backing {
    Overlay { overlay: Overlay, upper: PathBuf },
    Copy { dir: PathBuf },
}

impl std::fmt::Debug for Workspace {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Workspace")
            .field("chat", &self.layer.chat_id)
            .field("view", &self.view())
            .finish()
    }
}

impl Workspace {
    /// Opens `layer` over `project` (canonical): mounts its overlay, or makes or refreshes
    /// its copy. `copy` forces the copy (systems without overlays, and its tests). Only one
    /// workspace of a layer is open at a time: [`LayerError::Busy`] while another is.
    pub fn open(layer: Layer, project: &Path, copy: bool) -> Result<Workspace, LayerError> {
        let lock = lock::take(&layer.dir)?;
        let mut meta = layer.record()?;
        let project = project.canonicalize().map_err(io(project))?;
        if meta.project != project && !meta.project.as_os_str().is_empty() {
            // A layer of another project (the chat moved): it cannot be reused.
            layer.discard()?;
            meta = Meta::default();
        }
        fs::create_dir_all(&layer.dir).map_err(io(&layer.dir))?;
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let private = fs::Permissions::from_mode(0o700);
            fs::set_permissions(&layer.dir, private).map_err(io(&layer.dir))?;
        }
        // A layer kept as a copy stays one (an overlay that could not be mounted at this
        // project's path falls back to it): starting it again would lose what it holds.
        let want = match copy || overlay::supported().is_err() || layer.kind() == Some(Kind::Copy) {
            true => Kind::Copy,
            false => Kind::Overlay,
        };
        let had = layer.kind();
        if had.is_some_and(|had| had != want) {
            // Kept the other way (forced, or the system changed): start again.
            layer.discard()?;
            fs::create_dir_all(&layer.dir).map_err(io(&layer.dir))?;
        }
        meta.project = project.clone();
        meta.kind = match want {
            Kind::Overlay => "overlay".into(),
            Kind::Copy => "copy".into(),
        };
        layer.save_meta(&meta)?;
        let backing = match want {
            Kind::Overlay => {
                let upper = layer.dir.join("upper");
                let work = layer.dir.join("work");
                for dir in [&upper, &work] {
                    fs::create_dir_all(dir).map_err(io(dir))?;
                }
                match overlay::mount(&project, &upper, &work) {
                    Ok(overlay) => Backing::Overlay { overlay, upper },
                    // A project path an overlay cannot carry: a copy serves.
                    Err(_) if copy_allowed(&layer)? => {
                        meta.kind = "copy".into();
                        layer.save_meta(&meta)?;
                        let dir = layer.dir.join("copy");
                        scan::refresh_copy(&project, &dir)?;
                        Backing::Copy { dir }
                    }
                    Err(e) => return Err(LayerError::Mount(e.reason)),
                }
            }
            Kind::Copy => {
                let dir = layer.dir.join("copy");
                scan::refresh_copy(&project, &dir)?;
                Backing::Copy { dir }
            }
        };
        Ok(Workspace {
            layer,
            project,
            backing,
            _lock: lock,
        })
    }

    pub fn layer(&self) -> &Layer {
        &self.layer
    }

    pub fn kind(&self) -> Kind {
        match self.backing {
            Backing::Overlay { .. } => Kind::Overlay,
            Backing::Copy { .. } => Kind::Copy,
        }
    }

    /// The project (canonical).
    pub fn project(&self) -> &Path {
        &self.project
    }

    /// Where Tandem reads and writes what the agent sees. For an overlay a path through its
    /// holder, which must never be canonicalized.
    pub fn view(&self) -> &Path {
        match &self.backing {
            Backing::Overlay { overlay, .. } => overlay.view(),
            Backing::Copy { dir } => dir,
        }
    }

    /// What a container shows at the project's path.
    pub fn project_view(&self) -> ProjectView {
        match &self.backing {
            Backing::Overlay { overlay, .. } => ProjectView::Overlay {
                namespaces: overlay.namespaces(),
                root: overlay.view().to_path_buf(),
            },
            Backing::Copy { dir } => ProjectView::Copy(dir.clone()),
        }
    }

    /// The state of what can be proposed now (ignored paths and `.git` left out).
    pub fn snapshot(&self) -> Result<Snapshot, LayerError> {
        match &self.backing {
            Backing::Overlay { upper, .. } => scan::snapshot_upper(upper, self.view()),
            Backing::Copy { dir } => scan::snapshot_tree(dir),
        }
    }

    /// What changed since `before` (a snapshot), as the proposal's operations: each path's
    /// content in the view now, or its deletion. `known` holds each path's content hash as
    /// the proposal has it so far (`None`: deleted); a path whose content is the same is no
    /// change. Returns the changes and the snapshot now.
    pub fn changes_since(
        &self,
        before: &Snapshot,
        known: &mut BTreeMap<String, Option<String>>,
    ) -> Result<(Vec<Change>, Snapshot), LayerError> {
        let now = self.snapshot()?;
        let changes = scan::changes(&self.project, self.view(), before, &now, known);
        Ok((changes, now))
    }

    /// Every change of the workspace against the project (what it holds in all).
    pub fn all_changes(&self) -> Result<Vec<Change>, LayerError> {
        let mut known = BTreeMap::new();
        let before = match &self.backing {
            Backing::Overlay { .. } => Snapshot::default(),
            Backing::Copy { .. } => scan::snapshot_tree(&self.project)?,
        };
        Ok(self.changes_since(&before, &mut known)?.0)
    }
}

#[cfg(test)]
mod tests;
