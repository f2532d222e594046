//! Where the MCP test server's binary is (built on demand), for the tests that start it.
#![allow(dead_code, clippy::unwrap_used)]

use std::path::PathBuf;
use std::sync::OnceLock;

/// The test server's binary. `cargo test --test mcp` builds only this test, not the examples,
/// so the example is built here once (a no-op when it is fresh), with the test's own profile.
pub fn server_binary() -> PathBuf {
    static BUILT: OnceLock<PathBuf> = OnceLock::new();
    BUILT
        .get_or_init(|| {
            // <target>/<profile>/deps/mcp-<hash> → <target>/<profile>/examples/mcp_test_server
            let exe = std::env::current_exe().unwrap();
            let profile_dir = exe.parent().unwrap().parent().unwrap();
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
            let binary = profile_dir.join("examples").join("mcp_test_server");
            assert!(binary.is_file(), "{} is missing", binary.display());
            binary
        })
        .clone()
}
