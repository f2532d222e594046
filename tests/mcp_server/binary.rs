//! Where the MCP test server's binary is (built on demand), for the tests that start it.
#![allow(dead_code, clippy::unwrap_used)]

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

/// The test server's binary. A whole `cargo test` builds it with the tests (with the features
/// the whole workspace's test build unifies); `cargo test --test mcp` builds only this test, so
/// when the example is missing or older than its sources it is built here once, with the
/// test's own profile. (Building it again here when it is fresh is not free: `cargo build`
/// of one package resolves other features than `cargo test` of the workspace did, and so
/// compiles rmcp, tokio and the rest a second time.)
pub fn server_binary() -> PathBuf {
    static BUILT: OnceLock<PathBuf> = OnceLock::new();
    BUILT
        .get_or_init(|| {
            // <target>/<profile>/deps/mcp-<hash> → <target>/<profile>/examples/mcp_test_server
            let exe = std::env::current_exe().unwrap();
            let profile_dir = exe.parent().unwrap().parent().unwrap();
            let binary = profile_dir.join("examples").join("mcp_test_server");
            if is_fresh(&binary) {
                return binary;
            }
            let cargo = std::env::var_os("CARGO").unwrap_or_else(|| env!("CARGO").into());
            let mut build = std::process::Command::new(cargo);
            build.args(["build", "--quiet", "--example", "mcp_test_server"]);
            build
                .arg("--manifest-path")
                .arg(concat!(env!("CARGO_MANIFEST_DIR"), "/Cargo.toml"));
            if profile_dir
                .file_name()
                .is_some_and(|name| name == "release")
            {
                build.arg("--release");
            }
            let status = build.status().unwrap();
            assert!(
                status.success(),
                "building the example mcp_test_server failed"
            );
            assert!(binary.is_file(), "{} is missing", binary.display());
            binary
        })
        .clone()
}

/// Whether `binary` exists and is newer than every source it is built from (this folder and the
/// lock file that fixes its dependencies).
fn is_fresh(binary: &Path) -> bool {
    let modified = |path: &Path| std::fs::metadata(path).and_then(|m| m.modified()).ok();
    let Some(built) = modified(binary) else {
        return false;
    };
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let sources = std::fs::read_dir(root.join("tests/mcp_server"))
        .into_iter()
        .flatten()
        .flatten()
        .map(|entry| entry.path())
        .chain([root.join("Cargo.lock"), root.join("Cargo.toml")]);
    sources
        .map(|source| modified(&source))
        .all(|source| source.is_some_and(|at| at <= built))
}
