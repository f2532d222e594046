//! Text shown to the person when they are asked to approve something (a tool call's command,
//! a gateway request's code), made unable to hide part of itself.
//!
//! A terminal or a text widget interprets some characters instead of showing them: `\r`
//! returns to the start of the line (so `ls\r# rm -rf ~` can look like `# rm -rf ~`, or
//! the other way round), escape sequences recolour, erase or move the cursor, bidi overrides
//! reorder what follows, and zero-width characters are simply not there to the eye. What the
//! person approves must be what runs, so [`visible`] writes all of those as escapes.
//!
//! A leaf: the paths' checks ([`crate::folder::normalize_relative`] refuses a name holding
//! what [`is_invisible`] names) and the commands' policy use the same set.

use std::borrow::Cow;
use std::fmt::Write as _;

/// `text` with every character that a display would interpret or hide written as an escape:
/// `\r` and `\t`, other ASCII controls (C0, DEL) as `\xNN` (ESC is `\x1b`, so an escape
/// sequence shows as `\x1b[31m`), and non-ASCII controls (C1), bidi controls, zero-width and
/// other invisible format characters as `\u{NNNN}`. A line break stays a line break (the
/// text is shown whole, so the next line is visible); all other text is unchanged.
///
/// Backslashes are not doubled: a command that literally contains `\r` looks the same as one
/// with a carriage return, but that ambiguity can only make a command look longer than it
/// is, never hide any of it.
pub fn visible(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '\n' => out.push('\n'),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if c.is_ascii_control() => {
                let _ = write!(out, "\\x{:02x}", u32::from(c));
            }
            c if c.is_control() || is_invisible(c) => {
                let _ = write!(out, "\\u{{{:x}}}", u32::from(c));
            }
            c => out.push(c),
        }
    }
    out
}

/// `text` as [`visible`] shows it, but for reading whole in a terminal: tabs and line ends
/// (CRLF too) stay as they are, so code and diffs keep their shape. A lone `\r` (which goes
/// back over the line), escape sequences (OSC 52 sets the clipboard, others retitle the
/// window, move the cursor or hide text), bidi controls and invisible characters are written
/// as escapes; only a variation selector where it chooses a form, or a joiner after a
/// character that shows, stays, so that emoji and scripts that
/// need them read as written.
pub fn for_terminal(text: &str) -> Cow<'_, str> {
    terminal_text(text, Before::default()).0
}

/// [`for_terminal`] for text that arrives in pieces (a model's streamed reply): a line end or
/// an emoji split between two pieces reads as it would whole. A `\r` ending a piece waits for
/// the next one (a `\n` may follow), or for [`TerminalStream::finish`].
#[derive(Debug, Default)]
pub struct TerminalStream {
    /// What the pieces so far ended with.
    before: Before,
    held_return: bool,
}

impl TerminalStream {
    /// The next piece, as it is to be written.
    pub fn push(&mut self, piece: &str) -> String {
        let mut text = String::with_capacity(piece.len() + 1);
        if std::mem::take(&mut self.held_return) {
            text.push('\r');
        }
        text.push_str(piece);
        if text.ends_with('\r') {
            text.pop();
            self.held_return = true;
        }
        let (out, before) = terminal_text(&text, self.before);
        self.before = before;
        out.into_owned()
    }

    /// What is still held once the text has ended: a lone `\r`, escaped.
    pub fn finish(&mut self) -> &'static str {
        match std::mem::take(&mut self.held_return) {
            true => "\\r",
            false => "",
        }
    }
}

/// The last two characters written (escapes count as ASCII): whether a selector or a joiner
/// may follow them.
#[derive(Debug, Default, Clone, Copy)]
struct Before {
    last: Option<char>,
    prior: Option<char>,
}

impl Before {
    fn then(self, c: char) -> Before {
        Before {
            last: Some(c),
            prior: self.last,
        }
    }
}

/// [`for_terminal`] of `text` following `before`, and what the result ends with.
fn terminal_text(text: &str, mut before: Before) -> (Cow<'_, str>, Before) {
    let kept = |c: char, before: Before, next: Option<&char>| match c {
        '\n' | '\t' => true,
        '\r' => next == Some(&'\n'),
        c if c.is_control() => false,
        c => !is_invisible(c) || joins_what_shows(c, before),
    };
    let start = before;
    let mut chars = text.chars().peekable();
    let mut plain = true;
    while let Some(c) = chars.next() {
        if !kept(c, before, chars.peek()) {
            plain = false;
            break;
        }
        before = before.then(c);
    }
    if plain {
        return (text.into(), before);
    }
    let mut out = String::with_capacity(text.len() + 16);
    let mut chars = text.chars().peekable();
    before = start;
    while let Some(c) = chars.next() {
        if kept(c, before, chars.peek()) {
            out.push(c);
            before = before.then(c);
        } else {
            out.push_str(&visible(c.encode_utf8(&mut [0; 4])));
            // An escape ends in ASCII on screen.
            before = before.then('}');
        }
    }
    (out.into(), before)
}

/// Whether [`visible`] would change `text`: the approval shows a note when it did.
pub fn has_hidden(text: &str) -> bool {
    text.chars()
        .any(|c| c != '\n' && (c.is_control() || is_invisible(c)))
}

/// Characters that render as nothing, or that change how the text around them is ordered:
/// every format character (general category Cf: bidi controls and marks, zero-width
/// characters, the tag characters that copy ASCII invisibly), the line and paragraph
/// separators, and Unicode's other default-ignorable code points (variation selectors, Hangul
/// fillers, the ranges reserved to stay invisible when assigned); and two that show as blank
/// or as a box standing for something absent (the braille blank, the object replacement
/// character).
pub fn is_invisible(c: char) -> bool {
    use unicode_general_category::{GeneralCategory, get_general_category};
    if c.is_ascii() {
        return false;
    }
    matches!(
        get_general_category(c),
        GeneralCategory::Format
            | GeneralCategory::LineSeparator
            | GeneralCategory::ParagraphSeparator
    ) || is_variation_selector(c)
        || matches!(
            c,
            // Unicode's Other_Default_Ignorable_Code_Point: combining grapheme joiner, Hangul
            // fillers, Khmer inherent vowels, an unassigned format slot, the specials block's
            // reserved start, the rest of the tags block.
            '\u{34f}'
                | '\u{115f}'
                | '\u{1160}'
                | '\u{17b4}'
                | '\u{17b5}'
                | '\u{2065}'
                | '\u{3164}'
                | '\u{ffa0}'
                | '\u{fff0}'..='\u{fff8}'
                | '\u{e0000}'..='\u{e0fff}'
                // Braille pattern blank, object replacement character, Khitan's filler (a
                // mark that shows nothing).
                | '\u{2800}'
                | '\u{fffc}'
                | '\u{16fe4}'
        )
}

/// Variation selectors: they choose how the character before them is drawn (U+FE0F asks for
/// an emoji's colour form) and show nothing themselves.
fn is_variation_selector(c: char) -> bool {
    matches!(c, '\u{180b}'..='\u{180d}' | '\u{180f}' | '\u{fe00}'..='\u{fe0f}' | '\u{e0100}'..='\u{e01ef}')
}

/// Whether an invisible `c` right after `before` is part of how a script or an emoji is
/// written, and harmless to show as it is in a terminal: a variation selector right after a
/// non-ASCII character that shows, a zero-width (non-)joiner right after one or after its
/// selector (`⚠️`, `👩‍💻`, `🏳️‍🌈`, Persian's half-spaces). One of each at most: a run of them
/// would carry bytes nobody sees. After ASCII they have no such use (`main.rs` followed by
/// U+FE0F reads as `main.rs`).
fn joins_what_shows(c: char, before: Before) -> bool {
    let shows = |b: Option<char>| b.is_some_and(shows_as_itself);
    match c {
        '\u{200c}' | '\u{200d}' => {
            shows(before.last)
                || (before.last.is_some_and(is_variation_selector) && shows(before.prior))
        }
        c => shows(before.last) && before.last.is_some_and(|b| selects_a_form_of(c, b)),
    }
}

/// Whether the variation selector `c` chooses a form of `base`: text or emoji presentation
/// (U+FE0E, U+FE0F) of a symbol, one of the standardized forms (U+FE00–U+FE0D) of a
/// mathematical symbol or a CJK ideograph. The ideographic selectors beyond them (VS17–256)
/// are escaped: one of 240 after any ideograph would carry a byte nobody sees.
fn selects_a_form_of(c: char, base: char) -> bool {
    use unicode_general_category::{GeneralCategory as G, get_general_category};
    let category = get_general_category(base);
    let ideograph = matches!(base, '\u{3400}'..='\u{4dbf}' | '\u{4e00}'..='\u{9fff}' | '\u{f900}'..='\u{faff}' | '\u{20000}'..='\u{3134f}');
    match c {
        '\u{fe0e}' | '\u{fe0f}' => matches!(
            category,
            G::OtherSymbol | G::MathSymbol | G::OtherPunctuation
        ),
        '\u{fe00}'..='\u{fe0d}' => category == G::MathSymbol || ideograph,
        _ => false,
    }
}

/// A character other than ASCII that shows as itself: assigned, neither a control, a space
/// nor invisible. Private use shows too (icon fonts).
fn shows_as_itself(c: char) -> bool {
    use unicode_general_category::{GeneralCategory as G, get_general_category};
    !c.is_ascii()
        && !is_invisible(c)
        && !matches!(
            get_general_category(c),
            G::Unassigned | G::Control | G::Surrogate | G::SpaceSeparator
        )
}

/// The first character of `name` (a file's path) that keeps it from reading as what it is,
/// if one does: in a name not written composed (NFC), one canonically equal to another reads
/// the same; then a control, one [`is_invisible`], one nobody assigned or that only a font
/// gives a shape (unassigned, private use), a space other than U+0020 (no-break and hair
/// spaces read as a space, or as nothing), or a combining mark on nothing it belongs to: at a
/// name's start or after punctuation, a symbol or a space, more than three in a row, or on a
/// Latin, Greek or Cyrillic letter (composed, such a mark accents nothing: `s` + U+0345 reads
/// as `s`).
pub fn misleading_in_name(name: &str) -> Option<char> {
    use unicode_general_category::{GeneralCategory as G, get_general_category};
    // Composed (NFC): a name canonically equal to another (`e` + U+0301 and `é`, the Kelvin
    // sign and `K`, Hangul's jamo and their syllable) reads as that one.
    let composed = icu_normalizer::ComposingNormalizer::new_nfc().normalize(name);
    if composed != name {
        let first = name.chars().zip(composed.chars()).find(|(a, b)| a != b);
        return first.map(|(a, _)| a).or_else(|| name.chars().last());
    }
    // The letter or number the marks after it belong to, and how many follow it.
    let mut base: Option<char> = None;
    let mut marks = 0;
    for c in name.chars() {
        if c.is_control() || is_invisible(c) {
            return Some(c);
        }
        let category = get_general_category(c);
        match category {
            G::Unassigned | G::PrivateUse | G::Surrogate => return Some(c),
            G::SpaceSeparator if c != ' ' => return Some(c),
            G::NonspacingMark | G::SpacingMark | G::EnclosingMark => {
                marks += 1;
                let Some(letter) = base.filter(|_| marks <= 3) else {
                    return Some(c);
                };
                // Latin, Greek and Cyrillic write an accented letter as one character (the
                // name is composed, see above): a mark left on one accents nothing.
                if u32::from(letter) < 0x530 {
                    return Some(c);
                }
            }
            _ if c.is_alphanumeric() => (base, marks) = (Some(c), 0),
            _ => (base, marks) = (None, 0),
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn carriage_returns_and_tabs_are_escaped() {
        assert_eq!(visible("ls\r# rm -rf ~"), "ls\\r# rm -rf ~");
        assert_eq!(visible("a\tb"), "a\\tb");
        assert_eq!(visible("a\r\nb"), "a\\r\nb");
    }

    #[test]
    fn line_breaks_stay_line_breaks() {
        assert_eq!(visible("cd src\ncargo test\n"), "cd src\ncargo test\n");
        assert!(!has_hidden("cd src\ncargo test\n"));
    }

    #[test]
    fn c0_controls_and_del_are_hex_escapes() {
        assert_eq!(visible("a\0b\x07c\x08d\x7fe"), "a\\x00b\\x07c\\x08d\\x7fe");
        assert_eq!(visible("\x0b\x0c\x1f"), "\\x0b\\x0c\\x1f");
    }

    #[test]
    fn escape_sequences_show_their_escape() {
        assert_eq!(
            visible("echo ok\x1b[2K\x1b[1Grm -rf ~"),
            "echo ok\\x1b[2K\\x1b[1Grm -rf ~"
        );
        assert_eq!(visible("\x1b]0;title\x07"), "\\x1b]0;title\\x07");
    }

    #[test]
    fn c1_controls_are_unicode_escapes() {
        // CSI, NEL and the C1 range's ends.
        assert_eq!(visible("a\u{9b}31mb"), "a\\u{9b}31mb");
        assert_eq!(visible("\u{80}\u{85}\u{9f}"), "\\u{80}\\u{85}\\u{9f}");
    }

    #[test]
    fn for_a_terminal_tabs_and_line_ends_stay_and_the_rest_is_escaped() {
        let plain = "fn main() {\r\n\tprintln!(\"hé\");\n}\n";
        assert!(matches!(for_terminal(plain), Cow::Borrowed(_)));
        assert_eq!(for_terminal(plain), plain);
        assert_eq!(
            for_terminal("ok\rFAILED\u{1b}]52;c;eA==\u{7} \u{202e}txt\u{200b}\r"),
            "ok\\rFAILED\\x1b]52;c;eA==\\x07 \\u{202e}txt\\u{200b}\\r"
        );
    }

    #[test]
    fn bidi_controls_are_escaped() {
        assert_eq!(
            visible("ls \u{202e}~ fr- mr\u{202c}"),
            "ls \\u{202e}~ fr- mr\\u{202c}"
        );
        for c in [
            '\u{200e}', '\u{200f}', '\u{202a}', '\u{2066}', '\u{2069}', '\u{61c}',
        ] {
            assert_eq!(
                visible(&c.to_string()),
                format!("\\u{{{:x}}}", u32::from(c))
            );
        }
    }

    #[test]
    fn zero_width_and_invisible_characters_are_escaped() {
        assert_eq!(visible("r\u{200b}m"), "r\\u{200b}m");
        for c in [
            '\u{200c}',
            '\u{200d}',
            '\u{2060}',
            '\u{feff}',
            '\u{ad}',
            '\u{2028}',
            '\u{e0041}',
        ] {
            assert!(has_hidden(&c.to_string()), "{c:?}");
            assert_eq!(
                visible(&c.to_string()),
                format!("\\u{{{:x}}}", u32::from(c))
            );
        }
    }

    #[test]
    fn every_default_ignorable_character_is_invisible() {
        // Variation selectors, Mongolian free variation selectors, Khmer inherent vowels,
        // musical and shorthand format controls, the specials' reserved slots, the object
        // replacement character, the braille blank, tags and the tags block's unassigned rest.
        for c in [
            '\u{fe00}',
            '\u{fe0f}',
            '\u{180b}',
            '\u{180d}',
            '\u{180f}',
            '\u{17b4}',
            '\u{17b5}',
            '\u{1d173}',
            '\u{1d17a}',
            '\u{1bca0}',
            '\u{1bca3}',
            '\u{fff0}',
            '\u{fff8}',
            '\u{fffc}',
            '\u{2800}',
            '\u{e0001}',
            '\u{e007f}',
            '\u{e0080}',
            '\u{e01f0}',
            '\u{e0fff}',
            '\u{600}',
            '\u{110bd}',
            '\u{13430}',
        ] {
            assert!(is_invisible(c), "{c:?}");
            assert!(has_hidden(&format!("a{c}")), "{c:?}");
        }
        // What shows: letters, marks, spaces, emoji, private use (icon fonts).
        for c in [
            'a', 'é', '\u{301}', ' ', '\u{a0}', '\u{3000}', '🦀', '\u{e000}', '→',
        ] {
            assert!(!is_invisible(c), "{c:?}");
        }
    }

    #[test]
    fn for_a_terminal_emoji_keep_their_selectors_and_joiners_and_names_do_not() {
        for text in ["⚠️ careful", "👩‍💻 done", "✔︎", "می‌خواهم"] {
            assert_eq!(for_terminal(text), text);
        }
        // After ASCII a selector or joiner hides itself in a name that reads as another.
        assert_eq!(for_terminal("src/main.rs\u{fe0f}"), "src/main.rs\\u{fe0f}");
        assert_eq!(for_terminal("a\u{200d}b"), "a\\u{200d}b");
        // Nor after what was escaped, nor at the start.
        assert_eq!(for_terminal("\u{1b}\u{fe0f}"), "\\x1b\\u{fe0f}");
        assert_eq!(for_terminal("\u{fe0f}x"), "\\u{fe0f}x");
        // Tag characters spell ASCII invisibly, whatever comes before them.
        assert_eq!(for_terminal("🏴\u{e0067}"), "🏴\\u{e0067}");
        // A flag's selector then joiner stays; a run of them would carry hidden bytes.
        assert_eq!(for_terminal("🏳\u{fe0f}\u{200d}🌈"), "🏳\u{fe0f}\u{200d}🌈");
        assert_eq!(
            for_terminal("⚠\u{fe0f}\u{fe01}\u{200d}\u{200c}"),
            "⚠\u{fe0f}\\u{fe01}\\u{200d}\\u{200c}"
        );
        assert_eq!(for_terminal("é\u{200d}\u{200d}"), "é\u{200d}\\u{200d}");
        assert_eq!(
            for_terminal("⚠\u{fe0f}\u{200d}\u{fe0f}"),
            "⚠\u{fe0f}\u{200d}\\u{fe0f}"
        );
        // A selector only where it chooses a form: not after a letter, and the ideographic
        // selectors beyond the standardized ones never (a byte per ideograph).
        assert_eq!(for_terminal("é\u{fe0f}"), "é\\u{fe0f}");
        assert_eq!(for_terminal("日\u{e0141}本"), "日\\u{e0141}本");
        assert_eq!(for_terminal("≤\u{fe00} 一\u{fe00}"), "≤\u{fe00} 一\u{fe00}");
        assert_eq!(for_terminal("a\u{16fe4}"), "a\\u{16fe4}");
        // Nor after what does not show as itself: a space, an unassigned character.
        assert_eq!(for_terminal("\u{3000}\u{fe0f}"), "\u{3000}\\u{fe0f}");
        assert_eq!(for_terminal("\u{378}\u{200d}"), "\u{378}\\u{200d}");
    }

    #[test]
    fn a_stream_reads_as_its_whole_text_wherever_it_is_cut() {
        let text = "⚠\u{fe0f} ok\r\nline\rover\u{1b}[2K 👩\u{200d}💻 main.rs\u{fe0f}\r";
        let whole = for_terminal(text);
        let cuts: Vec<usize> = (0..=text.len())
            .filter(|&i| text.is_char_boundary(i))
            .collect();
        for &a in &cuts {
            for &b in cuts.iter().filter(|&&b| b >= a) {
                let mut stream = TerminalStream::default();
                let mut out = String::new();
                for piece in [&text[..a], &text[a..b], &text[b..]] {
                    out.push_str(&stream.push(piece));
                }
                out.push_str(stream.finish());
                assert_eq!(out, whole, "cut at {a} and {b}");
            }
        }
    }

    #[test]
    fn ordinary_unicode_text_is_untouched() {
        for text in [
            "cargo test -- --nocapture",
            "echo 'héllo wörld' → 日本語 ✔ 🦀",
            "grep -n 'a\\|b' src/*.rs",
            "",
        ] {
            assert_eq!(visible(text), text);
            assert!(!has_hidden(text), "{text}");
        }
    }
}
