//! The project's files for the file tree: everything git would see (`.gitignore` respected),
//! dotfiles included, `.git` never.

use std::path::Path;

#[derive(Debug, thiserror::Error)]
#[error("cannot list {path}: {message}")]
pub struct ListError {
    pub path: String,
    pub message: String,
}

/// Files under `root`, relative and `/`-separated, sorted.
pub fn list_files(root: &Path) -> Result<Vec<String>, ListError> {
    let mut builder = ignore::WalkBuilder::new(root);
    builder
        .hidden(false)
        .require_git(false)
        .follow_links(false)
        .filter_entry(|entry| entry.file_name() != ".git");
    let found = super::walk::parallel(&builder, |item| match item {
        Err(e) => Some(Err(e.to_string())),
        Ok(entry) if entry.file_type().is_some_and(|t| t.is_file()) => {
            let rel = entry.path().strip_prefix(root).ok()?;
            let parts: Vec<String> = rel
                .components()
                .map(|c| c.as_os_str().to_string_lossy().into_owned())
                .collect();
            Some(Ok(parts.join("/")))
        }
        Ok(_) => None,
    });
    let mut files = Vec::with_capacity(found.len());
    for item in found {
        files.push(item.map_err(|message| ListError {
            path: root.display().to_string(),
            message,
        })?);
    }
    files.sort();
    Ok(files)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lists_files_respecting_gitignore() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::create_dir_all(root.join("src")).unwrap();
        std::fs::create_dir_all(root.join(".git")).unwrap();
        std::fs::create_dir_all(root.join("target")).unwrap();
        std::fs::write(root.join(".gitignore"), "target/\n").unwrap();
        std::fs::write(root.join("src/main.rs"), "").unwrap();
        std::fs::write(root.join("target/out"), "").unwrap();
        std::fs::write(root.join(".git/config"), "").unwrap();
        assert_eq!(list_files(root).unwrap(), [".gitignore", "src/main.rs"]);
    }
}
