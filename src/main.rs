//! `tandem`: the desktop app's engine, driven from the command line.

mod cli;

fn main() -> std::process::ExitCode {
    cli::main()
}
