//! Which files of a project may go into the model's prompt, found by one walk: what the
//! walk leaves out (ignored, linked, always excluded folders, hidden entries other than the
//! project's own configuration), and what makes a walked file ineligible (its name, its
//! extension, the person's globs, its size).

use std::borrow::Cow;
use std::collections::HashSet;
use std::fs;
use std::path::{Path, PathBuf};
use std::sync::{Arc, LazyLock};

use globset::{GlobBuilder, GlobSet, GlobSetBuilder};

use super::{ContextError, ContextOptions, Priority, SkipReason, Stamp, file_name};

/// Directories never walked, even when no ignore file mentions them: dependencies, build output
/// and virtual environments would drown the real code.
#[rustfmt::skip]
const ALWAYS_EXCLUDED_DIRS: &[&str] = &[
    ".git", "node_modules", "target", "dist", "build", ".next", "out", "vendor", "__pycache__",
    ".venv", "venv", "coverage",
];

/// Generated dependency pins: large, machine-written, and useless to the model. Any `*.lock`
/// or `*.lockb` counts too.
#[rustfmt::skip]
const LOCK_FILES: &[&str] = &[
    "Cargo.lock", "package-lock.json", "npm-shrinkwrap.json", "pnpm-lock.yaml", "yarn.lock",
    "bun.lockb", "bun.lock", "deno.lock", "poetry.lock", "uv.lock", "Pipfile.lock", "pdm.lock",
    "Gemfile.lock", "composer.lock", "go.sum", "go.work.sum", "flake.lock", "mix.lock",
    "pubspec.lock", "Podfile.lock", "Package.resolved", "packages.lock.json", "gradle.lockfile",
    "Cartfile.resolved", "conan.lock", "paket.lock",
];

/// Source and text extensions (compared lower-cased). Anything else is assumed to be an asset,
/// a binary or data: an allow-list fails safe, a deny-list would leak every new binary format.
/// `.env`-like and key files are deliberately absent, and a name that looks secret is left out
/// whatever its extension (see [`crate::folder::looks_secret`]).
#[rustfmt::skip]
const SOURCE_EXTENSIONS: &[&str] = &[
    "rs", "toml", "md", "markdown", "mdx", "txt", "rst", "adoc", "js", "jsx", "ts", "tsx", "mjs",
    "cjs", "mts", "cts", "json", "jsonc", "json5", "css", "scss", "sass", "less", "html", "htm",
    "vue", "svelte", "astro", "py", "pyi", "go", "java", "kt", "kts", "scala", "groovy", "gradle",
    "c", "h", "cc", "cpp", "cxx", "hpp", "hh", "hxx", "m", "mm", "cs", "csproj", "fs", "fsx",
    "fsproj", "rb", "erb", "rake", "gemspec", "php", "swift", "sh", "bash", "zsh", "fish", "ps1",
    "bat", "cmd", "yaml", "yml", "sql", "graphql", "gql", "proto", "xml", "ini", "cfg", "conf",
    "properties", "lua", "pl", "pm", "r", "jl", "dart", "ex", "exs", "erl", "hrl", "hs", "elm",
    "clj", "cljs", "cljc", "edn", "ml", "mli", "nim", "zig", "tf", "hcl", "nix", "cmake", "mk",
    "tex", "bib", "prisma", "wgsl", "glsl", "hlsl", "vert", "frag", "sol", "wat", "s", "asm",
    "dockerfile", "just",
    // Languages less common but written by hand: Tcl (redis's tests), grammars (yacc, lex,
    // OCaml's), Lisps, hardware, Fortran, Cython, CUDA, configuration languages, schemas.
    "tcl", "y", "yy", "l", "ll", "mly", "mll", "el", "lisp", "scm", "rkt", "sv", "vhd", "vhdl",
    "f", "f90", "f95", "pas", "d", "cr", "purs", "res", "resi", "awk", "psm1", "psd1", "vb",
    "pyx", "pxd", "cu", "cuh", "metal", "ino", "gd", "odin", "vala", "coffee", "raku", "sml",
    "bzl", "bazel", "star", "cue", "dhall", "jsonnet", "libsonnet", "rego", "kdl", "ron", "pest",
    "thrift", "capnp", "fbs", "smithy", "vim",
    // Build files: autotools and their templates (`Makefile.am`, `configure.ac`,
    // `config.h.in`), GN, Cabal, MSBuild.
    "am", "ac", "m4", "in", "gn", "gni", "sbt", "cabal", "opam", "props", "targets", "vcxproj",
    // C's X-macro tables, and test scripts in their own formats (jq's, SQLite's and LLVM's
    // `.test` files). Not `.inc`: PHP's includes conventionally hold database passwords.
    "def", "test",
    // Templates and views.
    "j2", "jinja", "jinja2", "tmpl", "tpl", "mustache", "hbs", "handlebars", "ejs", "twig",
    "liquid", "njk", "pug", "haml", "slim", "eex", "heex", "cshtml", "razor", "xaml", "jsp",
    "templ",
    // Documents, patches, and tests' expected outputs (Go's `testdata/*.golden`, Jest's and
    // insta's snapshots) that a change of behaviour rewrites.
    "org", "pod", "texi", "diff", "patch", "golden", "snap",
];

/// Hidden folders that hold the project's own configuration (CI workflows, hooks, dev
/// containers, docs and component-explorer set-ups): walked like any other folder. Every other
/// hidden folder stays out: tool state and caches are not the project, and some (`.cargo`,
/// `.docker`, `.aws`, `.ssh`) hold credentials.
#[rustfmt::skip]
const CONFIG_FOLDERS: &[&str] = &[
    ".github", ".gitlab", ".gitea", ".forgejo", ".woodpecker", ".circleci", ".buildkite",
    ".devcontainer", ".husky", ".changeset", ".storybook", ".vitepress",
];

/// Hidden files that are the project's own configuration, matched exactly. An allow-list: a
/// hidden file not named here (`.env*`, `.npmrc`, `.pypirc`, `.netrc`, …) may hold a secret
/// and is never sent.
#[rustfmt::skip]
const CONFIG_FILES: &[&str] = &[
    ".gitignore", ".gitattributes", ".gitmodules", ".editorconfig", ".dockerignore",
    ".gitlab-ci.yml", ".travis.yml", ".drone.yml", ".woodpecker.yml", ".cirrus.yml",
    ".pre-commit-config.yaml", ".pre-commit-hooks.yaml",
    ".readthedocs.yaml", ".readthedocs.yml", ".nvmrc", ".node-version", ".python-version",
    ".ruby-version", ".tool-versions", ".rustfmt.toml", ".clippy.toml", ".clang-format",
    ".clang-tidy", ".flake8", ".pylintrc", ".coveragerc", ".browserslistrc", ".swcrc",
    ".prettierignore", ".eslintignore", ".npmignore", ".gitpod.yml",
];

/// Families of hidden linter and tool settings, any extension (`.eslintrc.cjs`,
/// `.prettierrc.json`, `.golangci.yml`).
#[rustfmt::skip]
const CONFIG_PREFIXES: &[&str] = &[
    ".eslintrc", ".prettierrc", ".stylelintrc", ".babelrc", ".mocharc", ".lintstagedrc",
    ".commitlintrc", ".markdownlint", ".yamllint", ".golangci", ".releaserc", ".nycrc", ".c8rc",
];

/// Whether a hidden entry is the project's own configuration (see [`CONFIG_FOLDERS`] and
/// [`CONFIG_FILES`]); a name that is not hidden is not asked.
fn is_project_config(name: &str, is_dir: bool) -> bool {
    match is_dir {
        true => CONFIG_FOLDERS.contains(&name),
        false => {
            CONFIG_FILES.contains(&name) || CONFIG_PREFIXES.iter().any(|p| name.starts_with(p))
        }
    }
}

/// Whether a folder of this name is never walked, whatever the ignore files say: an always
/// excluded one, or a hidden one other than the project's configuration (the change journal
/// does not watch them).
pub fn never_walked_folder(name: &str) -> bool {
    match name.starts_with('.') {
        true => !is_project_config(name, true),
        false => ALWAYS_EXCLUDED_DIRS.contains(&name),
    }
}

/// Well-known files without a (source) extension, matched exactly.
#[rustfmt::skip]
pub(super) const SOURCE_NAMES: &[&str] = &[
    "Makefile", "makefile", "GNUmakefile", "Dockerfile", "Containerfile", "Jenkinsfile",
    "Vagrantfile", "Gemfile", "Rakefile", "Procfile", "Brewfile", "Podfile", "Pipfile", "Justfile",
    "justfile", "README", "LICENSE", "LICENCE", "COPYING", "NOTICE", "AUTHORS", "CONTRIBUTORS",
    "CHANGELOG", "CODEOWNERS", "BUILD", "WORKSPACE", "go.mod", "go.work", "meson.build",
    "meson.options", "SConstruct", "SConscript", "Snakefile", "Earthfile", "Tiltfile",
];

/// Budgets at least this large read nearly every file: sizes are asked on the walker's threads.
const STAT_ALL_BUDGET: usize = 1_000_000;

/// The files of a project eligible for the prompt, found by one walk (`.gitignore` and
/// friends honoured, links, the always excluded folders and hidden entries other than the
/// project's configuration left out), sorted by
/// path, with the files that are not eligible and why. Packed by
/// [`super::ContextCache::pack`], as many times as needed.
#[derive(Debug, Clone)]
pub struct Walk {
    pub(super) root: PathBuf,
    include: Vec<String>,
    exclude: Vec<String>,
    max_file_bytes: u64,
    pub(super) candidates: Vec<Candidate>,
    pub(super) skipped: Vec<(String, SkipReason)>,
}

impl Walk {
    /// Walks `root` with `options`' globs and size limit. Sizes are asked (`stat`) on the
    /// walker's threads only when the budget is so large that nearly everything will be read;
    /// otherwise packing asks them one file at a time, and only while something may still fit.
    pub fn new(root: &Path, options: &ContextOptions) -> Result<Walk, ContextError> {
        Walk::with_sizes(root, options, options.budget_tokens >= STAT_ALL_BUDGET)
    }

    /// [`Walk::new`] with every file's size and stamp asked on the walker's threads (for the
    /// code index, which compares every stamp with the one it stored).
    pub fn stamped(root: &Path, options: &ContextOptions) -> Result<Walk, ContextError> {
        Walk::with_sizes(root, options, true)
    }

    fn with_sizes(
        root: &Path,
        options: &ContextOptions,
        sized: bool,
    ) -> Result<Walk, ContextError> {
        let include = glob_set("include", &options.include)?;
        let exclude = glob_set("exclude", &options.exclude)?;
        let root = open_root(root)?;
        let filters = (&include, &exclude);
        let walked = crate::folder::walk::parallel(&walker(&root), |item| {
            let entry = match item {
                Ok(entry) => entry,
                Err(err) => {
                    let rel = io_error_path(&err).and_then(|p| relative(&root, p))?;
                    return Some(Err((rel.to_string(), SkipReason::Unreadable)));
                }
            };
            // Directories are walked into; symlinks are never followed (one to a file inside
            // is sent under its real name, one to outside must not leak); the rest (named
            // pipes, sockets, devices) is not text, and is never opened.
            if !entry.file_type().is_some_and(|t| t.is_file()) {
                return None;
            }
            let Some(rel) = relative(&root, entry.path()) else {
                let lossy = entry.path().strip_prefix(&root).unwrap_or(entry.path());
                let shown = lossy.to_string_lossy().escape_debug().to_string();
                return Some(Err((shown, SkipReason::Unreadable)));
            };
            Some(candidate(rel, &entry, filters, sized))
        });
        let (mut candidates, mut skipped) = (Vec::new(), Vec::new());
        for found in walked {
            match found {
                Ok(found) => candidates.push(found),
                Err(skip) => skipped.push(skip),
            }
        }
        candidates.sort_unstable_by(|a, b| a.rel.cmp(&b.rel));
        skipped.sort_unstable_by(|a, b| a.0.cmp(&b.0));
        Ok(Walk {
            root,
            include: options.include.clone(),
            exclude: options.exclude.clone(),
            max_file_bytes: options.max_file_bytes,
            candidates,
            skipped,
        })
    }

    /// The eligible files, `/`-separated relative paths in order.
    pub fn paths(&self) -> impl Iterator<Item = &str> {
        self.candidates.iter().map(|c| &*c.rel)
    }

    /// The eligible files with their stamps when the walk asked them (see [`Walk::stamped`]).
    /// Every walk names the same files, whether it asked sizes or not: the code index keeps a
    /// digest of them (and the too large ones as not indexed).
    pub fn stamped_paths(&self) -> impl Iterator<Item = (&str, Option<crate::folder::FileStamp>)> {
        (self.candidates.iter()).map(|c| (&*c.rel, c.seen.and_then(|s| s.stamp)))
    }

    /// Whether `options` choose files as this walk did (same globs, same size limit).
    pub(super) fn walked_for(&self, options: &ContextOptions) -> bool {
        self.include == options.include
            && self.exclude == options.exclude
            && self.max_file_bytes == options.max_file_bytes
    }

    /// The candidates in packing order: the `priority` files first (in their order, each
    /// with its entry; a path given twice keeps its first), then the rest by path.
    pub(super) fn in_order<'a>(
        &'a self,
        priority: &'a [Priority],
    ) -> impl Iterator<Item = (&'a Candidate, Option<&'a Priority>)> + 'a {
        let mut first = Vec::new();
        let mut chosen = vec![false; self.candidates.len()];
        for wanted in priority {
            let Ok(path) = crate::folder::normalize_relative(&wanted.path) else {
                continue;
            };
            let at = self.candidates.binary_search_by(|c| (*c.rel).cmp(&path));
            if let Ok(i) = at
                && !std::mem::replace(&mut chosen[i], true)
            {
                first.push((i, Some(wanted)));
            }
        }
        let rest = (0..self.candidates.len())
            .filter(move |&i| !chosen[i])
            .map(|i| (i, None));
        first
            .into_iter()
            .chain(rest)
            .map(move |(i, why)| (&self.candidates[i], why))
    }
}

/// An eligible-by-name file of the walk, with what `stat` said of it if it was asked. Its
/// path is shared with what packing lists (a big project's thousands of names, once).
#[derive(Debug, Clone)]
pub(super) struct Candidate {
    pub(super) rel: Arc<str>,
    /// Its size and stamp, when asked on the walker's threads.
    pub(super) seen: Option<Seen>,
}

/// What `stat` says of a file.
#[derive(Debug, Clone, Copy)]
pub(super) struct Seen {
    pub(super) bytes: u64,
    /// `None` without an mtime: versions cannot be told apart, so it is read every time.
    pub(super) stamp: Option<Stamp>,
}

impl Seen {
    fn of(meta: &fs::Metadata) -> Self {
        let stamp = meta
            .modified()
            .ok()
            .map(|_| crate::folder::FileStamp::of(meta));
        Seen {
            bytes: meta.len(),
            stamp,
        }
    }
}

impl Candidate {
    /// The file on disk, under the walk's `root`.
    pub(super) fn abs(&self, root: &Path) -> PathBuf {
        root.join(&*self.rel)
    }

    /// Asks the file's size and stamp; too large (or unreadable) is a skip reason.
    pub(super) fn stat(&self, root: &Path, max_bytes: u64) -> Result<Seen, SkipReason> {
        let meta = fs::symlink_metadata(self.abs(root)).map_err(|_| SkipReason::Unreadable)?;
        if meta.len() > max_bytes {
            return Err(SkipReason::TooLarge);
        }
        Ok(Seen::of(&meta))
    }
}

/// The checks a walked file passes: its name, or for a name without an extension its first
/// two bytes (and, `sized`, its stamp is asked: the size is for packing to weigh).
fn candidate(
    rel: &str,
    entry: &ignore::DirEntry,
    (include, exclude): (&GlobSet, &GlobSet),
    sized: bool,
) -> Result<Candidate, (String, SkipReason)> {
    match check_name(rel, include, exclude) {
        Ok(()) => {}
        Err(SkipReason::NotSourceExtension) if is_script(rel, entry.path()) => {}
        Err(reason) => return Err((rel.to_string(), reason)),
    }
    let seen = match sized {
        false => None,
        true => {
            let Ok(stamp) = crate::folder::platform::file_stamp(entry.path()) else {
                return Err((rel.to_string(), SkipReason::Unreadable));
            };
            // One too large stays a candidate: packing decides, as for a walk without sizes
            // (the same files are packed either way).
            Some(Seen {
                bytes: stamp.len,
                stamp: Some(stamp),
            })
        }
    };
    Ok(Candidate {
        rel: Arc::from(rel),
        seen,
    })
}

/// A file without an extension that starts with `#!`: a script run by name (`bin/deploy`,
/// `script/bootstrap`, jq's `tests/shtest`), hand-written source like any other. Read
/// through [`crate::folder::regular::open_regular`]: a pipe put there is never waited on.
fn is_script(rel: &str, path: &Path) -> bool {
    use std::io::Read;
    if file_name(rel).contains('.') {
        return false;
    }
    let Ok(mut opened) = crate::folder::regular::open_regular(path) else {
        return false;
    };
    let mut head = [0u8; 2];
    opened.file.read_exact(&mut head).is_ok() && head == *b"#!"
}

fn open_root(root: &Path) -> Result<PathBuf, ContextError> {
    let error = |message: String| ContextError::Root {
        path: root.display().to_string(),
        message,
    };
    let canonical = crate::folder::paths::root_path(root).map_err(|e| error(e.to_string()))?;
    // Reading it once up front turns "cannot list the root" into an error, not an empty result.
    fs::read_dir(&canonical).map_err(|e| error(e.to_string()))?;
    Ok(canonical)
}

pub(in crate::folder) fn walker(root: &Path) -> ignore::WalkBuilder {
    let mut builder = ignore::WalkBuilder::new(root);
    builder
        .standard_filters(true)
        // Hidden entries are decided below: the project's configuration is walked.
        .hidden(false)
        // A plain folder (not yet a git repository) still has its .gitignore honoured.
        .require_git(false)
        .follow_links(false)
        .filter_entry(|entry| {
            if entry.depth() == 0 {
                return true;
            }
            let is_dir = entry.file_type().is_some_and(|t| t.is_dir());
            let name = entry.file_name();
            match name.to_str() {
                Some(name) if is_dir => !never_walked_folder(name),
                Some(name) if name.starts_with('.') => is_project_config(name, false),
                Some(_) => true,
                // Not UTF-8: a hidden one stays out, another is walked (and reported as
                // unreadable: it cannot be named cleanly in the prompt).
                None => !name.as_encoded_bytes().starts_with(b"."),
            }
        });
    builder
}

/// The path of an I/O failure while walking (an unreadable directory), if it names one.
fn io_error_path(err: &ignore::Error) -> Option<&Path> {
    match err {
        ignore::Error::WithPath { path, err } if matches!(**err, ignore::Error::Io(_)) => {
            Some(path)
        }
        ignore::Error::WithPath { err, .. }
        | ignore::Error::WithDepth { err, .. }
        | ignore::Error::WithLineNumber { err, .. } => io_error_path(err),
        _ => None,
    }
}

/// The `/`-separated relative name, or `None` when it cannot be written cleanly (not UTF-8, or
/// with control characters that could break the prompt's layout).
fn relative<'a>(root: &Path, abs: &'a Path) -> Option<&'a str> {
    // The walker joins plain names onto the root, so on Unix the tail is already `/`-separated,
    // and the root is the start of every path as text (cut as text: path components are slow
    // to compare 15,000 times).
    let as_text = root.to_str().zip(abs.to_str()).and_then(|(root, abs)| {
        let tail = abs.strip_prefix(root)?;
        match root.ends_with(std::path::MAIN_SEPARATOR) {
            true => Some(tail),
            false => tail.strip_prefix(std::path::MAIN_SEPARATOR),
        }
    });
    let rel = match as_text {
        Some(rel) => rel,
        None => abs.strip_prefix(root).ok()?.to_str()?,
    };
    (!rel.is_empty() && !rel.chars().any(char::is_control)).then_some(rel)
}

fn glob_set(list: &'static str, globs: &[String]) -> Result<GlobSet, ContextError> {
    let invalid = |glob: &str, err: globset::Error| ContextError::InvalidGlob {
        list,
        glob: glob.to_string(),
        message: err.kind().to_string(),
    };
    let mut builder = GlobSetBuilder::new();
    for glob in globs {
        // Globs are always relative to the root, so a leading `/` or `./` only anchors there.
        let pattern = glob
            .strip_prefix("./")
            .or(glob.strip_prefix('/'))
            .unwrap_or(glob);
        let compiled = GlobBuilder::new(pattern)
            .literal_separator(true)
            .build()
            .map_err(|e| invalid(glob, e))?;
        builder.add(compiled);
    }
    builder.build().map_err(|e| invalid(&globs.join(", "), e))
}

/// The checks that need only the name, cheapest first. User globs win over the built-in
/// rules so that the reason shown is the one the user can act on.
fn check_name(rel: &str, include: &GlobSet, exclude: &GlobSet) -> Result<(), SkipReason> {
    // Checked once per file of the project: no glob work without globs, sets not lists.
    static LOCKS: LazyLock<HashSet<&str>> = LazyLock::new(|| LOCK_FILES.iter().copied().collect());
    static NAMES: LazyLock<HashSet<&str>> =
        LazyLock::new(|| SOURCE_NAMES.iter().copied().collect());
    static EXTENSIONS: LazyLock<HashSet<&str>> =
        LazyLock::new(|| SOURCE_EXTENSIONS.iter().copied().collect());
    if !exclude.is_empty() && exclude.is_match(rel) {
        return Err(SkipReason::ExcludedByGlob);
    }
    if !include.is_empty() && !include.is_match(rel) {
        return Err(SkipReason::NotIncludedByGlob);
    }
    let name = file_name(rel);
    let extension = match name.rsplit_once('.') {
        Some((_, ext)) if ext.bytes().any(|b| b.is_ascii_uppercase()) => {
            Cow::Owned(ext.to_ascii_lowercase())
        }
        Some((_, ext)) => Cow::Borrowed(ext),
        None => Cow::Borrowed(""),
    };
    if LOCKS.contains(name) || extension == "lock" || extension == "lockb" {
        return Err(SkipReason::LockFile);
    }
    if crate::folder::looks_secret(name) {
        return Err(SkipReason::LooksSecret);
    }
    let known_name = NAMES.contains(name)
        || name.starts_with("Dockerfile.")
        || name.starts_with("Containerfile.")
        || (name.starts_with('.') && is_project_config(name, false));
    if known_name || EXTENSIONS.contains(extension.as_ref()) {
        Ok(())
    } else {
        Err(SkipReason::NotSourceExtension)
    }
}
