//! Where a path a command names lies: judged lexically from the project root and the
//! current directory, failing closed on anything only known at run time.

use std::path::{Component, Path, PathBuf};

use super::super::shell::among;
use super::{Ctx, HOME, Part};
use crate::agent::policy::Risk::{High, Medium};

const DISKS: &str = "sd hd vd xvd nvme mmcblk disk loop mapper/ md dm- mem kmem port";
const HARMLESS: &str = "null zero stdin stdout stderr tty random urandom";

#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Loc {
    Inside,
    /// Strictly inside `.git`.
    Git,
    /// The project root itself, or its `.git`.
    Root,
    Outside,
    Unknown,
    Harmless,
    Device,
}

impl Ctx {
    /// The normalised absolute path `raw` names from the current directory, if knowable.
    pub(in crate::agent) fn anchor(&self, raw: &str, shell: bool) -> Option<PathBuf> {
        let raw = raw.trim();
        let home = ["~", "$HOME", "${HOME}"]
            .iter()
            .find_map(|h| raw.strip_prefix(h));
        let path = match home.filter(|rest| rest.is_empty() || rest.starts_with('/')) {
            Some(rest) => PathBuf::from(format!("{HOME}{rest}")),
            None if raw.starts_with('~') => Path::new(HOME).join(&raw[1..]),
            None if raw.is_empty() || (shell && raw.contains(['$', '`'])) => return None,
            None if shell && expands_to_parent(raw) => return None,
            None => self.cwd.as_ref()?.join(raw),
        };
        // `src/..` is only the project if `src` is no symlink: climbing out of a directory
        // the command named leaves it unknown, unless it lands outside the project anyway.
        let (path, climbed) = normalize_from(&path, &self.root);
        match climbed && path.starts_with(&self.root) {
            true => None,
            false => Some(path),
        }
    }

    pub(super) fn locate(&self, raw: &str, shell: bool) -> Loc {
        if let Some(dev) = raw.trim().strip_prefix("/dev/") {
            let disk = DISKS.split_whitespace().any(|d| dev.starts_with(d));
            return match dev {
                _ if among(dev, HARMLESS) || dev.starts_with("fd/") => Loc::Harmless,
                _ if disk => Loc::Device,
                _ => Loc::Outside,
            };
        }
        let git = self.root.join(".git");
        match self.anchor(raw, shell) {
            None => Loc::Unknown,
            Some(p) if p == self.root || p == git => Loc::Root,
            Some(p) if p.starts_with(&git) => Loc::Git,
            Some(p) if p.starts_with(&self.root) => Loc::Inside,
            Some(_) => Loc::Outside,
        }
    }

    pub(super) fn judge_read(&self, target: &str, shell: bool, part: &mut Part) {
        let t = target;
        match self.locate(t, shell) {
            _ if t.trim().starts_with("/dev/fd/") => part.flag(
                Medium,
                format!("reads an inherited file descriptor (`{t}`)"),
            ),
            Loc::Outside | Loc::Device => {
                part.flag(Medium, format!("reads outside the project (`{t}`)"))
            }
            Loc::Unknown => part.flag(
                Medium,
                format!("reads a path known only at run time (`{t}`)"),
            ),
            _ => {}
        }
        // What a read returns goes to the model: a file whose name looks like it holds a
        // secret (`.env`, `server.key`, `credentials.json`, `*.pem`) is read only when the
        // person says so.
        if crate::folder::looks_secret(t.trim()) {
            part.flag(
                Medium,
                format!(
                    "reads `{t}`, whose name looks like it holds a secret: the model would see it"
                ),
            );
        }
    }

    pub(super) fn judge_write(&self, target: &str, recursive: bool, shell: bool, part: &mut Part) {
        let t = target;
        match self.locate(t, shell) {
            Loc::Harmless => {}
            Loc::Device => part.deny(format!("writes to the device `{t}`")),
            Loc::Outside if recursive => part.deny(format!(
                "recursively deletes or changes `{t}`, outside the project"
            )),
            Loc::Root if recursive => part.deny(format!(
                "recursively deletes or changes the whole project or its history (`{t}`)"
            )),
            Loc::Outside => {
                let why = format!("writes outside the project (`{t}`)");
                part.flag(High, why.clone());
                part.outside.push(why);
            }
            Loc::Root | Loc::Git => {
                part.raise(High, format!("changes the project root or .git (`{t}`)"))
            }
            Loc::Unknown => part.flag(
                High,
                format!("writes a path known only at run time (`{t}`)"),
            ),
            Loc::Inside => part.raise(Medium, format!("writes `{t}`")),
        }
    }
}

/// Lexical normalisation from `root`, and whether a `..` climbed out of a directory that is no
/// ancestor of `root` (which could be a symlink, so the result is only lexical).
pub(super) fn normalize_from(path: &Path, root: &Path) -> (PathBuf, bool) {
    let (mut out, mut climbed) = (PathBuf::new(), false);
    for c in path.components() {
        match c {
            Component::CurDir => {}
            Component::ParentDir => {
                climbed |= !root.starts_with(&out);
                out.pop();
            }
            c => out.push(c),
        }
    }
    (out, climbed)
}

/// Whether a shell word may expand to a path through `..`: a brace expansion (`{..,x}`) or
/// a glob component that can match `..` (`.*`, `[.]*`).
pub(super) fn expands_to_parent(raw: &str) -> bool {
    let brace = raw.contains('{') && (raw.contains(',') || raw.contains(".."));
    let glob = |c: &str| c.contains(['*', '?', '[']) && c.starts_with(['.', '[']);
    brace || raw.split('/').any(glob)
}

/// Lexical normalisation: `.` dropped, `..` pops (never above `/`).
pub(in crate::agent::policy) fn normalize(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in path.components() {
        match c {
            Component::CurDir => {}
            Component::ParentDir => _ = out.pop(),
            c => out.push(c),
        }
    }
    out
}
