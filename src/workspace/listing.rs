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
    let mut files = Vec::new();
    let walker = ignore::WalkBuilder::new(root)
        .hidden(false)
        .require_git(false)
        .follow_links(false)
        .filter_entry(|entry| entry.file_name() != ".git")
        .build();
    for entry in walker {
        let entry = entry.map_err(|e| ListError {
            path: root.display().to_string(),
            message: e.to_string(),
        })?;
        if !entry.file_type().is_some_and(|t| t.is_file()) {
            continue;
        }
        if let Ok(rel) = entry.path().strip_prefix(root) {
            let parts: Vec<String> = rel
                .components()
                .map(|c| c.as_os_str().to_string_lossy().into_owned())
                .collect();
            files.push(parts.join("/"));
        }
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
