use std::fs;

use super::*;
use crate::index::Signals;

fn project(dir: &Path) -> PathBuf {
    let root = dir.join("project");
    fs::create_dir_all(root.join("src")).unwrap();
    fs::write(root.join("src/a.rs"), "pub fn alpha() {}\n").unwrap();
    fs::write(root.join("src/b.rs"), "fn main() { alpha(); }\n").unwrap();
    root
}

/// The index of `root` in `indexes` brought up to date by a walk of its own (the default
/// globs), reading until `deadline`.
fn refreshed(
    indexes: &Indexes,
    root: &Path,
    deadline: Option<Instant>,
) -> (Arc<Mutex<CodeIndex>>, Refreshed) {
    let options = crate::folder::context::ContextOptions::default();
    let walk = crate::folder::context::Walk::stamped(root, &options).unwrap();
    (indexes.refreshed(root, &walk, &Changes::unknown(), deadline)).unwrap()
}

/// The one stored index in the data directory `data`.
fn stored(data: &Path) -> PathBuf {
    fs::read_dir(data.join("index"))
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .find(|p| p.extension().is_some_and(|e| e == "sqlite"))
        .unwrap()
}

#[test]
fn a_second_process_uses_the_stored_index_without_parsing_again() {
    let dir = tempfile::tempdir().unwrap();
    let root = project(dir.path());
    let data = dir.path().join("data");
    let paths = ["src/a.rs", "src/b.rs"];
    {
        let indexes = Indexes::new(Some(&data));
        let project = indexes.project(&root).unwrap();
        let done = lock(&project).refresh(&root, paths).unwrap();
        assert_eq!(done.extracted, 2);
    }
    assert!(fs::read_dir(data.join("index")).unwrap().count() >= 1);
    // A new registry (a restart) opens the stored index: nothing is parsed again, and the
    // definitions, references and words are all there.
    let indexes = Indexes::new(Some(&data));
    let project = indexes.project(&root).unwrap();
    let mut project = lock(&project);
    assert_eq!(project.len().unwrap(), 2);
    assert_eq!(project.definitions_of("alpha").unwrap()[0].path, "src/a.rs");
    assert_eq!(project.references_to("alpha").unwrap(), ["src/b.rs"]);
    let done = project.refresh(&root, paths).unwrap();
    assert_eq!((done.extracted, done.unchanged), (0, 2), "{done:?}");
    let ranked = project
        .rank(
            &Signals {
                prompt: "alpha",
                ..Default::default()
            },
            400,
        )
        .unwrap();
    assert_eq!(ranked[0].path, "src/a.rs");

    // A change and a deletion are stored.
    fs::write(root.join("src/b.rs"), "fn main() { beta(); }\n").unwrap();
    fs::remove_file(root.join("src/a.rs")).unwrap();
    let done = project.refresh(&root, paths).unwrap();
    assert_eq!((done.extracted, done.removed), (1, 1), "{done:?}");
    drop(project);
    let again = Indexes::new(Some(&data));
    let project = again.project(&root).unwrap();
    let project = lock(&project);
    assert_eq!(project.len().unwrap(), 1);
    assert_eq!(project.references_to("beta").unwrap(), ["src/b.rs"]);
    assert!(project.references_to("alpha").unwrap().is_empty());
}

#[test]
fn a_damaged_store_is_built_again() {
    let dir = tempfile::tempdir().unwrap();
    let root = project(dir.path());
    let data = dir.path().join("data");
    {
        let indexes = Indexes::new(Some(&data));
        let project = indexes.project(&root).unwrap();
        lock(&project).refresh(&root, ["src/a.rs"]).unwrap();
    }
    let stored = stored(&data);
    for suffix in ["-wal", "-shm"] {
        let _ = fs::remove_file(format!("{}{suffix}", stored.display()));
    }
    fs::write(
        &stored,
        b"not a database, not at all, but long enough to be read",
    )
    .unwrap();
    let indexes = Indexes::new(Some(&data));
    let project = indexes.project(&root).unwrap();
    let mut project = lock(&project);
    assert_eq!(project.refresh(&root, ["src/a.rs"]).unwrap().extracted, 1);
    assert_eq!(project.definitions_of("alpha").unwrap()[0].path, "src/a.rs");
}

/// Opening reads only a store's header: a page damaged past it shows when it is read. The
/// refresh that meets it builds the store again, and the answer is the files'.
#[test]
fn a_store_damaged_past_its_header_is_built_again_when_met() {
    let dir = tempfile::tempdir().unwrap();
    let root = project(dir.path());
    for i in 0..300 {
        let text = format!("pub fn f{i}() {{}}\n{}", "// filler\n".repeat(40));
        fs::write(root.join(format!("src/m{i}.rs")), text).unwrap();
    }
    let data = dir.path().join("data");
    refreshed(&Indexes::new(Some(&data)), &root, None);
    let stored = stored(&data);
    let mut bytes = fs::read(&stored).unwrap();
    assert!(bytes.len() > 3 * 4096, "{}", bytes.len());
    // Every page but the first (the header and the schema): garbage.
    for (i, b) in bytes.iter_mut().enumerate().skip(4096) {
        *b = (i * 7 % 251) as u8;
    }
    fs::write(&stored, &bytes).unwrap();
    let (project, done) = refreshed(&Indexes::new(Some(&data)), &root, None);
    assert_eq!(done.extracted, 302, "{done:?}");
    let project = lock(&project);
    assert_eq!(project.definitions_of("f7").unwrap()[0].path, "src/m7.rs");
    assert_eq!(project.definitions_of("alpha").unwrap()[0].path, "src/a.rs");
}

/// Refreshes of one stored index go one at a time across processes: a turn (a deadline)
/// does not wait past it and uses the index as it is; a question without one waits for the
/// other refresh to end, then refreshes. (Two builders sharing SQLite's lock round by round
/// made one give up: "database is locked".)
#[test]
fn a_refresh_waits_for_another_process_refresh_or_goes_on_without_it() {
    let dir = tempfile::tempdir().unwrap();
    let root = project(dir.path());
    let data = dir.path().join("data");
    let indexes = Indexes::new(Some(&data));
    refreshed(&indexes, &root, None);
    fs::write(root.join("src/c.rs"), "pub fn gamma() {}\n").unwrap();
    // Another process's refresh, as the lock's file says.
    let name = format!("{}.refresh.lock", root_hash(&root));
    let other = crate::lockfile::try_take(&data.join("index").join(name)).unwrap();
    let other = other.expect("free");
    let deadline = Instant::now() + Duration::from_millis(100);
    let (project, done) = refreshed(&indexes, &root, Some(deadline));
    assert_eq!(done, Refreshed::default());
    assert!(Instant::now() < deadline + Duration::from_millis(500));
    assert!(lock(&project).definitions_of("gamma").unwrap().is_empty());
    let release = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(300));
        drop(other);
    });
    let started = Instant::now();
    let (project, done) = refreshed(&indexes, &root, None);
    assert!(started.elapsed() >= Duration::from_millis(250));
    assert_eq!(done.extracted, 1, "{done:?}");
    assert_eq!(
        lock(&project).definitions_of("gamma").unwrap()[0].path,
        "src/c.rs"
    );
    release.join().unwrap();
}

#[test]
fn without_a_data_directory_the_index_lives_in_memory() {
    let dir = tempfile::tempdir().unwrap();
    let root = project(dir.path());
    let indexes = Indexes::new(None);
    let project = indexes.project(&root).unwrap();
    let mut project = lock(&project);
    assert_eq!(project.refresh(&root, ["src/a.rs"]).unwrap().extracted, 1);
    assert!(!dir.path().join("data").exists());
}

/// Two processes (here: two connections on two threads) refreshing one stored index at once
/// both succeed, and the index ends whole: a write reads what it takes out under the write
/// lock, never from a snapshot another writer has moved past.
#[test]
fn two_writers_on_one_store_both_succeed() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("project");
    fs::create_dir_all(&root).unwrap();
    let names: Vec<String> = (0..200).map(|i| format!("f{i}.rs")).collect();
    let db = dir.path().join("index.sqlite");
    CodeIndex::open(&db).unwrap();
    for round in 0..6 {
        for (i, name) in names.iter().enumerate() {
            fs::write(root.join(name), format!("fn f{i}_r{round}() {{}}\n")).unwrap();
        }
        let results: Vec<_> = std::thread::scope(|s| {
            let writers: Vec<_> = (0..2)
                .map(|_| {
                    s.spawn(|| {
                        let mut index = CodeIndex::open(&db)?;
                        index.refresh(&root, names.iter().map(String::as_str))
                    })
                })
                .collect();
            writers.into_iter().map(|w| w.join().unwrap()).collect()
        });
        for result in results {
            assert!(result.is_ok(), "round {round}: {result:?}");
        }
        let index = CodeIndex::open(&db).unwrap();
        assert_eq!(index.len().unwrap(), 200);
        let found = index.definitions_of(&format!("f7_r{round}")).unwrap();
        assert_eq!(found.len(), 1, "round {round}: {found:?}");
    }
}

#[test]
fn opening_a_stored_index_writes_nothing_and_an_older_layout_is_built_again() {
    let dir = tempfile::tempdir().unwrap();
    let root = project(dir.path());
    let stored = dir.path().join("index.sqlite");
    let wal = dir.path().join("index.sqlite-wal");
    let logged = || fs::metadata(&wal).map_or(0, |m| m.len());
    {
        let mut index = CodeIndex::open(&stored).unwrap();
        index.refresh(&root, ["src/a.rs", "src/b.rs"]).unwrap();
    }
    // The last connection closed: its log was folded into the file.
    assert_eq!(logged(), 0);
    let index = CodeIndex::open(&stored).unwrap();
    assert_eq!(index.len().unwrap(), 2);
    assert_eq!(logged(), 0, "opening the index wrote to it");
    drop(index);

    // An index of an older layout is dropped and built anew (it is derived from the files).
    let old = rusqlite::Connection::open(&stored).unwrap();
    old.pragma_update(None, "user_version", 2).unwrap();
    drop(old);
    let mut index = CodeIndex::open(&stored).unwrap();
    assert_eq!(index.len().unwrap(), 0);
    let done = index.refresh(&root, ["src/a.rs", "src/b.rs"]).unwrap();
    assert_eq!(done.extracted, 2);
}
