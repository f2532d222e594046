//! The expansions bash makes before a program sees its words, which the checker must make too
//! or refuse to guess: brace expansion (`rm {-rf,~}` is `rm -rf ~`), and arithmetic, where
//! bash evaluates a variable's text as an expression whose array subscripts run commands
//! (`x='a[$(cmd)]'; echo $((x))`).

use super::{Cmd, Marks, Parser};

/// Why a command with a brace expansion the checker does not expand is not low risk.
pub(super) const UNEXPANDED: &str =
    "a brace expansion the checker does not expand (quoted, with a variable, or too large)";
/// Why arithmetic on anything but literal numbers is not low risk.
pub(super) const ARITHMETIC: &str = "arithmetic on a variable's text, which bash evaluates as an \
                                     expression (its array subscripts can run commands)";

/// The most words one brace expansion may make before the checker gives up on it.
const MAX_WORDS: usize = 64;
/// The longest word the checker brace-expands (finding the braces is quadratic).
const MAX_LEN: usize = 4096;

/// The words bash makes of `word` by brace expansion (`a{b,c}d` → `abd acd`, `{1..3}`), or
/// `None` when they would be too many. A word without a valid expansion is itself.
pub(super) fn braces(word: &str) -> Option<Vec<String>> {
    let mut out = Vec::new();
    (word.len() <= MAX_LEN && expand(word, &mut out)).then_some(out)
}

fn expand(word: &str, out: &mut Vec<String>) -> bool {
    let c: Vec<char> = word.chars().collect();
    for open in (0..c.len()).filter(|&i| c[i] == '{') {
        let Some((close, commas)) = matching(&c, open) else {
            continue;
        };
        let head: String = c[..open].iter().collect();
        let tail: String = c[close + 1..].iter().collect();
        let inner: String = c[open + 1..close].iter().collect();
        let items = if commas.is_empty() {
            match sequence(&inner) {
                Some(Some(items)) => items,
                Some(None) => return false,
                None => continue,
            }
        } else {
            let mut items = Vec::new();
            let mut from = open + 1;
            for &at in commas.iter().chain([&close]) {
                items.push(c[from..at].iter().collect());
                from = at + 1;
            }
            items
        };
        if items.len() > MAX_WORDS {
            return false;
        }
        return items
            .iter()
            .all(|item| expand(&format!("{head}{item}{tail}"), out) && out.len() <= MAX_WORDS);
    }
    out.push(word.to_string());
    true
}

/// The `}` matching the `{` at `open`, and the commas directly inside the pair.
fn matching(c: &[char], open: usize) -> Option<(usize, Vec<usize>)> {
    let (mut depth, mut commas) = (0usize, Vec::new());
    for (k, &ch) in c.iter().enumerate().skip(open) {
        match ch {
            '{' => depth += 1,
            '}' if depth == 1 => return Some((k, commas)),
            '}' => depth -= 1,
            ',' if depth == 1 => commas.push(k),
            _ => {}
        }
    }
    None
}

/// `1..5`, `a..e`, `0..10..2`: the items of a sequence expression; `None` when `inner` is no
/// sequence, `Some(None)` when it is one too long to expand.
fn sequence(inner: &str) -> Option<Option<Vec<String>>> {
    let parts: Vec<&str> = inner.split("..").collect();
    let step = match parts.get(2) {
        Some(s) => s.parse::<i64>().ok()?.unsigned_abs().max(1),
        None => 1,
    };
    let (from, to) = match parts.len() {
        2 | 3 => (parts[0], parts[1]),
        _ => return None,
    };
    let letter = |s: &str| {
        let mut ch = s.chars();
        ch.next()
            .filter(|c| c.is_ascii_alphabetic() && ch.next().is_none())
    };
    let (a, b, letters) = match (from.parse::<i64>(), to.parse::<i64>()) {
        (Ok(a), Ok(b)) => (a, b, false),
        _ => (
            i64::from(u32::from(letter(from)?)),
            i64::from(u32::from(letter(to)?)),
            true,
        ),
    };
    let count = a.abs_diff(b) / step + 1;
    if count > MAX_WORDS as u64 {
        return Some(None);
    }
    let dir = if b >= a { 1 } else { -1 };
    let items = (0..count).map(|n| {
        let v = a + dir * (n * step) as i64;
        match letters {
            true => u32::try_from(v)
                .ok()
                .and_then(char::from_u32)
                .map(String::from)
                .unwrap_or_default(),
            false => v.to_string(),
        }
    });
    Some(Some(items.collect()))
}

/// Whether an arithmetic expression holds only literal numbers and operators (and `$#`,
/// `$?`), so bash evaluates nothing the checker does not see.
pub(in crate::agent::policy) fn literal_arithmetic(expr: &str) -> bool {
    let c: Vec<char> = expr.chars().collect();
    let mut k = 0;
    while let Some(&ch) = c.get(k) {
        if ch.is_ascii_digit() {
            // A number in any base (`0x1f`, `2#101`, `64#_@`): its letters are digits.
            let number = |d: &&char| d.is_ascii_alphanumeric() || "#_@".contains(**d);
            k += c[k..].iter().take_while(number).count();
            continue;
        }
        if ch == '$' && matches!(c.get(k + 1), Some('#' | '?')) {
            k += 2;
            continue;
        }
        if !(ch.is_whitespace() || "+-*/%<>=!&|^~?:,()".contains(ch)) {
            return false;
        }
        k += 1;
    }
    true
}

impl Parser<'_> {
    /// Adds a word to `cur`, brace-expanded as bash would (`{rm,-rf,~}` is three words).
    pub(super) fn push_word(&mut self, cur: &mut Cmd, word: String, start: usize) {
        let marks = self.last;
        let plain = !marks.quoted && !word.contains(['$', '`']);
        let words = match marks.braces {
            false => Some(vec![word.clone()]),
            true if plain => braces(&word),
            true => None,
        };
        let Some(words) = words else {
            cur.odd.push(UNEXPANDED);
            cur.push(word, start, marks);
            return;
        };
        let braced = words.len() > 1 || words.first() != Some(&word);
        for w in words {
            cur.push(w, start, Marks { braced, ..marks });
        }
    }

    /// `((…))` where a command starts: bash's arithmetic command, read as one word. Not one
    /// when it does not close as `))` or holds a substitution (then read as subshells).
    pub(super) fn arithmetic_command(&mut self, cur: &mut Cmd) -> bool {
        let rest = self.s.get(self.i + 2..).unwrap_or_default();
        let mut depth = 0usize;
        let mut len = None;
        for (k, &c) in rest.iter().enumerate() {
            match c {
                '`' | '$' if c == '`' || rest.get(k + 1) == Some(&'(') => return false,
                '(' => depth += 1,
                ')' if depth > 0 => depth -= 1,
                ')' if rest.get(k + 1) == Some(&')') => {
                    len = Some(k);
                    break;
                }
                ')' => return false,
                _ => {}
            }
        }
        let Some(len) = len else { return false };
        let expr: String = rest[..len].iter().collect();
        if !literal_arithmetic(&expr) {
            cur.odd.push(ARITHMETIC);
        }
        cur.begin(self.i);
        let marks = Marks {
            dynamic: true,
            ..Marks::default()
        };
        cur.push("((".into(), self.i, marks);
        self.i += len + 4;
        cur.end = self.i;
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn brace_expansion_makes_the_words_bash_makes() {
        let cases: &[(&str, &[&str])] = &[
            ("{rm,-rf,~}", &["rm", "-rf", "~"]),
            ("a{b,c}d", &["abd", "acd"]),
            ("a{,b}", &["a", "ab"]),
            ("{a,{b,c}}x", &["ax", "bx", "cx"]),
            ("{a,b}{c,d}", &["ac", "ad", "bc", "bd"]),
            ("{1..3}", &["1", "2", "3"]),
            ("{3..1}", &["3", "2", "1"]),
            ("{0..6..3}", &["0", "3", "6"]),
            ("{a..c}", &["a", "b", "c"]),
            ("{a}", &["{a}"]),
            ("{}", &["{}"]),
            ("x{a..}", &["x{a..}"]),
            ("{a,b", &["{a,b"]),
            ("{x}{a,b}", &["{x}a", "{x}b"]),
        ];
        for (word, words) in cases {
            assert_eq!(braces(word).unwrap(), *words, "{word}");
        }
        assert!(braces("{1..100}").is_none());
        assert!(braces(&"{a,b}".repeat(7)).is_none());
    }

    #[test]
    fn only_numbers_are_literal_arithmetic() {
        for expr in [
            "1 + 2",
            "0x1f << 2",
            "(1+2)*3",
            "$# > 0",
            "2#101",
            "1 ? 2 : 3",
        ] {
            assert!(literal_arithmetic(expr), "{expr}");
        }
        for expr in [
            "x", "x + 1", "a[1]", "$x", "$1", "1 + y", "${x}", "i++", "'1'",
        ] {
            assert!(!literal_arithmetic(expr), "{expr}");
        }
    }
}
