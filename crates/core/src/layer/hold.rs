//! A pending proposal the workspace does not hold, put into it before the person runs a
//! command there. A Build reply's edits live in its review, not in a workspace: without
//! this, a run in its chat's workspace would test the project without the proposal, and
//! say nothing of it.
//!
//! What the workspace changed itself wins: a path it holds otherwise than the proposal keeps
//! its own version (reported as kept). The layer remembers what it put, path by path, so a
//! path still as it was put is the proposal's — a later proposal replaces it, and one it no
//! longer touches goes back to the project's — while a path a run changed since is the
//! workspace's own.

use std::collections::{BTreeMap, BTreeSet};

use serde::Serialize;

use super::{Change, LayerError, Workspace, io};

/// One path as a proposal leaves it: its bytes and permission bits, or deleted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ending {
    pub path: String,
    pub content: Option<(Vec<u8>, u32)>,
}

/// What putting a proposal into the workspace did, path by path.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Held {
    /// Written (or deleted) as the proposal leaves them.
    pub written: Vec<String>,
    /// The workspace changed them itself and holds them otherwise than the proposal: its
    /// version is the one a run sees.
    pub kept: Vec<String>,
    /// An earlier proposal put them, this one does not touch them: back to the project's.
    pub restored: Vec<String>,
    /// The proposal's files it cannot put (an error, a conflict with the person's tree) and
    /// does not hold itself, with why: a run sees the project's version.
    pub left_out: Vec<LeftOut>,
}

/// A file of the proposal a run does not see, and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct LeftOut {
    pub path: String,
    pub reason: String,
}

/// How the workspace holds a path: its content hash, or `None` when deleted.
type State = Option<String>;

impl Workspace {
    /// Puts `endings` (the pending proposal's: none when there is no pending proposal) into
    /// the workspace, for the paths it does not hold otherwise itself, and takes back what an
    /// earlier call put that `endings` no longer has. `unusable` are the proposal's files
    /// that cannot be put, with why.
    pub fn hold(&self, endings: &[Ending], unusable: &[LeftOut]) -> Result<Held, LayerError> {
        let mut meta = self.layer.meta();
        let put_before = meta.held.take().unwrap_or_default();
        // What it holds now against the project; a path it cannot say (not text, a link)
        // is held and never the proposal's.
        let holds: BTreeMap<String, Option<State>> = (self.all_changes()?.into_iter())
            .map(|change| match change {
                Change::Write { path, content } => {
                    let hash = crate::folder::blob_hash(content.as_bytes());
                    (path, Some(Some(hash)))
                }
                Change::Delete { path } => (path, Some(None)),
                Change::Skipped { path, .. } => (path, None),
            })
            .collect();
        // A path is the proposal's while the workspace holds it as it was put.
        let theirs = |path: &str| {
            put_before
                .get(path)
                .is_some_and(|put| holds.get(path) == Some(&Some(put.clone())))
        };
        // What the layer holds of a proposal, kept up to date write by write: saved even when
        // one fails, so what was put is never taken for the workspace's own.
        let mut put: BTreeMap<String, State> = (put_before.iter())
            .filter(|(path, _)| theirs(path))
            .map(|(path, state)| (path.clone(), state.clone()))
            .collect();
        let mut held = Held::default();
        let done = (|| {
            // Taken back first: a file put before may stand where this proposal has a folder.
            let proposed: BTreeSet<&str> = endings.iter().map(|e| e.path.as_str()).collect();
            for path in put_before.keys() {
                if theirs(path) && !proposed.contains(path.as_str()) {
                    self.restore(path)?;
                    put.remove(path);
                    held.restored.push(path.clone());
                }
            }
            for ending in endings {
                let state =
                    (ending.content.as_ref()).map(|(bytes, _)| crate::folder::blob_hash(bytes));
                let now = holds.get(&ending.path);
                if now.is_some() && !theirs(&ending.path) {
                    if now != Some(&Some(state)) {
                        held.kept.push(ending.path.clone());
                    }
                    continue;
                }
                if now != Some(&Some(state.clone())) {
                    let content =
                        (ending.content.as_ref()).map(|(bytes, mode)| (&bytes[..], *mode));
                    self.put(&ending.path, content)?;
                    held.written.push(ending.path.clone());
                }
                put.insert(ending.path.clone(), state);
            }
            Ok::<_, LayerError>(())
        })();
        meta.held = (!put.is_empty()).then_some(put);
        self.layer.save_meta(&meta)?;
        done?;
        for file in unusable {
            if !holds.contains_key(&file.path) || theirs(&file.path) {
                held.left_out.push(file.clone());
            }
        }
        Ok(held)
    }

    /// Writes `content` (bytes and mode; `None`: deletes) at the workspace path `rel`,
    /// resolved inside the view: a link the workspace holds never carries a write out of it.
    pub fn put(&self, rel: &str, content: Option<(&[u8], u32)>) -> Result<(), LayerError> {
        let at = self.inside(rel)?;
        match content {
            Some((bytes, mode)) => {
                crate::folder::write_file_atomic(&at, bytes, Some(mode)).map_err(io(&at))
            }
            None => crate::folder::remove_file(&at).map_err(io(&at)),
        }
    }

    /// Where the workspace path `rel` is in the view, links followed only inside it.
    fn inside(&self, rel: &str) -> Result<std::path::PathBuf, LayerError> {
        match crate::folder::resolve(self.view(), rel) {
            Ok(resolved) => Ok(resolved.abs),
            Err(e) => Err(LayerError::Io {
                path: self.view().join(rel),
                source: std::io::Error::new(std::io::ErrorKind::InvalidInput, e.to_string()),
            }),
        }
    }

    /// Sets `rel` back to the project's content (or removes it, where the project has none).
    fn restore(&self, rel: &str) -> Result<(), LayerError> {
        let project = crate::folder::resolve(&self.project, rel)
            .ok()
            .and_then(|resolved| crate::folder::read_state(&resolved.abs).ok());
        match project {
            Some(crate::folder::FileState::File { bytes, mode }) => {
                self.put(rel, Some((&bytes, mode)))
            }
            // Not the project's: gone, with the folders only it kept.
            _ => {
                let at = self.inside(rel)?;
                crate::folder::remove_file_and_emptied(&at, self.view()).map_err(io(&at))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::fs;

    use super::super::{Layer, overlay};
    use super::*;

    fn write(path: &str, text: &str) -> Ending {
        let content = Some((text.as_bytes().to_vec(), 0o644));
        Ending {
            path: path.into(),
            content,
        }
    }

    fn read(workspace: &Workspace, rel: &str) -> Option<String> {
        fs::read_to_string(workspace.view().join(rel)).ok()
    }

    /// A proposal is put where the workspace does not hold its own version; a later one
    /// replaces what the earlier put, and what it no longer touches goes back to the
    /// project's; what a run changed stays the workspace's, reported as kept. Kept in the
    /// layer between two opens, as runs open it.
    #[test]
    fn a_proposal_is_put_replaced_and_taken_back_but_a_runs_own_change_stays() {
        for copy in [true, false] {
            if !copy && overlay::supported().is_err() {
                assert!(std::env::var_os("CI").is_none(), "no overlay under CI");
                continue;
            }
            let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
            let root = dir.path().join("project");
            fs::create_dir_all(root.join("src")).unwrap_or_else(|e| panic!("{e}"));
            fs::write(root.join("src/a.txt"), "a\n").unwrap_or_else(|e| panic!("{e}"));
            fs::write(root.join("b.txt"), "b\n").unwrap_or_else(|e| panic!("{e}"));
            let layer = Layer::of(&dir.path().join("data"), 1);
            let open =
                || Workspace::open(layer.clone(), &root, copy).unwrap_or_else(|e| panic!("{e}"));

            let workspace = open();
            let conflict = LeftOut {
                path: "c.txt".into(),
                reason: "changed since".into(),
            };
            let first = [
                write("src/a.txt", "A1\n"),
                Ending {
                    path: "b.txt".into(),
                    content: None,
                },
                write("new.txt", "N1\n"),
            ];
            let held = (workspace.hold(&first, std::slice::from_ref(&conflict)))
                .unwrap_or_else(|e| panic!("{e}"));
            assert_eq!(held.written, ["src/a.txt", "b.txt", "new.txt"], "{copy}");
            assert_eq!(held.left_out, std::slice::from_ref(&conflict));
            assert!(held.kept.is_empty() && held.restored.is_empty(), "{held:?}");
            assert_eq!(read(&workspace, "src/a.txt").as_deref(), Some("A1\n"));
            assert_eq!(read(&workspace, "b.txt"), None);
            // A run changes one of the proposal's files and makes its own.
            fs::write(workspace.view().join("new.txt"), "run\n").unwrap_or_else(|e| panic!("{e}"));
            fs::write(workspace.view().join("made.txt"), "m\n").unwrap_or_else(|e| panic!("{e}"));
            drop(workspace);

            let workspace = open();
            let second = [write("src/a.txt", "A2\n"), write("new.txt", "N2\n")];
            let held = workspace
                .hold(&second, &[])
                .unwrap_or_else(|e| panic!("{e}"));
            assert_eq!(held.written, ["src/a.txt"], "{copy}");
            assert_eq!(held.kept, ["new.txt"]);
            assert_eq!(held.restored, ["b.txt"]);
            assert_eq!(read(&workspace, "src/a.txt").as_deref(), Some("A2\n"));
            assert_eq!(read(&workspace, "b.txt").as_deref(), Some("b\n"));
            assert_eq!(read(&workspace, "new.txt").as_deref(), Some("run\n"));
            // The same proposal again: nothing to do.
            let again = workspace
                .hold(&second, &[])
                .unwrap_or_else(|e| panic!("{e}"));
            assert_eq!(again.written, Vec::<String>::new());
            assert_eq!(again.kept, ["new.txt"]);

            // None pending: what was put goes back, the run's own stays.
            let held = workspace.hold(&[], &[]).unwrap_or_else(|e| panic!("{e}"));
            assert_eq!(held.restored, ["src/a.txt"], "{copy}");
            let mut left: Vec<String> = (workspace.all_changes().unwrap_or_else(|e| panic!("{e}")))
                .iter()
                .map(|c| c.path().to_string())
                .collect();
            left.sort();
            assert_eq!(left, ["made.txt", "new.txt"], "{copy}");
            assert_eq!(
                fs::read_to_string(root.join("src/a.txt")).ok().as_deref(),
                Some("a\n")
            );
        }
    }

    /// A link the workspace holds never carries a proposal's write out of it.
    #[cfg(unix)]
    #[test]
    fn a_link_in_the_workspace_does_not_carry_a_write_out() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let root = dir.path().join("project");
        let outside = dir.path().join("outside");
        for d in [&root, &outside] {
            fs::create_dir_all(d).unwrap_or_else(|e| panic!("{e}"));
        }
        let layer = Layer::of(&dir.path().join("data"), 1);
        let workspace = Workspace::open(layer, &root, true).unwrap_or_else(|e| panic!("{e}"));
        std::os::unix::fs::symlink(&outside, workspace.view().join("out"))
            .unwrap_or_else(|e| panic!("{e}"));
        let first = [write("a.txt", "a\n"), write("out/x.txt", "x\n")];
        let held = workspace.hold(&first, &[]);
        assert!(held.is_err(), "{held:?}");
        assert!(!outside.join("x.txt").exists());
        // What was put before the refusal is still known as the proposal's: taken back.
        let held = workspace.hold(&[], &[]).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(held.restored, ["a.txt"]);
        assert!(!workspace.view().join("a.txt").exists());
    }

    /// A file an earlier proposal put gives way to a folder of the next one's.
    #[test]
    fn a_file_put_before_gives_way_to_a_folder_of_the_next_proposal() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let root = dir.path().join("project");
        fs::create_dir_all(&root).unwrap_or_else(|e| panic!("{e}"));
        let layer = Layer::of(&dir.path().join("data"), 1);
        let workspace = Workspace::open(layer, &root, true).unwrap_or_else(|e| panic!("{e}"));
        (workspace.hold(&[write("x", "file\n")], &[])).unwrap_or_else(|e| panic!("{e}"));
        let held = (workspace.hold(&[write("x/y", "in a folder\n")], &[]))
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(
            (held.restored, held.written),
            (vec!["x".to_string()], vec!["x/y".to_string()])
        );
        assert_eq!(read(&workspace, "x/y").as_deref(), Some("in a folder\n"));
    }
}
