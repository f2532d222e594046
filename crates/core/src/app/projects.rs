//! Projects: adding and opening them, their files (read, save, rename, delete), their
//! history (versions, restore, undo) and their settings.

use std::io::Read;
use std::path::Path;

use super::{App, AppError, Result};
use crate::engine::{AddedProject, RestoreOutcome, SaveOutcome, UndoOutcome};
use crate::folder::context::ContextOptions;
use crate::store::{Chat, Project};
use crate::vcs::Version;

/// Files larger than this open read-only.
pub const EDITABLE_LIMIT: u64 = 2 * 1024 * 1024;
/// How many versions a project's history shows.
const HISTORY_SHOWN: usize = 200;

/// A project with what the window shows of it.
#[derive(Debug, Clone)]
pub struct OpenedProject {
    pub project: Project,
    pub chats: Vec<Chat>,
    pub files: Vec<String>,
    pub history: Vec<Version>,
}

/// A file as the editor may show it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FileContent {
    Text(String),
    /// Shown read-only, with why.
    ReadOnly {
        text: String,
        reason: String,
    },
    Binary {
        bytes: u64,
    },
}

/// What a project's context globs select.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ContextCount {
    pub files: usize,
    pub tokens: usize,
    pub skipped: usize,
}

impl std::fmt::Display for ContextCount {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} files, ~{} tokens ({} skipped)",
            self.files, self.tokens, self.skipped
        )
    }
}

use crate::folder::search::SearchResult;

/// The project's rules for every mode, sent with each request.
pub const RULES_FILE: &str = "AI_RULES.md";
/// What a new `AI_RULES.md` starts as.
pub const STARTER_RULES: &str = include_str!("../../../../prompts/starter_rules.md");

impl App {
    pub fn projects(&self) -> Result<Vec<Project>> {
        Ok(self.store().projects()?)
    }

    /// A project by id, or by the path of its folder.
    pub fn project(&self, spec: &str) -> Result<Project> {
        Ok(self.engine().project(spec)?)
    }

    pub fn project_by_id(&self, id: i64) -> Result<Project> {
        Ok(self.store().project(id)?)
    }

    /// Adds a folder as a project (`git init` and an initial commit when it is not a
    /// repository); an added folder is returned as it is.
    pub fn add_project(&self, path: &Path, name: Option<&str>) -> Result<AddedProject> {
        Ok(self.engine().add_project(path, name)?)
    }

    /// Creates the folder (and its parents) and adds it as a project.
    pub fn create_project(&self, path: &Path) -> Result<AddedProject> {
        std::fs::create_dir_all(path).map_err(|source| AppError::Io {
            what: format!("creating {}", path.display()),
            source,
        })?;
        self.add_project(path, None)
    }

    /// Marks the project as the latest opened and reads its chats, files and history. The
    /// window shows one project: the MCP servers of the others are stopped, and its code index
    /// is brought up to date (both in the background).
    pub fn open_project(&self, project: Project) -> Result<OpenedProject> {
        self.store().touch_project(project.id)?;
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            let (chat, keep) = (self.chat.clone(), project.id);
            runtime.spawn(async move { chat.mcp_pool().close_other_projects(keep).await });
            let (chat, indexed) = (self.chat.clone(), project.clone());
            runtime.spawn_blocking(move || index_project(&chat, &indexed));
        }
        Ok(OpenedProject {
            chats: self.store().chats(project.id)?,
            files: self.files(&project)?,
            history: self.history(&project, HISTORY_SHOWN)?,
            project,
        })
    }

    /// Brings the project's code index up to date with its files (those the context walks,
    /// its include and exclude settings applied): new and changed files are read, the gone
    /// dropped. Done in short rounds, so that a turn meanwhile waits for one round at most.
    pub fn index_project(&self, project: &Project) -> Result<crate::index::Refreshed> {
        index_project(&self.chat, project)
    }

    /// Watches the project for changes made outside this process (a `tandem` command, `git`,
    /// another editor): `report` is told, from a thread of the watch's, whether its files or
    /// its history changed, until the [`Watch`](crate::folder::watch::Watch) is dropped.
    pub fn watch_project(
        &self,
        project: &Project,
        report: impl Fn(crate::folder::watch::Changed) + Send + 'static,
    ) -> Result<crate::folder::watch::Watch> {
        Ok(crate::folder::watch::watch(&project.path, report)?)
    }

    /// The project's files (`.gitignore` respected), sorted.
    pub fn files(&self, project: &Project) -> Result<Vec<String>> {
        Ok(crate::folder::list_files(&project.path)?)
    }

    /// The latest `limit` versions, newest first.
    pub fn history(&self, project: &Project, limit: usize) -> Result<Vec<Version>> {
        Ok(self.engine().log(project, limit)?)
    }

    /// The default length of [`history`](Self::history) in the window.
    pub fn recent_history(&self, project: &Project) -> Result<Vec<Version>> {
        self.history(project, HISTORY_SHOWN)
    }

    pub fn version_diff(&self, project: &Project, commit: &str) -> Result<String> {
        Ok(self.engine().version_diff(project, commit)?)
    }

    pub fn restore(&self, project: &Project, commit: &str) -> Result<RestoreOutcome> {
        let outcome = self.engine().restore(project, commit)?;
        self.project_changed(project);
        Ok(outcome)
    }

    pub fn undo(&self, project: &Project) -> Result<UndoOutcome> {
        let outcome = self.engine().undo(project)?;
        self.project_changed(project);
        Ok(outcome)
    }

    /// Saves the project's settings (context globs, rules, trust, auto-approve) as they are.
    pub fn save_project_settings(&self, project: &Project) -> Result<()> {
        Ok(self
            .store()
            .update_project_settings(project.id, &project.settings)?)
    }

    /// A check command suggested for a project without one, from the files at its top
    /// (`Cargo.toml` → `cargo check`, …; see [`crate::checks::suggest_check_command`]).
    pub fn suggested_check_command(&self, project: &Project) -> Option<String> {
        crate::checks::suggest_check_command(&project.path)
    }

    /// Changes the settings of the project `spec` (its id or folder) and saves them, checked:
    /// the check command and the globs are trimmed, a blank check command is refused (clear it
    /// with `None`), and so is a blank or malformed glob. Returns the project as saved.
    pub fn update_project_settings(
        &self,
        spec: &str,
        change: impl FnOnce(&mut crate::store::ProjectSettings),
    ) -> Result<Project> {
        let mut project = self.project(spec)?;
        change(&mut project.settings);
        let settings = &mut project.settings;
        if let Some(command) = settings.check_command.as_mut() {
            *command = command.trim().to_string();
            if command.is_empty() {
                return Err(AppError::Invalid(
                    "the check command is empty; remove it instead".into(),
                ));
            }
        }
        for (list, globs) in [
            ("include", &mut settings.context_include),
            ("exclude", &mut settings.context_exclude),
        ] {
            for glob in globs.iter_mut() {
                *glob = glob.trim().to_string();
                check_glob(list, glob)?;
            }
        }
        let mut rules = std::mem::take(&mut settings.mode_rules);
        rules.retain(|_, text| !text.trim().is_empty());
        for mode in rules.keys() {
            if mode.parse::<crate::store::ChatMode>().is_err() {
                return Err(AppError::Invalid(format!(
                    "{mode:?} is not a mode; rules are per mode: build, ask, agent, plan, security"
                )));
            }
        }
        settings.mode_rules = rules;
        self.save_project_settings(&project)?;
        self.project_by_id(project.id)
    }

    /// Searches the project's files (`.gitignore`-aware; binary and large files skipped) for
    /// a literal or a regular expression.
    pub fn search(
        &self,
        project: &Project,
        query: &crate::folder::search::SearchQuery<'_>,
    ) -> Result<SearchResult> {
        let (_, _, found) = crate::folder::search::search(&project.path, query)?;
        Ok(found)
    }

    /// Writes a starter `AI_RULES.md` (committed, as a save from the editor is) when the
    /// project has none; an error when it has one. Returns the commit.
    pub fn write_starter_rules(&self, project: &Project) -> Result<Option<String>> {
        let path = crate::folder::resolve(&project.path, RULES_FILE)?;
        if path.abs.exists() {
            return Err(AppError::Invalid(format!(
                "{RULES_FILE} exists already; edit it instead"
            )));
        }
        self.save_file(project, RULES_FILE, STARTER_RULES.as_bytes())
    }

    /// Reads a file for the editor: text, read-only when large, or binary.
    pub fn read_file(&self, project: &Project, path: &str) -> Result<(String, FileContent)> {
        let resolved = crate::folder::resolve(&project.path, path)?;
        let io = |source| AppError::Io {
            what: format!("reading {path}"),
            source,
        };
        // Only a regular file is opened: a named pipe would block for ever.
        let crate::folder::RegularFile { mut file, meta } =
            crate::folder::open_regular(&resolved.abs).map_err(|e| io(e.into()))?;
        let content = if meta.len() > EDITABLE_LIMIT * 8 {
            FileContent::Binary { bytes: meta.len() }
        } else {
            let mut bytes = Vec::new();
            file.read_to_end(&mut bytes).map_err(io)?;
            match String::from_utf8(bytes) {
                Ok(text) if text.contains('\0') => FileContent::Binary { bytes: meta.len() },
                Ok(text) if meta.len() > EDITABLE_LIMIT => FileContent::ReadOnly {
                    text,
                    reason: format!("this file is {} KiB: opened read-only", meta.len() / 1024),
                },
                Ok(text) => FileContent::Text(text),
                Err(_) => FileContent::Binary { bytes: meta.len() },
            }
        };
        Ok((resolved.rel, content))
    }

    /// Of `known` (path, text last loaded or saved), the files whose text on disk differs,
    /// with that text. A file that is gone or unreadable is left out: nothing reloads it.
    pub fn changed_on_disk(
        &self,
        project: &Project,
        known: Vec<(String, String)>,
    ) -> Vec<(String, String)> {
        known
            .into_iter()
            .filter_map(|(path, saved)| {
                let text = crate::folder::read_project_text(&project.path, &path)?;
                (text != saved).then_some((path, text))
            })
            .collect()
    }

    /// Writes and commits a file as the person's edit (`None`: it was already committed).
    pub fn save_file(&self, project: &Project, path: &str, bytes: &[u8]) -> Result<Option<String>> {
        let commit = self.engine().save_file(project, path, bytes)?;
        self.project_changed(project);
        Ok(commit)
    }

    /// Saves only if the file on disk still has the blob hash `expected` (what the buffer was
    /// loaded from; `None`: no file).
    pub fn save_file_checked(
        &self,
        project: &Project,
        path: &str,
        bytes: &[u8],
        expected: Option<&str>,
    ) -> Result<SaveOutcome> {
        let outcome = self
            .engine()
            .save_file_checked(project, path, bytes, expected)?;
        if let SaveOutcome::Saved { .. } = outcome {
            self.project_changed(project);
        }
        Ok(outcome)
    }

    pub fn rename_file(&self, project: &Project, from: &str, to: &str) -> Result<Option<String>> {
        let commit = self.engine().rename_file(project, from, to)?;
        self.project_changed(project);
        Ok(commit)
    }

    pub fn delete_file(&self, project: &Project, path: &str) -> Result<Option<String>> {
        let commit = self.engine().delete_file(project, path)?;
        self.project_changed(project);
        Ok(commit)
    }

    /// What the context globs `include` / `exclude` select in the folder `root`.
    pub fn count_context(
        &self,
        root: &Path,
        include: Vec<String>,
        exclude: Vec<String>,
    ) -> Result<ContextCount> {
        let options = ContextOptions {
            include,
            exclude,
            ..Default::default()
        };
        let collected = self.chat.context_cache().collect(root, &options)?;
        Ok(ContextCount {
            files: collected.included.len(),
            tokens: collected.content_tokens,
            skipped: collected.skipped.len(),
        })
    }
}

/// Refuses a context glob that is blank or would not compile (the context would fail on
/// every send until it was fixed).
fn check_glob(list: &str, glob: &str) -> Result<()> {
    if glob.is_empty() {
        return Err(AppError::Invalid(format!("an {list} glob is empty")));
    }
    match globset::Glob::new(glob) {
        Ok(_) => Ok(()),
        Err(e) => Err(AppError::Invalid(format!(
            "the {list} glob {glob:?} is invalid: {}",
            e.kind()
        ))),
    }
}

/// See [`App::index_project`].
fn index_project(
    chat: &crate::chat::ChatService,
    project: &Project,
) -> Result<crate::index::Refreshed> {
    let options = project.settings.context_options();
    let indexes = chat.indexes();
    let walk =
        crate::index::Indexes::walk(&project.path, &options, &indexes.changes(&project.path))?;
    let mut done = crate::index::Refreshed::default();
    let mut round_time = std::time::Duration::from_millis(250);
    loop {
        let deadline = std::time::Instant::now() + round_time;
        // Asked again each round: the last round's writes moved where the index stands.
        let changes = indexes.changes(&project.path);
        let round =
            indexes.refreshed_reading_ahead(&project.path, &walk, &changes, Some(deadline))?;
        if done == crate::index::Refreshed::default() {
            done.unchanged = round.unchanged;
        }
        done.extracted += round.extracted;
        done.removed += round.removed;
        let stuck = round.left > 0 && round.left == done.left;
        done.left = round.left;
        if round.left == 0 {
            break;
        }
        if stuck {
            // The stat of every file alone outlasted the round: rounds get longer.
            round_time *= 2;
        }
    }
    // Then what the history says of the files, in rounds as well. A history that cannot be
    // read is a hint missing, not a failed index: the files are indexed.
    let Ok(repo) = crate::vcs::open(&project.path) else {
        return Ok(done);
    };
    let index = indexes.project(&project.path)?;
    loop {
        let deadline = std::time::Instant::now() + round_time;
        match crate::chat::learn_history(&mut crate::index::lock(&index), &repo, Some(deadline)) {
            Ok(false) => continue,
            Ok(true) | Err(_) => return Ok(done),
        }
    }
}
