//! Standard output for the commands. A reader that goes away (`tandem context | head`) ends
//! the command the way it ends any Unix tool, quietly with 141 (128 + SIGPIPE), instead of the
//! panic `print!` raises on a closed pipe.

use std::fmt::Display;
use std::io::Write;

/// The exit status of a process killed by SIGPIPE, which is what a shell expects here.
const CLOSED_PIPE_EXIT: i32 = 141;

/// Writes `text` to stdout as is.
pub fn print(text: impl Display) {
    write(format_args!("{text}"));
}

/// Writes `text` and a newline to stdout.
pub fn println(text: impl Display) {
    write(format_args!("{text}\n"));
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
