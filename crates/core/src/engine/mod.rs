//! The engine: projects, proposals and versions, tying the store, the workspace, the edit
//! protocol and git together. The GUI, the CLI and the tests all drive Tandem through here.
//!
//! Calls are synchronous and may take a while (disk, git, SQLite): the GUI runs them on its
//! background runtime. Operations that change a project's files or history (apply, save,
//! restore, undo, adding it) hold that project's lock — in every process on the data
//! directory, see [`project_lock_path`] — so they run one at a time per project.

mod approve;
mod files;
pub mod partial;
mod plans;
mod proposals;
mod versions;
mod workspaces;

pub use approve::ApproveOutcome;
pub use files::SaveOutcome;
pub use proposals::{Proposal, Review, TITLE_CHARS, title_from_prompt, truncate};
pub use versions::{RestoreOutcome, UndoOutcome};
pub use workspaces::{CleanScope, Cleaned, WorkspaceInfo};

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::edits::apply::{ApplyError, SelectionError};
use crate::edits::deps::DEFAULT_TIMEOUT;
use crate::edits::plan::PlanError;
use crate::folder::{Fs, PathError, RealFs};
use crate::store::{Project, Store, StoreError, data_dir};
use crate::vcs::{self, VcsError};

#[derive(Debug, thiserror::Error)]
pub enum EngineError {
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error(transparent)]
    Vcs(#[from] VcsError),
    #[error(transparent)]
    Path(#[from] PathError),
    #[error(transparent)]
    Plan(#[from] PlanError),
    #[error(transparent)]
    Apply(#[from] ApplyError),
    #[error(transparent)]
    Selection(#[from] SelectionError),
    #[error("{path} is not a folder: {reason}")]
    NotAFolder { path: PathBuf, reason: String },
    #[error(
        "no project {0:?}: give a project id, name or the path of a project added with `tandem project add`"
    )]
    UnknownProject(String),
    #[error("more than one project is named {name:?} (ids {}): give its id or path", ids.join(", "))]
    AmbiguousProject { name: String, ids: Vec<String> },
    #[error("message {id} {reason}")]
    NotReviewable { id: i64, reason: String },
    #[error("chat {chat} belongs to another project, not to {project}")]
    ChatNotInProject { chat: i64, project: String },
    #[error("the proposal cannot be approved as a whole:\n{}", .0.join("\n"))]
    Unapprovable(Vec<String>),
    #[error(
        "the change was committed as {commit}, but recording the approval failed: {source}; \
         Tandem records it from git the next time it reads this proposal"
    )]
    ApprovalNotRecorded { commit: String, source: StoreError },
    #[error("nothing to undo: no approved change in this project is still in place")]
    NothingToUndo,
    #[error("cannot write {path}: {source}")]
    Io {
        path: String,
        source: std::io::Error,
    },
    #[error(transparent)]
    Layer(#[from] crate::layer::LayerError),
    #[error(
        "another Tandem process has been changing {} for over a minute; try again when it is done",
        .0.display()
    )]
    Busy(PathBuf),
}

pub type Result<T, E = EngineError> = std::result::Result<T, E>;

/// How long a change waits for another process's change of the same project to end.
pub const LOCK_WAIT: Duration = Duration::from_secs(60);

/// How long after its start a change can still be writing files: longer than any change
/// Tandem makes takes. A temporary file made later than this is not a cut-off change's.
const CHANGE_WITHIN: Duration = Duration::from_secs(120);

/// The file whose lock (see [`crate::lockfile`]) every change of the project at `root`
/// (canonical) holds, in every process using the data directory `data`: approving,
/// restoring, undoing, saving, adding it, and the recovery of a change a killed process
/// left half-way, which runs only where no one holds it.
pub fn project_lock_path(data: &Path, root: &Path) -> PathBuf {
    // FNV-1a of the path's bytes: stable across builds and processes.
    let hash = root
        .as_os_str()
        .as_encoded_bytes()
        .iter()
        .fold(0xcbf2_9ce4_8422_2325_u64, |h, b| {
            (h ^ u64::from(*b)).wrapping_mul(0x0000_0100_0000_01b3)
        });
    data.join("locks").join(format!("project-{hash:016x}.lock"))
}

pub struct Engine {
    store: Arc<Store>,
    fs: Arc<dyn Fs>,
    locks: Mutex<HashMap<PathBuf, Arc<Mutex<()>>>>,
    install_timeout: Duration,
    plans: plans::Plans,
}

/// The result of adding a project.
#[derive(Debug, Clone, serde::Serialize)]
pub struct AddedProject {
    pub project: Project,
    /// The folder had no repository: Tandem ran `git init` and made an initial commit.
    pub initialized_git: bool,
    /// The folder was already a project; nothing changed.
    pub already_added: bool,
    /// Secret-looking files the initial commit left out (they stay on disk, untracked).
    pub left_out: Vec<String>,
}

impl Engine {
    pub fn new(store: Store) -> Self {
        let engine = Engine {
            store: Arc::new(store),
            fs: Arc::new(RealFs),
            locks: Mutex::new(HashMap::new()),
            install_timeout: DEFAULT_TIMEOUT,
            plans: plans::Plans::default(),
        };
        // An approval or an undo the last process left half-recorded is settled from git
        // now, so every view shows what is on disk. One that cannot be settled (project
        // folder gone, database busy) stays as it is and is settled when its proposal is
        // next read (an undo: before the project's next undo).
        engine.recover_all_landings();
        engine.settle_all_applying();
        engine.settle_all_undoing();
        // Workspaces nothing will read again (their chat went, or decided its proposal)
        // go; one a failed discard left behind too.
        engine.retire_stale_workspaces();
        engine
    }

    /// Opens the database in `dir` (else this process's `TANDEM_DATA_DIR`, else the platform
    /// data directory).
    pub fn open(dir: Option<&Path>) -> Result<Self> {
        let dir = data_dir(dir, &crate::environment::Environment::process())?;
        Ok(Self::new(Store::open_dir(&dir)?))
    }

    /// Replaces the file operations used by apply (tests inject failures with this).
    pub fn with_fs(mut self, fs: Arc<dyn Fs>) -> Self {
        self.fs = fs;
        self
    }

    pub fn with_install_timeout(mut self, timeout: Duration) -> Self {
        self.install_timeout = timeout;
        self
    }

    /// The sandbox settings of commands run for a model: the person's extra readable
    /// directories, and the data directory (database, secrets file) hidden from them.
    pub fn sandbox_settings(&self) -> crate::sandbox::Settings {
        let readable = self
            .store
            .setting::<Vec<String>>(crate::store::keys::SANDBOX_READABLE)
            .ok()
            .flatten()
            .unwrap_or_default();
        let data_dir = self.store.path().and_then(std::path::Path::parent);
        let keys = (
            crate::store::keys::AGENT_LIMITS,
            crate::store::keys::SANDBOX_ENV,
        );
        crate::sandbox::Settings {
            limits: self
                .store
                .setting(keys.0)
                .ok()
                .flatten()
                .unwrap_or_default(),
            env_names: self
                .store
                .setting(keys.1)
                .ok()
                .flatten()
                .unwrap_or_default(),
            readable,
            hidden: data_dir
                .map(std::path::Path::to_path_buf)
                .into_iter()
                .collect(),
        }
    }

    /// The data directory (where the database lives; the chats' workspaces go below it).
    pub fn data_dir(&self) -> Option<&std::path::Path> {
        self.store.path().and_then(std::path::Path::parent)
    }

    pub fn store(&self) -> &Store {
        &self.store
    }

    /// The store for a task that outlives a borrow (the approval gateway).
    pub fn shared_store(&self) -> Arc<Store> {
        Arc::clone(&self.store)
    }

    /// Runs `f` holding the lock of the project at `root`, waiting for a holder in this
    /// process or another (see [`project_lock_path`]); [`EngineError::Busy`] when another
    /// process keeps it longer than [`LOCK_WAIT`].
    fn locked<T>(&self, root: &Path, f: impl FnOnce() -> Result<T>) -> Result<T> {
        self.with_lock(root, LOCK_WAIT, f)?
            .ok_or_else(|| EngineError::Busy(root.to_path_buf()))
    }

    /// Runs `f` holding the project's lock if no one holds it now: `Ok(None)` (and `f` not
    /// run) when another process does: it is changing the project.
    fn locked_if_free<T>(&self, root: &Path, f: impl FnOnce() -> Result<T>) -> Result<Option<T>> {
        self.with_lock(root, Duration::ZERO, f)
    }

    fn with_lock<T>(
        &self,
        root: &Path,
        wait: Duration,
        f: impl FnOnce() -> Result<T>,
    ) -> Result<Option<T>> {
        // Threads of this process queue on a mutex; processes on the lock's file.
        let mutex = {
            let mut locks = self.locks.lock().unwrap_or_else(|p| p.into_inner());
            locks.entry(root.to_path_buf()).or_default().clone()
        };
        let _guard = mutex.lock().unwrap_or_else(|p| p.into_inner());
        // A database in memory is this process's alone: no lock between processes.
        let Some(data) = self.data_dir() else {
            return f().map(Some);
        };
        let path = project_lock_path(data, root);
        let io = |source| EngineError::Io {
            path: path.display().to_string(),
            source,
        };
        let Some(lock) = crate::lockfile::take(&path, wait).map_err(io)? else {
            return Ok(None);
        };
        if let Some(cut) = lock.unfinished().map_err(io)? {
            tidy_after(&cut, root);
        }
        // A change that writes the index later waits now for a git that holds it, before it
        // changes anything. Recovery at start-up (no wait, every project's lock) does not:
        // its own write waits.
        if !wait.is_zero()
            && let Ok(repo) = vcs::open(root)
        {
            vcs::wait_for_index(&repo)?;
        }
        let _in_flight = lock.begin("a change of the project").map_err(io)?;
        f().map(Some)
    }

    /// Adds a folder as a project. A folder that is not the root of a git repository gets
    /// `git init` and an initial commit; an existing repository is used as it is.
    pub fn add_project(&self, path: &Path, name: Option<&str>) -> Result<AddedProject> {
        let not_folder = |reason: String| EngineError::NotAFolder {
            path: path.to_path_buf(),
            reason,
        };
        let root = path.canonicalize().map_err(|e| not_folder(e.to_string()))?;
        if !root.is_dir() {
            return Err(not_folder("it is a file".into()));
        }
        // Another process adding the same folder makes its first commit once.
        self.locked(&root, || {
            if let Some(project) = self.store.project_by_path(&root)? {
                return Ok(AddedProject {
                    project,
                    initialized_git: false,
                    already_added: true,
                    left_out: Vec::new(),
                });
            }
            let (_repo, initial) = vcs::open_or_init(&root)?;
            let initialized_git = initial.is_some();
            let left_out = initial.map(|i| i.left_out).unwrap_or_default();
            let name = name
                .map(str::to_string)
                .or_else(|| root.file_name().map(|n| n.to_string_lossy().into_owned()))
                .unwrap_or_else(|| "project".into());
            let project = self.store.insert_project(&name, &root)?;
            Ok(AddedProject {
                project,
                initialized_git,
                already_added: false,
                left_out,
            })
        })
    }

    /// A project by id, by the path of its folder, or by its name (as `tandem project list`
    /// shows it) when no folder has that path and only one project has that name.
    pub fn project(&self, spec: &str) -> Result<Project> {
        if let Ok(id) = spec.trim().parse::<i64>() {
            match self.store.project(id) {
                Ok(project) => return Ok(project),
                Err(StoreError::NotFound { .. }) => {}
                Err(e) => return Err(e.into()),
            }
        }
        let by_path = Path::new(spec)
            .canonicalize()
            .ok()
            .map(|path| self.store.project_by_path(&path))
            .transpose()?
            .flatten();
        if let Some(project) = by_path {
            return Ok(project);
        }
        let mut named: Vec<Project> = (self.store.projects()?.into_iter())
            .filter(|p| p.name == spec)
            .collect();
        match named.len() {
            0 => Err(EngineError::UnknownProject(spec.to_string())),
            1 => Ok(named.remove(0)),
            _ => Err(EngineError::AmbiguousProject {
                name: spec.to_string(),
                ids: named.iter().map(|p| p.id.to_string()).collect(),
            }),
        }
    }
}

/// What the previous holder of the project's lock left when it was killed in the middle of
/// `cut`: the lock files git writes through that its last git step made (left, they refuse
/// every later change, by Tandem or by `git`, until removed by hand); an index it had not
/// yet written after its commit (it shows the change undone); the temporary files of the
/// writes it had under way; a `.git` without a commit, if it was putting the folder under
/// git (made again by the next attempt).
fn tidy_after(cut: &crate::lockfile::Unfinished, root: &Path) {
    if cut.what == vcs::INIT_STEP {
        vcs::remove_unfinished_init(root);
    }
    let repo = vcs::open(root).ok();
    if let Some(repo) = &repo {
        vcs::leftover::remove_since(repo.path(), cut.last_step);
        let _ = vcs::leftover::settle_index(repo, cut.began);
    }
    // Its writes ran from its start; a file's time can trail the clock it was read from by
    // a tick.
    let since = cut.began - Duration::from_secs(1);
    let until = cut.began + CHANGE_WITHIN;
    let tracked = |rel: &str| {
        repo.as_ref()
            .is_some_and(|r| vcs::leftover::is_tracked(r, rel))
    };
    crate::folder::remove_temp_files_made(root, since, until, &tracked);
}
