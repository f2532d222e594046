//! The person's own file edits from the editor and the file tree: each one is a commit, so it
//! can be undone like any other version.

use super::{Engine, EngineError, Result};
use crate::folder::{FileState, read_state, resolve};
use crate::store::Project;
use crate::vcs::{self, PathContent};

/// What a checked save did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SaveOutcome {
    /// Written and committed (`None`: the content was already committed).
    Saved { commit: Option<String> },
    /// Not written: the file on disk is no longer what the buffer was loaded from. `disk` is
    /// what is there now (`None`: the file is gone).
    ChangedOnDisk { disk: Option<Vec<u8>> },
}

impl Engine {
    /// Saves like [`Engine::save_file`], but only if the file on disk still has the blob hash
    /// `expected` (what the editor's buffer was loaded from; `None`: the file did not exist).
    /// The check and the write happen under the project's lock, so nothing the engine does
    /// can slip in between; a change by another program is seen and never overwritten.
    pub fn save_file_checked(
        &self,
        project: &Project,
        path: &str,
        contents: &[u8],
        expected: Option<&str>,
    ) -> Result<SaveOutcome> {
        self.locked(&project.path, || {
            let resolved = resolve(&project.path, path)?;
            let disk = read_state(&resolved.abs).map_err(|e| io_error(&resolved.rel, e))?;
            if disk.hash().as_deref() != expected {
                return Ok(SaveOutcome::ChangedOnDisk {
                    disk: disk.bytes().map(<[u8]>::to_vec),
                });
            }
            let commit = self.write_and_commit(project, &resolved.rel, &resolved.abs, contents)?;
            Ok(SaveOutcome::Saved { commit })
        })
    }

    /// Saves a file the person edited and commits it as `[tandem] Edit <path>`. Returns the
    /// commit, `None` when the content was already committed.
    pub fn save_file(
        &self,
        project: &Project,
        path: &str,
        contents: &[u8],
    ) -> Result<Option<String>> {
        self.locked(&project.path, || {
            let resolved = resolve(&project.path, path)?;
            self.write_and_commit(project, &resolved.rel, &resolved.abs, contents)
        })
    }

    /// Writes a file (keeping its mode) and commits it as `[tandem] Edit <rel>`. The caller
    /// holds the project's lock.
    fn write_and_commit(
        &self,
        project: &Project,
        rel: &str,
        abs: &std::path::Path,
        contents: &[u8],
    ) -> Result<Option<String>> {
        let mode = read_state(abs)
            .map_err(|e| io_error(rel, e))?
            .mode()
            .unwrap_or(0o644);
        self.fs
            .write(abs, contents, Some(mode))
            .map_err(|e| io_error(rel, e))?;
        let message = format!("[tandem] Edit {rel}");
        self.commit(project, &[(rel, Some((contents, mode)))], &message)
    }

    /// Renames a file and commits `[tandem] Rename <from> -> <to>`.
    pub fn rename_file(&self, project: &Project, from: &str, to: &str) -> Result<Option<String>> {
        self.locked(&project.path, || {
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
        self.locked(&project.path, || {
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
        crate::failpoint::hit("save-after-commit");
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

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use crate::folder::blob_hash;

    fn project() -> (tempfile::TempDir, Engine, Project) {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("project");
        std::fs::create_dir_all(&root).unwrap();
        std::fs::write(root.join("a.txt"), "loaded\n").unwrap();
        let engine = Engine::open(Some(&dir.path().join("data"))).unwrap();
        let project = engine.add_project(&root, None).unwrap().project;
        (dir, engine, project)
    }

    #[test]
    fn a_checked_save_writes_when_the_disk_is_as_loaded() {
        let (_dir, engine, project) = project();
        let loaded = blob_hash(b"loaded\n");
        let outcome = engine
            .save_file_checked(&project, "a.txt", b"mine\n", Some(&loaded))
            .unwrap();
        assert!(matches!(outcome, SaveOutcome::Saved { commit: Some(_) }));
        let on_disk = std::fs::read_to_string(project.path.join("a.txt")).unwrap();
        assert_eq!(on_disk, "mine\n");
    }

    #[test]
    fn a_checked_save_never_overwrites_a_change_made_on_disk() {
        let (_dir, engine, project) = project();
        let loaded = blob_hash(b"loaded\n");
        let file = project.path.join("a.txt");
        std::fs::write(&file, "theirs\n").unwrap();
        let outcome = engine
            .save_file_checked(&project, "a.txt", b"mine\n", Some(&loaded))
            .unwrap();
        assert_eq!(
            outcome,
            SaveOutcome::ChangedOnDisk {
                disk: Some(b"theirs\n".to_vec())
            }
        );
        assert_eq!(std::fs::read_to_string(&file).unwrap(), "theirs\n");
        // A file deleted meanwhile is a change too; a new file expects nothing there.
        std::fs::remove_file(&file).unwrap();
        let outcome = engine
            .save_file_checked(&project, "a.txt", b"mine\n", Some(&loaded))
            .unwrap();
        assert_eq!(outcome, SaveOutcome::ChangedOnDisk { disk: None });
        assert!(!file.exists());
        let outcome = engine
            .save_file_checked(&project, "a.txt", b"mine\n", None)
            .unwrap();
        assert!(matches!(outcome, SaveOutcome::Saved { .. }));
        assert_eq!(std::fs::read_to_string(&file).unwrap(), "mine\n");
    }
}
