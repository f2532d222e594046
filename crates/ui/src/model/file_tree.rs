//! The file tree's view model: the project's paths, which folders are open, the filter, and
//! the rows they produce. Rows and matches are computed when the files, the open folders or
//! the filter change, never per frame, so a 15,000-file project draws only what is in view.

use std::collections::BTreeSet;

/// One line of the tree as drawn.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Row {
    Folder {
        path: String,
        depth: usize,
        open: bool,
    },
    /// A file: its index into `FileTree::files`.
    File { index: usize, depth: usize },
}

#[derive(Debug, Default)]
pub struct FileTree {
    files: Vec<String>,
    /// The filter as typed; when set the tree becomes a flat list of matches.
    pub filter: String,
    expanded: BTreeSet<String>,
    rows: Option<Vec<Row>>,
    matches: Option<(String, Vec<usize>)>,
}

impl FileTree {
    /// `files` are the project's paths, `/`-separated, sorted.
    pub fn new(files: Vec<String>) -> Self {
        FileTree {
            files,
            ..Default::default()
        }
    }

    pub fn files(&self) -> &[String] {
        &self.files
    }

    pub fn path(&self, index: usize) -> Option<&str> {
        self.files.get(index).map(String::as_str)
    }

    pub fn contains(&self, path: &str) -> bool {
        self.files.iter().any(|f| f == path)
    }

    /// Replaces the file list; open folders stay open.
    pub fn set_files(&mut self, files: Vec<String>) {
        self.files = files;
        self.rows = None;
        self.matches = None;
    }

    /// Opens a closed folder or closes an open one.
    pub fn toggle(&mut self, folder: &str) {
        if !self.expanded.remove(folder) {
            self.expanded.insert(folder.to_string());
        }
        self.rows = None;
    }

    pub fn is_filtered(&self) -> bool {
        !self.filter.trim().is_empty()
    }

    /// The tree's visible rows: every top-level entry, and the contents of open folders.
    pub fn rows(&mut self) -> &[Row] {
        if self.rows.is_none() {
            self.rows = Some(self.build_rows());
        }
        self.rows.as_deref().unwrap_or_default()
    }

    fn build_rows(&self) -> Vec<Row> {
        let mut rows = Vec::new();
        // The folders of the previous file: a file shares a prefix of them.
        let mut open_dirs: Vec<&str> = Vec::new();
        // Inside a closed folder, every file until the prefix changes is hidden (the list is
        // sorted, so a folder's files are contiguous).
        let mut closed: Option<String> = None;
        for (index, path) in self.files.iter().enumerate() {
            if let Some(prefix) = &closed {
                if path.starts_with(prefix.as_str()) {
                    continue;
                }
                closed = None;
            }
            let parts: Vec<&str> = path.split('/').collect();
            let dirs = &parts[..parts.len() - 1];
            let shared = open_dirs
                .iter()
                .zip(dirs)
                .take_while(|(a, b)| a == b)
                .count();
            open_dirs.truncate(shared);
            let mut hidden = false;
            for depth in shared..dirs.len() {
                let folder = dirs[..=depth].join("/");
                let open = self.expanded.contains(&folder);
                rows.push(Row::Folder {
                    path: folder.clone(),
                    depth,
                    open,
                });
                if !open {
                    closed = Some(format!("{folder}/"));
                    hidden = true;
                    break;
                }
                open_dirs.push(dirs[depth]);
            }
            if !hidden {
                rows.push(Row::File {
                    index,
                    depth: dirs.len(),
                });
            }
        }
        rows
    }

    /// The files matching the filter (indices into `files`): every word of it,
    /// case-insensitively, somewhere in the path.
    pub fn matches(&mut self) -> &[usize] {
        let query = self.filter.trim().to_lowercase();
        if self.matches.as_ref().is_none_or(|(q, _)| *q != query) {
            let words: Vec<&str> = query.split_whitespace().collect();
            let found = self
                .files
                .iter()
                .enumerate()
                .filter(|(_, path)| {
                    let path = path.to_lowercase();
                    words.iter().all(|w| path.contains(w))
                })
                .map(|(i, _)| i)
                .collect();
            self.matches = Some((query, found));
        }
        self.matches
            .as_ref()
            .map(|(_, m)| m.as_slice())
            .unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tree() -> FileTree {
        FileTree::new(
            [
                "Cargo.toml",
                "src/a/x.rs",
                "src/a/y.rs",
                "src/b.rs",
                "src/main.rs",
                "z.md",
            ]
            .map(String::from)
            .to_vec(),
        )
    }

    fn names(tree: &mut FileTree) -> Vec<String> {
        let files = tree.files.clone();
        tree.rows()
            .iter()
            .map(|row| match row {
                Row::Folder { path, depth, open } => {
                    format!("{depth}{}{path}/", if *open { "-" } else { "+" })
                }
                Row::File { index, depth } => format!("{depth} {}", files[*index]),
            })
            .collect()
    }

    #[test]
    fn closed_folders_hide_their_contents() {
        let mut t = tree();
        assert_eq!(names(&mut t), ["0 Cargo.toml", "0+src/", "0 z.md"]);
        t.toggle("src");
        assert_eq!(
            names(&mut t),
            [
                "0 Cargo.toml",
                "0-src/",
                "1+src/a/",
                "1 src/b.rs",
                "1 src/main.rs",
                "0 z.md"
            ]
        );
        t.toggle("src/a");
        assert_eq!(
            names(&mut t)[2..5],
            ["1-src/a/", "2 src/a/x.rs", "2 src/a/y.rs"]
        );
        t.toggle("src");
        assert_eq!(names(&mut t), ["0 Cargo.toml", "0+src/", "0 z.md"]);
    }

    #[test]
    fn new_files_show_and_open_folders_stay_open() {
        let mut t = tree();
        t.toggle("src");
        let mut files = t.files().to_vec();
        files.insert(4, "src/c.rs".into());
        t.set_files(files);
        assert!(names(&mut t).contains(&"1 src/c.rs".to_string()));
    }

    #[test]
    fn the_filter_matches_every_word_in_any_case() {
        let mut t = tree();
        t.filter = "SRC rs".into();
        let found: Vec<&str> = t
            .matches()
            .to_vec()
            .iter()
            .map(|&i| t.files[i].as_str())
            .collect();
        assert_eq!(
            found,
            ["src/a/x.rs", "src/a/y.rs", "src/b.rs", "src/main.rs"]
        );
        t.filter = "a/ y".into();
        assert_eq!(t.matches(), [2]);
        t.filter = "nothing".into();
        assert!(t.matches().is_empty());
    }
}
