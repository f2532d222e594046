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
