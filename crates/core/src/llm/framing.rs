//! From reply bytes to [`StreamEvent`]s: NDJSON line splitting, SSE (via
//! `eventsource-stream`), and the driver that feeds frames to a per-protocol [`Decode`].

use std::collections::VecDeque;
use std::future::Future;

use eventsource_stream::{Event, EventStreamError, Eventsource};
use futures_util::stream::{self, BoxStream, StreamExt};
use serde_json::Value;

use super::{LlmError, StreamEvent};

pub(crate) type Item = Result<StreamEvent, LlmError>;
pub(crate) type Events = BoxStream<'static, Item>;
pub(crate) type Frames<F> = BoxStream<'static, Result<F, LlmError>>;

/// Turns the frames of one protocol (NDJSON lines or SSE events) into stream events.
pub(crate) trait Decode<F>: Send + 'static {
    fn frame(&mut self, frame: F, out: &mut Vec<Item>);
    /// The body ended cleanly. Push `Done` if the reply was complete; pushing nothing means
    /// it was cut short, which the driver reports as [`LlmError::Disconnected`].
    fn end(&mut self, out: &mut Vec<Item>);
}

/// A short, single-line excerpt of what the server sent, for error messages.
pub(crate) fn snippet(text: &str) -> String {
    const MAX: usize = 160;
    let text = text.trim();
    match text.char_indices().nth(MAX) {
        Some((cut, _)) => format!("{}…", &text[..cut]),
        None => text.to_string(),
    }
}

/// Parses one frame's JSON, or says which frame could not be read.
pub(crate) fn parse_frame(provider: &str, what: &str, text: &str) -> Result<Value, LlmError> {
    serde_json::from_str(text).map_err(|e| LlmError::Protocol {
        provider: provider.to_string(),
        message: format!("{what} that is not JSON ({e}): {}", snippet(text)),
    })
}

/// Splits a byte stream into lines: lines may span chunks (so may a UTF-8 character,
/// which is why bytes are only decoded once a line is complete); `\r\n` is accepted.
#[derive(Debug, Default)]
pub(crate) struct LineSplitter {
    buffer: Vec<u8>,
    /// Bytes of `buffer` already searched for a newline.
    scanned: usize,
}

impl LineSplitter {
    pub(crate) fn push(&mut self, bytes: &[u8], lines: &mut VecDeque<Vec<u8>>) {
        self.buffer.extend_from_slice(bytes);
        let mut start = 0;
        let mut from = self.scanned;
        while let Some(offset) = self.buffer[from..].iter().position(|&b| b == b'\n') {
            let end = from + offset;
            let mut line = &self.buffer[start..end];
            if let [head @ .., b'\r'] = line {
                line = head;
            }
            lines.push_back(line.to_vec());
            start = end + 1;
            from = start;
        }
        self.buffer.drain(..start);
        self.scanned = self.buffer.len();
    }

    /// The last line when the body did not end with a newline.
    pub(crate) fn finish(&mut self) -> Option<Vec<u8>> {
        self.scanned = 0;
        let mut rest = std::mem::take(&mut self.buffer);
        if rest.last() == Some(&b'\r') {
            rest.pop();
        }
        (!rest.is_empty()).then_some(rest)
    }
}

/// Non-empty NDJSON lines of a body.
pub(crate) fn ndjson_lines(body: Frames<Vec<u8>>, provider: String) -> Frames<String> {
    struct State {
        body: Option<Frames<Vec<u8>>>,
        splitter: LineSplitter,
        ready: VecDeque<Vec<u8>>,
        provider: String,
    }
    let state = State {
        body: Some(body),
        splitter: LineSplitter::default(),
        ready: VecDeque::new(),
        provider,
    };
    stream::unfold(state, |mut st| async move {
        loop {
            if let Some(line) = st.ready.pop_front() {
                let item = String::from_utf8(line).map_err(|_| LlmError::Protocol {
                    provider: st.provider.clone(),
                    message: "a line that is not valid UTF-8".to_string(),
                });
                if matches!(&item, Ok(line) if line.trim().is_empty()) {
                    continue;
                }
                return Some((item, st));
            }
            let body = st.body.as_mut()?;
            match body.next().await {
                Some(Ok(bytes)) => st.splitter.push(&bytes, &mut st.ready),
                Some(Err(err)) => {
                    st.body = None;
                    return Some((Err(err), st));
                }
                None => {
                    st.body = None;
                    st.ready.extend(st.splitter.finish());
                }
            }
        }
    })
    .boxed()
}

/// SSE events of a body, parsed by `eventsource-stream`.
pub(crate) fn sse_events(body: Frames<Vec<u8>>, provider: String) -> Frames<Event> {
    body.eventsource()
        .map(move |item| {
            item.map_err(|err| match err {
                EventStreamError::Transport(err) => err,
                EventStreamError::Utf8(_) => LlmError::Protocol {
                    provider: provider.clone(),
                    message: "an event that is not valid UTF-8".to_string(),
                },
                EventStreamError::Parser(err) => LlmError::Protocol {
                    provider: provider.clone(),
                    message: format!("a malformed event stream: {}", snippet(&err.input)),
                },
            })
        })
        .boxed()
}

/// Runs `start` (send the request, open the frames) and feeds the frames to `decoder`.
/// The stream ends right after `Done` or the first error, and dropping it drops the
/// connection, which is how a turn is cancelled.
pub(crate) fn drive<F, D, S>(start: S, decoder: D, provider: String) -> Events
where
    F: Send + 'static,
    D: Decode<F>,
    S: Future<Output = Result<Frames<F>, LlmError>> + Send + 'static,
{
    struct Pump<F, D> {
        start: Option<futures_util::future::BoxFuture<'static, Result<Frames<F>, LlmError>>>,
        frames: Option<Frames<F>>,
        decoder: D,
        pending: VecDeque<Item>,
        finished: bool,
        provider: String,
    }
    let pump = Pump {
        start: Some(Box::pin(start)),
        frames: None,
        decoder,
        pending: VecDeque::new(),
        finished: false,
        provider,
    };
    stream::unfold(pump, |mut p| async move {
        loop {
            if let Some(item) = p.pending.pop_front() {
                if matches!(item, Err(_) | Ok(StreamEvent::Done { .. })) {
                    p.finished = true;
                    p.pending.clear();
                    p.frames = None;
                }
                return Some((item, p));
            }
            if p.finished {
                return None;
            }
            if let Some(start) = p.start.take() {
                match start.await {
                    Ok(frames) => p.frames = Some(frames),
                    Err(err) => p.pending.push_back(Err(err)),
                }
                continue;
            }
            let frames = p.frames.as_mut()?;
            let mut out = Vec::new();
            match frames.next().await {
                Some(Ok(frame)) => p.decoder.frame(frame, &mut out),
                Some(Err(err)) => out.push(Err(err)),
                None => {
                    p.decoder.end(&mut out);
                    if !out
                        .iter()
                        .any(|i| matches!(i, Err(_) | Ok(StreamEvent::Done { .. })))
                    {
                        out.push(Err(LlmError::Disconnected {
                            provider: p.provider.clone(),
                            message: "the reply ended before the model finished".to_string(),
                        }));
                    }
                }
            }
            p.pending.extend(out);
        }
    })
    .boxed()
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn snippets_are_short() {
        let long = "x".repeat(1000);
        assert!(snippet(&long).chars().count() <= 161);
        assert_eq!(snippet("  short \n"), "short");
    }

    fn split_all(chunks: &[&[u8]]) -> Vec<Vec<u8>> {
        let mut splitter = LineSplitter::default();
        let mut lines = VecDeque::new();
        for chunk in chunks {
            splitter.push(chunk, &mut lines);
        }
        lines.extend(splitter.finish());
        lines.into()
    }

    #[test]
    fn lines_span_chunks_and_accept_crlf() {
        let lines = split_all(&[b"{\"a\":1}\r\n{\"b\"", b":2}\n\n{\"c\":", b"3}"]);
        let expected: Vec<Vec<u8>> = vec![
            b"{\"a\":1}".to_vec(),
            b"{\"b\":2}".to_vec(),
            b"".to_vec(),
            b"{\"c\":3}".to_vec(),
        ];
        assert_eq!(lines, expected);
    }

    #[test]
    fn a_utf8_character_split_across_chunks_survives() {
        let text = "héllo ✓\n".as_bytes();
        let (a, b) = text.split_at(2); // inside the two-byte "é"
        let lines = split_all(&[a, b]);
        assert_eq!(
            String::from_utf8(lines[0].clone()).ok().as_deref(),
            Some("héllo ✓")
        );
    }

    proptest! {
        #[test]
        fn any_chunking_gives_the_same_lines(
            lines in proptest::collection::vec("[a-zé✓ ]{0,12}", 0..8),
            cuts in proptest::collection::vec(0usize..200, 0..10),
            crlf in any::<bool>(),
        ) {
            let eol = if crlf { "\r\n" } else { "\n" };
            let text: String = lines.iter().map(|l| format!("{l}{eol}")).collect();
            let bytes = text.as_bytes();
            let mut points: Vec<usize> = cuts.iter().map(|c| c % (bytes.len() + 1)).collect();
            points.sort_unstable();
            let mut chunks = Vec::new();
            let mut last = 0;
            for p in points.into_iter().chain([bytes.len()]) {
                chunks.push(&bytes[last..p]);
                last = p;
            }
            let got = split_all(&chunks);
            let want: Vec<Vec<u8>> = lines.iter().map(|l| l.as_bytes().to_vec()).collect();
            prop_assert_eq!(got, want);
        }
    }
}
