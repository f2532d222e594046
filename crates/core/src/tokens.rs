//! Token estimates, shared by everything that fits text into a model's context window (the
//! prompt assembly, the codebase walk, each request's window, the agent's trimming).
//!
//! Without the model's tokenizer, an estimate that errs high is the safe one: a request
//! estimated too large is trimmed a little early; one estimated too small is cut by the
//! server without a word.

/// Framing tokens providers add around each message (role markers, separators).
pub const MESSAGE_OVERHEAD: usize = 4;

/// What an image is counted as: vision models take a few hundred (LLaVA's 576) to about
/// 1,600 (a large image for Claude) tokens per image; erring high is the safe side.
pub const IMAGE_TOKENS: usize = 1_600;

/// One token per 4 ASCII bytes (rounded up), which is about what BPE tokenizers give for code
/// and English, and one per non-ASCII character, which over-counts most scripts a little.
pub fn estimate(text: &str) -> usize {
    let (mut ascii, mut other) = (0usize, 0usize);
    for &byte in text.as_bytes() {
        if byte.is_ascii() {
            ascii += 1;
        } else if byte & 0xC0 != 0x80 {
            // A leading byte, so one per character, not per byte.
            other += 1;
        }
    }
    ascii.div_ceil(4) + other
}

#[cfg(test)]
mod tests {
    use super::estimate;

    #[test]
    fn ascii_by_four_other_characters_by_one() {
        assert_eq!(estimate(""), 0);
        assert_eq!(estimate("a"), 1);
        assert_eq!(estimate("abcd"), 1);
        assert_eq!(estimate("abcde"), 2);
        assert_eq!(estimate("é"), 1);
        assert_eq!(estimate("日本語"), 3);
        assert_eq!(estimate("ab日本"), 3);
    }
}
