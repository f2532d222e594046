//! Every non-ASCII character the UI source writes must exist in the bundled fonts: a missing
//! glyph shows as a box on screen (and panics egui_kittest).

#![allow(clippy::unwrap_used)] // tests state their expectations with unwrap

use std::collections::BTreeSet;

#[test]
fn every_ui_glyph_is_in_the_fonts() {
    let ctx = egui::Context::default();
    let mut output = ctx.run_ui(egui::RawInput::default(), |_| {});
    output.textures_delta.clear();
    let mut used = BTreeSet::new();
    for path in rust_files(std::path::Path::new(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/crates/ui/src"
    ))) {
        // Test files may hold any text.
        let name = path.to_string_lossy();
        if name.ends_with("_tests.rs") || name.ends_with("/tests.rs") {
            continue;
        }
        let text = std::fs::read_to_string(&path).unwrap();
        // Test modules may hold any text.
        let text = text.split("#[cfg(test)]").next().unwrap_or("");
        for line in text.lines() {
            let code = line.trim_start();
            if code.starts_with("//") {
                continue;
            }
            used.extend(
                line.chars()
                    .filter(|c| !c.is_ascii())
                    .map(|c| (c, path.clone())),
            );
        }
    }
    let missing: Vec<String> = used
        .iter()
        .filter(|(c, _)| {
            ctx.fonts_mut(|fonts| !fonts.has_glyph(&egui::FontId::proportional(14.0), *c))
        })
        .map(|(c, path)| format!("{c:?} (U+{:04X}) in {}", *c as u32, path.display()))
        .collect();
    assert!(
        missing.is_empty(),
        "glyphs missing from the fonts:\n{}",
        missing.join("\n")
    );
}

/// Every `.rs` file below `dir`, child modules' folders included.
fn rust_files(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            out.extend(rust_files(&path));
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
    out
}
