//! Finding the program a child runs, the way the shell would: a path as given, else the first
//! executable of that name on `PATH`.

use std::path::{Path, PathBuf};

/// The program's full path: `program` itself when it names a path (relative to `base`, the
/// directory it will run in), else the first executable of that name on PATH.
pub fn resolve_program(program: &str, base: &Path) -> Option<PathBuf> {
    let program = program.trim();
    if program.is_empty() {
        return None;
    }
    if program.contains(std::path::MAIN_SEPARATOR) || program.contains('/') {
        let path = base.join(program);
        return is_executable(&path).then_some(path);
    }
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|dir| dir.join(program))
        .find(|candidate| is_executable(candidate))
}

#[cfg(unix)]
fn is_executable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

#[cfg(not(unix))]
fn is_executable(path: &Path) -> bool {
    path.is_file()
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;

    #[test]
    fn a_relative_program_is_found_where_it_will_run() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let program = dir.path().join("bin/srv");
        std::fs::create_dir_all(dir.path().join("bin")).unwrap_or_else(|e| panic!("{e}"));
        std::fs::write(&program, "#!/bin/sh\n").unwrap_or_else(|e| panic!("{e}"));
        let executable = std::fs::Permissions::from_mode(0o755);
        std::fs::set_permissions(&program, executable).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(
            resolve_program("./bin/srv", dir.path()),
            Some(dir.path().join("./bin/srv"))
        );
        assert_eq!(resolve_program("bin/srv", dir.path()), Some(program));
        // Not against this process's own directory.
        let elsewhere = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(resolve_program("./bin/srv", elsewhere.path()), None);
        assert_eq!(
            resolve_program("sh", elsewhere.path()).map(|p| p.is_absolute()),
            Some(true)
        );
    }
}
