//! Finding what changed in a workspace. For an overlay only its upper directory is walked
//! (what was written, copied up or deleted), so the cost follows what the agent and its
//! commands touched, not the project's size; ignored paths are skipped as git would skip
//! them. For a copy the whole copy is listed.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::fs;
use std::io::Read;
use std::path::Path;

use ignore::gitignore::Gitignore;

use super::Change;
use super::{LayerError, io};
use crate::folder::{OpenError, RegularFile, blob_hash, list_files, open_regular};

/// The largest file carried into a proposal (larger ones are reported, not proposed).
pub const MAX_CHANGE_BYTES: u64 = 2 * 1024 * 1024;

/// One path's state, enough to see that it changed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mark {
    File {
        len: u64,
        mtime_ns: i128,
        ino: u64,
    },
    /// Deleted in the overlay (a whiteout: overlays exist only on Linux).
    #[cfg_attr(not(unix), allow(dead_code))]
    Gone,
    /// A directory that hides what is below it in the project (made anew).
    Opaque,
    /// A link or a special file: never proposed.
    Other,
}

/// The proposable state of a workspace at one moment.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Snapshot {
    marks: BTreeMap<String, Mark>,
}

impl Snapshot {
    pub fn len(&self) -> usize {
        self.marks.len()
    }

    pub fn is_empty(&self) -> bool {
        self.marks.is_empty()
    }
}

fn mark_of(meta: &fs::Metadata) -> Mark {
    #[cfg(unix)]
    {
        use std::os::unix::fs::{FileTypeExt, MetadataExt};
        let kind = meta.file_type();
        if kind.is_char_device() && meta.rdev() == 0 {
            return Mark::Gone;
        }
        if kind.is_file() {
            let mtime_ns = i128::from(meta.mtime()) * 1_000_000_000 + i128::from(meta.mtime_nsec());
            return Mark::File {
                len: meta.len(),
                mtime_ns,
                ino: meta.ino(),
            };
        }
        Mark::Other
    }
    #[cfg(not(unix))]
    {
        match meta.is_file() {
            true => Mark::File {
                len: meta.len(),
                mtime_ns: meta
                    .modified()
                    .ok()
                    .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
                    .map_or(0, |d| d.as_nanos() as i128),
                ino: 0,
            },
            false => Mark::Other,
        }
    }
}

/// Whether the overlay made `dir` anew (it hides the project's entries below it).
fn opaque(dir: &Path) -> bool {
    #[cfg(target_os = "linux")]
    {
        use std::os::unix::ffi::OsStrExt;
        let Ok(path) = std::ffi::CString::new(dir.as_os_str().as_bytes()) else {
            return false;
        };
        let mut value = [0u8; 4];
        // SAFETY: lgetxattr(2) reads the NUL-terminated path and name and writes at most
        // `value.len()` bytes into the buffer we own.
        #[allow(unsafe_code)]
        let n = unsafe {
            libc::lgetxattr(
                path.as_ptr(),
                c"user.overlay.opaque".as_ptr(),
                value.as_mut_ptr().cast(),
                value.len(),
            )
        };
        n > 0 && value[0] == b'y'
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = dir;
        false
    }
}

/// The ignore rules of a view, read from its `.gitignore` files as directories are met.
struct Ignores<'a> {
    view: &'a Path,
    by_dir: HashMap<String, Option<Gitignore>>,
    exclude: Option<Gitignore>,
}

impl<'a> Ignores<'a> {
    fn new(view: &'a Path) -> Self {
        let exclude = Some(view.join(".git/info/exclude"))
            .filter(|p| p.is_file())
            .map(|p| Gitignore::new(p).0);
        Ignores {
            view,
            by_dir: HashMap::new(),
            exclude,
        }
    }

    fn rules(&mut self, dir: &str) -> Option<&Gitignore> {
        let view = self.view;
        self.by_dir
            .entry(dir.to_string())
            .or_insert_with(|| {
                let file = match dir {
                    "" => view.join(".gitignore"),
                    dir => view.join(dir).join(".gitignore"),
                };
                file.is_file().then(|| {
                    let mut builder =
                        ignore::gitignore::GitignoreBuilder::new(file.parent().unwrap_or(view));
                    builder.add(&file);
                    builder.build().unwrap_or_else(|_| Gitignore::empty())
                })
            })
            .as_ref()
    }

    /// Whether `rel` is ignored (its closest rule decides, as in git).
    fn ignored(&mut self, rel: &str, is_dir: bool) -> bool {
        let path = self.view.join(rel);
        let mut dirs: Vec<&str> = vec![""];
        for (i, c) in rel.char_indices() {
            if c == '/' {
                dirs.push(&rel[..i]);
            }
        }
        for dir in dirs.iter().rev() {
            let dir = dir.to_string();
            if let Some(rules) = self.rules(&dir) {
                let m = rules.matched(&path, is_dir);
                if m.is_ignore() {
                    return true;
                }
                if m.is_whitelist() {
                    return false;
                }
            }
        }
        self.exclude
            .as_ref()
            .is_some_and(|rules| rules.matched(&path, is_dir).is_ignore())
    }
}

/// The overlay's upper directory: what was written, copied up or deleted.
pub(super) fn snapshot_upper(upper: &Path, view: &Path) -> Result<Snapshot, LayerError> {
    let mut marks = BTreeMap::new();
    let mut ignores = Ignores::new(view);
    let mut pending = vec![String::new()];
    while let Some(dir) = pending.pop() {
        let at = match dir.as_str() {
            "" => upper.to_path_buf(),
            dir => upper.join(dir),
        };
        let entries = match fs::read_dir(&at) {
            Ok(entries) => entries,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
            Err(e) => return Err(io(&at)(e)),
        };
        for entry in entries.flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            let rel = match dir.as_str() {
                "" => name.clone(),
                dir => format!("{dir}/{name}"),
            };
            if rel == ".git" {
                continue;
            }
            let Ok(meta) = fs::symlink_metadata(entry.path()) else {
                continue;
            };
            let is_dir = meta.is_dir();
            if ignores.ignored(&rel, is_dir) {
                continue;
            }
            if is_dir {
                if opaque(&entry.path()) {
                    marks.insert(rel.clone(), Mark::Opaque);
                }
                pending.push(rel);
            } else {
                marks.insert(rel, mark_of(&meta));
            }
        }
    }
    Ok(Snapshot { marks })
}

/// A whole tree (a copy): every file git would see.
pub(super) fn snapshot_tree(root: &Path) -> Result<Snapshot, LayerError> {
    let files = list_files(root).map_err(|e| LayerError::Copy(e.to_string()))?;
    let mut marks = BTreeMap::new();
    for rel in files {
        if let Ok(meta) = fs::symlink_metadata(root.join(&rel)) {
            marks.insert(rel, mark_of(&meta));
        }
    }
    Ok(Snapshot { marks })
}

/// A file's content if it is a regular file: `Ok(None)` when there is none.
fn content(path: &Path) -> Result<Option<Vec<u8>>, String> {
    let RegularFile { file, meta } = match open_regular(path) {
        Ok(opened) => opened,
        Err(OpenError::Io(e)) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(OpenError::Io(e)) if e.kind() == std::io::ErrorKind::NotADirectory => {
            return Ok(None);
        }
        Err(OpenError::NotRegular(kind)) => return Err(format!("{kind}, not a regular file")),
        Err(OpenError::Io(e)) => return Err(e.to_string()),
    };
    if meta.len() > MAX_CHANGE_BYTES {
        return Err(format!(
            "{} bytes, over the {MAX_CHANGE_BYTES}-byte limit",
            meta.len()
        ));
    }
    let mut bytes = Vec::new();
    file.take(MAX_CHANGE_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| e.to_string())?;
    if bytes.len() as u64 > MAX_CHANGE_BYTES {
        return Err(format!("over the {MAX_CHANGE_BYTES}-byte limit"));
    }
    Ok(Some(bytes))
}

/// The paths that differ between two snapshots, and below every directory newly made anew
/// every file the project has there (hidden now).
fn changed_paths(project: &Path, before: &Snapshot, now: &Snapshot) -> BTreeSet<String> {
    let mut paths = BTreeSet::new();
    for (rel, mark) in &now.marks {
        if before.marks.get(rel) != Some(mark) {
            if *mark == Mark::Opaque {
                let dir = project.join(rel);
                if let Ok(files) = list_files(&dir) {
                    paths.extend(files.into_iter().map(|f| format!("{rel}/{f}")));
                }
            } else {
                paths.insert(rel.clone());
            }
        }
    }
    for rel in before.marks.keys() {
        if !now.marks.contains_key(rel) {
            paths.insert(rel.clone());
        }
    }
    paths
}

/// What the paths changed between `before` and `now` hold in `view` now, against what the
/// proposal has for them in `known` (else the project's content).
pub(super) fn changes(
    project: &Path,
    view: &Path,
    before: &Snapshot,
    now: &Snapshot,
    known: &mut BTreeMap<String, Option<String>>,
) -> Vec<Change> {
    let mut out = Vec::new();
    for rel in changed_paths(project, before, now) {
        // A name no proposal may carry (a control character, one that does not show), or
        // one a proposal would write elsewhere (`src\\main.rs`, `main.rs `): reported, never
        // proposed under a name the review cannot show or that lands on another file.
        let refused = match crate::folder::normalize_relative(&rel) {
            Ok(normal) if normal == rel => None,
            Ok(normal) => Some(format!("its name would be written as {normal:?}")),
            Err(e) => Some(e.to_string()),
        };
        if let Some(reason) = refused {
            out.push(Change::Skipped { path: rel, reason });
            continue;
        }
        if now.marks.get(&rel) == Some(&Mark::Other) {
            out.push(Change::Skipped {
                path: rel,
                reason: "a link or a special file".into(),
            });
            continue;
        }
        let previous = match known.get(&rel) {
            Some(hash) => hash.clone(),
            None => match content(&project.join(&rel)) {
                Ok(Some(bytes)) => Some(blob_hash(&bytes)),
                _ => None,
            },
        };
        match content(&view.join(&rel)) {
            Ok(Some(bytes)) => {
                let hash = blob_hash(&bytes);
                if previous.as_ref() == Some(&hash) {
                    continue;
                }
                match String::from_utf8(bytes) {
                    Ok(text) => {
                        known.insert(rel.clone(), Some(hash));
                        out.push(Change::Write {
                            path: rel,
                            content: text,
                        });
                    }
                    Err(_) => out.push(Change::Skipped {
                        path: rel,
                        reason: "not UTF-8 text".into(),
                    }),
                }
            }
            Ok(None) => {
                if previous.is_some() {
                    known.insert(rel.clone(), None);
                    out.push(Change::Delete { path: rel });
                }
            }
            Err(reason) => out.push(Change::Skipped { path: rel, reason }),
        }
    }
    out
}

/// Brings a copy of `project` at `dir` up to date: files the person changed (and the copy
/// did not) are copied again, files they deleted are deleted; what the agent changed in the
/// copy stays. A manifest beside the copy remembers what was copied.
pub(super) fn refresh_copy(project: &Path, dir: &Path) -> Result<(), LayerError> {
    let manifest_path = dir.with_extension("manifest.json");
    let mut manifest: BTreeMap<String, (i128, u64, String)> = fs::read(&manifest_path)
        .ok()
        .and_then(|b| serde_json::from_slice(&b).ok())
        .unwrap_or_default();
    fs::create_dir_all(dir).map_err(io(dir))?;
    let files = list_files(project).map_err(|e| LayerError::Copy(e.to_string()))?;
    let current: BTreeSet<&String> = files.iter().collect();
    for rel in &files {
        let from = project.join(rel);
        let Ok(meta) = fs::symlink_metadata(&from) else {
            continue;
        };
        let Mark::File { len, mtime_ns, .. } = mark_of(&meta) else {
            continue;
        };
        if manifest
            .get(rel)
            .is_some_and(|(m, l, _)| *m == mtime_ns && *l == len)
        {
            continue;
        }
        let to = dir.join(rel);
        // The agent's own change to the file wins: the person's shows as a conflict when
        // the proposal is reviewed.
        let copied = manifest.get(rel).map(|(_, _, hash)| hash.clone());
        let here = content(&to).ok().flatten().map(|b| blob_hash(&b));
        if copied.is_some() && here != copied {
            continue;
        }
        let Ok(Some(bytes)) = content(&from) else {
            continue;
        };
        if let Some(parent) = to.parent() {
            fs::create_dir_all(parent).map_err(io(parent))?;
        }
        fs::write(&to, &bytes).map_err(io(&to))?;
        fs::set_permissions(&to, meta.permissions()).map_err(io(&to))?;
        manifest.insert(rel.clone(), (mtime_ns, len, blob_hash(&bytes)));
    }
    let gone: Vec<String> = manifest
        .keys()
        .filter(|rel| !current.contains(rel))
        .cloned()
        .collect();
    for rel in gone {
        let to = dir.join(&rel);
        let copied = manifest.remove(&rel).map(|(_, _, hash)| hash);
        let here = content(&to).ok().flatten().map(|b| blob_hash(&b));
        if here.is_some() && here == copied {
            let _ = fs::remove_file(&to);
        }
    }
    let bytes = serde_json::to_vec(&manifest).unwrap_or_default();
    fs::write(&manifest_path, bytes).map_err(io(&manifest_path))
}
