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

/// Writes `text` to stderr, what a terminal would act on escaped.
pub fn eprint(text: impl Display) {
    let text = text.to_string();
    std::eprint!("{}", for_terminal(&text));
}

/// Writes `value` as one line of JSON to stdout.
pub fn json(value: &serde_json::Value) {
    write(format_args!("{value}\n"));
}

/// Writes a command's own output to stdout as it wrote it (`tandem run`: as if run by hand).
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
