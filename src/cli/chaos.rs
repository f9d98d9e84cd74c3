//! `electd chaos`: the simulator's chaos campaign.

use electd::sim::campaign;
use std::io::{IsTerminal, Write};

#[derive(Debug, clap::Args)]
pub struct ChaosArgs {
    /// Seeds per algorithm.
    #[arg(long, default_value_t = 10_000, value_parser = clap::value_parser!(u64).range(1..))]
    pub seeds: u64,
    /// First seed.
    #[arg(long, default_value_t = 0)]
    pub start: u64,
    /// Algorithms (comma-separated); default: all six.
    #[arg(long, value_enum, value_delimiter = ',')]
    pub algorithms: Vec<super::AlgorithmArg>,
    /// Fault mix of the plans.
    #[arg(long, value_enum, default_value = "full")]
    pub faults: super::FaultSetArg,
    /// Worker threads, 1 to 1024 (default: the number of CPUs).
    #[arg(long, value_parser = clap::value_parser!(u16).range(1..=MAX_THREADS))]
    pub threads: Option<u16>,
}

/// More workers than this only costs memory: each runs one simulation at a time.
const MAX_THREADS: i64 = 1024;

/// Violations printed in full per algorithm.
const SHOWN: usize = 5;

/// What is wrong with the command line as a whole (a usage error, before anything runs).
pub fn usage_problem(args: &ChaosArgs) -> Option<String> {
    if args.seeds == 0 {
        return Some("--seeds must be at least 1".into());
    }
    args.start.checked_add(args.seeds).is_none().then(|| {
        format!(
            "--start {} + --seeds {} is beyond the last seed ({}): lower --start or --seeds",
            args.start,
            args.seeds,
            u64::MAX
        )
    })
}

pub fn run(args: ChaosArgs) -> anyhow::Result<()> {
    if let Some(why) = usage_problem(&args) {
        anyhow::bail!(why);
    }
    let kinds = super::algorithms_or_all(&args.algorithms)?;
    let faults = args.faults.0;
    let threads = args
        .threads
        .map(usize::from)
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
        // No more workers than seeds: the others would have nothing to do.
        .min(usize::try_from(args.seeds).unwrap_or(usize::MAX));
    let tty = std::io::stderr().is_terminal();
    let started = std::time::Instant::now();
    let results = campaign::run(
        &kinds,
        args.start,
        args.seeds,
        faults,
        threads,
        |done, total| {
            if tty {
                eprint!("\rchaos: {done}/{total} runs");
                let _ = std::io::stderr().flush();
            } else if done % 10_000 == 0 || done == total {
                eprintln!("chaos: {done}/{total} runs");
            }
        },
    );
    if tty {
        eprintln!();
    }
    println!(
        "chaos campaign · faults {} · seeds {}..{} · {:.1} s",
        faults.as_str(),
        args.start,
        args.start + args.seeds,
        started.elapsed().as_secs_f64()
    );
    println!("{:<16} {:>8} {:>11}", "algorithm", "seeds", "violations");
    let mut failed = 0;
    for (kind, outcome) in &results {
        println!(
            "{:<16} {:>8} {:>11}",
            kind.as_str(),
            outcome.seeds,
            outcome.violations.len()
        );
        failed += outcome.violations.len();
    }
    for (kind, outcome) in &results {
        // The first five per algorithm in full (each with its replay); the count of
        // the rest, so that a broken change does not print ten thousand of them.
        let more = outcome.violations.len().saturating_sub(SHOWN);
        if more > 0 {
            println!(
                "\n{kind}: the first {SHOWN} of {} violations (seeds {}):",
                outcome.violations.len(),
                outcome
                    .violations
                    .iter()
                    .map(|v| v.seed.to_string())
                    .collect::<Vec<_>>()
                    .join(",")
            );
        }
        for v in outcome.violations.iter().take(SHOWN) {
            println!(
                "\n{} seed {}: {} violated: {}\n  replay: {}",
                v.algorithm,
                v.seed,
                v.property,
                v.detail,
                v.replay()
            );
        }
    }
    if failed > 0 {
        anyhow::bail!("{failed} violation(s)");
    }
    Ok(())
}
