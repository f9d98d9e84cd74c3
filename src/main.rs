//! The `electd` binary: parses the command line and dispatches.

// A binary exports nothing: `pub` in its modules (`cli`, `bench`) says what a module
// offers its siblings, and the compiler still reports what nobody uses (dead_code
// sees every item of a binary).
#![allow(unreachable_pub)]

mod bench;
mod cli;

use clap::{CommandFactory, Parser};
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
    if let Some((sub, why)) = cli.usage_problem() {
        let mut cmd = Cli::command();
        cmd.build();
        let cmd = cmd
            .find_subcommand_mut(sub)
            .expect("a subcommand of the parser");
        cmd.error(clap::error::ErrorKind::ArgumentConflict, why)
            .exit();
    }
    cli::set_log_format(cli.log_format);
    if matches!(
        cli.command,
        Command::Simulate(_)
            | Command::Compare(_)
            | Command::Chaos(_)
            | Command::Status(_)
            | Command::Watch(_)
            | Command::Completions(_)
            | Command::Man(_)
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
        // Their exit code is their answer: 0 the cluster agrees, 1 it does not.
        Command::Status(args) => return cli::status::status(args),
        Command::Watch(args) => return cli::status::watch(args),
        Command::Exec(args) => match cli::exec::run(args) {
            Ok(code) => return code,
            Err(e) => Err(e),
        },
        // Their exit code is their answer: 0 done, 1 not (refused, timed out).
        Command::Drain(args) => return cli::admin::call(&args, "drain", &[]),
        Command::Undrain(args) => return cli::admin::call(&args, "undrain", &[]),
        Command::Transfer(args) => return cli::admin::transfer(&args),
        Command::Completions(args) => cli::manual::completions(args),
        Command::Man(args) => cli::manual::man(args),
        Command::View(args) => cli::view::run(args),
    };
    // Exit codes: 0 success, 1 a runtime error (a configuration refused, a port taken,
    // a failed check…), 2 a usage error (clap's, before anything ran).
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("electd: error: {}", error_chain(&e));
            ExitCode::from(1)
        }
    }
}

/// The error and its causes joined by ": ", leaving out a cause whose text the message
/// already holds (errors that print their source would otherwise repeat it).
fn error_chain(e: &anyhow::Error) -> String {
    let mut out = String::new();
    for cause in e.chain() {
        let text = cause.to_string();
        if out.contains(&text) {
            continue;
        }
        if !out.is_empty() {
            out.push_str(": ");
        }
        out.push_str(&text);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::error_chain;

    #[derive(Debug, thiserror::Error)]
    #[error("{path}: {source}")]
    struct Leaf {
        path: String,
        source: std::io::Error,
    }

    #[test]
    fn a_cause_already_in_the_message_is_said_once() {
        let io = std::io::Error::other("Is a directory (os error 21)");
        let leaf = Leaf {
            path: "/x/raft.state".into(),
            source: io,
        };
        let e = anyhow::Error::new(leaf).context("cannot read the durable state");
        assert_eq!(
            error_chain(&e),
            "cannot read the durable state: /x/raft.state: Is a directory (os error 21)"
        );
    }
}
