//! Safe path resolution. Every path that comes from a model or a user goes through [`resolve`]
//! before any file I/O: it must name something inside the project root, and stay inside after
//! following symlinks.

use std::io;
use std::path::{Component, Path, PathBuf};

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum PathError {
    #[error("the path is empty")]
    Empty,
    #[error("the path {0:?} contains a NUL or control character")]
    ControlCharacter(String),
    #[error(
        "the path {0:?} contains a character that does not read as itself (a bidi control, a \
         zero-width or unassigned character, a space other than U+0020, a stray combining \
         mark): its name would not read as what it is"
    )]
    InvisibleCharacter(String),
    #[error("the path {0:?} is absolute; use a path relative to the project root")]
    Absolute(String),
    #[error("the path {0:?} starts with `~`; home-directory paths are not allowed")]
    Home(String),
    #[error("the path {0:?} is a Windows drive or UNC path; use a path relative to the project")]
    WindowsPrefix(String),
    #[error("the path {0:?} contains `..`; paths may not leave the project")]
    ParentComponent(String),
    #[error("the path {0:?} points into `.git`, which Tandem never edits")]
    GitDirectory(String),
    #[error("the path {0:?} has a component longer than 255 bytes")]
    TooLong(String),
    #[error("the path {path:?} goes through a symlink that leads outside the project ({target})")]
    SymlinkEscape { path: String, target: String },
    #[error("the path {path:?} could not be checked: {message}")]
    Io { path: String, message: String },
}

/// A path proven to lie inside the project.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResolvedPath {
    /// Absolute path on disk, with existing symlinks resolved.
    pub abs: PathBuf,
    /// The same path relative to the project root, `/`-separated: the name git and the
    /// database use.
    pub rel: String,
}

/// Checks a relative path lexically and returns it normalised (`/`-separated, no `.` or empty
/// components). Backslashes are read as separators: models trained on Windows paths use them,
/// and a literal backslash in a file name is almost never intended.
pub fn normalize_relative(raw: &str) -> Result<String, PathError> {
    let owned = || raw.to_string();
    let trimmed = raw.trim();
    if trimmed.is_empty() {
        return Err(PathError::Empty);
    }
    if raw.chars().any(char::is_control) {
        return Err(PathError::ControlCharacter(owned()));
    }
    // `src/\u{202e}txt.exe` shows as `src/exe.txt`, `main.rs\u{200a}` as `main.rs`: names
    // the review could not show truly.
    if crate::display::misleading_in_name(raw).is_some() {
        return Err(PathError::InvisibleCharacter(owned()));
    }
    let path = trimmed.replace('\\', "/");
    if path.starts_with("//") {
        return Err(PathError::WindowsPrefix(owned()));
    }
    if path.starts_with('/') {
        return Err(PathError::Absolute(owned()));
    }
    if path.starts_with('~') {
        return Err(PathError::Home(owned()));
    }
    let bytes = path.as_bytes();
    if bytes.len() >= 2 && bytes[0].is_ascii_alphabetic() && bytes[1] == b':' {
        return Err(PathError::WindowsPrefix(owned()));
    }
    let mut parts = Vec::new();
    for part in path.split('/') {
        match part {
            "" | "." => continue,
            ".." => return Err(PathError::ParentComponent(owned())),
            _ if part.eq_ignore_ascii_case(".git") => {
                return Err(PathError::GitDirectory(owned()));
            }
            _ if part.len() > 255 => return Err(PathError::TooLong(owned())),
            _ => parts.push(part),
        }
    }
    if parts.is_empty() {
        return Err(PathError::Empty);
    }
    Ok(parts.join("/"))
}

/// Whether `path` reaches into another process's root (`/proc/<pid>/root/…`): the agent's
/// workspace, seen through the process holding it. Such a path must never be canonicalized
/// (that would resolve its way back to the host's tree).
pub fn is_view(path: &Path) -> bool {
    let mut parts = path.components();
    matches!(
        (parts.next(), parts.next(), parts.next(), parts.next()),
        (Some(Component::RootDir), Some(Component::Normal(proc)), Some(Component::Normal(pid)), Some(Component::Normal(root)))
            if proc == "proc" && root == "root" && pid.to_str().is_some_and(|p| p.bytes().all(|b| b.is_ascii_digit()))
    )
}

/// A project root as Tandem works in it: canonical, except a workspace view ([`is_view`]),
/// which is taken as given once it is known to be a directory.
pub fn root_path(root: &Path) -> io::Result<PathBuf> {
    if is_view(root) {
        return match std::fs::metadata(root)?.is_dir() {
            true => Ok(root.to_path_buf()),
            false => Err(io::ErrorKind::NotADirectory.into()),
        };
    }
    root.canonicalize()
}

/// For a view root, the project's path as the holder sees it (what absolute links inside
/// the view name).
fn view_project(root: &Path) -> Option<PathBuf> {
    if !is_view(root) {
        return None;
    }
    let mut project = PathBuf::from("/");
    project.extend(root.components().skip(4));
    Some(project)
}

/// The most links one path may go through, as the kernel allows.
const MAX_LINKS: usize = 40;

/// Resolves `rel` (normalised) inside the view `root`, the project being `project` there:
/// component by component, never by the kernel (which would follow an absolute link from the
/// holder's root, the host's). A link is replaced by its target (an absolute one mapped
/// through `project`), whose components are checked in turn, so the path returned has no
/// link in it; a target outside the project, a loop, or an unreadable link is refused.
fn resolve_in_view(
    root: &Path,
    project: &Path,
    rel: &str,
    raw: &str,
) -> Result<PathBuf, PathError> {
    let escape = |target: String| PathError::SymlinkEscape {
        path: raw.to_string(),
        target,
    };
    let mut todo: std::collections::VecDeque<std::ffi::OsString> =
        rel.split('/').map(std::ffi::OsString::from).collect();
    let mut done = PathBuf::new();
    let (mut links, mut missing) = (0, false);
    while let Some(part) = todo.pop_front() {
        if part == ".." {
            // Below a missing component the kernel would fail: so does this.
            if missing || !done.pop() {
                return Err(escape(format!("{rel} (beyond the project)")));
            }
            continue;
        }
        if part.is_empty() || part == "." {
            continue;
        }
        done.push(&part);
        if missing {
            continue;
        }
        let at = root.join(&done);
        match at.symlink_metadata() {
            Ok(meta) if meta.file_type().is_symlink() => {
                links += 1;
                let target =
                    std::fs::read_link(&at).map_err(|_| escape("an unreadable target".into()))?;
                if links > MAX_LINKS {
                    return Err(escape(format!(
                        "{} (more than {MAX_LINKS} links: a loop?)",
                        target.display()
                    )));
                }
                done.pop();
                let inside = match target.strip_prefix(project) {
                    Ok(rest) if target.is_absolute() => {
                        done = PathBuf::new();
                        rest.to_path_buf()
                    }
                    Err(_) if target.is_absolute() => {
                        return Err(escape(target.display().to_string()));
                    }
                    _ => target.clone(),
                };
                let mut parts = Vec::new();
                for component in inside.components() {
                    match component {
                        Component::Normal(p) => parts.push(p.to_os_string()),
                        Component::ParentDir => parts.push("..".into()),
                        Component::CurDir => {}
                        _ => return Err(escape(target.display().to_string())),
                    }
                }
                for part in parts.into_iter().rev() {
                    todo.push_front(part);
                }
            }
            Ok(_) => {}
            Err(e) if e.kind() == io::ErrorKind::NotFound => missing = true,
            Err(e) => {
                return Err(PathError::Io {
                    path: raw.to_string(),
                    message: e.to_string(),
                });
            }
        }
    }
    Ok(root.join(done))
}

/// Resolves `raw` inside `root`. The root itself must exist; the path need not. Existing
/// components are followed through symlinks (the deepest existing ancestor is canonicalised)
/// and must stay inside the canonical root; components that do not exist yet are appended.
pub fn resolve(root: &Path, raw: &str) -> Result<ResolvedPath, PathError> {
    let rel = normalize_relative(raw)?;
    let io_error = |e: io::Error| PathError::Io {
        path: raw.to_string(),
        message: e.to_string(),
    };
    let root = root_path(root).map_err(io_error)?;
    if let Some(project) = view_project(&root) {
        let abs = resolve_in_view(&root, &project, &rel, raw)?;
        return checked(abs, &root, raw);
    }

    // Walk down the components while they exist. The first missing one ends the walk: what
    // does not exist cannot be a symlink.
    let mut existing = root.clone();
    let mut rest: Vec<&str> = Vec::new();
    let mut parts = rel.split('/');
    for part in parts.by_ref() {
        let next = existing.join(part);
        match next.symlink_metadata() {
            Ok(meta) if meta.file_type().is_symlink() => {
                let target = next.canonicalize().map_err(|_| {
                    // Dangling: we cannot prove where a later write would land.
                    PathError::SymlinkEscape {
                        path: raw.to_string(),
                        target: std::fs::read_link(&next)
                            .map(|t| t.display().to_string())
                            .unwrap_or_else(|_| "an unreadable target".into()),
                    }
                })?;
                if !target.starts_with(&root) {
                    return Err(PathError::SymlinkEscape {
                        path: raw.to_string(),
                        target: target.display().to_string(),
                    });
                }
                existing = target;
            }
            Ok(_) => existing = next,
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                rest.push(part);
                break;
            }
            Err(e) => return Err(io_error(e)),
        }
    }
    rest.extend(parts);

    let mut abs = existing;
    for part in rest {
        abs.push(part);
    }
    checked(abs, &root, raw)
}

/// `abs` as a path of the project at `root`: inside it, not the root itself, not in `.git`.
fn checked(abs: PathBuf, root: &Path, raw: &str) -> Result<ResolvedPath, PathError> {
    let rel = relative_to(&abs, root).ok_or_else(|| PathError::SymlinkEscape {
        path: raw.to_string(),
        target: abs.display().to_string(),
    })?;
    if rel.is_empty() {
        // A symlink to the root itself: not a file we can write.
        return Err(PathError::Empty);
    }
    if rel.split('/').any(|part| part.eq_ignore_ascii_case(".git")) {
        return Err(PathError::GitDirectory(raw.to_string()));
    }
    Ok(ResolvedPath { abs, rel })
}

fn relative_to(abs: &Path, root: &Path) -> Option<String> {
    let tail = abs.strip_prefix(root).ok()?;
    let mut parts = Vec::new();
    for component in tail.components() {
        match component {
            Component::Normal(part) => parts.push(part.to_str()?.to_string()),
            _ => return None,
        }
    }
    Some(parts.join("/"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;

    fn project() -> (tempfile::TempDir, PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("proj");
        std::fs::create_dir_all(root.join("src/nested")).unwrap();
        std::fs::write(root.join("src/main.rs"), "fn main() {}").unwrap();
        std::fs::create_dir_all(dir.path().join("outside")).unwrap();
        std::fs::write(dir.path().join("outside/secret"), "s").unwrap();
        (dir, root)
    }

    #[test]
    fn accepts_ordinary_paths() {
        let (_dir, root) = project();
        let canon = root.canonicalize().unwrap();
        for (raw, rel) in [
            ("src/main.rs", "src/main.rs"),
            ("./src/main.rs", "src/main.rs"),
            ("src//nested/./new.rs", "src/nested/new.rs"),
            ("src\\lib.rs", "src/lib.rs"),
            ("new/dir/file.txt", "new/dir/file.txt"),
            (" README.md ", "README.md"),
            ("a..b/c...d", "a..b/c...d"),
            (".gitignore", ".gitignore"),
            ("docs/.github/x.yml", "docs/.github/x.yml"),
            ("ünïcödé/файл.txt", "ünïcödé/файл.txt"),
        ] {
            let resolved = resolve(&root, raw).unwrap_or_else(|e| panic!("{raw}: {e}"));
            assert_eq!(resolved.rel, rel, "{raw}");
            assert_eq!(resolved.abs, canon.join(rel), "{raw}");
        }
    }

    #[test]
    fn rejects_hostile_paths() {
        let (_dir, root) = project();
        let long = "a".repeat(256);
        let hostile: Vec<String> = [
            "",
            "   ",
            ".",
            "./",
            "/etc/passwd",
            "/",
            "\\etc\\passwd",
            "..",
            "../outside/secret",
            "src/../../outside/secret",
            "src/..",
            "..\\outside\\secret",
            "src\\..\\..\\x",
            "a/b/../../../x",
            "~",
            "~/.ssh/id_rsa",
            "~root/.bashrc",
            "C:\\Windows\\system32",
            "c:/windows/win.ini",
            "C:relative",
            "\\\\server\\share\\file",
            "//server/share/file",
            "src/main.rs\0.txt",
            "\0",
            "line\nbreak",
            "tab\there",
            "bell\u{7}",
            // Names that read as something else: a bidi override (`exe.txt`), an isolate, a
            // zero-width space, a byte order mark.
            "src/\u{202e}txt.exe",
            "src/\u{2066}a\u{2069}.rs",
            "src/ma\u{200b}in.rs",
            "\u{feff}main.rs",
            // A variation selector, a Mongolian selector, a shorthand format control, a
            // reserved specials slot, a tag: each invisible after the name it follows.
            "src/main.rs\u{fe0f}",
            "src/main\u{180b}.rs",
            "src/main.rs\u{1bca0}",
            "src/main.rs\u{fff0}",
            "src/main.rs\u{e0fff}",
            "src/ma\u{2800}in.rs",
            // Unassigned, private use (a font's own shape), spaces that read as a space or as
            // nothing, marks on nothing they belong to: at the start, after punctuation, on an
            // ASCII letter they do not accent (U+0345 under `s`, Khitan's invisible filler),
            // a pile of them.
            "src/main.rs\u{378}",
            "src/ma\u{e000}in.rs",
            "src/main\u{200a}.rs",
            "src/main\u{a0}.rs",
            "src/main\u{3000}.rs",
            "src/\u{301}main.rs",
            "src/main.\u{301}rs",
            "src/main.rs\u{345}",
            "src/main.rs\u{16fe4}",
            "src/main.rs\u{20dd}",
            "src/e\u{301}\u{301}\u{301}\u{301}.rs",
            // Canonically another character: the Kelvin sign (`Key.rs`), the Greek question
            // mark (`a;b`), a compatibility ideograph. A mark on an accented letter it does not
            // accent; Khitan's filler after any letter.
            "src/\u{212a}ey.rs",
            "src/a\u{37e}b.rs",
            "docs/\u{f900}.md",
            "src/mai\u{f1}\u{345}.rs",
            "docs/caf\u{e9}\u{16fe4}.md",
            // Not composed: the same as `café.md`, `Việt.md`, `각.md` to the eye.
            "docs/cafe\u{301}.md",
            "docs/Vie\u{323}\u{302}t.md",
            "docs/\u{ac00}\u{11a8}.md",
            ".git/config",
            ".git/hooks/pre-commit",
            "src/.git/HEAD",
            ".GIT/config",
            ".git",
            long.as_str(),
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        assert!(hostile.len() >= 40);
        for raw in &hostile {
            assert!(
                resolve(&root, raw).is_err(),
                "{raw:?} should be rejected, got {:?}",
                resolve(&root, raw)
            );
        }
    }

    #[test]
    fn names_in_every_script_read_as_written() {
        for name in [
            "docs/naïve café.md",
            "docs/Vi\u{1ec7}t.md",
            "docs/ملف.txt",
            "docs/שָׁלוֹם.txt",
            "docs/हिंदी.md",
            "docs/日本語.md",
            "docs/🦀 notes.md",
        ] {
            assert_eq!(normalize_relative(name).as_deref(), Ok(name), "{name:?}");
        }
    }

    #[test]
    fn rejects_symlink_escapes() {
        let (dir, root) = project();
        let outside = dir.path().join("outside");
        symlink(&outside, root.join("link_dir")).unwrap();
        symlink(outside.join("secret"), root.join("link_file")).unwrap();
        symlink("/", root.join("src/rootlink")).unwrap();
        symlink("../../outside", root.join("src/nested/rel_escape")).unwrap();
        symlink(dir.path().join("missing"), root.join("dangling")).unwrap();
        symlink("../proj/../outside", root.join("src/twisty")).unwrap();
        for raw in [
            "link_dir/secret",
            "link_dir/new_file.txt",
            "link_dir/deep/new/file",
            "link_file",
            "src/rootlink/etc/passwd",
            "src/nested/rel_escape/secret",
            "dangling",
            "dangling/x",
            "src/twisty/secret",
        ] {
            let result = resolve(&root, raw);
            assert!(
                matches!(result, Err(PathError::SymlinkEscape { .. })),
                "{raw}: {result:?}"
            );
        }
    }

    #[test]
    fn follows_symlinks_that_stay_inside() {
        let (_dir, root) = project();
        symlink("src", root.join("alias")).unwrap();
        symlink("main.rs", root.join("src/entry.rs")).unwrap();
        let via_dir = resolve(&root, "alias/main.rs").unwrap();
        assert_eq!(via_dir.rel, "src/main.rs");
        let via_file = resolve(&root, "src/entry.rs").unwrap();
        assert_eq!(via_file.rel, "src/main.rs");
        let new_file = resolve(&root, "alias/brand/new.rs").unwrap();
        assert_eq!(new_file.rel, "src/brand/new.rs");
    }

    /// A workspace view (`/proc/<pid>/root/…`, here this process's own root over the
    /// project): links are followed inside the view only, every component of their targets
    /// checked too, so no chain of links leads out, into `.git`, or onto another file than
    /// the one named without saying so.
    #[test]
    fn in_a_view_no_chain_of_links_leads_out() {
        let (dir, root) = project();
        let root = root.canonicalize().unwrap();
        let outside = dir.path().canonicalize().unwrap().join("outside");
        let view = PathBuf::from(format!("/proc/{}/root", std::process::id()))
            .join(root.strip_prefix("/").unwrap());
        std::fs::create_dir_all(root.join(".git/hooks")).unwrap();
        // b leads out; c leads through b; d is an absolute link back into the project, e
        // a relative one through it; g reaches .git by an absolute link, h through g.
        symlink(dir.path().canonicalize().unwrap(), root.join("b")).unwrap();
        symlink("b/outside", root.join("c")).unwrap();
        symlink(root.join("src"), root.join("d")).unwrap();
        symlink("d/nested", root.join("e")).unwrap();
        symlink(root.join(".git"), root.join("g")).unwrap();
        symlink("g/hooks", root.join("h")).unwrap();
        symlink("loop2", root.join("loop1")).unwrap();
        symlink("loop1", root.join("loop2")).unwrap();
        for raw in [
            "b/outside/secret",
            "c/secret",
            "c/new.txt",
            "b/proj/src/main.rs",
            "loop1/x",
        ] {
            let result = resolve(&view, raw);
            assert!(
                matches!(result, Err(PathError::SymlinkEscape { .. })),
                "{raw}: {result:?}"
            );
        }
        for raw in ["g/config", "h/pre-commit"] {
            let result = resolve(&view, raw);
            assert!(
                matches!(result, Err(PathError::GitDirectory(_))),
                "{raw}: {result:?}"
            );
        }
        let inside = resolve(&view, "e/new.rs").unwrap();
        assert_eq!(inside.rel, "src/nested/new.rs");
        assert_eq!(inside.abs, view.join("src/nested/new.rs"));
        assert_eq!(resolve(&view, "d/main.rs").unwrap().rel, "src/main.rs");
        assert!(outside.join("secret").exists());
    }

    #[test]
    fn a_symlink_into_git_is_refused() {
        let (_dir, root) = project();
        std::fs::create_dir_all(root.join(".git/hooks")).unwrap();
        symlink(".git/hooks", root.join("hooks")).unwrap();
        assert!(matches!(
            resolve(&root, "hooks/pre-commit"),
            Err(PathError::GitDirectory(_))
        ));
    }
}
