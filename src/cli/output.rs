//! Standard output for the commands. A reader that goes away (`tandem context | head`) ends
//! the command the way it ends any Unix tool, quietly with 141 (128 + SIGPIPE), instead of the
//! panic `print!` raises on a closed pipe.
//!
//! Text for reading holds what models and projects wrote (a proposal's summary and diff,
//! paths, replies): [`print`] shows what a terminal would act on escaped
//! ([`tandem_core::display::for_terminal`]). JSON ([`json`]) escapes its own control
//! characters and carries the exact text; a command's own output ([`raw`]) is as it wrote it.

use std::fmt::Display;
use std::io::Write;

use tandem_core::display::for_terminal;

/// The exit status of a process killed by SIGPIPE, which is what a shell expects here.
const CLOSED_PIPE_EXIT: i32 = 141;

/// Writes `text` to stdout, what a terminal would act on escaped.
pub fn print(text: impl Display) {
    let text = text.to_string();
    write(format_args!("{}", for_terminal(&text)));
}

/// Writes `text` and a newline to stdout, what a terminal would act on escaped.
pub fn println(text: impl Display) {
    let text = text.to_string();
    write(format_args!("{}\n", for_terminal(&text)));
}

/// Writes `text` and a newline to stderr, what a terminal would act on escaped (an error or
/// a finding may quote what a server or a model said).
pub fn eprintln(text: impl Display) {
    let text = text.to_string();
    std::eprintln!("{}", for_terminal(&text));
}

/// Writes `value` as one line of JSON to stdout. The text is exact, and what a terminal would
/// act on or not show is written as `\uXXXX` escapes (serde_json escapes only ASCII's
/// controls): a C1 control such as U+009B is a terminal's escape too, and the JSON may be read
/// on one. Any JSON reader gets back the same strings.
pub fn json(value: &serde_json::Value) {
    write(format_args!("{}\n", json_line(value)));
}

fn json_line(value: &serde_json::Value) -> String {
    let mut line = Vec::new();
    let mut serializer = serde_json::Serializer::with_formatter(&mut line, TerminalSafe);
    match serde::Serialize::serialize(value, &mut serializer) {
        Ok(()) => String::from_utf8_lossy(&line).into_owned(),
        // A `Value` always serializes; should it not, the line says so rather than be cut.
        Err(e) => serde_json::json!({ "error": format!("cannot write JSON: {e}") }).to_string(),
    }
}

/// serde_json's compact output, with every non-ASCII control (C1) and every character that
/// does not show ([`tandem_core::display::is_invisible`]) in a string escaped.
struct TerminalSafe;

impl serde_json::ser::Formatter for TerminalSafe {
    fn write_string_fragment<W: ?Sized + Write>(
        &mut self,
        writer: &mut W,
        fragment: &str,
    ) -> std::io::Result<()> {
        let hidden = |c: char| c.is_control() || tandem_core::display::is_invisible(c);
        let mut rest = fragment;
        while let Some(at) = rest.find(hidden) {
            writer.write_all(&rest.as_bytes()[..at])?;
            let c = rest[at..].chars().next().unwrap_or_default();
            let mut units = [0; 2];
            for unit in c.encode_utf16(&mut units) {
                write!(writer, "\\u{unit:04x}")?;
            }
            rest = &rest[at + c.len_utf8()..];
        }
        writer.write_all(rest.as_bytes())
    }
}

/// Writes text to stdout as it is: a command's own output (`tandem run`: as if run by hand),
/// or text already escaped for a terminal (a streamed reply, [`tandem_core::display::TerminalStream`]).
pub fn raw(text: &str) {
    write(format_args!("{text}"));
}

fn write(args: std::fmt::Arguments<'_>) {
    let mut stdout = std::io::stdout().lock();
    let result = stdout.write_fmt(args).and_then(|()| stdout.flush());
    match result {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => {
            std::process::exit(CLOSED_PIPE_EXIT)
        }
        // Any other failure (a full disk behind a redirect) is said once, not panicked on.
        Err(e) => {
            eprintln!("error: cannot write to standard output: {e}");
            std::process::exit(1)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_escapes_what_a_terminal_acts_on_and_reads_back_the_same() {
        let text = "a\u{9b}31m b\u{202e}c\u{fe0f} \u{e0041} \u{1b}]0;t\u{7} é 🦀 ⚠";
        let value = serde_json::json!({ "path": text, "list": [text] });
        let line = json_line(&value);
        let hidden = |c: char| c.is_control() || tandem_core::display::is_invisible(c);
        assert!(!line.chars().any(hidden), "{line}");
        assert!(
            line.contains("\\u009b") && line.contains("\\u202e") && line.contains("\\udb40\\udc41"),
            "{line}"
        );
        assert!(line.contains("é 🦀 ⚠"), "{line}");
        let back: serde_json::Value = serde_json::from_str(&line).unwrap();
        assert_eq!(back, value);
    }
}
