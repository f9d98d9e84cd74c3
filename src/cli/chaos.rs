//! `electd chaos`: the simulator's chaos campaign.

use electd::sim::campaign;
use std::io::{IsTerminal, Write};

#[derive(Debug, clap::Args)]
pub struct ChaosArgs {
    /// Seeds per algorithm.
    #[arg(long, default_value_t = 10_000)]
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
    /// Worker threads (default: the number of CPUs).
    #[arg(long)]
    pub threads: Option<usize>,
}

pub fn run(args: ChaosArgs) -> anyhow::Result<()> {
    if args.seeds == 0 {
        anyhow::bail!("--seeds must be at least 1");
    }
    let kinds = super::algorithms_or_all(&args.algorithms)?;
    let faults = args.faults.0;
    let threads = args
        .threads
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()));
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
    for (_, outcome) in &results {
        for v in outcome.violations.iter().take(5) {
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
