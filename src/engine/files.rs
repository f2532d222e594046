//! The person's own file edits from the editor and the file tree: each one is a commit, so it
//! can be undone like any other version.

use super::{Engine, EngineError, Result};
use crate::store::Project;
use crate::vcs::{self, PathContent};
use crate::workspace::{FileState, read_state, resolve};

impl Engine {
    /// Saves a file the person edited and commits it as `[tandem] Edit <path>`. Returns the
    /// commit, `None` when the content was already committed.
    pub fn save_file(
        &self,
        project: &Project,
        path: &str,
        contents: &[u8],
    ) -> Result<Option<String>> {
        self.locked(project.id, || {
            let resolved = resolve(&project.path, path)?;
            let mode = read_state(&resolved.abs)
                .map_err(|e| io_error(&resolved.rel, e))?
                .mode()
                .unwrap_or(0o644);
            self.fs
                .write(&resolved.abs, contents, Some(mode))
                .map_err(|e| io_error(&resolved.rel, e))?;
            let message = format!("[tandem] Edit {}", resolved.rel);
            self.commit(
                project,
                &[(resolved.rel.as_str(), Some((contents, mode)))],
                &message,
            )
        })
    }

    /// Renames a file and commits `[tandem] Rename <from> -> <to>`.
    pub fn rename_file(&self, project: &Project, from: &str, to: &str) -> Result<Option<String>> {
        self.locked(project.id, || {
            let source = resolve(&project.path, from)?;
            let target = resolve(&project.path, to)?;
            let FileState::File { bytes, mode } =
                read_state(&source.abs).map_err(|e| io_error(&source.rel, e))?
            else {
                return Err(missing(&source.rel));
            };
            if read_state(&target.abs).map_err(|e| io_error(&target.rel, e))? != FileState::Missing
            {
                return Err(EngineError::Io {
                    path: target.rel.clone(),
                    source: std::io::Error::new(
                        std::io::ErrorKind::AlreadyExists,
                        "a file with that name already exists",
                    ),
                });
            }
            self.fs
                .write(&target.abs, &bytes, Some(mode))
                .map_err(|e| io_error(&target.rel, e))?;
            if let Err(e) = self.fs.remove(&source.abs) {
                let _ = self.fs.remove(&target.abs);
                return Err(io_error(&source.rel, e));
            }
            let message = format!("[tandem] Rename {} -> {}", source.rel, target.rel);
            self.commit(
                project,
                &[
                    (source.rel.as_str(), None),
                    (target.rel.as_str(), Some((&bytes, mode))),
                ],
                &message,
            )
        })
    }

    /// Deletes a file and commits `[tandem] Delete <path>` (restore brings it back).
    pub fn delete_file(&self, project: &Project, path: &str) -> Result<Option<String>> {
        self.locked(project.id, || {
            let resolved = resolve(&project.path, path)?;
            if read_state(&resolved.abs).map_err(|e| io_error(&resolved.rel, e))?
                == FileState::Missing
            {
                return Err(missing(&resolved.rel));
            }
            self.fs
                .remove(&resolved.abs)
                .map_err(|e| io_error(&resolved.rel, e))?;
            let message = format!("[tandem] Delete {}", resolved.rel);
            self.commit(project, &[(resolved.rel.as_str(), None)], &message)
        })
    }

    fn commit(
        &self,
        project: &Project,
        changes: &[PathContent<'_>],
        message: &str,
    ) -> Result<Option<String>> {
        let repo = vcs::open(&project.path)?;
        let commit = vcs::commit_paths(&repo, changes, message)?;
        let paths: Vec<&str> = changes.iter().map(|(p, _)| *p).collect();
        let _ = vcs::refresh_index(&repo, &paths);
        Ok(commit.map(|oid| oid.to_string()))
    }
}

fn io_error(path: &str, source: std::io::Error) -> EngineError {
    EngineError::Io {
        path: path.to_string(),
        source,
    }
}

fn missing(path: &str) -> EngineError {
    io_error(
        path,
        std::io::Error::new(std::io::ErrorKind::NotFound, "no such file"),
    )
}
