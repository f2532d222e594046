//! The names of the files a prompt does not include, within a token budget.
//!
//! When every path fits, they are listed one per line. When they do not (a 14,000-file
//! project with a small model), the list becomes an outline of folders with file counts:
//! the top level first, then folders opened one at a time while they fit, those holding the
//! files the prompt is about (included, mentioned, recently edited) before the others, and
//! among equals the shallower and smaller first. What is not opened is still counted, so the
//! model knows it exists and can ask to list it. Nothing is ever longer than the budget.

use std::cmp::Reverse;
use std::collections::{BTreeMap, BinaryHeap};

use crate::tokens::estimate;

const HEADER: &str = "Other files (not included, ask to see them):\n";
const OUTLINE_HEADER: &str =
    "Other files, by folder (not included; list a folder or ask to see a file):\n";

/// The listing of `paths` within `budget` tokens (header included). `relevant` paths (files
/// the prompt is about) pull their folders open first.
pub fn outline(paths: &[&str], relevant: &[&str], budget: usize) -> String {
    if paths.is_empty() || budget == 0 {
        return String::new();
    }
    // The plain list's size, counted without building it (15,000 paths rarely fit).
    let flat = paths
        .iter()
        .fold(Count::of(HEADER), |count, p| count.plus(&Count::line(p)));
    if flat.tokens() <= budget {
        let mut out = String::with_capacity(flat.bytes);
        out.push_str(HEADER);
        for path in paths {
            out.push_str("- ");
            out.push_str(path);
            out.push('\n');
        }
        return out;
    }
    let mut tree = Tree::default();
    for path in paths {
        tree.insert(path);
    }
    for path in relevant {
        tree.mark(path);
    }
    tree.render(budget)
}

/// What [`estimate`] counts in a text, so that the estimate of texts joined is known
/// without joining them: ASCII bytes (a token per 4) and other characters (a token each).
#[derive(Clone, Copy)]
struct Count {
    bytes: usize,
    ascii: usize,
    other: usize,
}

impl Count {
    fn of(text: &str) -> Count {
        if text.is_ascii() {
            return Count {
                bytes: text.len(),
                ascii: text.len(),
                other: 0,
            };
        }
        let ascii = text.bytes().filter(u8::is_ascii).count();
        let other = text
            .bytes()
            .filter(|&b| !b.is_ascii() && b & 0xC0 != 0x80)
            .count();
        Count {
            bytes: text.len(),
            ascii,
            other,
        }
    }

    /// A listing line, `- {path}\n`.
    fn line(path: &str) -> Count {
        let mut count = Count::of(path);
        count.bytes += 3;
        count.ascii += 3;
        count
    }

    fn plus(self, more: &Count) -> Count {
        Count {
            bytes: self.bytes + more.bytes,
            ascii: self.ascii + more.ascii,
            other: self.other + more.other,
        }
    }

    /// The same as `estimate` of the text counted.
    fn tokens(&self) -> usize {
        self.ascii.div_ceil(4) + self.other
    }
}

#[derive(Default)]
struct Dir<'a> {
    /// Full path with a trailing `/` (empty for the root).
    path: String,
    dirs: BTreeMap<&'a str, usize>,
    files: Vec<&'a str>,
    /// The tokens of the lines of `files`.
    files_tokens: usize,
    /// Files anywhere below.
    count: usize,
    relevant: bool,
    depth: usize,
    open: bool,
}

#[derive(Default)]
struct Tree<'a> {
    /// Index 0 is the root.
    dirs: Vec<Dir<'a>>,
    /// The folder of the last file inserted and its chain of folders (root first): paths come
    /// sorted, so most files go where the previous one went, without a lookup.
    last: Option<(&'a str, Vec<usize>)>,
}

impl<'a> Tree<'a> {
    fn root(&mut self) -> usize {
        if self.dirs.is_empty() {
            self.dirs.push(Dir::default());
        }
        0
    }

    /// Counts `path` in each of its folders (created as needed) and lists it in its own.
    fn insert(&mut self, path: &'a str) {
        let folder = path.rsplit_once('/').map(|(folder, _)| folder);
        if let Some((last, chain)) = &self.last
            && Some(*last) == folder
        {
            for &dir in chain {
                self.dirs[dir].count += 1;
            }
            if let Some(&at) = chain.last() {
                self.dirs[at].files.push(path);
                self.dirs[at].files_tokens += Count::line(path).tokens();
            }
            return;
        }
        let mut at = self.root();
        let mut chain = vec![at];
        self.dirs[at].count += 1;
        for part in folder.into_iter().flat_map(|folder| folder.split('/')) {
            at = match self.dirs[at].dirs.get(part) {
                Some(&next) => next,
                None => {
                    let dir = Dir {
                        path: format!("{}{part}/", self.dirs[at].path),
                        depth: self.dirs[at].depth + 1,
                        ..Dir::default()
                    };
                    self.dirs.push(dir);
                    let next = self.dirs.len() - 1;
                    self.dirs[at].dirs.insert(part, next);
                    next
                }
            };
            self.dirs[at].count += 1;
            chain.push(at);
        }
        self.dirs[at].files.push(path);
        self.dirs[at].files_tokens += Count::line(path).tokens();
        self.last = folder.map(|folder| (folder, chain));
    }

    /// Marks the folders of `path` as relevant (only folders that hold listed files matter).
    fn mark(&mut self, path: &str) {
        if self.dirs.is_empty() {
            return;
        }
        let mut at = 0;
        let parts: Vec<&str> = path.split('/').collect();
        for part in &parts[..parts.len().saturating_sub(1)] {
            match self.dirs[at].dirs.get(*part) {
                Some(&next) => {
                    self.dirs[next].relevant = true;
                    at = next;
                }
                None => return,
            }
        }
    }

    fn folder_line(&self, dir: usize) -> String {
        let d = &self.dirs[dir];
        let noun = if d.count == 1 { "file" } else { "files" };
        format!("- {} ({} {noun})\n", d.path, d.count)
    }

    /// The tokens opening `dir` adds: a line per subfolder and per file in it.
    fn opening_cost(&self, dir: usize) -> usize {
        let d = &self.dirs[dir];
        let folders: usize = d
            .dirs
            .values()
            .map(|&c| estimate(&self.folder_line(c)))
            .sum();
        folders + d.files_tokens
    }

    fn render(mut self, budget: usize) -> String {
        let mut used = estimate(OUTLINE_HEADER);
        // The root is always open, as far as its own entries fit.
        let root_cost = self.opening_cost(0);
        self.dirs[0].open = true;
        if used + root_cost > budget {
            return self.render_cut_root(budget);
        }
        used += root_cost;
        let key = |d: &Dir| (Reverse(d.relevant), d.depth, d.count, d.path.clone());
        let mut queue: BinaryHeap<Reverse<_>> = self.dirs[0]
            .dirs
            .values()
            .map(|&c| Reverse((key(&self.dirs[c]), c)))
            .collect();
        while let Some(Reverse((_, dir))) = queue.pop() {
            let cost = self.opening_cost(dir);
            if used + cost > budget {
                // Too big to open here; smaller folders elsewhere may still fit.
                continue;
            }
            used += cost;
            self.dirs[dir].open = true;
            for &child in self.dirs[dir].dirs.values() {
                queue.push(Reverse((key(&self.dirs[child]), child)));
            }
        }
        let mut out = OUTLINE_HEADER.to_string();
        self.write(0, &mut out);
        out
    }

    /// Depth first: an open folder's files, then its subfolders (each a line, then its
    /// contents when open).
    fn write(&self, dir: usize, out: &mut String) {
        let d = &self.dirs[dir];
        for file in &d.files {
            out.push_str("- ");
            out.push_str(file);
            out.push('\n');
        }
        for &child in d.dirs.values() {
            out.push_str(&self.folder_line(child));
            if self.dirs[child].open {
                self.write(child, out);
            }
        }
    }

    /// Even the top level does not fit: as many of its entries as fit, then a count of the
    /// rest.
    fn render_cut_root(&self, budget: usize) -> String {
        let root = &self.dirs[0];
        let mut lines: Vec<(String, usize)> = root
            .dirs
            .values()
            .map(|&c| (self.folder_line(c), self.dirs[c].count))
            .collect();
        lines.extend(root.files.iter().map(|f| (format!("- {f}\n"), 1)));
        let total = root.count;
        let summary = |files: usize| format!("- … {files} more file(s)\n");
        let mut out = OUTLINE_HEADER.to_string();
        let mut used = estimate(&out);
        let mut shown = 0;
        for (line, files) in &lines {
            let rest = total - shown - files;
            let tail = if rest > 0 {
                estimate(&summary(rest))
            } else {
                0
            };
            if used + estimate(line) + tail > budget {
                break;
            }
            used += estimate(line);
            out.push_str(line);
            shown += files;
        }
        if shown < total {
            let line = summary(total - shown);
            if used + estimate(&line) <= budget {
                out.push_str(&line);
            } else if shown == 0 {
                // Not even a header and a count: say nothing rather than overflow.
                return String::new();
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn project() -> Vec<String> {
        let mut paths = vec!["README.md".to_string(), "Cargo.toml".to_string()];
        for d in 0..20 {
            for f in 0..50 {
                paths.push(format!("src/mod_{d:02}/file_{f:02}.rs"));
            }
        }
        for f in 0..300 {
            paths.push(format!("docs/page_{f:03}.md"));
        }
        paths
    }

    fn refs(paths: &[String]) -> Vec<&str> {
        paths.iter().map(String::as_str).collect()
    }

    proptest::proptest! {
        /// Counting lines one by one estimates exactly what the joined text estimates.
        #[test]
        fn counts_add_up_to_the_estimate_of_the_joined_text(
            head in "[a-zé日 ]{0,9}",
            paths in proptest::collection::vec("[a-z/é日.]{0,12}", 0..6),
        ) {
            let joined: String = paths.iter().map(|p| format!("- {p}\n")).collect();
            let counted = paths.iter().fold(Count::of(&head), |c, p| c.plus(&Count::line(p)));
            proptest::prop_assert_eq!(counted.tokens(), estimate(&format!("{head}{joined}")));
            proptest::prop_assert_eq!(counted.bytes, head.len() + joined.len());
        }
    }

    #[test]
    fn a_list_that_fits_is_a_plain_list() {
        let out = outline(&["a.rs", "src/b.rs"], &[], 1000);
        assert_eq!(
            out,
            "Other files (not included, ask to see them):\n- a.rs\n- src/b.rs\n"
        );
        assert_eq!(outline(&[], &[], 1000), "");
    }

    #[test]
    fn too_many_files_become_folders_with_counts_within_the_budget() {
        let paths = project();
        for budget in [60, 200, 1000, 5000] {
            let out = outline(&refs(&paths), &[], budget);
            assert!(
                estimate(&out) <= budget,
                "{budget}: {} tokens",
                estimate(&out)
            );
            assert!(out.starts_with(OUTLINE_HEADER), "{out}");
        }
        let out = outline(&refs(&paths), &[], 200);
        assert!(out.contains("- src/ (1000 files)\n"), "{out}");
        assert!(out.contains("- docs/ (300 files)\n"), "{out}");
        assert!(out.contains("- README.md\n"), "{out}");
        // With more room, folders open, shallow and small first.
        let out = outline(&refs(&paths), &[], 1000);
        assert!(out.contains("- src/mod_00/ (50 files)\n"), "{out}");
    }

    #[test]
    fn folders_of_relevant_files_open_first() {
        let paths = project();
        let out = outline(&refs(&paths), &["src/mod_17/file_03.rs"], 600);
        assert!(out.contains("- src/mod_17/file_03.rs\n"), "{out}");
        assert!(!out.contains("- src/mod_00/file_00.rs\n"), "{out}");
    }

    #[test]
    fn a_huge_top_level_is_cut_with_a_count() {
        let paths: Vec<String> = (0..5000).map(|i| format!("top_{i:04}.txt")).collect();
        let out = outline(&refs(&paths), &[], 300);
        assert!(estimate(&out) <= 300, "{}", estimate(&out));
        assert!(out.contains("- top_0000.txt\n"), "{out}");
        assert!(out.contains(" more file(s)\n"), "{out}");
        // A budget too small for anything says nothing.
        assert_eq!(outline(&refs(&paths), &[], 5), "");
    }
}
