//! The cache of what was read: a second collect reads nothing unchanged, one cache serves
//! several roots and threads.

use super::*;

#[test]
fn second_collect_hits_the_cache_and_a_change_misses() {
    let dir = project();
    let root = dir.path();
    let cache = ContextCache::default();
    let options = ContextOptions::default();
    let first = cache.collect(root, &options).unwrap();
    // Read: the six included files and the two binaries (name and size checks need no read).
    assert_eq!((cache.hits(), cache.misses()), (0, 8));

    let second = cache.collect(root, &options).unwrap();
    assert_eq!(second, first);
    assert_eq!((cache.hits(), cache.misses()), (8, 8));

    // A longer file is a different version.
    write(root, "src/main.rs", "fn main() { run() }\n");
    let third = cache.collect(root, &options).unwrap();
    assert_eq!((cache.hits(), cache.misses()), (15, 9));
    assert_eq!(&*third.included[4].content, "fn main() { run() }\n");

    // So is a same-length atomic replacement (new inode), even within one mtime tick.
    write(root, "src/main.tmp", "fn main() { walk() }");
    fs::rename(root.join("src/main.tmp"), root.join("src/main.rs")).unwrap();
    let fourth = cache.collect(root, &options).unwrap();
    assert_eq!((cache.hits(), cache.misses()), (22, 10));
    assert_eq!(&*fourth.included[4].content, "fn main() { walk() }");

    // Deleted files leave the cache.
    assert_eq!(cache.lock().entries.len(), 8);
    fs::remove_file(root.join("README.md")).unwrap();
    fs::remove_file(root.join("data.txt")).unwrap();
    cache.collect(root, &options).unwrap();
    assert_eq!(cache.lock().entries.len(), 6);
}

#[test]
fn one_cache_serves_several_roots() {
    let (one, two) = (project(), project());
    let cache = ContextCache::default();
    let options = ContextOptions::default();
    cache.collect(one.path(), &options).unwrap();
    cache.collect(two.path(), &options).unwrap();
    assert_eq!(cache.lock().entries.len(), 16);
    cache.collect(one.path(), &options).unwrap();
    assert_eq!((cache.hits(), cache.misses()), (8, 16));
}

#[test]
fn a_large_project_is_only_stated_the_second_time() {
    let dir = tempfile::tempdir().unwrap();
    for i in 0..2000 {
        write(
            dir.path(),
            &format!("src/m{}/f{i}.rs", i % 40),
            format!("// {i}\n"),
        );
    }
    let cache = ContextCache::default();
    let first = cache
        .collect(dir.path(), &ContextOptions::default())
        .unwrap();
    assert_eq!(first.included.len(), 2000);
    assert_eq!(cache.misses(), 2000);
    let second = cache
        .collect(dir.path(), &ContextOptions::default())
        .unwrap();
    assert_eq!((cache.hits(), cache.misses()), (2000, 2000));
    assert_eq!(second, first);
}

#[test]
fn the_cache_is_shareable_between_threads() {
    fn assert_send_sync<T: Send + Sync>() {}
    assert_send_sync::<ContextCache>();
    let dir = project();
    let cache = ContextCache::default();
    std::thread::scope(|scope| {
        for _ in 0..2 {
            scope.spawn(|| {
                cache
                    .collect(dir.path(), &ContextOptions::default())
                    .unwrap()
            });
        }
    });
    assert_eq!((cache.hits(), cache.misses()), (8, 8));
}
