//! A scratch copy of a project, where a proposal is applied and checked without touching the
//! person's working tree.
//!
//! One copy per project lives in the user's cache directory (`~/.cache/tandem/scratch` on
//! Linux, private to the user) and is kept between checks, so a compiler's build output there stays warm: each check first brings the
//! copy up to date with the project — copying only the files whose size or time changed,
//! deleting those gone, putting back what the previous proposal wrote — then writes the new
//! proposal's files. What the walk copies is what git would see (`.gitignore` honoured, `.git`
//! left out); dependency folders the project keeps ignored (`node_modules`, `.venv`, …) are
//! linked, not copied, and the check may only read them.

use std::collections::BTreeMap;
use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use serde::{Deserialize, Serialize};

use crate::edits::apply::PathWrite;

/// Ignored folders a check needs to read (installed dependencies), linked into the copy.
const LINKED_DIRS: &[&str] = &["node_modules", ".venv", "venv", "vendor", "__pypackages__"];
const MANIFEST: &str = "manifest.json";

#[derive(Debug, thiserror::Error)]
pub enum ScratchError {
    #[error("cannot prepare the scratch copy at {path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("cannot walk the project: {0}")]
    Walk(String),
}

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> ScratchError + '_ {
    move |source| ScratchError::Io {
        path: path.to_path_buf(),
        source,
    }
}

/// What the copy holds, kept beside it: each synced file's (size, mtime in ns) as it was in
/// the project, and the paths a proposal wrote over (to put back next time).
#[derive(Debug, Default, Serialize, Deserialize)]
struct Manifest {
    files: BTreeMap<String, (u64, u128)>,
    written: Vec<String>,
}

/// The scratch copy of one project.
#[derive(Debug, Clone)]
pub struct Scratch {
    /// The copy's root: where the check runs.
    pub tree: PathBuf,
    manifest: PathBuf,
}

impl Scratch {
    /// The copy for `project` (its canonical root) under `base` (by default the user's cache
    /// directory; tests pass their own). Created private to the user.
    pub fn for_project(project: &Path, base: Option<&Path>) -> Result<Scratch, ScratchError> {
        let base = match base {
            Some(base) => base.to_path_buf(),
            None => default_base(),
        };
        let dir = base.join(format!("{:016x}", path_hash(project)));
        fs::create_dir_all(&dir).map_err(io(&dir))?;
        private(&base)?;
        let tree = dir.join("tree");
        fs::create_dir_all(&tree).map_err(io(&tree))?;
        Ok(Scratch {
            tree,
            manifest: dir.join(MANIFEST),
        })
    }

    /// Brings the copy up to date with `project`, then writes `writes` (a proposal) into it.
    pub fn prepare(&self, project: &Path, writes: &[PathWrite]) -> Result<(), ScratchError> {
        let mut manifest: Manifest = fs::read(&self.manifest)
            .ok()
            .and_then(|bytes| serde_json::from_slice(&bytes).ok())
            .unwrap_or_default();
        let mut current = walk(project)?;
        // What the last proposal wrote is not the project's: copy it again (or delete it).
        // The check ran code in the copy: a `.git` it left would be taken for the copy's
        // (the sandbox mounts a repository's git directories), and links it left in place of
        // folders must not be followed (see `real_parents`).
        remove_any(&self.tree.join(".git"))?;
        for rel in std::mem::take(&mut manifest.written) {
            manifest.files.remove(&rel);
            if !current.contains_key(&rel) && real_parents(&self.tree, &rel, false)? {
                remove(&self.tree.join(&rel))?;
            }
        }
        for rel in manifest.files.keys() {
            if !current.contains_key(rel) && real_parents(&self.tree, rel, false)? {
                remove(&self.tree.join(rel))?;
            }
        }
        let mut gone = Vec::new();
        for (rel, stamp) in &current {
            let dest = self.tree.join(rel);
            real_parents(&self.tree, rel, true)?;
            let there = fs::symlink_metadata(&dest).is_ok_and(|m| m.is_file());
            if manifest.files.get(rel) == Some(stamp) && there {
                continue;
            }
            remove_any(&dest)?;
            if !copy_regular(&project.join(rel), &dest)? {
                gone.push(rel.clone());
            }
        }
        for rel in gone {
            current.remove(&rel);
        }
        manifest.files = current;
        for name in LINKED_DIRS {
            link_dir(&project.join(name), &self.tree.join(name))?;
        }
        // The proposal, recorded before it is written: a failure half-way is undone next time.
        manifest.written = writes.iter().map(|w| w.rel.clone()).collect();
        self.save(&manifest)?;
        for write in writes {
            let dest = self.tree.join(&write.rel);
            match &write.new {
                Some((bytes, mode)) => {
                    real_parents(&self.tree, &write.rel, true)?;
                    remove_any(&dest)?;
                    create_new(&dest)?.write_all(bytes).map_err(io(&dest))?;
                    set_mode(&dest, *mode)?;
                }
                None => {
                    if real_parents(&self.tree, &write.rel, false)? {
                        remove(&dest)?;
                    }
                }
            }
        }
        Ok(())
    }

    fn save(&self, manifest: &Manifest) -> Result<(), ScratchError> {
        let bytes = serde_json::to_vec(manifest).map_err(|e| ScratchError::Io {
            path: self.manifest.clone(),
            source: std::io::Error::other(e),
        })?;
        fs::write(&self.manifest, bytes).map_err(io(&self.manifest))
    }
}

/// Every file git would see in `project`: relative path → (size, mtime).
fn walk(project: &Path) -> Result<BTreeMap<String, (u64, u128)>, ScratchError> {
    let mut files = BTreeMap::new();
    let walker = ignore::WalkBuilder::new(project)
        .hidden(false)
        .require_git(false)
        .follow_links(false)
        .filter_entry(|e| e.file_name() != ".git")
        .build();
    for entry in walker {
        let entry = entry.map_err(|e| ScratchError::Walk(e.to_string()))?;
        if !entry.file_type().is_some_and(|t| t.is_file()) {
            continue;
        }
        let Ok(rel) = entry.path().strip_prefix(project) else {
            continue;
        };
        let Some(rel) = rel.to_str() else {
            continue;
        };
        let meta = entry
            .metadata()
            .map_err(|e| ScratchError::Walk(e.to_string()))?;
        let mtime = meta
            .modified()
            .ok()
            .and_then(|t| t.duration_since(SystemTime::UNIX_EPOCH).ok())
            .map_or(0, |d| d.as_nanos());
        files.insert(rel.replace('\\', "/"), (meta.len(), mtime));
    }
    Ok(files)
}

/// Copies the project file `from` to `to` with its permission bits; `false` (nothing copied)
/// when it is no longer a regular file. The walk keeps only regular files, but a named pipe
/// put in one's place since would block `fs::copy` for ever, and a device would stream into
/// the copy: only a regular file is opened.
fn copy_regular(from: &Path, to: &Path) -> Result<bool, ScratchError> {
    let source = match crate::folder::open_regular(from) {
        Ok(source) => source,
        Err(crate::folder::OpenError::NotRegular(_)) => return Ok(false),
        // Deleted since the walk: as if the walk had not seen it.
        Err(crate::folder::OpenError::Io(e)) if e.kind() == std::io::ErrorKind::NotFound => {
            return Ok(false);
        }
        Err(crate::folder::OpenError::Io(e)) => return Err(io(from)(e)),
    };
    let mut reader = source.file;
    let mut dest = create_new(to)?;
    std::io::copy(&mut reader, &mut dest).map_err(io(to))?;
    dest.set_permissions(source.meta.permissions())
        .map_err(io(to))?;
    Ok(true)
}

/// Makes every folder between `tree` and `rel`'s file a real folder of the copy, as seen
/// from `tree`: a link or a file in the way (a check's code, which runs in the copy, may
/// have left one pointing anywhere) is removed, so nothing Tandem writes or deletes in the
/// copy lands outside it. With `create`, missing folders are made; without, `false` when one
/// is missing (nothing below it to delete). A path leaving the copy is refused.
fn real_parents(tree: &Path, rel: &str, create: bool) -> Result<bool, ScratchError> {
    let mut at = tree.to_path_buf();
    let parent = Path::new(rel).parent().unwrap_or(Path::new(""));
    for part in parent.components() {
        let std::path::Component::Normal(part) = part else {
            return Err(io(&at)(std::io::Error::other(format!(
                "{rel} leaves the scratch copy"
            ))));
        };
        at.push(part);
        match fs::symlink_metadata(&at) {
            Ok(meta) if meta.is_dir() => continue,
            Ok(_) => remove(&at)?,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(io(&at)(e)),
        }
        if !create {
            return Ok(false);
        }
        fs::create_dir(&at).map_err(io(&at))?;
    }
    Ok(true)
}

/// A new file at `path`, never through a link put there.
fn create_new(path: &Path) -> Result<fs::File, ScratchError> {
    fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(path)
        .map_err(io(path))
}

/// Removes whatever is at `path` (a file, a link, a folder), following no link.
fn remove_any(path: &Path) -> Result<(), ScratchError> {
    match fs::symlink_metadata(path) {
        Ok(meta) if meta.is_dir() => fs::remove_dir_all(path).map_err(io(path)),
        Ok(_) => remove(path),
        Err(_) => Ok(()),
    }
}

fn remove(path: &Path) -> Result<(), ScratchError> {
    match fs::remove_file(path) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(ScratchError::Io {
            path: path.to_path_buf(),
            source: e,
        }),
    }
}

/// Links `from` (a project folder) at `to` when it exists; removes a stale link otherwise.
fn link_dir(from: &Path, to: &Path) -> Result<(), ScratchError> {
    let exists = from.is_dir();
    match fs::symlink_metadata(to) {
        Ok(meta) if meta.file_type().is_symlink() => {
            if exists && fs::read_link(to).is_ok_and(|target| target == from) {
                return Ok(());
            }
            fs::remove_file(to).map_err(io(to))?;
        }
        // A real folder of that name was copied from the project (not ignored there).
        Ok(_) => return Ok(()),
        Err(_) => {}
    }
    if exists {
        symlink(from, to)?;
    }
    Ok(())
}

#[cfg(unix)]
fn symlink(from: &Path, to: &Path) -> Result<(), ScratchError> {
    std::os::unix::fs::symlink(from, to).map_err(io(to))
}

#[cfg(not(unix))]
fn symlink(_from: &Path, _to: &Path) -> Result<(), ScratchError> {
    // Without links the check simply runs without the installed dependencies.
    Ok(())
}

#[cfg(unix)]
fn set_mode(path: &Path, mode: u32) -> Result<(), ScratchError> {
    use std::os::unix::fs::PermissionsExt;
    fs::set_permissions(path, fs::Permissions::from_mode(mode & 0o777)).map_err(io(path))
}

#[cfg(not(unix))]
fn set_mode(_path: &Path, _mode: u32) -> Result<(), ScratchError> {
    Ok(())
}

/// The base directory is the user's alone.
#[cfg(unix)]
fn private(base: &Path) -> Result<(), ScratchError> {
    use std::os::unix::fs::PermissionsExt;
    fs::set_permissions(base, fs::Permissions::from_mode(0o700)).map_err(io(base))
}

#[cfg(not(unix))]
fn private(_base: &Path) -> Result<(), ScratchError> {
    Ok(())
}

/// `~/.cache/tandem/scratch` (or the platform's cache directory); the system temp directory
/// when there is none.
fn default_base() -> PathBuf {
    directories::ProjectDirs::from("", "", "tandem").map_or_else(
        || std::env::temp_dir().join("tandem-scratch"),
        |dirs| dirs.cache_dir().join("scratch"),
    )
}

/// A stable name for a project's copy (FNV-1a of its path).
fn path_hash(path: &Path) -> u64 {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for byte in path.to_string_lossy().bytes() {
        hash ^= u64::from(byte);
        hash = hash.wrapping_mul(0x0100_0000_01b3);
    }
    hash
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(root: &Path, rel: &str, text: &str) {
        let path = root.join(rel);
        fs::create_dir_all(path.parent().unwrap()).unwrap();
        fs::write(path, text).unwrap();
    }

    fn proposal(project: &Path, rel: &str, text: Option<&str>) -> PathWrite {
        PathWrite {
            rel: rel.into(),
            abs: project.join(rel),
            expected: None,
            new: text.map(|t| (t.as_bytes().to_vec(), 0o644)),
        }
    }

    #[test]
    fn the_copy_follows_the_project_and_forgets_each_proposal() {
        let dir = tempfile::tempdir().unwrap();
        let project = dir.path().join("p");
        write(&project, "src/a.rs", "a\n");
        write(&project, "src/b.rs", "b\n");
        write(&project, ".gitignore", "target/\nnode_modules/\n");
        write(&project, "target/big.o", "object");
        write(&project, "node_modules/dep/index.js", "dep");
        let scratch = Scratch::for_project(&project, Some(&dir.path().join("s"))).unwrap();
        let tree = scratch.tree.clone();

        scratch
            .prepare(
                &project,
                &[
                    proposal(&project, "src/a.rs", Some("A\n")),
                    proposal(&project, "src/b.rs", None),
                    proposal(&project, "src/new.rs", Some("new\n")),
                ],
            )
            .unwrap();
        assert_eq!(fs::read_to_string(tree.join("src/a.rs")).unwrap(), "A\n");
        assert!(!tree.join("src/b.rs").exists());
        assert!(tree.join("src/new.rs").exists());
        assert!(
            !tree.join("target").exists(),
            "ignored output is not copied"
        );
        assert!(
            fs::symlink_metadata(tree.join("node_modules"))
                .unwrap()
                .file_type()
                .is_symlink()
        );
        assert_eq!(
            fs::read_to_string(tree.join("node_modules/dep/index.js")).unwrap(),
            "dep"
        );
        // The project itself is untouched.
        assert_eq!(fs::read_to_string(project.join("src/a.rs")).unwrap(), "a\n");
        assert!(project.join("src/b.rs").exists() && !project.join("src/new.rs").exists());

        // Build output of the check stays; the next check starts from the project again.
        write(&tree, "target/debug/out", "cache");
        write(&project, "src/c.rs", "c\n");
        fs::remove_file(project.join("src/a.rs")).unwrap();
        scratch.prepare(&project, &[]).unwrap();
        assert!(!tree.join("src/a.rs").exists());
        assert_eq!(fs::read_to_string(tree.join("src/b.rs")).unwrap(), "b\n");
        assert!(!tree.join("src/new.rs").exists());
        assert_eq!(fs::read_to_string(tree.join("src/c.rs")).unwrap(), "c\n");
        assert!(
            tree.join("target/debug/out").exists(),
            "warm build output is kept"
        );
    }

    /// A named pipe, a socket or a device in the project is never copied: `fs::copy` of a
    /// pipe nothing writes to would block the check for ever.
    #[cfg(unix)]
    #[test]
    fn special_files_are_not_copied_and_the_copy_does_not_block() {
        use crate::folder::test_support::{fifo, promptly, socket};
        let dir = tempfile::tempdir().unwrap();
        let project = dir.path().join("p");
        write(&project, "src/a.rs", "a\n");
        fifo(&project.join("src/pipe.rs"));
        socket(&project.join("src/sock.rs"));
        let scratch = Scratch::for_project(&project, Some(&dir.path().join("s"))).unwrap();
        let tree = scratch.tree.clone();
        let walked = project.clone();
        promptly(move || scratch.prepare(&walked, &[])).unwrap();
        assert_eq!(fs::read_to_string(tree.join("src/a.rs")).unwrap(), "a\n");
        assert!(fs::symlink_metadata(tree.join("src/pipe.rs")).is_err());
        assert!(fs::symlink_metadata(tree.join("src/sock.rs")).is_err());

        // Walked as a file, a pipe (or gone) by the time it is copied: left out, no error.
        let (pipe, dest) = (project.join("src/pipe.rs"), tree.join("src/pipe.rs"));
        let copied = promptly(move || copy_regular(&pipe, &dest));
        assert!(!copied.unwrap());
        assert!(!copy_regular(&project.join("gone.rs"), &tree.join("gone.rs")).unwrap());
        assert!(!tree.join("gone.rs").exists());
    }
}
