//! `tandem`: the desktop app's engine, driven from the command line.

mod cli;

fn main() -> std::process::ExitCode {
    tandem_core::sandbox::harden_this_process();
    cli::main()
}
