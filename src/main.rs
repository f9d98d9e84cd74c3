//! The `electd` binary: parses the command line and dispatches.

mod cli;

use clap::Parser;
use cli::{Cli, Command};
use std::process::ExitCode;

/// Report-printing commands end quietly when their reader goes away
/// (`electd simulate … | head`), as Unix filters do, instead of panicking in `println!`.
/// The daemon keeps Rust's default (SIGPIPE ignored): its sockets report EPIPE instead.
fn exit_quietly_on_broken_pipe() {
    #[cfg(unix)]
    // SAFETY: restoring the default disposition of one signal before any thread starts.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    if matches!(
        cli.command,
        Command::Simulate(_) | Command::Compare(_) | Command::Chaos(_)
    ) {
        exit_quietly_on_broken_pipe();
    }
    let result = match cli.command {
        Command::Simulate(args) => cli::simulate::run(args),
        Command::Compare(args) => cli::compare::run(args),
        Command::Chaos(args) => cli::chaos::run(args),
        Command::Run(args) => cli::run::run(args),
        Command::Demo(args) => cli::demo::run(args),
        Command::Keygen(args) => cli::keygen::run(args),
        Command::Config(args) => cli::config_init::run(args),
        Command::Bench(args) => cli::bench::run(args),
        Command::View(args) => cli::view::run(args),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("electd: error: {e:#}");
            ExitCode::from(2)
        }
    }
}
