//! Persisting a streamed reply: a 200,000-character reply arriving in 5-character chunks (one
//! every 20 ms, a fast local model), written by Tandem's StreamWriter (new text appended every
//! 250 ms, whole text once at the end) versus a naive writer that rewrites the whole content
//! after every chunk. Both on real SQLite files, measured in the same run; printed as ratios.
//!
//! Run: `cargo bench --bench streaming`

use std::time::{Duration, Instant};

use tandem_core::chat::{DB_FLUSH_INTERVAL, StreamWriter};
use tandem_core::store::{ChatMode, MessageStatus, NewMessage, Role, Store};

const REPLY_CHARS: usize = 200_000;
const CHUNK: usize = 5;
const CHUNK_EVERY: Duration = Duration::from_millis(20);

fn cpu_time() -> Duration {
    let mut usage = std::mem::MaybeUninit::<libc::rusage>::zeroed();
    // SAFETY: getrusage fills the struct we own; RUSAGE_SELF is always valid.
    #[allow(unsafe_code)]
    let usage = unsafe {
        libc::getrusage(libc::RUSAGE_SELF, usage.as_mut_ptr());
        usage.assume_init()
    };
    let tv = |t: libc::timeval| {
        Duration::from_secs(t.tv_sec as u64) + Duration::from_micros(t.tv_usec as u64)
    };
    tv(usage.ru_utime) + tv(usage.ru_stime)
}

fn reply() -> String {
    let line = "fn example() { let x = 42; println!(\"{x}\"); }\n";
    line.repeat(REPLY_CHARS / line.len() + 1)[..REPLY_CHARS].to_string()
}

fn setup(dir: &std::path::Path) -> (Store, i64) {
    let store = Store::open_dir(dir).expect("store");
    let project = store
        .insert_project("bench", std::path::Path::new("/bench"))
        .expect("project");
    let chat = store
        .create_chat(project.id, ChatMode::Build, None)
        .expect("chat");
    let message = store
        .insert_message(&NewMessage {
            status: MessageStatus::Streaming,
            ..NewMessage::new(chat.id, Role::Assistant, "")
        })
        .expect("message");
    (store, message.id)
}

fn db_bytes(dir: &std::path::Path) -> u64 {
    std::fs::read_dir(dir)
        .map(|entries| {
            entries
                .filter_map(|e| e.ok()?.metadata().ok())
                .map(|m| m.len())
                .sum()
        })
        .unwrap_or(0)
}

struct Run {
    payload: u64,
    cpu: Duration,
    wall: Duration,
    disk: u64,
}

fn tandem_writer(text: &str) -> Run {
    let dir = tempfile::tempdir().expect("dir");
    let (store, id) = setup(dir.path());
    let (cpu0, wall0) = (cpu_time(), Instant::now());
    let mut writer = StreamWriter::new(&store, id, DB_FLUSH_INTERVAL);
    let start = Instant::now();
    let mut end = 0;
    let mut chunk_index = 0u32;
    while end < text.len() {
        end = (end + CHUNK).min(text.len());
        chunk_index += 1;
        let now = start + CHUNK_EVERY * chunk_index;
        writer.update_at(&text[..end], now).expect("update");
    }
    writer
        .finish(text, MessageStatus::Complete, None)
        .expect("finish");
    let run = Run {
        payload: writer.bytes_written(),
        cpu: cpu_time() - cpu0,
        wall: wall0.elapsed(),
        disk: db_bytes(dir.path()),
    };
    assert_eq!(store.message(id).expect("message").content, text);
    run
}

fn naive_writer(text: &str) -> Run {
    let dir = tempfile::tempdir().expect("dir");
    let (store, id) = setup(dir.path());
    let (cpu0, wall0) = (cpu_time(), Instant::now());
    let mut payload = 0u64;
    let mut end = 0;
    while end < text.len() {
        end = (end + CHUNK).min(text.len());
        store.set_message_content(id, &text[..end]).expect("update");
        payload += end as u64;
    }
    store
        .set_message_status(id, MessageStatus::Complete, None)
        .expect("status");
    let run = Run {
        payload,
        cpu: cpu_time() - cpu0,
        wall: wall0.elapsed(),
        disk: db_bytes(dir.path()),
    };
    assert_eq!(store.message(id).expect("message").content, text);
    run
}

fn main() {
    if std::env::args().any(|a| a == "--list") {
        return; // `cargo test --benches` lists; nothing to list here.
    }
    let text = reply();
    let ours = tandem_writer(&text);
    let naive = naive_writer(&text);
    println!("streamed reply: {REPLY_CHARS} chars in {CHUNK}-char chunks, one per {CHUNK_EVERY:?}");
    println!(
        "tandem (parts every {DB_FLUSH_INTERVAL:?} + final write): {} bytes to SQLite, CPU {:?}, wall {:?}, db files {} bytes",
        ours.payload, ours.cpu, ours.wall, ours.disk
    );
    println!(
        "naive (full rewrite per chunk):             {} bytes to SQLite, CPU {:?}, wall {:?}, db files {} bytes",
        naive.payload, naive.cpu, naive.wall, naive.disk
    );
    println!(
        "ratio naive/tandem: bytes {:.0}x, CPU {:.1}x",
        naive.payload as f64 / ours.payload as f64,
        naive.cpu.as_secs_f64() / ours.cpu.as_secs_f64().max(1e-9)
    );
}
