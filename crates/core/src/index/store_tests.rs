use std::fs;

use super::*;

fn project(dir: &Path) -> PathBuf {
    let root = dir.join("project");
    fs::create_dir_all(root.join("src")).unwrap();
    fs::write(root.join("src/a.rs"), "pub fn alpha() {}\n").unwrap();
    fs::write(root.join("src/b.rs"), "fn main() { alpha(); }\n").unwrap();
    root
}

#[test]
fn a_second_process_reads_the_index_back_without_parsing_again() {
    let dir = tempfile::tempdir().unwrap();
    let root = project(dir.path());
    let data = dir.path().join("data");
    let paths = ["src/a.rs", "src/b.rs"];
    {
        let indexes = Indexes::new(Some(&data));
        let project = indexes.project(&root);
        let done = lock(&project).refresh(&root, paths);
        assert_eq!(done.extracted, 2);
    }
    assert!(fs::read_dir(data.join("index")).unwrap().count() == 1);
    // A new registry (a restart) loads the stored rows: nothing is parsed again, and the
    // definitions, references and words are all back.
    let indexes = Indexes::new(Some(&data));
    let project = indexes.project(&root);
    let mut project = lock(&project);
    assert_eq!(project.index.len(), 2);
    assert_eq!(project.index.definitions_of("alpha")[0].path, "src/a.rs");
    assert_eq!(project.index.references_to("alpha"), ["src/b.rs"]);
    let done = project.refresh(&root, paths);
    assert_eq!((done.extracted, done.unchanged), (0, 2), "{done:?}");
    let ranked = project.index.rank(&crate::index::Signals {
        prompt: "alpha",
        ..Default::default()
    });
    assert_eq!(ranked[0].path, "src/a.rs");

    // A change is stored as one row; a deletion removes its row.
    fs::write(root.join("src/b.rs"), "fn main() { beta(); }\n").unwrap();
    fs::remove_file(root.join("src/a.rs")).unwrap();
    let done = project.refresh(&root, paths);
    assert_eq!((done.extracted, done.removed), (1, 1), "{done:?}");
    drop(project);
    let again = Indexes::new(Some(&data));
    let project = again.project(&root);
    let project = lock(&project);
    assert_eq!(project.index.len(), 1);
    assert_eq!(project.index.references_to("beta"), ["src/b.rs"]);
}

#[test]
fn without_a_data_directory_the_index_lives_in_memory() {
    let dir = tempfile::tempdir().unwrap();
    let root = project(dir.path());
    let indexes = Indexes::new(None);
    let project = indexes.project(&root);
    let mut project = lock(&project);
    assert_eq!(project.refresh(&root, ["src/a.rs"]).extracted, 1);
    assert_eq!(project.save().unwrap(), 0);
}
