//! The `electd` binary: parses the command line and dispatches.

mod cli;

use clap::Parser;
use cli::{Cli, Command};
use std::process::ExitCode;

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Simulate(args) => cli::simulate::run(args),
        Command::Compare(args) => cli::compare::run(args),
        Command::Chaos(args) => cli::chaos::run(args),
        Command::Run(args) => cli::run::run(args),
        Command::Demo(args) => cli::demo::run(args),
        Command::Keygen(args) => cli::keygen::run(args),
        Command::Config(args) => cli::config_init::run(args),
        Command::Bench(args) => cli::bench::run(args),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("electd: error: {e:#}");
            ExitCode::from(2)
        }
    }
}
