//! The code index of a project: per file, its definitions and references (tree-sitter
//! grammars, see [`lang`]) and the words of its path, names and text (see [`terms`]). Files
//! are re-read only when their `(mtime, length, inode)` stamp changed ([`CodeIndex::refresh`]);
//! the index is kept in the data directory between runs ([`store`]). [`rank`] orders the
//! files for a prompt.
//!
//! Core: it uses the workspace's safe reads and nothing above it.

mod extract;
mod lang;
pub mod rank;
mod refresh;
pub mod store;
pub mod terms;

use std::collections::HashMap;

pub use extract::{Definition, Extracted, MAX_PARSED_BYTES, extract, file_map, map_of};
pub use lang::Lang;
pub use rank::{Ranked, Signals};
pub use refresh::{FileStamp, Refreshed};
pub use store::{IndexStoreError, Indexes, ProjectIndex};

/// An interned word or symbol name.
pub(crate) type Id = u32;

/// Words and names, each stored once.
#[derive(Debug, Default)]
pub(crate) struct Interner {
    ids: HashMap<Box<str>, Id>,
    names: Vec<Box<str>>,
}

impl Interner {
    pub(crate) fn intern(&mut self, name: &str) -> Id {
        if let Some(&id) = self.ids.get(name) {
            return id;
        }
        let id = Id::try_from(self.names.len()).unwrap_or(Id::MAX);
        self.names.push(Box::from(name));
        self.ids.insert(Box::from(name), id);
        id
    }

    pub(crate) fn get(&self, name: &str) -> Option<Id> {
        self.ids.get(name).copied()
    }

    pub(crate) fn name(&self, id: Id) -> &str {
        self.names.get(id as usize).map_or("", |n| n)
    }
}

/// A definition as the index keeps it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Def {
    pub(crate) name: Id,
    pub(crate) kind: Id,
    pub(crate) line: u32,
}

/// One file of the index.
#[derive(Debug, Clone, Default)]
pub(crate) struct FileEntry {
    pub(crate) stamp: FileStamp,
    pub(crate) defs: Vec<Def>,
    /// Sorted, each once.
    pub(crate) refs: Vec<Id>,
    /// Sorted, each once; `counts` holds each one's weight.
    pub(crate) words: Vec<Id>,
    pub(crate) counts: Vec<u16>,
    /// The sum of `counts`: the file's length for BM25.
    pub(crate) length: u32,
}

/// A place a name is defined.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Location {
    pub path: String,
    /// 1-based.
    pub line: u32,
    pub kind: String,
}

/// The index of one project. Files are kept by relative, `/`-separated path.
#[derive(Debug, Default)]
pub struct CodeIndex {
    pub(crate) interner: Interner,
    pub(crate) files: HashMap<Box<str>, FileEntry>,
    /// Which files define and how many use each name, built when first asked after a change.
    pub(crate) graph: Option<Graph>,
}

impl CodeIndex {
    pub fn new() -> Self {
        Self::default()
    }

    /// How many files are indexed.
    pub fn len(&self) -> usize {
        self.files.len()
    }

    pub fn is_empty(&self) -> bool {
        self.files.is_empty()
    }

    /// Whether `path` is indexed.
    pub fn contains(&self, path: &str) -> bool {
        self.files.contains_key(path)
    }

    /// Puts what `extracted` holds in the index as the file `path`, replacing what it held.
    pub fn insert(&mut self, path: &str, stamp: FileStamp, extracted: &Extracted) {
        let interner = &mut self.interner;
        let defs = (extracted.definitions.iter())
            .map(|d| Def {
                name: interner.intern(&d.name),
                kind: interner.intern(&d.kind),
                line: d.line,
            })
            .collect();
        let mut refs: Vec<Id> = (extracted.references.iter())
            .map(|r| interner.intern(r))
            .collect();
        refs.sort_unstable();
        refs.dedup();
        let mut words: Vec<(Id, u16)> = (extracted.words.iter())
            .map(|(w, &c)| (interner.intern(w), c))
            .collect();
        words.sort_unstable();
        let length = words.iter().map(|&(_, c)| u32::from(c)).sum();
        let entry = FileEntry {
            stamp,
            defs,
            refs,
            words: words.iter().map(|&(w, _)| w).collect(),
            counts: words.iter().map(|&(_, c)| c).collect(),
            length,
        };
        self.files.insert(Box::from(path), entry);
        self.graph = None;
    }

    /// Forgets the file `path`.
    pub fn remove(&mut self, path: &str) {
        if self.files.remove(path).is_some() {
            self.graph = None;
        }
    }

    /// Where `name` is defined, by path then line.
    pub fn definitions_of(&self, name: &str) -> Vec<Location> {
        let Some(id) = self.interner.get(name) else {
            return Vec::new();
        };
        let mut out: Vec<Location> = (self.files.iter())
            .flat_map(|(path, entry)| {
                (entry.defs.iter().filter(|d| d.name == id)).map(|d| Location {
                    path: path.to_string(),
                    line: d.line,
                    kind: self.interner.name(d.kind).to_string(),
                })
            })
            .collect();
        out.sort_by(|a, b| (&a.path, a.line).cmp(&(&b.path, b.line)));
        out
    }

    /// The files that use `name` (call it, name its type, ...), by path.
    pub fn references_to(&self, name: &str) -> Vec<String> {
        let Some(id) = self.interner.get(name) else {
            return Vec::new();
        };
        let mut out: Vec<String> = (self.files.iter())
            .filter(|(_, entry)| entry.refs.binary_search(&id).is_ok())
            .map(|(path, _)| path.to_string())
            .collect();
        out.sort();
        out
    }

    /// The definitions of the file `path` as (name, kind, line), by line.
    pub fn symbols_in(&self, path: &str) -> Vec<(String, String, u32)> {
        let Some(entry) = self.files.get(path) else {
            return Vec::new();
        };
        (entry.defs.iter())
            .map(|d| {
                let name = self.interner.name(d.name).to_string();
                (name, self.interner.name(d.kind).to_string(), d.line)
            })
            .collect()
    }

    /// Builds which files define each name, if a change made it stale.
    pub(crate) fn ensure_graph(&mut self) {
        if self.graph.is_some() {
            return;
        }
        let mut graph = Graph::default();
        for (path, entry) in &self.files {
            for def in &entry.defs {
                let files = graph.definers.entry(def.name).or_default();
                if files.last() != Some(path) {
                    files.push(path.clone());
                }
            }
            for name in &entry.refs {
                *graph.users.entry(*name).or_default() += 1;
            }
        }
        self.graph = Some(graph);
    }
}

/// The reference graph: for each name, the files defining it and how many files use it.
#[derive(Debug, Default)]
pub(crate) struct Graph {
    pub(crate) definers: HashMap<Id, Vec<Box<str>>>,
    pub(crate) users: HashMap<Id, u32>,
}

#[cfg(test)]
#[path = "index_tests.rs"]
mod tests;
