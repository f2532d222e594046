//! What files look like on this platform: permission bits and file identity. Unix has both;
//! elsewhere files are reported as plain `0o644` files without an identity, and modes are not
//! set (the other platforms' defaults apply).

use std::fs::{File, Metadata};
use std::io;

/// A file's permission bits (`0o755` for an executable script).
pub fn mode(meta: &Metadata) -> u32 {
    #[cfg(unix)]
    {
        std::os::unix::fs::PermissionsExt::mode(&meta.permissions()) & 0o7777
    }
    #[cfg(not(unix))]
    {
        if meta.permissions().readonly() {
            0o444
        } else {
            0o644
        }
    }
}

/// Gives `file` the permission bits `mode`.
pub fn set_mode(file: &File, mode: u32) -> io::Result<()> {
    #[cfg(unix)]
    {
        file.set_permissions(std::os::unix::fs::PermissionsExt::from_mode(mode))
    }
    #[cfg(not(unix))]
    {
        let _ = (file, mode);
        Ok(())
    }
}

/// When the file's status last changed (its content, links or mode), in nanoseconds since
/// the epoch; 0 where the platform does not say.
pub fn change_time_ns(meta: &Metadata) -> i64 {
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        (meta.ctime().saturating_mul(1_000_000_000) + meta.ctime_nsec()).max(0)
    }
    #[cfg(not(unix))]
    {
        let _ = meta;
        0
    }
}

/// What tells two files with the same path, size and time apart (the inode), where known.
pub fn identity(meta: &Metadata) -> u64 {
    #[cfg(unix)]
    {
        std::os::unix::fs::MetadataExt::ino(meta)
    }
    #[cfg(not(unix))]
    {
        let _ = meta;
        0
    }
}

/// What `stat` says of the file at `path` (a link is not followed), as a stamp.
///
/// The walk asks this of every file of the project on every turn. On Linux it is asked
/// relative to the file's folder: each walker thread keeps its last folder open (`O_PATH`) and
/// asks `statx` of the name in it, so the kernel looks up one name, not every component of
/// the path again (that lookup was half of what the walk's `stat`s cost).
pub fn file_stamp(path: &std::path::Path) -> io::Result<super::FileStamp> {
    #[cfg(target_os = "linux")]
    {
        folder_relative::file_stamp(path)
    }
    #[cfg(not(target_os = "linux"))]
    {
        Ok(super::FileStamp::of(&std::fs::symlink_metadata(path)?))
    }
}

#[cfg(target_os = "linux")]
mod folder_relative {
    use std::cell::RefCell;
    use std::io;
    use std::os::fd::OwnedFd;
    use std::path::{Path, PathBuf};

    use rustix::fs::{AtFlags, Mode, OFlags, StatxFlags};

    thread_local! {
        /// The folder this thread asked last, open.
        static FOLDER: RefCell<Option<(PathBuf, OwnedFd)>> = const { RefCell::new(None) };
    }

    pub(super) fn file_stamp(path: &Path) -> io::Result<super::super::FileStamp> {
        let (Some(folder), Some(name)) = (path.parent(), path.file_name()) else {
            return Ok(super::super::FileStamp::of(&std::fs::symlink_metadata(
                path,
            )?));
        };
        FOLDER.with_borrow_mut(|open| {
            if open.as_ref().is_none_or(|(at, _)| at != folder) {
                let flags = OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC;
                let fd = rustix::fs::open(folder, flags, Mode::empty())?;
                *open = Some((folder.to_path_buf(), fd));
            }
            let Some((_, fd)) = open.as_ref() else {
                return Err(io::Error::other("no folder open"));
            };
            let mask = StatxFlags::MTIME | StatxFlags::CTIME | StatxFlags::SIZE | StatxFlags::INO;
            let st = rustix::fs::statx(fd, name, AtFlags::SYMLINK_NOFOLLOW, mask)?;
            let ns = |t: rustix::fs::StatxTimestamp| {
                (t.tv_sec.saturating_mul(1_000_000_000) + i64::from(t.tv_nsec)).max(0)
            };
            Ok(super::super::FileStamp {
                mtime_ns: ns(st.stx_mtime),
                ctime_ns: ns(st.stx_ctime),
                len: st.stx_size,
                inode: st.stx_ino,
            })
        })
    }
}

#[cfg(test)]
mod tests {
    use super::super::FileStamp;
    use super::file_stamp;

    #[test]
    fn a_stamp_asked_in_the_folder_is_the_stamp_of_the_metadata() {
        let dir = tempfile::tempdir().expect("dir");
        for sub in ["a", "b"] {
            std::fs::create_dir(dir.path().join(sub)).expect("mkdir");
            std::fs::write(dir.path().join(sub).join("f.txt"), sub.repeat(7)).expect("write");
        }
        // Alternating folders: the thread's open folder must follow the path asked.
        for _ in 0..2 {
            for sub in ["a", "b"] {
                let path = dir.path().join(sub).join("f.txt");
                let meta = std::fs::symlink_metadata(&path).expect("stat");
                assert_eq!(file_stamp(&path).expect("stamp"), FileStamp::of(&meta));
            }
        }
        // A rewrite is seen (a new length and time).
        let path = dir.path().join("a/f.txt");
        let before = file_stamp(&path).expect("stamp");
        std::fs::write(&path, "longer than before").expect("write");
        assert_ne!(file_stamp(&path).expect("stamp"), before);
        assert!(file_stamp(&dir.path().join("a/missing")).is_err());
    }

    #[cfg(unix)]
    #[test]
    fn a_link_is_stamped_itself_not_what_it_points_to() {
        let dir = tempfile::tempdir().expect("dir");
        std::fs::write(dir.path().join("big"), "x".repeat(4096)).expect("write");
        std::os::unix::fs::symlink("big", dir.path().join("link")).expect("symlink");
        let stamp = file_stamp(&dir.path().join("link")).expect("stamp");
        let meta = std::fs::symlink_metadata(dir.path().join("link")).expect("lstat");
        assert_eq!(stamp, FileStamp::of(&meta));
        assert_eq!(stamp.len, 3, "the link's own length (its target's name)");
    }
}
