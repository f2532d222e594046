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
/// window, move the cursor or hide text) and bidi controls are written as escapes.
pub fn for_terminal(text: &str) -> std::borrow::Cow<'_, str> {
    let mut chars = text.chars().peekable();
    let kept = |c: char, next: Option<&char>| match c {
        '\n' | '\t' => true,
        '\r' => next == Some(&'\n'),
        c => !c.is_control() && !is_invisible(c),
    };
    let mut plain = true;
    while let Some(c) = chars.next() {
        if !kept(c, chars.peek()) {
            plain = false;
            break;
        }
    }
    if plain {
        return text.into();
    }
    let mut out = String::with_capacity(text.len() + 16);
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        if kept(c, chars.peek()) {
            out.push(c);
        } else {
            out.push_str(&visible(c.encode_utf8(&mut [0; 4])));
        }
    }
    out.into()
}

/// Whether [`visible`] would change `text`: the approval shows a note when it did.
pub fn has_hidden(text: &str) -> bool {
    text.chars()
        .any(|c| c != '\n' && (c.is_control() || is_invisible(c)))
}

/// Characters that render as nothing, or that change how the text around them is ordered.
pub fn is_invisible(c: char) -> bool {
    matches!(
        c,
        // Soft hyphen, combining grapheme joiner, Arabic letter mark, Hangul fillers,
        // Mongolian vowel separator.
        '\u{ad}' | '\u{34f}' | '\u{61c}' | '\u{115f}' | '\u{1160}' | '\u{180e}' | '\u{3164}'
        | '\u{ffa0}'
        // Zero-width space / non-joiner / joiner, left-to-right and right-to-left marks.
        | '\u{200b}'..='\u{200f}'
        // Line and paragraph separators, bidi embeddings and overrides (LRE…RLO).
        | '\u{2028}'..='\u{202e}'
        // Word joiner, invisible operators, bidi isolates (LRI…PDI), deprecated format
        // characters.
        | '\u{2060}'..='\u{206f}'
        // Byte order mark / zero-width no-break space; interlinear annotation and object
        // replacement marks.
        | '\u{feff}' | '\u{fff9}'..='\u{fffb}'
        // Tag characters (invisible copies of ASCII) and variation selectors 17–256.
        | '\u{e0000}'..='\u{e007f}' | '\u{e0100}'..='\u{e01ef}'
    )
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
        assert!(matches!(for_terminal(plain), std::borrow::Cow::Borrowed(_)));
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
