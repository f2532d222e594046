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

use super::{LayerError, Workspace, io};

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

/// A path as the record keeps what was put there: its content hash, or `None` when deleted.
type State = Option<String>;

/// What is at a path of the view now.
#[derive(Debug, PartialEq, Eq)]
enum Seen {
    /// A file (its content hash), or nothing: comparable with what was put.
    Is(State),
    /// A link (at the path or on the way to it), a folder, anything else: the workspace's own.
    Other,
}

impl Workspace {
    /// Puts `endings` (the pending proposal's: none when there is no pending proposal) into
    /// the workspace, for the paths it does not hold otherwise itself, and takes back what an
    /// earlier call put that `endings` no longer has. `unusable` are the proposal's files
    /// that cannot be put, with why.
    pub fn hold(&self, endings: &[Ending], unusable: &[LeftOut]) -> Result<Held, LayerError> {
        let mut meta = self.layer.record()?;
        let put_before = meta.held.take().unwrap_or_default();
        // The paths it holds otherwise than the project (ignored ones aside).
        let changed: BTreeSet<String> = (self.all_changes()?.into_iter())
            .map(|change| change.path().to_string())
            .collect();
        let was: BTreeMap<&str, Seen> = (put_before.keys())
            .map(|path| (path.as_str(), self.seen(path)))
            .collect();
        // A path is the proposal's while it is as it was put; the workspace's own when it
        // changed it (from the project, or from what was put: a run that deleted or reverted
        // a file put there), or keeps anything but a file there.
        let theirs = |path: &str| {
            (put_before.get(path)).is_some_and(|put| was.get(path) == Some(&Seen::Is(put.clone())))
        };
        let own = |path: &str, now: &Seen| {
            *now == Seen::Other
                || ((changed.contains(path) || put_before.contains_key(path)) && !theirs(path))
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
                // Seen after the take-back, which may have cleared the way.
                let now = self.seen(&ending.path);
                if own(&ending.path, &now) {
                    if now != Seen::Is(state) {
                        held.kept.push(ending.path.clone());
                    }
                    continue;
                }
                if now != Seen::Is(state.clone()) {
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
        // A file the proposal cannot have (a failed edit, a conflict): the workspace's own
        // version runs where it has one, else the project's.
        for file in unusable {
            // A path no workspace file can have (`..`, absolute, in `.git`) is never its own.
            let valid = crate::folder::normalize_relative(&file.path)
                .is_ok_and(|rel| !rel.split('/').any(|part| part.eq_ignore_ascii_case(".git")));
            match valid && own(&file.path, &self.seen(&file.path)) {
                true => held.kept.push(file.path.clone()),
                false => held.left_out.push(file.clone()),
            }
        }
        Ok(held)
    }

    /// What is at the workspace path `rel` now.
    fn seen(&self, rel: &str) -> Seen {
        match crate::folder::resolve(self.view(), rel) {
            Ok(resolved) if resolved.rel == rel => match crate::folder::read_state(&resolved.abs) {
                Ok(state) => Seen::Is(state.hash()),
                Err(_) => Seen::Other,
            },
            _ => Seen::Other,
        }
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
                cause: std::io::Error::new(std::io::ErrorKind::InvalidInput, e.to_string()),
            }),
        }
    }

    /// Sets `rel` back to the project's content, or removes it (and the folders only it
    /// kept) where the project has none. Anything else there in the project (a folder, a
    /// file that cannot be read) is refused: removing the file would hide it.
    fn restore(&self, rel: &str) -> Result<(), LayerError> {
        let in_project = crate::folder::resolve(&self.project, rel)
            .map_err(|e| e.to_string())
            .and_then(|resolved| {
                crate::folder::read_state(&resolved.abs).map_err(|e| e.to_string())
            });
        match in_project {
            Ok(crate::folder::FileState::File { bytes, mode }) => {
                self.put(rel, Some((&bytes, mode)))
            }
            Ok(crate::folder::FileState::Missing) => {
                let at = self.inside(rel)?;
                crate::folder::remove_file(&at).map_err(io(&at))?;
                let mut folder = std::path::Path::new(rel).parent();
                while let Some(dir) = folder.filter(|d| !d.as_os_str().is_empty()) {
                    if self.project.join(dir).exists()
                        || std::fs::remove_dir(self.view().join(dir)).is_err()
                    {
                        break;
                    }
                    folder = dir.parent();
                }
                Ok(())
            }
            Err(why) => Err(LayerError::Held {
                chat: self.layer.chat_id,
                path: rel.to_string(),
                why,
            }),
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
            let hostile = ["../evil", ".git/config", "/etc/hostname"].map(|path| LeftOut {
                path: path.into(),
                reason: "refused".into(),
            });
            let unusable = [[conflict.clone()].as_slice(), &hostile].concat();
            let held = (workspace.hold(&first, &unusable)).unwrap_or_else(|e| panic!("{e}"));
            assert_eq!(held.written, ["src/a.txt", "b.txt", "new.txt"], "{copy}");
            assert_eq!(held.left_out, unusable);
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
        let held = (workspace.hold(&[write("a.txt", "a\n"), write("out/x.txt", "x\n")], &[]))
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(
            (held.written, held.kept),
            (vec!["a.txt".to_string()], vec!["out/x.txt".to_string()])
        );
        assert!(!outside.join("x.txt").exists());
    }

    /// A take-back that would hide what the project now has there is refused with why, and
    /// what was put stays known as the proposal's: taken back once it can be.
    #[test]
    fn a_take_back_never_hides_a_project_folder_and_the_record_outlives_a_refusal() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let root = dir.path().join("project");
        fs::create_dir_all(&root).unwrap_or_else(|e| panic!("{e}"));
        let layer = Layer::of(&dir.path().join("data"), 1);
        let workspace = Workspace::open(layer, &root, true).unwrap_or_else(|e| panic!("{e}"));
        (workspace.hold(&[write("a.txt", "a\n"), write("x", "file\n")], &[]))
            .unwrap_or_else(|e| panic!("{e}"));
        fs::create_dir_all(root.join("x")).unwrap_or_else(|e| panic!("{e}"));
        let refused = workspace.hold(&[], &[]);
        assert!(
            matches!(refused, Err(LayerError::Held { ref path, .. }) if path == "x"),
            "{refused:?}"
        );
        assert!(!workspace.view().join("a.txt").exists());
        assert_eq!(read(&workspace, "x").as_deref(), Some("file\n"));
        fs::remove_dir(root.join("x")).unwrap_or_else(|e| panic!("{e}"));
        let held = workspace.hold(&[], &[]).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(held.restored, ["x"]);
        assert!(!workspace.view().join("x").exists());
    }

    /// What a run did to a file put there is its own, even back to the project's version or
    /// gone; a link it put on the way makes the path its own too, never written through; an
    /// ignored file put there is known as well; a file that cannot be put is the workspace's
    /// own where it has one.
    #[test]
    fn a_runs_revert_deletion_or_link_is_its_own() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let root = dir.path().join("project");
        fs::create_dir_all(root.join("docs")).unwrap_or_else(|e| panic!("{e}"));
        for (path, text) in [
            ("README.md", "hello\n"),
            ("docs/notes.txt", "n\n"),
            (".gitignore", "build/\n"),
        ] {
            fs::write(root.join(path), text).unwrap_or_else(|e| panic!("{e}"));
        }
        let layer = Layer::of(&dir.path().join("data"), 1);
        let workspace = Workspace::open(layer, &root, true).unwrap_or_else(|e| panic!("{e}"));
        let view = workspace.view().to_path_buf();
        let first = [
            write("README.md", "proposed\n"),
            write("gen.txt", "generated\n"),
            write("build/config.json", "{}\n"),
        ];
        (workspace.hold(&first, &[])).unwrap_or_else(|e| panic!("{e}"));
        // The run: README back to the project's, gen.txt gone, docs a link to its own copy.
        fs::write(view.join("README.md"), "hello\n").unwrap_or_else(|e| panic!("{e}"));
        fs::remove_file(view.join("gen.txt")).unwrap_or_else(|e| panic!("{e}"));
        fs::rename(view.join("docs"), view.join("mydocs")).unwrap_or_else(|e| panic!("{e}"));
        fs::write(view.join("mydocs/notes.txt"), "run's own\n").unwrap_or_else(|e| panic!("{e}"));
        std::os::unix::fs::symlink("mydocs", view.join("docs")).unwrap_or_else(|e| panic!("{e}"));
        let second = [
            write("README.md", "proposed\n"),
            write("gen.txt", "generated\n"),
            write("docs/notes.txt", "proposed\n"),
            write("build/config.json", "{}\n"),
        ];
        let conflict = LeftOut {
            path: "mydocs/notes.txt".into(),
            reason: "changed since".into(),
        };
        let held = workspace
            .hold(&second, std::slice::from_ref(&conflict))
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(
            held.kept,
            ["README.md", "gen.txt", "docs/notes.txt", "mydocs/notes.txt"]
        );
        assert_eq!(
            (held.written.len(), held.left_out.len()),
            (0, 0),
            "{held:?}"
        );
        assert_eq!(
            read(&workspace, "mydocs/notes.txt").as_deref(),
            Some("run's own\n")
        );
        assert_eq!(read(&workspace, "README.md").as_deref(), Some("hello\n"));
        // The ignored file put there is the proposal's: taken back when no longer proposed.
        let held = workspace.hold(&[], &[]).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(held.restored, ["build/config.json"]);
        assert!(!view.join("build").exists());
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
