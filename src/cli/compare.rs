//! `electd compare`.

use super::Format;
use electd::algorithm::AlgorithmKind;
use std::io::{IsTerminal, Write};
use std::path::PathBuf;

#[derive(Debug, clap::Args)]
pub struct CompareArgs {
    /// Node counts: N, A..B or A,B,C.
    #[arg(long, default_value = "2..32", value_parser = super::parse_node_counts)]
    pub nodes: Vec<usize>,
    /// Algorithms to compare (comma-separated); default: every implemented one.
    #[arg(long, value_parser = super::parse_algorithms)]
    pub algorithms: Option<Vec<AlgorithmKind>>,
    /// Write an SVG plot of messages against N here.
    #[arg(long)]
    pub plot: Option<PathBuf>,
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    #[arg(long, value_enum, default_value = "table")]
    pub format: Format,
}

pub fn run(args: CompareArgs) -> anyhow::Result<()> {
    // clap gives Vec<Vec<usize>> flattened into one list through value_parser.
    let nodes = args.nodes;
    let algorithms = args.algorithms.unwrap_or_else(AlgorithmKind::available);
    let tty = std::io::stderr().is_terminal();
    let cmp = electd::compare::run(&algorithms, &nodes, args.seed, |done, total| {
        if tty {
            eprint!("\rcompare: {done}/{total} simulations");
            let _ = std::io::stderr().flush();
        }
    })?;
    if tty {
        eprintln!();
    }
    match args.format {
        Format::Table => print!("{}", cmp.to_table()),
        Format::Json => println!("{}", cmp.to_json()),
        Format::Csv => print!("{}", cmp.to_csv()),
    }
    if let Some(path) = args.plot {
        cmp.plot(&path)
            .map_err(|e| anyhow::anyhow!("cannot write plot {}: {e}", path.display()))?;
        eprintln!("plot written to {}", path.display());
    }
    Ok(())
}
