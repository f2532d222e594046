//! Packing under a token budget: what fits goes whole, in order of priority; a file too big
//! to go whole goes as its map, and a named one still whole.

use super::*;

/// `n` ASCII bytes cost `n / 4` tokens.
fn sized(tokens: usize) -> String {
    "abcd".repeat(tokens)
}

/// A big project with a small budget costs what is sent, not what is there: a file whose
/// size alone is over what is left is listed without being read.
#[test]
fn only_files_that_may_fit_are_read() {
    let dir = tempfile::tempdir().unwrap();
    for i in 0..10 {
        write(dir.path(), &format!("f{i}.rs"), sized(400));
    }
    // Over the budget by its size: listed as it is, even though it would be skipped if read.
    write(dir.path(), "g.rs", [0u8; 4000]);
    let cache = ContextCache::default();
    let options = ContextOptions {
        budget_tokens: 1000,
        ..ContextOptions::default()
    };
    let context = cache.collect(dir.path(), &options).unwrap();
    assert_eq!(paths(&context), ["f0.rs", "f1.rs"]);
    assert_eq!(context.listed_only.len(), 9);
    assert_eq!(cache.misses(), 2, "only the two files that fit were read");
    // With room for everything, everything is read (the binary one found and skipped).
    let context = cache
        .collect(dir.path(), &ContextOptions::default())
        .unwrap();
    assert_eq!(context.included.len(), 10);
    assert_eq!(skip_reason(&context, "g.rs"), Some(SkipReason::Binary));
    assert_eq!((cache.hits(), cache.misses()), (2, 11));
}

#[test]
fn budget_takes_priority_first_then_smaller_files_after_a_big_one() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    write(root, "a.rs", sized(40));
    write(root, "b.rs", sized(400));
    write(root, "c.rs", sized(40));
    write(root, "d.rs", sized(50));
    write(root, "z.rs", sized(40));
    write(root, "Cargo.lock", sized(1));
    // Each file costs its content and its header (path and fences).
    let headers: usize = ["z.rs", "a.rs", "c.rs"]
        .iter()
        .map(|p| header_tokens(p, false))
        .sum();
    let options = ContextOptions {
        budget_tokens: 130 + headers,
        // Normalised, deduplicated; missing and ineligible entries are ignored.
        priority: vec![
            "./z.rs".into(),
            "missing.rs".into(),
            "Cargo.lock".into(),
            "z.rs".into(),
            "../escape.rs".into(),
        ],
        ..ContextOptions::default()
    };
    let context = collect(root, &options);
    assert_eq!(paths(&context), ["z.rs", "a.rs", "c.rs"]);
    assert_eq!(context.content_tokens, 120);
    assert_eq!(
        context.listed_only,
        [
            (Arc::from("b.rs"), ListedReason::OverBudget),
            (Arc::from("d.rs"), ListedReason::OverBudget),
        ]
    );
    assert_eq!(
        context.listing_tokens,
        estimate_tokens("Other files (not included, ask to see them):\n- b.rs\n- d.rs\n")
    );
    // Deterministic: the same input gives the same output.
    assert_eq!(collect(root, &options), context);
}

#[test]
fn a_priority_file_that_does_not_fit_is_listed_first() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    write(root, "a.rs", sized(10));
    write(root, "big.rs", sized(100));
    write(root, "c.rs", sized(10));
    let options = ContextOptions {
        budget_tokens: 50,
        priority: vec!["c.rs".into(), "big.rs".into()],
        ..ContextOptions::default()
    };
    let context = collect(root, &options);
    assert_eq!(paths(&context), ["c.rs", "a.rs"]);
    assert_eq!(
        context.listed_only,
        [(Arc::from("big.rs"), ListedReason::OverBudget)]
    );

    let none = ContextOptions {
        budget_tokens: 0,
        ..ContextOptions::default()
    };
    let context = collect(root, &none);
    assert!(context.included.is_empty());
    assert_eq!(context.listed_only.len(), 3);
    assert_eq!(context.content_tokens, 0);
}

/// An empty file costs only its header; a file costs its header and its content.
#[test]
fn each_file_costs_its_header_and_its_content() {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "empty.rs", "");
    write(dir.path(), "one.rs", "abcd");
    let headers = header_tokens("empty.rs", false) + header_tokens("one.rs", false);
    let options = ContextOptions {
        budget_tokens: headers + 1,
        ..ContextOptions::default()
    };
    let context = collect(dir.path(), &options);
    assert_eq!(paths(&context), ["empty.rs", "one.rs"]);
    assert_eq!(context.included[0].tokens, 0);
    assert_eq!(context.content_tokens, 1);
    assert_eq!(context.header_tokens, headers);
    // A token short: the second file is listed.
    let short = ContextOptions {
        budget_tokens: headers,
        ..ContextOptions::default()
    };
    let context = collect(dir.path(), &short);
    assert_eq!(paths(&context), ["empty.rs"]);

    // No budget means paths only: nothing is read, so even an empty file is only listed.
    let none = ContextOptions {
        budget_tokens: 0,
        ..ContextOptions::default()
    };
    let context = collect(dir.path(), &none);
    assert!(context.included.is_empty());
    assert_eq!(context.listed_only.len(), 2);
}

/// A map of the first line of every `fn`.
fn first_lines(_path: &str, text: &str) -> String {
    (text.lines().enumerate())
        .filter(|(_, l)| l.starts_with("fn "))
        .map(|(i, l)| format!("{}: {l}\n", i + 1))
        .collect()
}

#[test]
fn a_priority_file_too_big_whole_goes_as_its_map_with_its_why() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let big: String = (0..200)
        .map(|i| format!("fn f{i}() {{\n    body();\n}}\n"))
        .collect();
    write(root, "big.rs", &big);
    write(root, "small.rs", "fn small() {}\n");
    write(root, "other.rs", "fn other() {}\n");
    let options = ContextOptions {
        budget_tokens: 1_000,
        priority: vec![
            Priority::or_map("small.rs", "matches: small"),
            Priority::or_map("big.rs", "defines `f1` used by small.rs"),
        ],
        mapper: Some(first_lines),
        ..ContextOptions::default()
    };
    let context = collect(root, &options);
    let sent: Vec<(&str, PackedAs, &str)> = (context.included.iter())
        .map(|f| (f.path.as_str(), f.packed_as, &*f.why))
        .collect();
    assert_eq!(
        sent,
        [
            ("small.rs", PackedAs::Whole, "matches: small"),
            ("big.rs", PackedAs::Map, "defines `f1` used by small.rs"),
            ("other.rs", PackedAs::Whole, ROOM_LEFT_WHY),
        ]
    );
    let map = &context.included[1];
    assert!(
        map.content.starts_with("1: fn f0() {\n4: fn f1() {\n"),
        "{}",
        map.content
    );
    assert_eq!(map.tokens, estimate_tokens(&map.content));
    assert!(
        render(&context)
            .contains("big.rs (not sent whole: its definitions, by line)\n```\n1: fn f0() {\n")
    );

    // Without a mapper (or for a file not marked), the same file is listed by path.
    let plain = ContextOptions {
        mapper: None,
        ..options.clone()
    };
    let context = collect(root, &plain);
    assert_eq!(paths(&context), ["small.rs", "other.rs"]);
    assert_eq!(context.listed_only[0].0.as_ref(), "big.rs");
}

#[test]
fn the_best_file_goes_whole_however_much_of_the_room_it_takes_the_next_as_its_map() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    // About 10,000 tokens each: one fits in a 20,000-token budget, not two.
    let huge = |name: &str| -> String {
        (0..1_000)
            .map(|i| format!("fn {name}{i}() {{ body(); }}\n// {}\n", "x".repeat(12)))
            .collect()
    };
    write(root, "huge.rs", huge("f"));
    write(root, "second.rs", huge("g"));
    let huge_tokens = estimate_tokens(&huge("f"));
    assert!((9_001..17_500).contains(&huge_tokens), "{huge_tokens}");
    let ranked = ContextOptions {
        budget_tokens: 20_000,
        priority: vec![
            Priority::or_map("huge.rs", "matches: f"),
            Priority::or_map("second.rs", "matches: g"),
        ],
        mapper: Some(first_lines),
        ..ContextOptions::default()
    };
    let sent = |options: &ContextOptions| -> Vec<(String, PackedAs)> {
        (collect(root, options).included.iter())
            .map(|f| (f.path.clone(), f.packed_as))
            .collect()
    };
    assert_eq!(
        sent(&ranked),
        [
            ("huge.rs".to_string(), PackedAs::Whole),
            ("second.rs".to_string(), PackedAs::Map),
        ]
    );
    // In the other order, the other one goes whole.
    let swapped = ContextOptions {
        priority: ranked.priority.iter().rev().cloned().collect(),
        ..ranked
    };
    assert_eq!(
        sent(&swapped),
        [
            ("second.rs".to_string(), PackedAs::Whole),
            ("huge.rs".to_string(), PackedAs::Map),
        ]
    );
}

/// A map past its share waits for what the whole files ranked below it leave: it points to
/// a file, a whole file is the file.
#[test]
fn a_map_past_its_share_takes_only_the_room_the_whole_files_below_it_leave() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let big: String = (0..60)
        .map(|i| format!("fn f{i}() {{\n{}}}\n", "    body();\n".repeat(10)))
        .collect();
    write(root, "big.rs", &big);
    write(root, "mid.rs", sized(800));
    write(root, "small.rs", sized(500));
    // Nothing ranks it: it only fills the room left, after the maps that waited.
    write(root, "filler.rs", sized(300));
    let map_tokens = estimate_tokens(&first_lines("big.rs", &big));
    // Over the maps' share (a sixteenth of 1,000), within what is left of the rest.
    assert!((100..300).contains(&map_tokens), "{map_tokens}");
    assert!(estimate_tokens(&big) > 1_000);
    let options = |second: &str| ContextOptions {
        budget_tokens: 1_000,
        priority: vec![
            Priority::or_map("big.rs", "matches: f"),
            Priority::or_map(second, "matches: body"),
        ],
        mapper: Some(first_lines),
        include: vec![
            second.to_string(),
            "big.rs".to_string(),
            "filler.rs".to_string(),
        ],
        ..ContextOptions::default()
    };
    let sent = |options: &ContextOptions| -> Vec<(String, PackedAs)> {
        (collect(root, options).included.iter())
            .map(|f| (f.path.clone(), f.packed_as))
            .collect()
    };
    // The map and the file below it do not both fit: the whole file goes, the map is listed.
    let context = collect(root, &options("mid.rs"));
    assert_eq!(paths(&context), ["mid.rs"]);
    assert_eq!(context.included[0].packed_as, PackedAs::Whole);
    let listed: Vec<&str> = context.listed_only.iter().map(|(p, _)| &**p).collect();
    assert_eq!(listed, ["big.rs", "filler.rs"]);
    // Both fit: the map takes what is left, in its place before the file, and before the
    // file that only fills the room (which no longer fits).
    assert_eq!(
        sent(&options("small.rs")),
        [
            ("big.rs".to_string(), PackedAs::Map),
            ("small.rs".to_string(), PackedAs::Whole),
        ]
    );
}
