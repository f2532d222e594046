//! The container's `/etc`: only what programs need to start, find libraries, resolve names,
//! trust certificates and know the time — never the host's whole `/etc`, whose files can carry
//! credentials (a proxy password in `/etc/environment`, a registry token in `/etc/npmrc` or
//! `/etc/pip.conf`, shadow passwords, SSH host keys). `passwd` and `group` are written fresh
//! with the one user the command runs as.

use std::path::{Path, PathBuf};

use crate::sandbox::Identity;

/// Entries of the host's `/etc` the container shows read-only (each if it exists). Globs end
/// in `*` (a language's own configuration directory, named for its version).
const KEPT: &[&str] = &[
    // The dynamic loader.
    "ld.so.cache",
    "ld.so.conf",
    "ld.so.conf.d",
    // Names, users, services.
    "nsswitch.conf",
    "host.conf",
    "gai.conf",
    "protocols",
    "services",
    "networks",
    "ethertypes",
    "rpc",
    // Certificates (private keys below them are hidden).
    "ssl",
    "ca-certificates",
    "ca-certificates.conf",
    "pki",
    "crypto-policies",
    // Time and locale.
    "localtime",
    "timezone",
    "locale.alias",
    "locale.conf",
    "default/locale",
    // Which system this is.
    "os-release",
    "lsb-release",
    "debian_version",
    "redhat-release",
    "fedora-release",
    "alpine-release",
    "arch-release",
    // Programs' own configuration that their installation links into /etc.
    "alternatives",
    "java*",
    "python3*",
    "perl",
    "mime.types",
    "magic",
    "magic.mime",
    "inputrc",
    "terminfo",
    "fonts",
    "bash.bashrc",
    "profile",
    "shells",
    "login.defs",
    "manpath.config",
    "subversion",
    "texmf",
    "gprofng.rc",
    "maven",
    "glvnd",
    "vulkan",
    "OpenCL",
];

/// Below kept entries, what stays hidden: private keys of the certificate stores.
pub(super) const HIDDEN: &[&str] = &["ssl/private", "pki/tls/private", "pki/CA/private"];

/// One entry of the container's `/etc`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Entry {
    /// A directory shown read-only from the host.
    Host(PathBuf),
    /// A file of the host's, copied (a copy costs the container less than a mount).
    Copy(Vec<u8>),
    /// A symbolic link with this target (as the host has it: `localtime` → zoneinfo).
    Link(PathBuf),
    /// Written fresh.
    Text(String),
}

/// Files larger than this are shown by a mount rather than copied.
const COPY_MAX: u64 = 256 * 1024;

/// The container's `/etc`, by name below it: the host's part, `hosts` for a container of its
/// own (loopback only; calls with the network see the host's), and the users.
pub(super) fn entries(etc: &Path, identity: &Identity) -> Vec<(String, Entry)> {
    let mut out = host_entries(etc);
    out.push((
        "hosts".into(),
        Entry::Text("127.0.0.1 localhost tandem\n::1 localhost\n".into()),
    ));
    out.push(("hostname".into(), Entry::Text("tandem\n".into())));
    out.push(("mtab".into(), Entry::Link("/proc/self/mounts".into())));
    let (passwd, group) = users(identity);
    out.push(("passwd".into(), Entry::Text(passwd)));
    out.push(("group".into(), Entry::Text(group)));
    out
}

/// A regular file's bytes (following links), if it is small enough to copy.
fn copy_of(path: &Path) -> Option<Vec<u8>> {
    let meta = std::fs::metadata(path).ok()?;
    if !meta.is_file() || meta.len() > COPY_MAX {
        return None;
    }
    std::fs::read(path).ok()
}

/// The host's entries kept in the container's `/etc`.
fn host_entries(etc: &Path) -> Vec<(String, Entry)> {
    let mut out = Vec::new();
    let names: Vec<String> = std::fs::read_dir(etc)
        .map(|dir| {
            dir.flatten()
                .filter_map(|e| e.file_name().into_string().ok())
                .collect()
        })
        .unwrap_or_default();
    let wanted = |name: &str| {
        KEPT.iter().any(|k| match k.strip_suffix('*') {
            Some(prefix) => name.starts_with(prefix),
            None => *k == name,
        })
    };
    let mut kept: Vec<&str> = names
        .iter()
        .map(String::as_str)
        .filter(|n| wanted(n))
        .collect();
    // Entries below a subdirectory (`default/locale`) are not in the listing.
    kept.extend(KEPT.iter().filter(|k| k.contains('/')).copied());
    kept.sort_unstable();
    kept.dedup();
    for name in kept {
        let path = etc.join(name);
        match std::fs::symlink_metadata(&path) {
            Ok(meta) if meta.file_type().is_symlink() => {
                if let Ok(target) = std::fs::read_link(&path) {
                    out.push((name.to_string(), Entry::Link(target)));
                }
            }
            Ok(meta) if meta.is_dir() => out.push((name.to_string(), Entry::Host(path))),
            Ok(meta) if meta.is_file() => match copy_of(&path) {
                Some(bytes) => out.push((name.to_string(), Entry::Copy(bytes))),
                None => out.push((name.to_string(), Entry::Host(path))),
            },
            _ => {}
        }
    }
    out
}

/// `passwd` and `group` with root, the one user and `nobody` (programs look up their own
/// name; some refuse to run without one).
fn users(id: &Identity) -> (String, String) {
    let home = id.home.display();
    let mut passwd = String::from("root:x:0:0:root:/root:/bin/sh\n");
    let mut group = String::from("root:x:0:\n");
    if id.uid != 0 {
        passwd.push_str(&format!(
            "{}:x:{}:{}::{home}:/bin/sh\n",
            id.name, id.uid, id.gid
        ));
    } else {
        passwd = format!("root:x:0:0:root:{home}:/bin/sh\n");
    }
    if id.gid != 0 {
        group.push_str(&format!("{}:x:{}:\n", id.name, id.gid));
    }
    passwd.push_str("nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n");
    group.push_str("nogroup:x:65534:\n");
    (passwd, group)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn etc_keeps_what_programs_need_and_nothing_that_carries_credentials() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let etc = dir.path();
        for name in [
            "ld.so.cache",
            "environment",
            "npmrc",
            "pip.conf",
            "shadow",
            "gitconfig",
            "python3.11/sitecustomize.py",
            "ssl/certs/ca.pem",
        ] {
            let path = etc.join(name);
            std::fs::create_dir_all(path.parent().unwrap_or(etc)).unwrap_or_else(|e| panic!("{e}"));
            std::fs::write(path, "x").unwrap_or_else(|e| panic!("{e}"));
        }
        #[cfg(unix)]
        std::os::unix::fs::symlink("/usr/share/zoneinfo/UTC", etc.join("localtime"))
            .unwrap_or_else(|e| panic!("{e}"));
        let id = Identity {
            uid: 1000,
            gid: 1000,
            name: "pat".into(),
            home: "/home/pat".into(),
        };
        let got = entries(etc, &id);
        let names: Vec<&str> = got.iter().map(|(n, _)| n.as_str()).collect();
        for kept in [
            "ld.so.cache",
            "python3.11",
            "ssl",
            "localtime",
            "passwd",
            "hosts",
        ] {
            assert!(names.contains(&kept), "{kept} missing from {names:?}");
        }
        for dropped in ["environment", "npmrc", "pip.conf", "shadow", "gitconfig"] {
            assert!(!names.contains(&dropped), "{dropped} kept");
        }
        let passwd = got
            .iter()
            .find(|(n, _)| n == "passwd")
            .map(|(_, e)| e.clone());
        let Some(Entry::Text(passwd)) = passwd else {
            panic!("no passwd")
        };
        assert!(passwd.contains("pat:x:1000:1000::/home/pat:/bin/sh"));
        assert!(!got.iter().any(|(n, _)| n == "resolv.conf"));
    }
}
