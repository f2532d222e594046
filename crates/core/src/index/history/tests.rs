use super::*;

fn past(id: &str, subject: &str, files: &[&str]) -> PastCommit {
    PastCommit {
        id: id.to_string(),
        subject: subject.to_string(),
        files: files.iter().map(|f| f.to_string()).collect(),
        moved: Vec::new(),
    }
}

/// `past` that also moved files, (from, to).
fn moving(id: &str, subject: &str, files: &[&str], moved: &[(&str, &str)]) -> PastCommit {
    PastCommit {
        moved: (moved.iter())
            .map(|(from, to)| (from.to_string(), to.to_string()))
            .collect(),
        ..past(id, subject, files)
    }
}

fn ids(list: &[&str]) -> Vec<String> {
    list.iter().map(|s| s.to_string()).collect()
}

/// The history's files having `word`, by path, with its count.
/// The files whose past commits said `word` (as the index writes it: its stem).
fn said(index: &CodeIndex, word: &str) -> Vec<(String, u16)> {
    let word = &crate::index::terms::words(word)[0];
    let mut out: Vec<(String, u16)> = (index.history_postings(word).unwrap().into_iter())
        .map(|p| {
            (
                index.history_path(p.file).unwrap().expect("a path"),
                p.count,
            )
        })
        .collect();
    out.sort();
    out
}

#[test]
fn the_words_are_made_only_when_every_commit_is_kept() {
    let mut index = CodeIndex::in_memory().unwrap();
    let c2 = past("c2", "Round invoice totals", &["src/billing.rs"]);
    let c1 = past(
        "c1",
        "Invoice numbers in order",
        &["src/billing.rs", "src/ids.rs"],
    );
    // c1 not read yet: c2 is kept, the history is not made.
    assert!(!(index.learn_history("c2", &ids(&["c2", "c1"]), &[c2])).unwrap());
    assert_eq!(index.history_head().unwrap(), None);
    assert!(said(&index, "invoice").is_empty());
    let kept = index.kept_commits(&ids(&["c1", "c2"])).unwrap();
    assert_eq!(kept, HashSet::from(["c2".to_string()]));
    // The next call reads only c1.
    assert!((index.learn_history("c2", &ids(&["c2", "c1"]), &[c1])).unwrap());
    assert_eq!(index.history_head().unwrap().as_deref(), Some("c2"));
    assert_eq!(
        said(&index, "invoice"),
        [
            ("src/billing.rs".to_string(), 2),
            ("src/ids.rs".to_string(), 1)
        ]
    );
    assert_eq!(said(&index, "round"), [("src/billing.rs".to_string(), 1)]);
    // Two files; billing's words: round, invoice, total, number, order + invoice again.
    let (files, length) = index.history_totals().unwrap();
    assert_eq!(files, 2);
    assert!(length >= 8, "{length}");
}

#[test]
fn a_moved_head_forgets_the_commits_it_no_longer_reaches() {
    let mut index = CodeIndex::in_memory().unwrap();
    let c1 = past("c1", "Parse dates in the importer", &["src/import.rs"]);
    let c2 = past("c2", "Faster exports", &["src/export.rs"]);
    assert!((index.learn_history("c2", &ids(&["c2", "c1"]), &[c2, c1])).unwrap());
    assert_eq!(said(&index, "date"), [("src/import.rs".to_string(), 1)]);
    // HEAD moved on, and c1 fell out of the newest commits; a commit without files (a
    // merge, a mass change) says nothing.
    let c3 = past("c3", "Exports stream to disk", &["src/export.rs"]);
    let c4 = past("c4", "Merge branch dates", &[]);
    assert!((index.learn_history("c4", &ids(&["c4", "c3", "c2"]), &[c4, c3])).unwrap());
    assert!(said(&index, "date").is_empty());
    assert!(said(&index, "merge").is_empty());
    assert_eq!(said(&index, "export"), [("src/export.rs".to_string(), 2)]);
    let kept = index.kept_commits(&ids(&["c1", "c2", "c3", "c4"])).unwrap();
    assert_eq!(kept.len(), 3);
    assert!(!kept.contains("c1"));
}

#[test]
fn a_path_with_a_line_break_is_not_kept() {
    let mut index = CodeIndex::in_memory().unwrap();
    let odd = past("c1", "Odd names", &["a\nb.rs", "c.rs"]);
    assert!((index.learn_history("c1", &ids(&["c1"]), &[odd])).unwrap());
    assert_eq!(said(&index, "odd"), [("c.rs".to_string(), 1)]);
}

#[test]
fn what_older_commits_said_of_a_moved_file_is_said_of_it_where_it_is_now() {
    let mut index = CodeIndex::in_memory().unwrap();
    // Newest first. c4 moved lib/tax.rs on to src/tax.rs (and billing.rs with it, in a
    // commit of no files: a mass change); c3 moved tax.rs (edited as it went) to lib/tax.rs
    // and began a new tax.rs where it was; c2 and c1 are older than both moves.
    let commits = [
        past("c5", "Currency symbols", &["tax.rs"]),
        moving(
            "c4",
            "Move the tax code under src",
            &[],
            &[
                ("lib/tax.rs", "src/tax.rs"),
                ("billing.rs", "src/billing.rs"),
            ],
        ),
        moving(
            "c3",
            "Rates by region",
            &["lib/tax.rs", "tax.rs"],
            &[("tax.rs", "lib/tax.rs")],
        ),
        past("c2", "Invoice totals in cents", &["tax.rs", "billing.rs"]),
        moving(
            "c1",
            "Swap a tab\tname",
            &["a\tb.rs"],
            &[("x\ty", "z"), ("a", "b\tc")],
        ),
        past("c0", "Older words", &["a", "x"]),
    ];
    let ids: Vec<String> = commits.iter().map(|c| c.id.clone()).collect();
    assert!(index.learn_history("c5", &ids, &commits).unwrap());
    // c2's words follow both files to where they are now.
    assert_eq!(
        said(&index, "cent"),
        [
            ("src/billing.rs".to_string(), 1),
            ("src/tax.rs".to_string(), 1)
        ]
    );
    // The commit that moved a file and changed it says so of where it moved it, as it is
    // now, and of the new file it began at the old path; that new file has its own words.
    assert_eq!(
        said(&index, "region"),
        [("src/tax.rs".to_string(), 1), ("tax.rs".to_string(), 1)]
    );
    assert_eq!(said(&index, "currency"), [("tax.rs".to_string(), 1)]);
    // A mass move says nothing itself.
    assert!(said(&index, "move").is_empty());
    // A path with a tab (the separator of a move) is never kept, nor read as a move.
    assert!(said(&index, "swap").is_empty());
    assert_eq!(
        said(&index, "older"),
        [("a".to_string(), 1), ("x".to_string(), 1)]
    );
}

#[test]
fn how_often_a_file_changed_counts_the_newest_commits_of_a_few_files() {
    let mut index = CodeIndex::in_memory().unwrap();
    let wide: Vec<String> = (0..=FEW_FILES)
        .map(|i| format!("pkg{i}/version.txt"))
        .collect();
    let mut wide: Vec<&str> = wide.iter().map(String::as_str).collect();
    wide[0] = "src/core.rs";
    // Newest first.
    let mut commits = vec![
        moving(
            "m",
            "Rename the parser",
            &["src/core.rs"],
            &[("src/parse.rs", "src/parser.rs")],
        ),
        past("p", "Parse faster", &["src/parse.rs", "CHANGELOG.md"]),
        // One file too many: a release bumping every package says nothing of single files.
        past("wide", "Release 2.0", &wide),
    ];
    while commits.len() < OFTEN_COMMITS {
        let id = format!("f{}", commits.len());
        commits.push(past(&id, "Note a fix", &["CHANGELOG.md"]));
    }
    // The first commit past the newest ones.
    commits.push(past("old", "Old work", &["src/core.rs", "src/old.rs"]));
    let list: Vec<String> = commits.iter().map(|c| c.id.clone()).collect();
    assert!(index.learn_history("m", &list, &commits).unwrap());
    let often = index.often_changed().unwrap();
    let count = |path: &str| often.iter().find(|(p, _)| p == path).map(|(_, n)| *n);
    // Every newest commit but the move and the release: 97 notes and the parser's.
    assert_eq!(count("CHANGELOG.md"), Some(OFTEN_COMMITS as u32 - 2));
    // Counted by the name the file has now.
    assert_eq!(count("src/parser.rs"), Some(1));
    assert_eq!(count("src/parse.rs"), None);
    // The move, not the release nor the old commit.
    assert_eq!(count("src/core.rs"), Some(1));
    assert_eq!(count("pkg1/version.txt"), None);
    assert_eq!(count("src/old.rs"), None);
    assert_eq!(often[0].0, "CHANGELOG.md", "most often first: {often:?}");
    // What they said still counts: the old commit's words are the old file's.
    assert_eq!(
        said(&index, "old"),
        [
            ("src/core.rs".to_string(), 1),
            ("src/old.rs".to_string(), 1)
        ]
    );
}

#[test]
fn a_name_with_a_control_character_is_not_another_files() {
    let mut index = CodeIndex::in_memory().unwrap();
    // `victim.rs\r` would be read back as `victim.rs` once its line's end was cut.
    let commits = [
        past("c2", "Tweak the decoy", &["victim.rs\r", "zz.rs"]),
        past("c1", "Start", &["victim.rs"]),
    ];
    assert!(
        index
            .learn_history("c2", &ids(&["c2", "c1"]), &commits)
            .unwrap()
    );
    let often = index.often_changed().unwrap();
    assert!(
        often.contains(&("victim.rs".to_string(), 1)),
        "only c1 changed it: {often:?}"
    );
    assert_eq!(said(&index, "decoy"), [("zz.rs".to_string(), 1)]);
}

#[test]
fn files_changed_in_the_same_commits_are_partners_counted_by_their_names_now() {
    let mut index = CodeIndex::in_memory().unwrap();
    let wide: Vec<String> = (0..=FEW_FILES).map(|i| format!("gen/{i}.rs")).collect();
    let mut wide: Vec<&str> = wide.iter().map(String::as_str).collect();
    wide[0] = "src/parser.rs";
    wide[1] = "src/lexer.rs";
    // Newest first.
    let commits = [
        moving(
            "c5",
            "Rename the tests",
            &[],
            &[("tests/parse.rs", "tests/parser.rs")],
        ),
        past("c4", "Parse lists", &["src/parser.rs", "tests/parse.rs"]),
        past(
            "c3",
            "Parse maps",
            &["src/parser.rs", "tests/parse.rs", "src/lexer.rs"],
        ),
        past("c2", "Parse faster", &["src/parser.rs"]),
        // One file too many: it says nothing of which files change together.
        past("c1", "Regenerate", &wide),
    ];
    let ids: Vec<String> = commits.iter().map(|c| c.id.clone()).collect();
    assert!(index.learn_history("c5", &ids, &commits).unwrap());
    let partners = |path: &str| {
        let mut list = index.partners_of(path).unwrap();
        list.sort();
        list
    };
    // (partner, commits changing both, changing the file, changing the partner).
    assert_eq!(
        partners("src/parser.rs"),
        [
            ("src/lexer.rs".to_string(), 1, 3, 1),
            ("tests/parser.rs".to_string(), 2, 3, 2),
        ]
    );
    assert_eq!(
        partners("tests/parser.rs"),
        [
            ("src/lexer.rs".to_string(), 1, 2, 1),
            ("src/parser.rs".to_string(), 2, 2, 3),
        ]
    );
    assert!(partners("tests/parse.rs").is_empty());
    assert!(partners("gen/5.rs").is_empty());
}
