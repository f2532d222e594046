//! Asking the person on the terminal about a call the agent wants to make: the question on
//! stderr, the answer a line from stdin, nothing typed before the question counted.

use std::io::Write;
use std::sync::Arc;

use tandem_core::agent::runner::Answer;
use tandem_core::app::{App, PendingPermission};
use tandem_core::display::{has_hidden, visible};

/// Throws away what is waiting in the terminal's input queue, just before an approval
/// question is shown: keys typed (or injected into the terminal, or pasted with the rest of a
/// prompt) before the person could see the question must not answer it — a stray `y` would
/// approve a command never read. Only what was typed before the question is lost; the answer
/// comes after it is shown. Input that is not a terminal (a script piping its answers on
/// purpose) is left alone. A terminal in canonical mode hands over one line per read, so no
/// earlier line waits in the standard library's buffer either.
fn discard_typed_ahead() {
    use std::io::IsTerminal;
    if std::io::stdin().is_terminal() {
        flush_terminal_input();
    }
}

/// Not on Windows yet: its console keeps what was typed ahead (`FlushConsoleInputBuffer`
/// would discard it).
#[cfg(not(unix))]
fn flush_terminal_input() {}

#[cfg(unix)]
#[allow(unsafe_code)]
fn flush_terminal_input() {
    // SAFETY: tcflush(3) on standard input (a terminal, checked above) only discards the
    // kernel's queue of received, unread input; it touches no memory of ours. A failure
    // (input gone meanwhile) leaves things as they were, so it is ignored.
    unsafe {
        libc::tcflush(libc::STDIN_FILENO, libc::TCIFLUSH);
    }
}

/// Asks about a pending call on the terminal (stderr + a line from stdin) without blocking
/// the event loop; end of input or anything but yes/always rejects.
pub fn ask_on_terminal(app: &Arc<App>, approval: PendingPermission) {
    let app = Arc::clone(app);
    tokio::task::spawn_blocking(move || {
        // Escaped (tandem_core::display): a `\r` or an escape sequence must not hide part of what
        // is approved from the terminal. The command is printed whole, however long.
        let command = approval.arguments.get("command").and_then(|c| c.as_str());
        let what = match command.map(visible) {
            Some(command) if command.contains('\n') => format!("run this command\n{command}\n"),
            Some(command) => format!("run `{command}`"),
            None => format!(
                "call {} {}",
                visible(&approval.tool),
                visible(&approval.arguments.to_string())
            ),
        };
        discard_typed_ahead();
        eprintln!("\n{} risk — {}", approval.risk, visible(&approval.reason));
        for reason in &approval.reasons {
            eprintln!("  {}", visible(reason));
        }
        if command.is_some_and(has_hidden) {
            eprintln!("  (the command holds control or invisible characters, shown escaped)");
        }
        eprint!(
            "Allow the agent to {what}? [y]es / [n]o / [a]lways allow `{}`: ",
            visible(&approval.always_pattern)
        );
        let _ = std::io::stderr().flush();
        let mut line = String::new();
        let answer = match std::io::stdin().read_line(&mut line) {
            Ok(n) if n > 0 => match line.trim().to_ascii_lowercase().as_str() {
                "y" | "yes" => Answer::Approve,
                "a" | "always" => Answer::AlwaysAllow,
                _ => Answer::Reject,
            },
            _ => {
                eprintln!("(no answer on stdin: rejected; pass --allow-risk to pre-approve)");
                Answer::Reject
            }
        };
        // As the window answers: gateway requests this process holds about the same command
        // are decided with it. A call that no longer waits (the turn ended) needs nothing.
        let answered =
            tokio::runtime::Handle::current().block_on(app.answer_call(approval.id, answer));
        if let Err(e) = answered {
            eprintln!("(answered; the gateway requests about the same command were not: {e})");
        }
    });
}
