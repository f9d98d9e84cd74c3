//! `electd compare`.

use super::Format;
use electd::contract::algorithm::AlgorithmKind;
use std::io::{IsTerminal, Write};
use std::path::PathBuf;

#[derive(Debug, clap::Args)]
pub struct CompareArgs {
    /// Node counts: N, A..B or A,B,C.
    #[arg(long, default_value = "2..32", value_parser = super::parse_node_count_list)]
    pub nodes: super::NodeCounts,
    /// Algorithms to compare (comma-separated); default: all six.
    #[arg(long, value_enum, value_delimiter = ',')]
    pub algorithms: Vec<super::AlgorithmArg>,
    /// Write an SVG plot of messages against N here.
    #[arg(long)]
    pub plot: Option<PathBuf>,
    /// Seed of the simulations' network and timer generators.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Output format.
    #[arg(long, value_enum, default_value = "table")]
    pub format: Format,
    /// Start even when the estimate exceeds the available memory or ten minutes.
    #[arg(long)]
    pub force: bool,
}

pub fn run(args: CompareArgs) -> anyhow::Result<()> {
    // The plot's directory before the simulations: a typo failed after the whole run.
    if let Some(path) = &args.plot {
        let dir = match path.parent() {
            Some(d) if !d.as_os_str().is_empty() => d,
            _ => std::path::Path::new("."),
        };
        if !dir.is_dir() {
            anyhow::bail!(
                "cannot write plot {}: {} is not a directory",
                path.display(),
                dir.display()
            );
        }
    }
    let nodes = args.nodes.0;
    let algorithms = super::algorithms_or_all(&args.algorithms)?;
    let runs: Vec<(AlgorithmKind, usize)> = algorithms
        .iter()
        .flat_map(|&k| {
            let cases = k.cases().len().max(1);
            nodes
                .iter()
                .flat_map(move |&n| std::iter::repeat_n((k, n), cases))
        })
        .collect();
    super::simulate::check_series(&runs, args.force)?;
    let tty = std::io::stderr().is_terminal();
    let cmp = electd::sim::compare::run(&algorithms, &nodes, args.seed, |done, total| {
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
