use super::*;

fn past(id: &str, subject: &str, files: &[&str]) -> PastCommit {
    PastCommit {
        id: id.to_string(),
        subject: subject.to_string(),
        files: files.iter().map(|f| f.to_string()).collect(),
    }
}

fn ids(list: &[&str]) -> Vec<String> {
    list.iter().map(|s| s.to_string()).collect()
}

/// The history's files having `word`, by path, with its count.
fn said(index: &CodeIndex, word: &str) -> Vec<(String, u16)> {
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
