//! A check command suggested for a project that has none, from the files at its top: the
//! usual fast check of its toolchain, one that builds nothing and changes nothing.

use std::path::Path;

/// Python's: byte-compiles every file, so a syntax error anywhere fails it.
const PYTHON: &str = "python3 -m compileall -q .";

/// The file that names a toolchain, and its check, first match wins (a Rust project with a
/// TypeScript front-end is checked as Rust). `--no-install`: without a local TypeScript,
/// `npx tsc` would install the unrelated `tsc` package, unasked when run without a terminal.
const BY_FILE: &[(&str, &str)] = &[
    ("Cargo.toml", "cargo check"),
    ("tsconfig.json", "npx --no-install tsc --noEmit"),
    ("go.mod", "go vet ./..."),
    ("pyproject.toml", PYTHON),
];

/// The check command suggested for the project at `root`, or `None` when no toolchain is
/// recognised (or the folder cannot be read). Reads only the folder's listing.
pub fn suggest_check_command(root: &Path) -> Option<String> {
    let names: Vec<String> = std::fs::read_dir(root)
        .ok()?
        .flatten()
        .filter(|entry| entry.path().is_file())
        .filter_map(|entry| entry.file_name().into_string().ok())
        .collect();
    suggest_for_files(names.iter().map(String::as_str)).map(str::to_string)
}

/// [`suggest_check_command`] for these top-level file names: `Cargo.toml` → `cargo check`,
/// `tsconfig.json` → `npx --no-install tsc --noEmit`, `go.mod` → `go vet ./...`,
/// `pyproject.toml` or any `*.py` → `python3 -m compileall -q .`.
pub fn suggest_for_files<'a>(names: impl IntoIterator<Item = &'a str>) -> Option<&'static str> {
    let names: Vec<&str> = names.into_iter().collect();
    let by_file = BY_FILE
        .iter()
        .find(|(file, _)| names.contains(file))
        .map(|(_, command)| *command);
    by_file.or_else(|| {
        names
            .iter()
            .any(|name| Path::new(name).extension().is_some_and(|e| e == "py"))
            .then_some(PYTHON)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_toolchain_gets_its_check() {
        let cases: &[(&[&str], Option<&str>)] = &[
            (&["Cargo.toml", "README.md"], Some("cargo check")),
            (
                &["tsconfig.json", "package.json"],
                Some("npx --no-install tsc --noEmit"),
            ),
            (&["go.mod", "main.go"], Some("go vet ./...")),
            (&["pyproject.toml"], Some("python3 -m compileall -q .")),
            (&["tool.py"], Some("python3 -m compileall -q .")),
            (&["README.md", "package.json", "py", ".py.txt"], None),
            (&[], None),
        ];
        for (names, expected) in cases {
            assert_eq!(
                suggest_for_files(names.iter().copied()),
                *expected,
                "{names:?}"
            );
        }
    }

    #[test]
    fn the_first_toolchain_in_order_wins() {
        let mixed = ["setup.py", "go.mod", "tsconfig.json", "Cargo.toml"];
        assert_eq!(suggest_for_files(mixed), Some("cargo check"));
        assert_eq!(suggest_for_files(["a.py", "go.mod"]), Some("go vet ./..."));
    }

    #[test]
    fn the_folder_is_read_for_files_only() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        assert_eq!(suggest_check_command(root), None);
        // A folder named like a marker is not one.
        std::fs::create_dir(root.join("Cargo.toml")).unwrap();
        std::fs::create_dir_all(root.join("src/deep.py")).unwrap();
        assert_eq!(suggest_check_command(root), None);
        std::fs::write(root.join("tool.py"), "print(1)\n").unwrap();
        assert_eq!(
            suggest_check_command(root).as_deref(),
            Some("python3 -m compileall -q .")
        );
        std::fs::write(root.join("go.mod"), "module x\n").unwrap();
        assert_eq!(suggest_check_command(root).as_deref(), Some("go vet ./..."));
        assert_eq!(suggest_check_command(&root.join("missing")), None);
    }
}
