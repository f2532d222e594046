//! What the agent's container costs, as the person waits for it, against references in the
//! same run:
//! 1. starting a command (`true`, the whole `run_shell` call): in the container, against the
//!    same call confined in place (Landlock, seccomp, limits: the sandbox without
//!    namespaces) and unconfined;
//! 2. real work: an offline `cargo build` of a small crate from clean, and `npm test` of a
//!    small package, in the container against the same command unconfined.
//!
//! Goals: the container's start ≤ 1.3× the sandbox in place; the work ≤ 1.1× outside.
//!
//! Run: `cargo bench --bench container`

use std::path::Path;
use std::time::{Duration, Instant};

use tandem_core::process::{Sandbox, ShellRequest, run_shell};
use tandem_core::sandbox::Confinement;

fn median(mut times: Vec<Duration>) -> Duration {
    times.sort();
    times[times.len() / 2]
}

fn crate_project(root: &Path) {
    std::fs::create_dir_all(root.join("src")).expect("mkdir");
    std::fs::write(
        root.join("Cargo.toml"),
        "[package]\nname = \"bench_crate\"\nversion = \"0.1.0\"\nedition = \"2021\"\n",
    )
    .expect("write");
    let mut lib = String::new();
    for m in 0..20 {
        lib.push_str(&format!("pub mod m{m} {{\n"));
        for f in 0..40 {
            lib.push_str(&format!(
                "    pub fn f{f}(x: u64) -> u64 {{ x.wrapping_mul({f}).rotate_left({m}) ^ {f} }}\n"
            ));
        }
        lib.push_str("}\n");
    }
    std::fs::write(root.join("src/lib.rs"), lib).expect("write");
    std::fs::write(
        root.join("src/main.rs"),
        "fn main() { println!(\"{}\", bench_crate::m1::f2(3)); }\n",
    )
    .expect("write");
}

fn npm_project(root: &Path) {
    std::fs::create_dir_all(root.join("test")).expect("mkdir");
    std::fs::write(
        root.join("package.json"),
        "{\"name\": \"bench-pkg\", \"version\": \"1.0.0\", \"scripts\": {\"test\": \"node test/all.js\"}}\n",
    )
    .expect("write");
    let mut tests = String::from("const assert = require('assert');\n");
    for i in 0..200 {
        tests.push_str(&format!(
            "assert.strictEqual([{i}].map(x => x * 2)[0], {});\n",
            i * 2
        ));
    }
    tests.push_str("console.log('ok');\n");
    std::fs::write(root.join("test/all.js"), tests).expect("write");
}

fn main() {
    if std::env::args().any(|a| a == "--list") {
        return;
    }
    let runtime = tokio::runtime::Runtime::new().expect("runtime");
    let dir = tempfile::tempdir().expect("dir");
    let root = dir.path().canonicalize().expect("root");
    std::fs::create_dir_all(root.join(".git")).expect(".git");
    let temp = tempfile::tempdir().expect("temp");
    let contained = Confinement::new(&root, temp.path());
    let in_place = Confinement {
        in_place: true,
        ..contained.clone()
    };
    let run = |command: &str, sandbox: Sandbox, cwd: &Path| {
        let start = Instant::now();
        let outcome = runtime
            .block_on(run_shell(
                ShellRequest {
                    sandbox,
                    timeout: Duration::from_secs(600),
                    ..ShellRequest::new(command, cwd)
                },
                Default::default(),
            ))
            .expect("run");
        assert_eq!(outcome.exit_code, Some(0), "{command}: {outcome:?}");
        (start.elapsed(), outcome)
    };
    let (_, first) = run("true", Sandbox::Confined(contained.clone()), &root);
    let in_container =
        matches!(&first.sandbox, tandem_core::process::SandboxStatus::Enforced(p) if p.container);
    if !in_container {
        println!("no container on this machine: {:?}", first.sandbox);
    }

    const STARTS: usize = 41;
    let (mut c, mut p, mut u) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..STARTS {
        c.push(run("true", Sandbox::Confined(contained.clone()), &root).0);
        p.push(run("true", Sandbox::Confined(in_place.clone()), &root).0);
        u.push(run("true", Sandbox::None, &root).0);
    }
    let (c, p, u) = (median(c), median(p), median(u));
    println!("starting `true` (the whole run_shell call), median of {STARTS}:");
    println!("  unconfined                         {u:>9.2?}");
    println!("  confined in place (reference)      {p:>9.2?}");
    println!(
        "  in the container                   {c:>9.2?}  ({:.2}x in place; goal ≤ 1.3x)",
        c.as_secs_f64() / p.as_secs_f64()
    );

    let work = |name: &str, make: fn(&Path), command: &str, clean: &str, runs: usize| {
        let project = root.join(name);
        make(&project);
        let confined = Confinement::new(&project, temp.path());
        // Warm the caches both sides read (the toolchain's files, npm's own start-up).
        run(command, Sandbox::None, &project);
        let (mut inside, mut outside) = (Vec::new(), Vec::new());
        for _ in 0..runs {
            run(clean, Sandbox::None, &project);
            inside.push(run(command, Sandbox::Confined(confined.clone()), &project).0);
            run(clean, Sandbox::None, &project);
            outside.push(run(command, Sandbox::None, &project).0);
        }
        let (inside, outside) = (median(inside), median(outside));
        println!("`{command}`, median of {runs}:");
        println!("  outside (reference)                {outside:>9.2?}");
        println!(
            "  in the container                   {inside:>9.2?}  ({:.2}x; goal ≤ 1.1x)",
            inside.as_secs_f64() / outside.as_secs_f64()
        );
    };
    let has = |program: &str| {
        std::process::Command::new(program)
            .arg("--version")
            .output()
            .is_ok_and(|o| o.status.success())
    };
    if has("cargo") {
        work(
            "crate",
            crate_project,
            "cargo build --offline -q",
            "rm -rf target",
            7,
        );
    }
    if has("npm") {
        work("package", npm_project, "npm test --silent", "true", 9);
    }
}
