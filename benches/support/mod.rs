//! What the benchmarks share: the synthetic big project.

use std::path::Path;

/// 15,000 source files in 150 folders with sizes spread like real code (a few hundred bytes
/// to ~40 KB), 500 files in a `.gitignore`d `generated/` folder and a lock file, under `root`.
/// Deterministic: every run (and every benchmark) measures the same project.
pub fn synthetic(root: &Path) {
    // A deterministic spread of sizes: most files small, some large (as in real projects).
    let mut seed: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut next = || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    };
    for d in 0..150 {
        let dir = root.join(format!("src/module_{d:03}"));
        std::fs::create_dir_all(&dir).expect("mkdir");
        for f in 0..100 {
            let lines = 10 + (next() % 100) * (next() % 12);
            let text: String = (0..lines)
                .map(|i| format!("    let value_{i} = compute({i}, \"text\"); // {d}/{f}\n"))
                .collect();
            std::fs::write(dir.join(format!("file_{f:03}.rs")), text).expect("write");
        }
    }
    std::fs::create_dir_all(root.join("generated")).expect("mkdir");
    for i in 0..500 {
        std::fs::write(root.join(format!("generated/out_{i}.rs")), "x").expect("write");
    }
    std::fs::write(root.join(".gitignore"), "generated/\n").expect("write");
    std::fs::write(root.join("Cargo.lock"), "# lock\n".repeat(5000)).expect("write");
}
