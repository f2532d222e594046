//! The Landlock grants of the container's own writable tmpfs roots: the home directory,
//! `/tmp`, `/dev/shm`.
//!
//! A Landlock rule on a directory applies to everything below it in the path walk, across
//! mount points, and no rule can take a right back. A root granted whole would grant every
//! host directory mounted below it — the project kept in `~/code`, a toolchain in `~/.gem`,
//! a project below `/tmp` — hidden paths included, and leave their covers as the only wall.
//! A cover does not hold against the host: a mount point the host removes (an editor's
//! atomic save renames a new `.env` over the old) is unmounted in every namespace. So a root
//! with such a host directory below it is granted as [`super::super::landlock`] splits any
//! grant around a hidden path: by its entries, here the ones the container itself makes
//! (the layout knows them all: the tmpfs starts empty), around the way to that directory.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// Made in the home directory when its root cannot be granted: where tools keep their
/// caches, settings and state (npm its logs), which a command then still writes, privately.
pub(super) const HOME_DIRS: &[&str] =
    &[".cache", ".config", ".local/share", ".local/state", ".npm"];

/// What the layout plans below the private roots.
pub(super) struct Plan<'a> {
    pub home: &'a Path,
    pub project: &'a Path,
    /// The project's path shows the agent's workspace (an overlay or a copy).
    pub workspace: bool,
    /// Every mount's target.
    pub targets: Vec<PathBuf>,
    pub links: &'a [PathBuf],
    /// The targets of the host's directories.
    pub shown: &'a [PathBuf],
}

impl Plan<'_> {
    /// The paths to grant `/dev/shm`, `/tmp` and the home directory by, read-write, and the
    /// directories to make in the home directory for them (see [`HOME_DIRS`]).
    ///
    /// A workspace is granted whole, so it blocks nothing: Landlock could only split it by
    /// the host's tree, not the workspace's (files a command made there would be refused),
    /// and a folder split around a hidden path refuses new files (the project's root,
    /// beside its `.env`). Its covers hold without Landlock: they are mounted on the
    /// overlay's own entries or in Tandem's copy, which a replacement in the person's tree
    /// does not remove (tests/sandbox/world/replaced.rs).
    pub(super) fn roots(&self, hidden: &[PathBuf]) -> (Vec<PathBuf>, Vec<PathBuf>) {
        let (home, project) = (self.home, self.project);
        let host: Vec<PathBuf> = (self.shown.iter())
            .filter(|p| !(self.workspace && *p == project))
            .cloned()
            .collect();
        let blocked = holding_hidden(&host, hidden, project);
        let mut dirs = Vec::new();
        // Not where the project (the person's own home directory) is mounted over it.
        if project != home && blocked.iter().any(|b| b.starts_with(home)) {
            // Never through a link or into a host directory (read-only, the person's).
            let link_or_host = |p: &Path| {
                (self.links.iter()).any(|l| p.starts_with(l))
                    || self.shown.iter().any(|s| p.starts_with(s))
            };
            dirs.extend((HOME_DIRS.iter().map(|d| home.join(d))).filter(|d| {
                !d.ancestors()
                    .any(|a| a.starts_with(home) && link_or_host(a))
            }));
        }
        let mut out = Vec::new();
        for root in [Path::new("/dev/shm"), Path::new("/tmp"), home] {
            let made = (self.targets.iter().cloned())
                .chain(self.links.iter().cloned())
                .chain(dirs.iter().cloned());
            let planned = planned(root, made, self.links);
            out.extend(grants(root, &planned, self.shown, &blocked));
        }
        (out, dirs)
    }
}

/// The host directories mounted in the container (`shown`) that hold a hidden path (or are
/// one): no grant of a private root may lie above them. A hidden directory above the
/// project does not count (the person chose the project; see [`super::super::landlock`]).
pub(super) fn holding_hidden(
    shown: &[PathBuf],
    hidden: &[PathBuf],
    project: &Path,
) -> Vec<PathBuf> {
    shown
        .iter()
        .filter(|m| {
            hidden
                .iter()
                .any(|h| h.starts_with(m) && !project.starts_with(h))
        })
        .cloned()
        .collect()
}

/// Every directory the container makes or mounts below `root` and the directories above
/// them: `targets` (mount points, links, directories made) and their parents, links left
/// out (a rule on a link would grant its target).
pub(super) fn planned(
    root: &Path,
    targets: impl IntoIterator<Item = PathBuf>,
    links: &[PathBuf],
) -> BTreeSet<PathBuf> {
    let mut out = BTreeSet::new();
    for target in targets {
        for path in target.ancestors() {
            if path == root || !path.starts_with(root) {
                break;
            }
            out.insert(path.to_path_buf());
        }
    }
    out.retain(|p| !links.contains(p));
    out
}

/// The paths to grant `root` (a private tmpfs) by: `root` itself when no host directory
/// holding a hidden path (`blocked`) is below it; else its entries in `planned`,
/// recursively (those on the way to a blocked directory by their own entries), never a
/// host directory (`shown`: its own grant applies, split around what it hides). Nothing
/// when `root` is itself a blocked host directory (the project opened at the home
/// directory is mounted over its tmpfs).
pub(super) fn grants(
    root: &Path,
    planned: &BTreeSet<PathBuf>,
    shown: &[PathBuf],
    blocked: &[PathBuf],
) -> Vec<PathBuf> {
    if blocked.iter().any(|b| root.starts_with(b)) {
        return Vec::new();
    }
    if !blocked.iter().any(|b| b.starts_with(root)) {
        return vec![root.to_path_buf()];
    }
    let mut out = Vec::new();
    for entry in planned.iter().filter(|p| p.parent() == Some(root)) {
        if !shown.contains(entry) {
            out.extend(grants(entry, planned, shown, blocked));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_root_is_granted_around_the_way_to_a_hidden_path() {
        let home = PathBuf::from("/home/pat");
        let at = |p: &str| home.join(p);
        let project = at("code/app");
        let shown = vec![project.clone(), at(".cargo/bin"), at(".gem")];
        let hidden = vec![project.join(".env"), at(".ssh"), at(".gem/credentials")];
        let blocked = holding_hidden(&shown, &hidden, &project);
        assert_eq!(blocked, vec![project.clone(), at(".gem")]);
        let made = [at("code/app"), at(".cargo/bin"), at(".gem"), at(".cache")];
        let planned = planned(&home, made, &[at(".cargo/env")]);
        let mut got = grants(&home, &planned, &shown, &blocked);
        got.sort();
        // `~/.cargo` is the container's own and holds nothing hidden: granted whole;
        // `~` and `~/code` are on the way, the project and `~/.gem` get their own grants.
        assert_eq!(got, vec![at(".cache"), at(".cargo")]);
        // Nothing hidden below: the root whole.
        assert_eq!(grants(&home, &planned, &shown, &[]), vec![home.clone()]);
        // The root is itself the blocked directory (the project opened at home).
        assert!(grants(&home, &planned, &shown, std::slice::from_ref(&home)).is_empty());
    }

    #[test]
    fn a_hidden_directory_above_the_project_blocks_nothing() {
        let project = PathBuf::from("/home/pat/.config/app");
        let shown = vec![project.clone()];
        let hidden = vec![PathBuf::from("/home/pat/.config")];
        assert!(holding_hidden(&shown, &hidden, &project).is_empty());
    }
}
