//! Command-line interface (clap). Each subcommand lives in its own file.

pub mod chaos;
pub mod compare;
pub mod simulate;

use clap::{Parser, Subcommand};

/// electd: leader election daemon (Bully, Improved Bully, Ring, Chang–Roberts,
/// Hirschberg–Sinclair, Raft) and its simulator.
#[derive(Debug, Parser)]
#[command(name = "electd", version, about, long_about = None)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Simulate one algorithm on N nodes in the deterministic simulator.
    Simulate(simulate::SimulateArgs),
    /// Messages per election against N for every algorithm, beside the literature.
    Compare(compare::CompareArgs),
    /// Chaos campaign: many seeded fault plans per algorithm, checking safety and
    /// liveness; prints every violation with the command that replays it.
    Chaos(chaos::ChaosArgs),
    /// Local demo. Until the daemon lands this runs `compare --nodes 2..32` with a plot.
    Demo(compare::DemoArgs),
}

/// Output format of `simulate` and `compare`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    Table,
    Json,
    Csv,
}

/// A list of node counts given as `N`, `A..B`, `A..=B` or `A,B,C`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NodeCounts(pub Vec<usize>);

/// A comma-separated list of algorithms.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Algorithms(pub Vec<electd::algorithm::AlgorithmKind>);

pub fn parse_node_count_list(s: &str) -> Result<NodeCounts, String> {
    parse_node_counts(s).map(NodeCounts)
}

pub fn parse_algorithm_list(s: &str) -> Result<Algorithms, String> {
    parse_algorithms(s).map(Algorithms)
}

/// Parse `N`, `A..B`, `A..=B` or `A,B,C` into a list of node counts (each ≥ 1).
pub fn parse_node_counts(s: &str) -> Result<Vec<usize>, String> {
    let s = s.trim();
    let parse = |x: &str| -> Result<usize, String> {
        let n: usize = x
            .trim()
            .parse()
            .map_err(|_| format!("{x:?} is not a node count"))?;
        if n == 0 {
            return Err("a cluster needs at least 1 node (got 0)".into());
        }
        if n > 100_000 {
            return Err(format!(
                "{n} nodes is more than the simulator allows (100000)"
            ));
        }
        Ok(n)
    };
    if let Some((a, b)) = s.split_once("..") {
        let b = b.strip_prefix('=').unwrap_or(b);
        let (a, b) = (parse(a)?, parse(b)?);
        if a > b {
            return Err(format!("empty range {s}: {a} > {b}"));
        }
        return Ok((a..=b).collect());
    }
    s.split(',').map(parse).collect()
}

/// Parse a comma-separated list of algorithm names.
pub fn parse_algorithms(s: &str) -> Result<Vec<electd::algorithm::AlgorithmKind>, String> {
    let mut out = Vec::new();
    for part in s.split(',').filter(|p| !p.trim().is_empty()) {
        let k: electd::algorithm::AlgorithmKind = part.parse().map_err(|e| format!("{e}"))?;
        if !electd::algorithms::is_implemented(k) {
            return Err(format!(
                "algorithm {k} is not implemented in this build yet"
            ));
        }
        if !out.contains(&k) {
            out.push(k);
        }
    }
    if out.is_empty() {
        return Err("no algorithm given".into());
    }
    Ok(out)
}
