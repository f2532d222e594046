//! Bounded output: a command may print gigabytes; Tandem keeps the head and the tail.

use std::collections::VecDeque;

fn omitted_marker(chars: usize) -> String {
    format!("\n… {chars} characters omitted …\n")
}

/// Keeps the first and last characters of `text` (at most `cap` in all) with a marker
/// saying how many were cut; `true` when something was cut. Cuts on char boundaries.
pub fn cap_output(text: &str, cap: usize) -> (String, bool) {
    let total = text.chars().count();
    if total <= cap {
        return (text.to_string(), false);
    }
    let head_chars = cap / 2;
    let byte_at = |nth: usize| text.char_indices().nth(nth).map_or(text.len(), |(i, _)| i);
    let head_end = byte_at(head_chars);
    let tail_start = byte_at(total - (cap - head_chars));
    let marker = omitted_marker(total - cap);
    (
        format!("{}{marker}{}", &text[..head_end], &text[tail_start..]),
        true,
    )
}

/// One output stream as it arrives: the first bytes and a rolling window of the last ones,
/// so memory stays bounded however much the command prints.
pub struct Capture {
    cap: usize,
    /// Bytes kept at each end: 4 per character, so each end holds at least `cap` characters.
    window: usize,
    head: Vec<u8>,
    tail: VecDeque<u8>,
    /// Characters that fell out of the tail window (counted by UTF-8 lead bytes).
    dropped_chars: usize,
}

impl Capture {
    pub fn new(cap: usize) -> Self {
        Capture {
            cap,
            window: cap.saturating_mul(4).max(4),
            head: Vec::new(),
            tail: VecDeque::new(),
            dropped_chars: 0,
        }
    }

    pub fn push(&mut self, bytes: &[u8]) {
        let room = self.window.saturating_sub(self.head.len()).min(bytes.len());
        let (head, rest) = bytes.split_at(room);
        self.head.extend_from_slice(head);
        self.tail.extend(rest);
        let excess = self.tail.len().saturating_sub(self.window);
        for byte in self.tail.drain(..excess) {
            if byte & 0xC0 != 0x80 {
                self.dropped_chars += 1;
            }
        }
    }

    /// The text kept, and whether anything was cut.
    pub fn finish(mut self) -> (String, bool) {
        if self.dropped_chars == 0 {
            let mut all = self.head;
            all.extend(self.tail);
            return cap_output(&String::from_utf8_lossy(&all), self.cap);
        }
        // Each end holds at least `cap` characters, so a character split at a window edge
        // (decoded as U+FFFD) is always among the omitted ones.
        let head = String::from_utf8_lossy(&self.head);
        let tail = String::from_utf8_lossy(self.tail.make_contiguous());
        let head_keep = self.cap / 2;
        let tail_keep = self.cap - head_keep;
        let (head_total, tail_total) = (head.chars().count(), tail.chars().count());
        let kept_head: String = head.chars().take(head_keep).collect();
        let tail_skip = tail_total.saturating_sub(tail_keep);
        let kept_tail: String = tail.chars().skip(tail_skip).collect();
        let omitted = head_total.saturating_sub(head_keep) + self.dropped_chars + tail_skip;
        (
            format!("{kept_head}{}{kept_tail}", omitted_marker(omitted)),
            true,
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cap_output_keeps_head_and_tail_on_char_boundaries() {
        assert_eq!(cap_output("short", 10), ("short".to_string(), false));
        let text = format!("HEAD{}TAIL", "é".repeat(100));
        let (capped, cut) = cap_output(&text, 10);
        assert!(cut);
        assert_eq!(capped, "HEADé\n… 98 characters omitted …\néTAIL");
    }

    #[test]
    fn capture_of_huge_output_stays_bounded_and_counts_what_it_cut() {
        let mut capture = Capture::new(10);
        capture.push(b"0123456789");
        for _ in 0..1000 {
            capture.push("é€😀x".as_bytes());
            assert!(capture.head.len() + capture.tail.len() <= 2 * capture.window);
        }
        capture.push(b"abcdefghij");
        let (text, cut) = capture.finish();
        assert!(cut);
        // 10 + 4000 + 10 characters, 10 kept.
        assert_eq!(text, "01234\n… 4010 characters omitted …\nfghij");
        // Nothing cut: the bytes come back whole, even split across pushes mid-character.
        let mut small = Capture::new(10);
        let bytes = "é€😀".as_bytes();
        small.push(&bytes[..1]);
        small.push(&bytes[1..]);
        assert_eq!(small.finish(), ("é€😀".to_string(), false));
    }
}
