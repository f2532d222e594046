//! Ctrl-C for a command that runs until it is interrupted. The listener is registered once, when
//! the command starts, and stays registered: a `ctrl_c()` future made afresh in each turn of a
//! `select!` loop misses a signal that arrives while the loop body runs (printing a delta), and
//! since Tokio's handler has replaced the default one by then, the command neither stops nor
//! dies.

/// Every Ctrl-C from the moment it is made.
pub struct Interrupts {
    #[cfg(unix)]
    signal: tokio::signal::unix::Signal,
    #[cfg(windows)]
    signal: tokio::signal::windows::CtrlC,
}

impl Interrupts {
    /// Starts listening; must be called inside the Tokio runtime.
    pub fn listen() -> std::io::Result<Self> {
        #[cfg(unix)]
        let signal = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::interrupt())?;
        #[cfg(windows)]
        let signal = tokio::signal::windows::ctrl_c()?;
        Ok(Self { signal })
    }

    /// The next Ctrl-C (one that came while nobody waited is not lost).
    pub async fn next(&mut self) {
        if self.signal.recv().await.is_none() {
            // The runtime's signal driver is gone: no interrupt will come.
            std::future::pending::<()>().await;
        }
    }
}
