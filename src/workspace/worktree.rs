//! A throwaway copy of a project for an external agent to work in: the files git would see
//! (`.gitignore` honoured, `.git` left out) copied into a private directory, each one's hash
//! noted. Afterwards [`Worktree::changes`] says what the agent changed against that start —
//! the files it wrote, created or deleted — so its work becomes a proposal in the person's
//! tree instead of edits made there. The directory goes when the value is dropped.

use std::collections::BTreeMap;
use std::fs;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use super::files::blob_hash;
use super::listing::list_files;
use super::{OpenError, RegularFile, open_regular, read_regular};

/// The largest file carried back as a change (larger ones are reported, not proposed).
pub const MAX_CHANGE_BYTES: u64 = 2 * 1024 * 1024;

#[derive(Debug, thiserror::Error)]
pub enum WorktreeError {
    #[error("cannot copy the project into a scratch worktree ({path}): {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error(transparent)]
    List(#[from] super::listing::ListError),
}

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> WorktreeError + '_ {
    move |source| WorktreeError::Io {
        path: path.to_path_buf(),
        source,
    }
}

/// One file as copied: its hash, and its size and time in the copy (unchanged size and time
/// mean unchanged content; otherwise the hash decides).
#[derive(Debug, Clone)]
struct Start {
    hash: String,
    len: u64,
    mtime: Option<SystemTime>,
}

/// What the agent did to one file.
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
    /// Changed but not carried back (not UTF-8 text, or too large): why.
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

pub struct Worktree {
    dir: tempfile::TempDir,
    start: BTreeMap<String, Start>,
}

impl Worktree {
    /// Copies `project` into a new private directory under `base` (the system temp dir when
    /// `None`).
    pub fn create(project: &Path, base: Option<&Path>) -> Result<Worktree, WorktreeError> {
        let mut builder = tempfile::Builder::new();
        builder.prefix("tandem-worktree-");
        let dir = match base {
            Some(base) => {
                fs::create_dir_all(base).map_err(io(base))?;
                builder.tempdir_in(base)
            }
            None => builder.tempdir(),
        }
        .map_err(io(project))?;
        let mut start = BTreeMap::new();
        for rel in list_files(project)? {
            let from = project.join(&rel);
            let to = dir.path().join(&rel);
            // Only a regular file is opened (a named pipe would block for ever). Unreadable
            // here (not a regular file by now, permissions): the agent does not see it either.
            let Ok((bytes, meta)) = read_regular(&from) else {
                continue;
            };
            if let Some(parent) = to.parent() {
                fs::create_dir_all(parent).map_err(io(parent))?;
            }
            fs::write(&to, &bytes).map_err(io(&to))?;
            fs::set_permissions(&to, meta.permissions()).map_err(io(&to))?;
            let copied = fs::metadata(&to).map_err(io(&to))?;
            start.insert(
                rel,
                Start {
                    hash: blob_hash(&bytes),
                    len: copied.len(),
                    mtime: copied.modified().ok(),
                },
            );
        }
        Ok(Worktree { dir, start })
    }

    /// Where the agent works.
    pub fn path(&self) -> &Path {
        self.dir.path()
    }

    /// What differs from the start now, by path. Links and ignored files are not changes.
    pub fn changes(&self) -> Result<Vec<Change>, WorktreeError> {
        let root = self.dir.path();
        let now = list_files(root)?;
        let mut changes = Vec::new();
        for rel in &now {
            let path = root.join(rel);
            let Ok(stat) = fs::symlink_metadata(&path) else {
                continue;
            };
            if !stat.is_file() {
                continue;
            }
            let before = self.start.get(rel);
            if let Some(before) = before
                && before.len == stat.len()
                && before.mtime.is_some()
                && before.mtime == stat.modified().ok()
            {
                continue;
            }
            // The agent may have left anything here, a named pipe included, and swapped it
            // in since the `stat`: only a regular file is opened.
            let RegularFile { file, meta } = match open_regular(&path) {
                Ok(opened) => opened,
                Err(OpenError::NotRegular(_)) => continue,
                Err(OpenError::Io(e)) if e.kind() == std::io::ErrorKind::NotFound => continue,
                Err(OpenError::Io(e)) => return Err(io(&path)(e)),
            };
            if meta.len() > MAX_CHANGE_BYTES {
                changes.push(Change::Skipped {
                    path: rel.clone(),
                    reason: format!(
                        "{} bytes, over the {MAX_CHANGE_BYTES}-byte limit",
                        meta.len()
                    ),
                });
                continue;
            }
            let mut bytes = Vec::new();
            // Never more than the limit, should the file grow while it is read.
            file.take(MAX_CHANGE_BYTES + 1)
                .read_to_end(&mut bytes)
                .map_err(io(&path))?;
            if bytes.len() as u64 > MAX_CHANGE_BYTES {
                changes.push(Change::Skipped {
                    path: rel.clone(),
                    reason: format!("over the {MAX_CHANGE_BYTES}-byte limit"),
                });
                continue;
            }
            if before.is_some_and(|b| b.hash == blob_hash(&bytes)) {
                continue;
            }
            match String::from_utf8(bytes) {
                Ok(content) => changes.push(Change::Write {
                    path: rel.clone(),
                    content,
                }),
                Err(_) => changes.push(Change::Skipped {
                    path: rel.clone(),
                    reason: "not UTF-8 text".into(),
                }),
            }
        }
        let still: std::collections::BTreeSet<&String> = now.iter().collect();
        for rel in self.start.keys() {
            if !still.contains(rel) && !root.join(rel).exists() {
                changes.push(Change::Delete { path: rel.clone() });
            }
        }
        Ok(changes)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(root: &Path, rel: &str, text: &[u8]) {
        let path = root.join(rel);
        fs::create_dir_all(path.parent().unwrap()).unwrap();
        fs::write(path, text).unwrap();
    }

    #[test]
    fn what_the_agent_changed_and_nothing_else() {
        let dir = tempfile::tempdir().unwrap();
        let project = dir.path().join("p");
        write(&project, ".gitignore", b"target/\n");
        write(&project, "src/a.rs", b"a\n");
        write(&project, "src/b.rs", b"b\n");
        write(&project, "src/same.rs", b"same\n");
        write(&project, "target/out.o", b"obj");
        write(&project, ".git/config", b"[core]\n");
        let tree = Worktree::create(&project, Some(&dir.path().join("base"))).unwrap();
        let root = tree.path().to_path_buf();
        assert!(root.join("src/a.rs").exists());
        assert!(!root.join("target").exists() && !root.join(".git").exists());
        assert!(
            tree.changes().unwrap().is_empty(),
            "a fresh copy has no changes"
        );

        write(&root, "src/a.rs", b"A\n");
        fs::remove_file(root.join("src/b.rs")).unwrap();
        write(&root, "src/new.rs", b"new\n");
        write(&root, "img.bin", &[0xff, 0xfe, 0x00]);
        write(&root, "target/more.o", b"ignored output");
        // Rewritten with the same bytes: not a change.
        write(&root, "src/same.rs", b"same\n");
        let mut changes = tree.changes().unwrap();
        changes.sort_by(|a, b| a.path().cmp(b.path()));
        assert_eq!(
            changes,
            [
                Change::Skipped {
                    path: "img.bin".into(),
                    reason: "not UTF-8 text".into()
                },
                Change::Write {
                    path: "src/a.rs".into(),
                    content: "A\n".into()
                },
                Change::Delete {
                    path: "src/b.rs".into()
                },
                Change::Write {
                    path: "src/new.rs".into(),
                    content: "new\n".into()
                },
            ]
        );
        // The project itself is untouched, and the copy goes with the value.
        assert_eq!(fs::read(project.join("src/a.rs")).unwrap(), b"a\n");
        drop(tree);
        assert!(!root.exists());
    }

    /// Named pipes in the project are not copied, and one the agent leaves in its copy is not
    /// a change: neither is ever opened, so neither blocks.
    #[cfg(unix)]
    #[test]
    fn named_pipes_are_neither_copied_nor_changes() {
        use crate::workspace::test_support::{fifo, promptly};
        let dir = tempfile::tempdir().unwrap();
        let project = dir.path().join("p");
        write(&project, "src/a.rs", b"a\n");
        fifo(&project.join("src/pipe.rs"));
        let base = dir.path().join("base");
        let tree = promptly(move || Worktree::create(&project, Some(&base)).unwrap());
        assert!(fs::symlink_metadata(tree.path().join("src/pipe.rs")).is_err());
        fifo(&tree.path().join("src/left.rs"));
        let changes = promptly(move || tree.changes().unwrap());
        assert!(changes.is_empty(), "{changes:?}");
    }
}
