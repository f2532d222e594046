//! Persisting a reply while it streams, and coalescing what subscribers see.
//!
//! The database gets the new text at most every [`DB_FLUSH_INTERVAL`], appended as a part (a
//! small insert, whatever the reply's length), and the whole text once at the end: the bytes
//! written stay linear in the reply. Rewriting the full content per chunk would be quadratic.

use std::time::{Duration, Instant};

use crate::store::{MessageStatus, Result, Store};

pub const DB_FLUSH_INTERVAL: Duration = Duration::from_millis(250);
pub const EVENT_INTERVAL: Duration = Duration::from_millis(30);

/// Writes a streaming reply's text to the store.
pub struct StreamWriter<'a> {
    store: &'a Store,
    message_id: i64,
    interval: Duration,
    seq: i64,
    flushed: usize,
    last_flush: Instant,
    bytes_written: u64,
}

impl<'a> StreamWriter<'a> {
    pub fn new(store: &'a Store, message_id: i64, interval: Duration) -> Self {
        StreamWriter {
            store,
            message_id,
            interval,
            seq: 0,
            flushed: 0,
            last_flush: Instant::now(),
            bytes_written: 0,
        }
    }

    /// Persists the text added since the last flush, if the interval has passed.
    pub fn update(&mut self, content: &str) -> Result<()> {
        self.update_at(content, Instant::now())
    }

    /// [`Self::update`] with the time given (the benchmark replays a reply at a set pace).
    pub fn update_at(&mut self, content: &str, now: Instant) -> Result<()> {
        if now.saturating_duration_since(self.last_flush) >= self.interval {
            self.flush_at(content, now)?;
        }
        Ok(())
    }

    /// Persists the text added since the last flush now.
    pub fn flush(&mut self, content: &str) -> Result<()> {
        self.flush_at(content, Instant::now())
    }

    fn flush_at(&mut self, content: &str, now: Instant) -> Result<()> {
        self.last_flush = now;
        let Some(new) = content.get(self.flushed..).filter(|s| !s.is_empty()) else {
            return Ok(());
        };
        self.store
            .append_message_part(self.message_id, self.seq, new)?;
        self.seq += 1;
        self.flushed = content.len();
        self.bytes_written += new.len() as u64;
        Ok(())
    }

    /// Writes the final text and status; the streamed parts are dropped.
    pub fn finish(
        &mut self,
        content: &str,
        status: MessageStatus,
        error: Option<&str>,
    ) -> Result<()> {
        self.store
            .finish_message(self.message_id, content, status, error)?;
        self.bytes_written += content.len() as u64;
        Ok(())
    }

    /// Text bytes handed to SQLite so far (for the benchmark).
    pub fn bytes_written(&self) -> u64 {
        self.bytes_written
    }
}

/// Batches deltas so subscribers (the GUI) are woken at most every [`EVENT_INTERVAL`].
#[derive(Debug)]
pub struct Coalescer {
    interval: Duration,
    last: Instant,
    pub text: String,
    pub reasoning: String,
}

impl Coalescer {
    pub fn new(interval: Duration) -> Self {
        Coalescer {
            interval,
            last: Instant::now(),
            text: String::new(),
            reasoning: String::new(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.text.is_empty() && self.reasoning.is_empty()
    }

    /// When the pending deltas are due, if any are pending.
    pub fn due_at(&self) -> Option<Instant> {
        (!self.is_empty()).then(|| self.last + self.interval)
    }

    /// The pending deltas if they are due (or `force`), emptied.
    pub fn take(&mut self, force: bool) -> Option<(String, String)> {
        if self.is_empty() || (!force && self.last.elapsed() < self.interval) {
            return None;
        }
        self.last = Instant::now();
        Some((
            std::mem::take(&mut self.text),
            std::mem::take(&mut self.reasoning),
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::{ChatMode, NewMessage, Role};

    #[test]
    fn parts_are_appended_and_joined_at_the_end() {
        let store = Store::open_in_memory().unwrap();
        let project = store
            .insert_project("p", std::path::Path::new("/p"))
            .unwrap();
        let chat = store
            .create_chat(project.id, ChatMode::Build, None)
            .unwrap();
        let message = store
            .insert_message(&NewMessage {
                status: MessageStatus::Streaming,
                ..NewMessage::new(chat.id, Role::Assistant, "")
            })
            .unwrap();
        let mut writer = StreamWriter::new(&store, message.id, Duration::ZERO);
        let mut content = String::new();
        for piece in ["Hel", "lo, ", "world"] {
            content.push_str(piece);
            writer.update(&content).unwrap();
        }
        // A reader sees the text so far while it streams.
        assert_eq!(store.message(message.id).unwrap().content, "Hello, world");
        writer
            .finish(&content, MessageStatus::Complete, None)
            .unwrap();
        let done = store.message(message.id).unwrap();
        assert_eq!(done.content, "Hello, world");
        assert_eq!(done.status, MessageStatus::Complete);
        assert_eq!(writer.bytes_written(), 24);
    }

    #[test]
    fn coalescer_holds_deltas_until_due() {
        let mut c = Coalescer::new(Duration::from_secs(3600));
        assert!(c.take(false).is_none());
        c.text.push('a');
        assert!(c.take(false).is_none());
        assert!(c.due_at().is_some());
        assert_eq!(c.take(true), Some(("a".into(), String::new())));
        assert!(c.is_empty());
    }
}
