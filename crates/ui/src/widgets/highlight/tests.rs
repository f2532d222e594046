//! Tests for `highlight`.
use super::*;

fn rust_file(lines: usize) -> String {
    (0..lines)
        .map(|i| format!("fn f{i}() -> u32 {{ /* n */ {i} }}\n"))
        .collect()
}

fn cache() -> HighlightCache {
    HighlightCache::with_highlighter(Highlighter::new())
}

#[test]
fn same_revision_does_no_work() {
    let mut cache = cache();
    let text = rust_file(300);
    cache.sync("a.rs", 1, &text, true);
    assert!(cache.advance("a.rs", usize::MAX, None));
    let first = cache.stats().lines_highlighted;
    assert_eq!(first, 301);
    cache.sync("a.rs", 1, &text, true);
    assert!(cache.advance("a.rs", usize::MAX, None));
    assert_eq!(cache.stats().lines_highlighted, first);
    let base = TextFormat::simple(FontId::monospace(14.0), Color32::WHITE);
    let job = cache.line_job("a.rs", 5, &base, None);
    assert_eq!(job.text, "fn f5() -> u32 { /* n */ 5 }");
    assert!(job.sections.len() > 3, "coloured: {:?}", job.sections.len());
}

#[test]
fn an_edit_rehighlights_from_the_checkpoint_before_it() {
    let mut cache = cache();
    let text = rust_file(12_000);
    cache.sync("big.rs", 1, &text, true);
    cache.advance("big.rs", usize::MAX, None);
    let before = cache.stats().lines_highlighted;
    let line = cache.line_range("big.rs", 10_000).unwrap();
    let mut edited = text.clone();
    edited.insert_str(line.start + 3, "oo");
    cache.sync("big.rs", 2, &edited, true);
    assert!(cache.advance("big.rs", usize::MAX, None));
    let stats = cache.stats();
    assert_eq!(
        stats.last_start,
        Some(10_000 / CHECKPOINT_EVERY * CHECKPOINT_EVERY)
    );
    let redone = stats.lines_highlighted - before;
    assert!(
        redone <= 2 * CHECKPOINT_EVERY as u64,
        "re-highlighted {redone} lines"
    );
    let base = TextFormat::simple(FontId::monospace(14.0), Color32::WHITE);
    assert_eq!(
        cache.line_job("big.rs", 10_000, &base, None).text,
        "fn oof10000() -> u32 { /* n */ 10000 }"
    );
    assert_eq!(
        cache.line_job("big.rs", 11_999, &base, None).text,
        "fn f11999() -> u32 { /* n */ 11999 }"
    );

    // Opening a block comment changes every later line's state: all of them are redone
    // (lazily, only as far as asked).
    let mut commented = edited.clone();
    commented.insert_str(line.start, "/*");
    cache.sync("big.rs", 3, &commented, true);
    let before = cache.stats().lines_highlighted;
    assert!(cache.advance("big.rs", 10_500, None));
    assert!(cache.stats().lines_highlighted - before <= 500 + CHECKPOINT_EVERY as u64);
    let comment = cache.line_job("big.rs", 10_400, &base, None);
    let colors: std::collections::HashSet<_> =
        comment.sections.iter().map(|s| s.format.color).collect();
    assert_eq!(colors.len(), 1, "a comment is one colour");
}

#[test]
fn long_lines_and_unknown_files_are_plain() {
    let mut cache = cache();
    let text = format!(
        "let a = 1;\nlet s = \"{}\";\nlet b = 2;\n",
        "x".repeat(3_000)
    );
    cache.sync("m.rs", 1, &text, false);
    cache.advance("m.rs", usize::MAX, None);
    let base = TextFormat::simple(FontId::monospace(14.0), Color32::WHITE);
    assert_eq!(cache.line_job("m.rs", 1, &base, None).sections.len(), 1);
    assert!(cache.line_job("m.rs", 2, &base, None).sections.len() > 1);
    assert_eq!(
        cache.stats().lines_highlighted,
        3,
        "the long line is skipped"
    );

    cache.sync("notes.unknownext", 1, "fn main() {}\n", true);
    assert!(cache.advance("notes.unknownext", usize::MAX, None));
    assert_eq!(
        cache
            .line_job("notes.unknownext", 0, &base, None)
            .sections
            .len(),
        1
    );
}

#[test]
fn snippets_are_cached_and_marks_split_sections() {
    let mut cache = cache();
    let a = cache.code_job("rust", "let x = 1;\n", true, 13.0);
    let b = cache.code_job("rust", "let x = 1;\n", true, 13.0);
    assert_eq!(a, b);
    assert_eq!(cache.stats().snippets_highlighted, 1);
    assert!(a.sections.len() > 2);

    cache.sync("t.txt", 1, "one two one\nthree one", true);
    assert_eq!(cache.find("t.txt", "one"), &[0..3, 8..11, 18..21]);
    assert_eq!(cache.find("t.txt", "ONE"), &[] as &[Range<usize>]);
    cache.find("t.txt", "one");
    let base = TextFormat::simple(FontId::monospace(14.0), Color32::WHITE);
    let marks = FindMarks {
        query: "one",
        current: 2,
        color: Color32::RED,
        current_color: Color32::BLUE,
    };
    let background = |line: usize, color: Color32| -> Vec<String> {
        let job = cache.line_job("t.txt", line, &base, Some(&marks));
        let pieces = job.sections.iter().filter(|s| s.format.background == color);
        pieces
            .map(|s| job.text[s.byte_range.start.0..s.byte_range.end.0].to_string())
            .collect()
    };
    assert_eq!(background(0, Color32::RED), ["one", "one"]);
    assert_eq!(background(1, Color32::BLUE), ["one"]);
}

#[test]
fn the_document_galley_lays_out_only_changed_lines() {
    let ctx = egui::Context::default();
    let mut cache = cache();
    let text = rust_file(200);
    let mut output = ctx.run_ui(egui::RawInput::default(), |ui| {
        let base = TextFormat::simple(FontId::monospace(14.0), Color32::WHITE);
        ui.fonts_mut(|fonts| {
            let calls = std::cell::Cell::new(0);
            let mut layout = |job| {
                calls.set(calls.get() + 1);
                fonts.layout_job(job)
            };
            cache.sync("a.rs", 1, &text, true);
            cache.advance("a.rs", usize::MAX, None);
            let first = cache.document_galley("a.rs", &base, None, (1.0, 0.1), &mut layout);
            assert_eq!((calls.get(), first.rows.len()), (201, 201));
            let again = cache.document_galley("a.rs", &base, None, (1.0, 0.1), &mut layout);
            assert!(Arc::ptr_eq(&first, &again));
            assert_eq!(calls.get(), 201);

            let edited = text.replacen("f100()", "f100(x)", 1);
            cache.sync("a.rs", 2, &edited, true);
            cache.advance("a.rs", usize::MAX, None);
            let galley = cache.document_galley("a.rs", &base, None, (1.0, 0.1), &mut layout);
            assert_eq!((calls.get(), galley.text()), (202, edited.as_str()));

            // A refilled font atlas invalidates every kept line.
            cache.document_galley("a.rs", &base, None, (1.0, 0.0), &mut layout);
            assert_eq!(calls.get(), 403);
        });
    });
    output.textures_delta.clear();
}
